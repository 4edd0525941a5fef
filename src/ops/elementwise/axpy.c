/* ops/elementwise/axpy.c: AXPY, y = alpha * x + b over same-shaped f32 tensors (y may be b). */
#include "ops/elementwise/elementwise.h"

FE_KERNELS(axpy, 1, 8, 16);

static const fe_param_decl params[] = {
    {"alpha", FE_PARAM_FLOAT, 1.0, 1, 0, NULL, "the scale of x"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},
    {"b", FE_IN, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},
};

static void reference(const fe_args *args, const fe_design *d) {
    const float *x = args->t[0].data, *b = args->t[1].data;
    float *y = args->t[2].data;
    for (int64_t i = 0; i < args->v[0]; i++) y[i] = (float)(d->params[0] * x[i] + b[i]);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {1000}, .n_dims = 1, .params = {{"alpha", -0.75}}, .n_params = 1},
    {.name = "64MiB", .dims = {(int64_t)16 << 20}, .n_dims = 1, .params = {{"alpha", 0.5}},
     .n_params = 1, .extensive = true, .bench = true},
};

FE_OP_DEFINE(axpy) {
    .name = "AXPY",
    .summary = "y = alpha * x + b, elementwise",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_flat_extents, .n_extents = 1,
    .values = fe_elementwise_flat_values, .n_values = 1,
    .infer = fe_elementwise_flat_infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = axpy_kernels, .n_kernels = FE_COUNT(axpy_kernels),
    .cost = fe_elementwise_flat_cost,
    .operands_for = fe_elementwise_flat3_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-6, .atol = 1e-7,
};
