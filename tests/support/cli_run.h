/* tests/support/cli_run.h: the ferrum CLI run in-process (fe_cli_main) with its stdout and
 * stderr captured into the caller's buffers, NUL-terminated (cut to fit). */
#ifndef FE_TESTS_CLI_RUN_H
#define FE_TESTS_CLI_RUN_H

#include <stddef.h>

/* Returns the exit code. The input (`chat`'s lines, `-f -`) is empty. */
int cli_run(int argc, const char **argv, char *out, size_t out_n, char *err, size_t err_n);
/* The same with `input` (NUL-terminated; NULL: empty) as the CLI's input stream. */
int cli_run_in(int argc, const char **argv, const char *input, char *out, size_t out_n, char *err,
               size_t err_n);

/* RUN("generate", "--help") with `code`, `out` and `errs` in scope (arrays) */
#define CLI_RUN_INTO(code, out, errs, ...)                                                  \
    do {                                                                                   \
        const char *argv_[] = {"ferrum", __VA_ARGS__};                                     \
        code = cli_run((int)(sizeof argv_ / sizeof argv_[0]), argv_, out, sizeof out,      \
                       errs, sizeof errs);                                                 \
    } while (0)

/* The same with `input` as the CLI's input stream */
#define CLI_RUN_IN_INTO(code, out, errs, input, ...)                                        \
    do {                                                                                   \
        const char *argv_[] = {"ferrum", __VA_ARGS__};                                     \
        code = cli_run_in((int)(sizeof argv_ / sizeof argv_[0]), argv_, input, out,        \
                          sizeof out, errs, sizeof errs);                                  \
    } while (0)

#endif
