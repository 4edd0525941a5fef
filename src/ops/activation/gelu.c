/* ops/activation/gelu.c: GELU, y = x * Phi(x) in its tanh or erf form, elementwise over f32. */
#include <math.h>

#include "ops/activation/activation.h"

FE_KERNELS(gelu, 1, 8, 16);
FE_ACT_OPERANDS;

static const char *const forms[] = {"tanh", "erf", NULL};

static const fe_param_decl params[] = {
    {"form", FE_PARAM_CHOICE, 0, 1, 0, forms,
     "tanh: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); erf: 0.5x(1 + erf(x/sqrt2))"},
};

static void reference(const fe_args *args, const fe_design *d) {
    const float *x = args->t[0].data;
    float *y = args->t[1].data;
    bool erf_form = d->params[0] == 1;
    for (int64_t i = 0; i < args->v[0]; i++) {
        double v = x[i];
        double phi = erf_form ? 0.5 * (1.0 + erf(v / sqrt(2.0)))
                              : 0.5 * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        y[i] = (float)(v * phi);
    }
}

static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    fe_activation_cost(a, d->params[0] == 1 ? 25 : 22, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {1000}, .n_dims = 1, .lo = -20, .hi = 20},
    {.name = "erf", .dims = {1000}, .n_dims = 1, .params = {FE_CHOICE("form", "erf")}, .n_params = 1,
     .lo = -20, .hi = 20},
    {.name = "64MiB", .dims = {(int64_t)16 << 20}, .n_dims = 1, .extensive = true, .bench = true},
};

FE_OP_DEFINE(gelu) {
    .name = "GELU",
    .summary = "y = x * Phi(x) (tanh or erf form), elementwise",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_flat_extents, .n_extents = 1,
    .values = fe_elementwise_flat_values, .n_values = 1,
    .infer = fe_elementwise_flat_infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = gelu_kernels, .n_kernels = FE_COUNT(gelu_kernels),
    .cost = cost,
    .operands_for = fe_activation_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-5, .atol = 1e-6,
    .roof = FE_ROOF_TRIAD,
};
