/* tests/support/cli_run.c: see cli_run.h. */
#include "support/cli_run.h"

#include <stdio.h>
#include <string.h>

#include "../apps/ferrum/cli.h"

static void slurp(FILE *f, char *buf, size_t n) {
    rewind(f);
    size_t got = n ? fread(buf, 1, n - 1, f) : 0;
    if (n) buf[got] = '\0';
    fclose(f);
}

int cli_run_in(int argc, const char **argv, const char *input, char *out, size_t out_n, char *err,
               size_t err_n) {
    FILE *o = tmpfile(), *e = tmpfile(), *i = input ? tmpfile() : NULL;
    if (!o || !e || (input && !i)) {
        if (o) fclose(o);
        if (e) fclose(e);
        if (i) fclose(i);
        return -1;
    }
    if (i) {
        fwrite(input, 1, strlen(input), i);
        rewind(i);
    }
    fe_cli_io io = {o, e, i};
    int code = fe_cli_main(argc, (char **)argv, &io);
    slurp(o, out, out_n);
    slurp(e, err, err_n);
    if (i) fclose(i);
    return code;
}

int cli_run(int argc, const char **argv, char *out, size_t out_n, char *err, size_t err_n) {
    return cli_run_in(argc, argv, NULL, out, out_n, err, err_n);
}
