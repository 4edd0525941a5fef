/* ops/elementwise/shared.c: infer, resolve, cost and test operands shared by the family. */
#include "ops/elementwise/elementwise.h"

const fe_tunable_decl fe_elementwise_tunables[2] = {
    [EW_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [EW_STREAM] = {"stream", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1}, .n_choices = 2}, 0,
                   false, "non-temporal stores (on when the output outgrows the LLC)"},
};
const fe_value_decl fe_elementwise_flat_values[1] = {
    {"n", "N", 0, "elements to compute: the first n", 0, 0, FE_MAP_FLAT}};
const fe_value_decl fe_elementwise_row_values[1] = {
    {"rows", "rows", 0, "rows to compute: the first rows"}};
const char *const fe_elementwise_flat_extents[1] = {"N"};
const char *const fe_elementwise_row_extents[2] = {"rows", "cols"};

fe_status fe_elementwise_flat_infer(fe_op_ctx *c) {
    for (int i = 1; i < c->op->n_operands; i++) {
        fe_status st = fe_op_same_shape(c, 0, i);
        if (st != FE_OK) return st;
    }
    c->ext[0] = fe_tensor_numel(&c->operands[0]);
    return FE_OK;
}

fe_status fe_elementwise_row_infer(fe_op_ctx *c) {
    const fe_tensor *x = &c->operands[0], *b = &c->operands[1];
    if (x->rank != 2)
        return fe_op_refuse(c, FE_E_SHAPE, "%s must be (rows, cols); it has rank %d",
                            c->op->operands[0].name, x->rank);
    if (b->rank != 1 || b->shape[0] != x->shape[1])
        return fe_op_refuse(c, FE_E_SHAPE, "%s must be (cols) = (%lld), one value per column "
                            "of %s", c->op->operands[1].name, (long long)x->shape[1],
                            c->op->operands[0].name);
    fe_status st = fe_op_same_shape(c, 0, 2);
    if (st != FE_OK) return st;
    c->ext[0] = x->shape[0];
    c->ext[1] = x->shape[1];
    return FE_OK;
}

void fe_elementwise_resolve(fe_op_ctx *c) {
    if (!c->tunable_set[EW_STREAM]) {
        int64_t n = 1;
        for (int i = 0; i < c->op->n_extents; i++) n *= c->ext[i];
        size_t llc = c->dev->l3_bytes ? c->dev->l3_bytes : (size_t)32 << 20;
        c->tunables[EW_STREAM] = (size_t)n * 4 >= llc;
        c->tunable_set[EW_STREAM] = true;
    }
}

void fe_elementwise_flat_cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double n = (double)a->v[0];
    out->flops = n * (d->op->n_operands == 3 && d->op->n_params ? 2 : 1);
    out->bytes = n * 4.0 * d->op->n_operands;
}

void fe_elementwise_row_cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    (void)d;
    double n = (double)a->v[0] * (double)a->ext[1];
    out->flops = n;
    out->bytes = n * 8.0 + (double)a->ext[1] * 4.0;
}

void fe_elementwise_flat3_operands(const fe_case *c, const double *params, fe_tensor *out) {
    (void)params;
    for (int i = 0; i < 3; i++) out[i] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, c->dims);
}

void fe_elementwise_row_operands(const fe_case *c, const double *params, fe_tensor *out) {
    (void)params;
    int64_t rc[2] = {c->dims[0], c->dims[1]};
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, rc);
    out[1] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &rc[1]);
    out[2] = out[0];
}
