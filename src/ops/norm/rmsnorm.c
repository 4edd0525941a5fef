/* ops/norm/rmsnorm.c: RMSNorm, y = x / sqrt(mean(x^2) + eps) * weight along each row of a
 * (rows, cols) f32 matrix; weight (cols) is optional (absent: no scaling). */
#include <math.h>

#include "ops/norm/norm.h"

FE_KERNELS(norm_rmsnorm, 4, 32, 64);

static const fe_param_decl params[] = {
    {"eps", FE_PARAM_FLOAT, 1e-5, 0, 1, NULL, "added to the mean square before the sqrt"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2},
    {"weight", FE_IN, FE_DT(FE_DTYPE_F32), 1, 1, .optional = true, .draw_lo = 0.5,
     .draw_hi = 1.5},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 2, 2},
};

static void reference(const fe_args *args, const fe_design *d) {
    int64_t cols = args->ext[NORM_COLS];
    const float *w = args->t[1].rank ? args->t[1].data : NULL;
    for (int64_t r = 0; r < args->v[NORM_V_ROWS]; r++) {
        const float *x = (const float *)args->t[0].data + r * cols;
        float *y = (float *)args->t[2].data + r * cols;
        double ss = 0;
        for (int64_t c = 0; c < cols; c++) ss += (double)x[c] * x[c];
        double inv = 1.0 / sqrt(ss / (double)cols + d->params[0]);
        for (int64_t c = 0; c < cols; c++) y[c] = (float)(x[c] * inv * (w ? w[c] : 1.0));
    }
}

/* per element: square and add (2), scale (1), weight (1) */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double rows = (double)a->v[NORM_V_ROWS], cols = (double)a->ext[NORM_COLS];
    out->flops = rows * cols * (d->present[1] ? 4.0 : 3.0);
    out->bytes = rows * cols * 8.0 + (d->present[1] ? cols * 4.0 : 0.0);
}

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_norm_operands(c, operands, 1, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {3, 100}, .n_dims = 2},
    {.name = "odd", .dims = {5, 576}, .n_dims = 2},
    {.name = "row", .dims = {1, 2048}, .n_dims = 2},
    {.name = "eps", .dims = {4, 300}, .n_dims = 2, .params = {{"eps", 0.01}}, .n_params = 1,
     .lo = -0.1, .hi = 0.1},
    {.name = "no_weight", .dims = {6, 257}, .n_dims = 2, .absent = 1u << 1},
    {.name = "64MiB", .dims = {8192, 2048}, .n_dims = 2, .extensive = true, .bench = true},
};

FE_OP_DEFINE(rmsnorm) {
    .name = "RMSNorm",
    .summary = "y = x / sqrt(mean(x^2) + eps) * weight along rows; weight optional",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_norm_tunables, .n_tunables = 3,
    .resolve = fe_norm_resolve,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_norm_extents, .n_extents = 2,
    .values = fe_norm_values, .n_values = 1,
    .infer = fe_norm_infer,
    .reference = reference,
    .kernels = norm_rmsnorm_kernels, .n_kernels = FE_COUNT(norm_rmsnorm_kernels),
    .cost = cost,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-5, .atol = 1e-6,
    .roof = FE_ROOF_READ,
};
