/* ops/activation/leaky_relu.c: LeakyReLU, y = x < 0 ? alpha x : x, elementwise over f32. */
#include "ops/activation/activation.h"

FE_KERNELS(leaky_relu, 1, 8, 16);
FE_ACT_OPERANDS;

static const fe_param_decl params[] = {
    {"alpha", FE_PARAM_FLOAT, 0.01, 1, 0, NULL, "the slope for negative x"},
};

static void reference(const fe_args *args, const fe_design *d) {
    const float *x = args->t[0].data;
    float *y = args->t[1].data;
    double alpha = d->params[0];
    for (int64_t i = 0; i < args->v[0]; i++) {
        double v = x[i];
        y[i] = (float)(v < 0 ? alpha * v : v);
    }
}

static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    (void)d;
    fe_activation_cost(a, 2, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {1000}, .n_dims = 1, .lo = -5, .hi = 5},
    {.name = "slope", .dims = {1000}, .n_dims = 1, .params = {{"alpha", 0.2}}, .n_params = 1,
     .lo = -5, .hi = 5},
    {.name = "64MiB", .dims = {(int64_t)16 << 20}, .n_dims = 1, .extensive = true, .bench = true},
};

FE_OP_DEFINE(leaky_relu) {
    .name = "LeakyReLU",
    .summary = "y = x < 0 ? alpha * x : x, elementwise",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_flat_extents, .n_extents = 1,
    .values = fe_elementwise_flat_values, .n_values = 1,
    .infer = fe_elementwise_flat_infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = leaky_relu_kernels, .n_kernels = FE_COUNT(leaky_relu_kernels),
    .cost = cost,
    .operands_for = fe_activation_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-6, .atol = 0,
    .roof = FE_ROOF_TRIAD,
};
