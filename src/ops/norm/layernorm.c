/* ops/norm/layernorm.c: LayerNorm, y = (x - mean) / sqrt(var + eps) * weight + bias along
 * each row of a (rows, cols) f32 matrix (biased variance); weight and bias (cols each) are
 * optional (absent: no scaling / no shift). */
#include <math.h>

#include "ops/norm/norm.h"

FE_KERNELS(norm_layernorm, 4, 32, 64);

static const fe_param_decl params[] = {
    {"eps", FE_PARAM_FLOAT, 1e-5, 0, 1, NULL, "added to the variance before the sqrt"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2},
    {"weight", FE_IN, FE_DT(FE_DTYPE_F32), 1, 1, .optional = true, .draw_lo = 0.5,
     .draw_hi = 1.5},
    {"bias", FE_IN, FE_DT(FE_DTYPE_F32), 1, 1, .optional = true, .draw_lo = -1,
     .draw_hi = 1},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 2, 2},
};

static void reference(const fe_args *args, const fe_design *d) {
    int64_t cols = args->ext[NORM_COLS];
    const float *w = args->t[1].rank ? args->t[1].data : NULL;
    const float *b = args->t[2].rank ? args->t[2].data : NULL;
    for (int64_t r = 0; r < args->v[NORM_V_ROWS]; r++) {
        const float *x = (const float *)args->t[0].data + r * cols;
        float *y = (float *)args->t[3].data + r * cols;
        double sum = 0, ss = 0;
        for (int64_t c = 0; c < cols; c++) sum += x[c];
        double mean = sum / (double)cols;
        for (int64_t c = 0; c < cols; c++) ss += (x[c] - mean) * (x[c] - mean);
        double rstd = 1.0 / sqrt(ss / (double)cols + d->params[0]);
        for (int64_t c = 0; c < cols; c++)
            y[c] = (float)((x[c] - mean) * rstd * (w ? w[c] : 1.0) + (b ? b[c] : 0.0));
    }
}

/* per element: sum (1), centre and square-add (3), centre, scale and shift (3) */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double rows = (double)a->v[NORM_V_ROWS], cols = (double)a->ext[NORM_COLS];
    int vectors = d->present[1] + d->present[2];
    out->flops = rows * cols * 7.0;
    out->bytes = rows * cols * 8.0 + vectors * cols * 4.0;
}

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_norm_operands(c, operands, 2, out);
}

static const fe_case cases[] = {
    {.name = "small", .dims = {3, 100}, .n_dims = 2},
    {.name = "odd", .dims = {5, 576}, .n_dims = 2},
    {.name = "row", .dims = {1, 2048}, .n_dims = 2},
    {.name = "eps", .dims = {4, 300}, .n_dims = 2, .params = {{"eps", 0.01}}, .n_params = 1,
     .lo = -0.1, .hi = 0.1},
    {.name = "shifted", .dims = {3, 513}, .n_dims = 2, .lo = -1, .hi = 5},
    {.name = "no_bias", .dims = {2, 130}, .n_dims = 2, .absent = 1u << 2},
    {.name = "no_weight_no_bias", .dims = {6, 257}, .n_dims = 2, .absent = 1u << 1 | 1u << 2},
    {.name = "64MiB", .dims = {8192, 2048}, .n_dims = 2, .extensive = true, .bench = true},
};

FE_OP_DEFINE(layernorm) {
    .name = "LayerNorm",
    .summary = "y = (x - mean) / sqrt(var + eps) * weight + bias along rows; weight, bias optional",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = fe_norm_tunables, .n_tunables = 3,
    .resolve = fe_norm_resolve,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_norm_extents, .n_extents = 2,
    .values = fe_norm_values, .n_values = 1,
    .infer = fe_norm_infer,
    .reference = reference,
    .kernels = norm_layernorm_kernels, .n_kernels = FE_COUNT(norm_layernorm_kernels),
    .cost = cost,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-5, .atol = 1e-6,
    .roof = FE_ROOF_READ,
};
