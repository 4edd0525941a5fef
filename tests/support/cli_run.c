/* tests/support/cli_run.c: see cli_run.h. */
#include "support/cli_run.h"

#include <stdio.h>

#include "../apps/ferrum/cli.h"

static void slurp(FILE *f, char *buf, size_t n) {
    rewind(f);
    size_t got = n ? fread(buf, 1, n - 1, f) : 0;
    if (n) buf[got] = '\0';
    fclose(f);
}

int cli_run(int argc, const char **argv, char *out, size_t out_n, char *err, size_t err_n) {
    FILE *o = tmpfile(), *e = tmpfile();
    if (!o || !e) {
        if (o) fclose(o);
        if (e) fclose(e);
        return -1;
    }
    fe_cli_io io = {o, e};
    int code = fe_cli_main(argc, (char **)argv, &io);
    slurp(o, out, out_n);
    slurp(e, err, err_n);
    return code;
}
