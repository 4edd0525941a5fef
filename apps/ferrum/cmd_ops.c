/* apps/ferrum/cmd_ops.c: `ferrum ops`: the operator registry, each operator with its
 * operands, params, tunables (with their search domains), per-call values and kernels. */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "core/alloc.h"
#include "ops/op.h"

static const char ops_synopsis[] =
    "usage: ferrum ops [options] [OPERATOR...]\n\n"
    "Lists the declared operators: operands (role, dtypes, rank), params (type,\n"
    "default, range), tunables (search domain, default; design or derived),\n"
    "per-call values (bounded by an extent) and kernels (ISA, tile).\n"
    "With OPERATOR names (any case), lists only those.\n";

static const char *param_type(fe_param_type t) {
    switch (t) {
    case FE_PARAM_INT: return "int";
    case FE_PARAM_FLOAT: return "float";
    case FE_PARAM_BOOL: return "bool";
    case FE_PARAM_CHOICE: return "choice";
    }
    return "?";
}

static void print_op(FILE *f, const fe_op *op) {
    fprintf(f, "%s: %s\n", op->name, op->summary);
    fprintf(f, "  operands:\n");
    for (int i = 0; i < op->n_operands; i++) {
        const fe_operand_decl *o = &op->operands[i];
        fprintf(f, "    %-8s %-3s rank %d..%d, dtypes", o->name, o->role == FE_IN ? "in" : "out",
                o->min_rank, o->max_rank);
        for (int d = 0; d < FE_DTYPE_COUNT; d++)
            if (o->dtypes & FE_DT(d)) fprintf(f, " %s", fe_dtype_info((fe_dtype)d)->name);
        fprintf(f, "%s%s\n", o->optional ? ", optional" : "", o->strided ? ", strided views" : "");
    }
    if (op->n_params) fprintf(f, "  params:\n");
    for (int i = 0; i < op->n_params; i++) {
        const fe_param_decl *p = &op->params[i];
        fprintf(f, "    %-8s %s, default %g", p->name, param_type(p->type), p->def);
        if (p->type == FE_PARAM_CHOICE) {
            fprintf(f, ", one of");
            for (int c = 0; p->choices[c]; c++) fprintf(f, " %d=%s", c, p->choices[c]);
        } else if (p->lo <= p->hi) {
            fprintf(f, ", in [%g, %g]", p->lo, p->hi);
        }
        fprintf(f, "%s%s\n", p->doc ? "  -- " : "", p->doc ? p->doc : "");
    }
    fprintf(f, "  tunables:\n");
    for (int i = 0; i < op->n_tunables; i++) {
        const fe_tunable_decl *t = &op->tunables[i];
        char dom[160];
        fe_domain_describe(&t->domain, dom, sizeof dom);
        fprintf(f, "    %-8s %s, default ", t->name, dom);
        if (t->domain.kind == FE_DOMAIN_WIDTH && t->def == 0) fprintf(f, "all workers");
        else fprintf(f, "%lld", (long long)t->def);
        fprintf(f, ", %s%s%s\n", t->design ? "design" : "derived", t->doc ? "  -- " : "",
                t->doc ? t->doc : "");
    }
    if (op->n_values) fprintf(f, "  per-call values:\n");
    for (int i = 0; i < op->n_values; i++) {
        const fe_value_decl *v = &op->values[i];
        fprintf(f, "    %-8s %lld..%s%s%s\n", v->name, (long long)v->min, v->extent,
                v->doc ? "  -- " : "", v->doc ? v->doc : "");
    }
    fprintf(f, "  kernels:");
    for (int i = 0; i < op->n_kernels; i++)
        fprintf(f, " %s(tile %d)", fe_isa_name(op->kernels[i].isa), op->kernels[i].tile);
    fprintf(f, "\n  tolerance: |got - ref| <= %g + %g*|ref|\n", op->atol, op->rtol);
}

int fe_cmd_ops(int argc, char **argv, const fe_cli_io *io) {
    bool names_only = false;
    const arg_opt opts[] = {
        {"names", 0, ARG_FLAG, NULL, "print only the names, one per line", NULL, .flag = &names_only},
    };
    arg_spec sp = {.cmd = "ops", .synopsis = ops_synopsis, .opts = opts, .n_opts = 1,
                   .max_positional = argc, .positional_what = "OPERATOR"};
    const char **names = fe_malloc((size_t)argc * sizeof *names);
    arg_result r = {.positional = names};
    int code = names ? args_parse(&sp, argc, argv, &r, io->err) : FE_EXIT_FAILURE;
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        fe_free(names);
        return code;
    }
    for (int i = 0; i < r.n_positional; i++)
        if (!fe_op_find(names[i])) {
            fprintf(io->err, "ferrum ops: no operator named \"%s\"; `ferrum ops --names` "
                    "lists them\n", names[i]);
            fe_free(names);
            return FE_EXIT_USAGE;
        }
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        bool wanted = r.n_positional == 0;
        for (int i = 0; i < r.n_positional && !wanted; i++) wanted = fe_op_find(names[i]) == op;
        if (!wanted) continue;
        if (names_only) fprintf(io->out, "%s\n", op->name);
        else print_op(io->out, op);
    }
    fe_free(names);
    return FE_EXIT_OK;
}
