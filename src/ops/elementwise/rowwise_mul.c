/* ops/elementwise/rowwise_mul.c: RowwiseMul, y[r, c] = x[r, c] * b[c]: a (cols) vector applied to each row. */
#include "ops/elementwise/elementwise.h"

FE_KERNELS(rowwise_mul, 1, 8, 16);

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2},
    {"b", FE_IN, FE_DT(FE_DTYPE_F32), 1, 1},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 2, 2},
};

static void reference(const fe_args *args, const fe_design *d) {
    (void)d;
    int64_t cols = args->ext[1];
    const float *b = args->t[1].data;
    for (int64_t r = 0; r < args->v[0]; r++) {
        const float *x = (const float *)args->t[0].data + r * cols;
        float *y = (float *)args->t[2].data + r * cols;
        for (int64_t c = 0; c < cols; c++) y[c] = (float)((double)x[c] * b[c]);
    }
}

static const fe_case cases[] = {
    {.name = "small", .dims = {7, 100}, .n_dims = 2},
    {.name = "hidden", .dims = {64, 2048}, .n_dims = 2},
    {.name = "64MiB", .dims = {8192, 2048}, .n_dims = 2, .extensive = true, .bench = true},
};

FE_OP_DEFINE(rowwise_mul) {
    .name = "RowwiseMul",
    .summary = "y[r, c] = x[r, c] * b[c]",
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_row_extents, .n_extents = 2,
    .values = fe_elementwise_row_values, .n_values = 1,
    .infer = fe_elementwise_row_infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = rowwise_mul_kernels, .n_kernels = FE_COUNT(rowwise_mul_kernels),
    .cost = fe_elementwise_row_cost,
    .operands_for = fe_elementwise_row_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-6, .atol = 0,
};
