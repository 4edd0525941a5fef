/* ops/activation/silu.c: SiLU (swish), y = x * sigmoid(x), elementwise over an f32 tensor. */
#include <math.h>

#include "ops/activation/activation.h"

FE_KERNELS(silu, 1, 8, 16);
FE_ACT_OPERANDS;

static void reference(const fe_args *args, const fe_design *d) {
    (void)d;
    const float *x = args->t[0].data;
    float *y = args->t[1].data;
    for (int64_t i = 0; i < args->v[0]; i++) {
        double v = x[i];
        y[i] = (float)(v / (1.0 + exp(-v)));
    }
}

static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    (void)d;
    fe_activation_cost(a, 20, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {1000}, .n_dims = 1, .lo = -20, .hi = 20},
    {.name = "64MiB", .dims = {(int64_t)16 << 20}, .n_dims = 1, .extensive = true, .bench = true},
};

FE_OP_DEFINE(silu) {
    .name = "SiLU",
    .summary = "y = x * sigmoid(x), elementwise",
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_flat_extents, .n_extents = 1,
    .values = fe_elementwise_flat_values, .n_values = 1,
    .infer = fe_elementwise_flat_infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = silu_kernels, .n_kernels = FE_COUNT(silu_kernels),
    .cost = cost,
    .operands_for = fe_activation_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-5, .atol = 1e-6,
    .roof = FE_ROOF_TRIAD,
};
