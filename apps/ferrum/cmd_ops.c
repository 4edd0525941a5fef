/* apps/ferrum/cmd_ops.c: `ferrum ops`: the operator registry, each operator with its
 * operands, params, tunables (with their search domains), per-call values and kernels. */
#include <string.h>

#include "cli.h"
#include "ferrum/ops.h"

static void ops_usage(FILE *f) {
    fprintf(f, "usage: ferrum ops [--help] [--names] [OPERATOR...]\n\n"
               "Lists the declared operators: operands (role, dtypes, rank), params (type,\n"
               "default, range), tunables (search domain, default; design or derived),\n"
               "per-call values (bounded by an extent) and kernels (ISA, tile).\n"
               "With OPERATOR names (any case), lists only those.\n\n"
               "  --names   print only the names, one per line\n");
}

int fe_cmd_ops(int argc, char **argv, const fe_cli_io *io) {
    bool names_only = false;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--help") == 0 || strcmp(argv[first], "-h") == 0) {
            ops_usage(io->out);
            return FE_EXIT_OK;
        }
        if (strcmp(argv[first], "--names") == 0) {
            names_only = true;
            continue;
        }
        fprintf(io->err, "ferrum ops: unknown option \"%s\"; `ferrum ops --help` lists them\n",
                argv[first]);
        return FE_EXIT_USAGE;
    }
    for (int i = first; i < argc; i++)
        if (!fe_op_find(argv[i])) {
            fprintf(io->err, "ferrum ops: no operator named \"%s\"; `ferrum ops --names` "
                    "lists them\n", argv[i]);
            return FE_EXIT_USAGE;
        }
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        bool wanted = first >= argc;
        for (int i = first; i < argc && !wanted; i++) wanted = fe_op_find(argv[i]) == op;
        if (!wanted) continue;
        if (names_only) fprintf(io->out, "%s\n", fe_op_name(op));
        else fe_op_describe(op, io->out);
    }
    return FE_EXIT_OK;
}
