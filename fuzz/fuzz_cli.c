/* fuzz/fuzz_cli.c: libFuzzer target for the command line and its option parser (args.c). The
 * input is split at NUL bytes into up to 16 arguments; whatever they say, the CLI must answer
 * with an exit code. stdin and the CLI's input stream are /dev/null, so `--prompt-file -` and
 * `tokenize -f -` read an empty text and `chat` ends at once (its REPL never waits on a real
 * stdin). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../apps/ferrum/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink, *empty;
    if (!sink) {
        sink = fopen("/dev/null", "w");
        empty = fopen("/dev/null", "r");
        if (!sink || !empty || !freopen("/dev/null", "r", stdin)) return 0;
    }
    char buf[4096];
    if (size >= sizeof buf) size = sizeof buf - 1;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[18] = {"ferrum"};
    int argc = 1;
    for (size_t i = 0; i <= size && argc < 17;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    /* draw writes files, tune times kernels and writes the cost cache, study runs jobs for
     * minutes and writes result trees (its readers have fuzz_study_files): not fuzzed */
    if (argc > 1 && (strcmp(argv[1], "draw") == 0 || strcmp(argv[1], "tune") == 0 ||
                     strcmp(argv[1], "study") == 0))
        return 0;
    fe_cli_io io = {sink, sink, empty};
    int code = fe_cli_main(argc, argv, &io);
    return code >= 0 && code <= 2 ? 0 : (__builtin_trap(), 0);
}
