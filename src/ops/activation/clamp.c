/* ops/activation/clamp.c: Clamp, y = min(max(x, min), max), elementwise over an f32 tensor. */
#include "ops/activation/activation.h"

FE_KERNELS(clamp, 1, 8, 16);
FE_ACT_OPERANDS;

enum { P_MIN, P_MAX };

static const fe_param_decl params[] = {
    [P_MIN] = {"min", FE_PARAM_FLOAT, -1.0, 1, 0, NULL, "the lower bound"},
    [P_MAX] = {"max", FE_PARAM_FLOAT, 1.0, 1, 0, NULL, "the upper bound (at least min)"},
};

static fe_status infer(fe_op_ctx *c) {
    if (c->params[P_MIN] > c->params[P_MAX])
        return fe_op_refuse(c, FE_E_INVALID, "param min = %g is above max = %g; min must not "
                            "exceed max: give min <= max", c->params[P_MIN], c->params[P_MAX]);
    return fe_elementwise_flat_infer(c);
}

static void reference(const fe_args *args, const fe_design *d) {
    const float *x = args->t[0].data;
    float *y = args->t[1].data;
    double lo = d->params[P_MIN], hi = d->params[P_MAX];
    for (int64_t i = 0; i < args->v[0]; i++) {
        double v = x[i];
        y[i] = (float)(v < lo ? lo : v > hi ? hi : v);
    }
}

static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    (void)d;
    fe_activation_cost(a, 2, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {1000}, .n_dims = 1, .lo = -3, .hi = 3},
    {.name = "bounds", .dims = {1000}, .n_dims = 1, .params = {{"min", -0.3}, {"max", 2.5}},
     .n_params = 2, .lo = -3, .hi = 3},
    {.name = "64MiB", .dims = {(int64_t)16 << 20}, .n_dims = 1, .extensive = true, .bench = true},
};

FE_OP_DEFINE(clamp) {
    .name = "Clamp",
    .summary = "y = min(max(x, min), max), elementwise",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_flat_extents, .n_extents = 1,
    .values = fe_elementwise_flat_values, .n_values = 1,
    .infer = infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = clamp_kernels, .n_kernels = FE_COUNT(clamp_kernels),
    .cost = cost,
    .operands_for = fe_activation_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 0, .atol = 0,
    .roof = FE_ROOF_TRIAD,
};
