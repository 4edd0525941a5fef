/* ops/describe.c: an operator's declaration as text, for people (`ferrum ops`): operands
 * (role, dtypes, rank), params (type, default, range or choices), tunables (search domain,
 * default; design or derived), per-call values (bounded by an extent), kernels (ISA, tile)
 * and the tolerance its kernels keep against its reference. */
#include <stdio.h>

#include "ops/op.h"

static const char *param_type(fe_param_type t) {
    switch (t) {
    case FE_PARAM_INT: return "int";
    case FE_PARAM_FLOAT: return "float";
    case FE_PARAM_BOOL: return "bool";
    case FE_PARAM_CHOICE: return "choice";
    }
    return "?";
}

void fe_op_describe(const fe_op *op, FILE *f) {
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
    /* what `ferrum tune OP NAME=VALUE...` names besides params and tunables */
    fprintf(f, "  extents:");
    for (int i = 0; i < op->n_extents; i++) fprintf(f, " %s", op->extents[i]);
    fprintf(f, "\n  cases:");
    for (int i = 0; i < op->n_cases; i++) fprintf(f, "%s %s", i ? "," : "", op->cases[i].name);
    fprintf(f, "\n");
}
