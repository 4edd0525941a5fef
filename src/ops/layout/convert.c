/* ops/layout/convert.c: Convert, y = x rounded to y's float dtype, between two contiguous
 * tensors of one shape: the declaration, infer, reference, cost and test cases (kernels in
 * kernels.inc). Copy moves bit patterns; Convert changes the dtype: f32, f16 and bf16 in any
 * pair, each value widened to f32 exactly and rounded from there to nearest, ties to even
 * (fe_f32_to_f16, fe_f32_to_bf16: past the largest finite value, infinity; a NaN stays a
 * quiet NaN). The KV cache in f16 is its user: a new key or value row goes from its producer's
 * f32 output into the cache's rows through it. */
#include <string.h>

#include "ops/layout/layout.h"

FE_KERNELS(convert, 1, 8, 16);

#define CONVERT_DTYPES (FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_F16) | FE_DT(FE_DTYPE_BF16))

static const fe_tunable_decl tunables[] = {
    [CONVERT_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, CONVERT_DTYPES, 1, FE_MAX_RANK},
    {"y", FE_OUT, CONVERT_DTYPES, 1, FE_MAX_RANK},
};

/* d0..d3: the shape, axes past the rank are 1 */
static const char *const extents[] = {"d0", "d1", "d2", "d3"};

static const fe_value_decl values[] = {
    {"rows", "d0", 0, "the first rows along axis 0 to convert (later rows of y untouched)", 0,
     0, FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *x = &c->operands[0];
    fe_status st = fe_op_same_shape(c, 0, 1);
    if (st != FE_OK) return st;
    for (int i = 0; i < FE_MAX_RANK; i++) c->ext[i] = i < x->rank ? x->shape[i] : 1;
    return FE_OK;
}

/* For graphs: y takes the shape and dtype of the view it is written into (fe_apply_into,
 * the only way to give a Convert step its output); infer checks the shape at compile. */
static void shape_out(fe_op_ctx *c) {
    c->operands[1] = (fe_tensor){.rank = 0, .dtype = FE_DTYPE_COUNT};
}

static void reference(const fe_args *a, const fe_design *d) {
    const fe_dtype xt = d->dtypes[0], yt = d->dtypes[1];
    const int64_t n = a->v[0] * a->ext[1] * a->ext[2] * a->ext[3];
    for (int64_t i = 0; i < n; i++)
        fe_convert_put(yt, a->t[1].data, i, fe_convert_get(xt, a->t[0].data, i));
}

/* one read of x and one write of y; no arithmetic counted */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double n = (double)a->v[0] * (double)a->ext[1] * (double)a->ext[2] * (double)a->ext[3];
    out->flops = 0;
    out->bytes = n * (double)(fe_dtype_info(d->dtypes[0])->size + fe_dtype_info(d->dtypes[1])->size);
}

/* Test shapes: the case's name starts "X>Y/" (the dtypes, e.g. "f32>f16/"); dims the shape */
static void operands_for(const fe_case *c, const double *params, fe_tensor *out) {
    (void)params;
    fe_dtype xt = FE_DTYPE_F32, yt = FE_DTYPE_F16;
    const char *gt = strchr(c->name, '>'), *slash = strchr(c->name, '/');
    char name[8];
    if (gt && slash && gt > c->name && slash > gt && (size_t)(slash - gt) < sizeof name &&
        (size_t)(gt - c->name) < sizeof name) {
        memcpy(name, c->name, (size_t)(gt - c->name));
        name[gt - c->name] = '\0';
        if (fe_dtype_from_name(name, &xt) != FE_OK) xt = FE_DTYPE_F32;
        memcpy(name, gt + 1, (size_t)(slash - gt - 1));
        name[slash - gt - 1] = '\0';
        if (fe_dtype_from_name(name, &yt) != FE_OK) yt = FE_DTYPE_F16;
    }
    out[0] = fe_tensor_contiguous(NULL, xt, c->n_dims, c->dims);
    out[1] = fe_tensor_contiguous(NULL, yt, c->n_dims, c->dims);
}

static const fe_case cases[] = {
    /* first: the catalog also runs the first case at lengths around each kernel's tile */
    {.name = "f32>f16/7x9", .dims = {7, 9}, .n_dims = 2},
    {.name = "f32>f16/1", .dims = {1}, .n_dims = 1},
    {.name = "f32>f16/kv_rows", .dims = {5, 8, 64}, .n_dims = 3},
    {.name = "f32>f16/wide", .dims = {3, 1000}, .n_dims = 2, .lo = -65000, .hi = 65000},
    {.name = "f32>f16/tiny", .dims = {4, 37}, .n_dims = 2, .lo = -1e-6, .hi = 1e-6},
    {.name = "f16>f32/7x33", .dims = {7, 33}, .n_dims = 2},
    {.name = "f32>bf16/9x17", .dims = {9, 17}, .n_dims = 2},
    {.name = "bf16>f32/3x5x7", .dims = {3, 5, 7}, .n_dims = 3},
    {.name = "f16>bf16/2x3x4x5", .dims = {2, 3, 4, 5}, .n_dims = 4},
    {.name = "f32>f32/33x65", .dims = {33, 65}, .n_dims = 2},
    {.name = "f32>f16/64MiB", .dims = {4096, 4096}, .n_dims = 2, .extensive = true,
     .bench = true},
};

FE_OP_DEFINE(convert) {
    .name = "Convert",
    .summary = "y = x rounded to y's dtype (f32, f16, bf16; to nearest, ties to even), one "
               "contiguous shape; the first rows along axis 0",
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .shape_out = shape_out,
    .reference = reference,
    .kernels = convert_kernels, .n_kernels = FE_COUNT(convert_kernels),
    .cost = cost,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 0, .atol = 0,
    .roof = FE_ROOF_TRIAD,
};
