/* ops/norm/shared.c: tunables, extents, per-call values, infer and test operands shared by
 * Softmax, RMSNorm and LayerNorm. */
#include <stdio.h>
#include <string.h>

#include "ops/norm/norm.h"

const fe_tunable_decl fe_norm_tunables[3] = {
    [NORM_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [NORM_RPI] = {"rows_per_item", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 4, 16},
                                    .n_choices = 3}, 1, true,
                  "rows per work item: workers split the bounded rows in whole items "
                  "(coarser items keep short rows of two workers off one cache line)"},
    [NORM_STREAM] = {"stream", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1}, .n_choices = 2}, 0,
                     false, "non-temporal stores of y (on when y outgrows the LLC)"},
};

void fe_norm_resolve(fe_op_ctx *c) {
    if (c->tunable_set[NORM_STREAM]) return;
    size_t llc = c->dev->l3_bytes ? c->dev->l3_bytes : (size_t)32 << 20;
    c->tunables[NORM_STREAM] = (size_t)(c->ext[NORM_ROWS] * c->ext[NORM_COLS]) * 4 >= llc;
    c->tunable_set[NORM_STREAM] = true;
}

size_t fe_norm_softmax_workspace(const fe_args *a, const fe_design *d, int nth) {
    (void)d;
    /* one 64-byte-aligned row per worker */
    size_t row = ((size_t)a->ext[NORM_COLS] * 4 + 63) & ~(size_t)63;
    return row * (size_t)nth;
}
const char *const fe_norm_extents[2] = {"rows", "cols"};
const fe_value_decl fe_norm_values[2] = {
    [NORM_V_ROWS] = {"rows", "rows", 0, "rows to compute: the first rows", 0, 0, FE_MAP_BOUND},
    [NORM_V_VALID] = {"valid_cols", "cols", 1,
                      "columns each row spans: the first valid_cols; the rest are written 0", 0, 1,
                      FE_MAP_BOUND},
};

fe_status fe_norm_infer(fe_op_ctx *c) {
    const fe_op *op = c->op;
    const fe_tensor *x = &c->operands[0];
    int out = op->n_operands - 1;
    if (x->rank != 2)
        return fe_op_refuse(c, FE_E_SHAPE, "%s must be (rows, cols), normalised along cols; "
                            "it has rank %d: reshape it to 2-D first", op->operands[0].name,
                            x->rank);
    for (int i = 1; i < out; i++) {
        const fe_tensor *v = &c->operands[i];
        if (!c->present[i]) continue;
        if (v->rank != 1 || v->shape[0] != x->shape[1])
            return fe_op_refuse(c, FE_E_SHAPE, "%s must be (cols) = (%lld), one value per "
                                "column of %s; give a %lld-vector, or leave it absent (rank 0)",
                                op->operands[i].name, (long long)x->shape[1],
                                op->operands[0].name, (long long)x->shape[1]);
    }
    fe_status st = fe_op_same_shape(c, 0, out);
    if (st != FE_OK) return st;
    c->ext[NORM_ROWS] = x->shape[0];
    c->ext[NORM_COLS] = x->shape[1];
    return FE_OK;
}

void fe_norm_operands(const fe_case *c, const fe_operand_decl *decl, int n_vectors,
                      fe_tensor *out) {
    int64_t rc[2] = {c->dims[0], c->dims[1]};
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, rc);
    for (int i = 1; i <= n_vectors; i++)
        out[i] = decl[i].optional && (c->absent & (1u << i))
                     ? (fe_tensor){.rank = 0}
                     : fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &rc[1]);
    out[n_vectors + 1] = out[0];
}
