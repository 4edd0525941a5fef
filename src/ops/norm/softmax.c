/* ops/norm/softmax.c: Softmax, y = softmax(scale * x) along each row of a (rows, cols) f32
 * matrix, over the first valid_cols columns (a per-call value); later columns are written 0.
 * Numerically stable: the row max is subtracted before e^. */
#include <math.h>

#include "ops/norm/norm.h"

FE_KERNELS(norm_softmax, 4, 32, 64);

static const fe_param_decl params[] = {
    {"scale", FE_PARAM_FLOAT, 1.0, 1, 0, NULL,
     "multiplies x before the softmax (e.g. 1/sqrt(head_dim)); any finite number"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 2, 2},
};

static void reference(const fe_args *args, const fe_design *d) {
    int64_t cols = args->ext[NORM_COLS], n = args->v[NORM_V_VALID];
    double scale = d->params[0];
    for (int64_t r = 0; r < args->v[NORM_V_ROWS]; r++) {
        const float *x = (const float *)args->t[0].data + r * cols;
        float *y = (float *)args->t[1].data + r * cols;
        double m = -INFINITY, sum = 0;
        for (int64_t c = 0; c < n; c++) m = fmax(m, scale * x[c]);
        for (int64_t c = 0; c < n; c++) sum += exp(scale * x[c] - m);
        for (int64_t c = 0; c < n; c++) y[c] = (float)(exp(scale * x[c] - m) / sum);
        for (int64_t c = n; c < cols; c++) y[c] = 0.0f;
    }
}

/* per element: scale, max, subtract, e^ (counted as one), sum, normalise */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    (void)d;
    double rows = (double)a->v[NORM_V_ROWS], n = (double)a->v[NORM_V_VALID];
    out->flops = rows * n * 6.0;
    out->bytes = rows * (n + (double)a->ext[NORM_COLS]) * 4.0; /* read valid x, write all y */
}

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_norm_operands(c, operands, 0, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {3, 100}, .n_dims = 2},
    {.name = "odd", .dims = {5, 576}, .n_dims = 2},
    {.name = "row", .dims = {1, 2048}, .n_dims = 2},
    {.name = "scaled", .dims = {7, 333}, .n_dims = 2, .params = {{"scale", 0.125}},
     .n_params = 1},
    {.name = "sharp", .dims = {4, 1000}, .n_dims = 2, .params = {{"scale", 4.0}},
     .n_params = 1, .lo = -10, .hi = 10},
    {.name = "negative_scale", .dims = {2, 77}, .n_dims = 2, .params = {{"scale", -0.5}},
     .n_params = 1},
    {.name = "64MiB", .dims = {8192, 2048}, .n_dims = 2, .extensive = true, .bench = true},
};

FE_OP_DEFINE(softmax) {
    .name = "Softmax",
    .summary = "y = softmax(scale * x) along rows, over the first valid_cols columns",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_norm_tunables, .n_tunables = 3,
    .resolve = fe_norm_resolve,
    .workspace = fe_norm_softmax_workspace,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_norm_extents, .n_extents = 2,
    .values = fe_norm_values, .n_values = 2,
    .infer = fe_norm_infer,
    .reference = reference,
    .kernels = norm_softmax_kernels, .n_kernels = FE_COUNT(norm_softmax_kernels),
    .cost = cost,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-5, .atol = 1e-6,
    .roof = FE_ROOF_READ,
};
