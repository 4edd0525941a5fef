/* apps/ferrum/cmd_ops.c: `ferrum ops`: the operator registry, each operator with its
 * operands, params, tunables (with their search domains), per-call values and kernels. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "ferrum/ops.h"

static const char ops_synopsis[] =
    "usage: ferrum ops [options] [OPERATOR...]\n\n"
    "Lists the declared operators: operands (role, dtypes, rank), params (type,\n"
    "default, range), tunables (search domain, default; design or derived),\n"
    "per-call values (bounded by an extent) and kernels (ISA, tile).\n"
    "With OPERATOR names (any case), lists only those.\n";

int fe_cmd_ops(int argc, char **argv, const fe_cli_io *io) {
    bool names_only = false;
    const arg_opt opts[] = {
        {"names", 0, ARG_FLAG, NULL, "print only the names, one per line", NULL, .flag = &names_only},
    };
    arg_spec sp = {.cmd = "ops", .synopsis = ops_synopsis, .opts = opts, .n_opts = 1,
                   .max_positional = argc, .positional_what = "OPERATOR"};
    const char **names = malloc((size_t)argc * sizeof *names);
    arg_result r = {.positional = names};
    int code = names ? args_parse(&sp, argc, argv, &r, io->err) : FE_EXIT_FAILURE;
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        free(names);
        return code;
    }
    for (int i = 0; i < r.n_positional; i++)
        if (!fe_op_find(names[i])) {
            fprintf(io->err, "ferrum ops: no operator named \"%s\"; `ferrum ops --names` "
                    "lists them\n", names[i]);
            free(names);
            return FE_EXIT_USAGE;
        }
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        bool wanted = r.n_positional == 0;
        for (int i = 0; i < r.n_positional && !wanted; i++) wanted = fe_op_find(names[i]) == op;
        if (!wanted) continue;
        if (names_only) fprintf(io->out, "%s\n", fe_op_name(op));
        else fe_op_describe(op, io->out);
    }
    free(names);
    return FE_EXIT_OK;
}
