/* ops/layout/copy.c: Copy, y = x between two strided views of the same shape and dtype: the
 * declaration, infer, reference, cost and test cases (kernels in kernels.inc). */
#include <string.h>

#include "ops/layout/layout.h"

FE_KERNELS(copy, 1, 8, 16);

static const fe_tunable_decl tunables[] = {
    [COPY_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_LAYOUT_DTYPES, 1, FE_MAX_RANK, .strided = true},
    {"y", FE_OUT, FE_LAYOUT_DTYPES, 1, FE_MAX_RANK, .strided = true},
};

/* d0..d3: the shape, axes past the rank are 1 */
static const char *const extents[] = {"d0", "d1", "d2", "d3"};

static const fe_value_decl values[] = {
    {"rows", "d0", 0, "the first rows along axis 0 to copy", 0, 0, FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *x = &c->operands[0], *y = &c->operands[1];
    if (x->dtype != y->dtype)
        return fe_op_refuse(c, FE_E_DTYPE, "x is %s but y is %s: Copy moves bytes and does not "
                            "convert; give y the dtype of x", fe_dtype_info(x->dtype)->name,
                            fe_dtype_info(y->dtype)->name);
    bool same = x->rank == y->rank;
    for (int i = 0; same && i < x->rank; i++) same = x->shape[i] == y->shape[i];
    if (!same) {
        char sx[96], sy[96];
        fe_shape_format(x->rank, x->shape, sx, sizeof sx);
        fe_shape_format(y->rank, y->shape, sy, sizeof sy);
        return fe_op_refuse(c, FE_E_SHAPE, "x has shape %s but y has %s: Copy keeps the shape; "
                            "give y the shape %s (its strides may differ; use Transpose to "
                            "swap axes)", sx, sy, sx);
    }
    for (int i = 0; i < FE_MAX_RANK; i++) c->ext[i] = i < x->rank ? x->shape[i] : 1;
    return FE_OK;
}

static void reference(const fe_args *a, const fe_design *d) {
    const fe_tensor *x = &a->t[0], *y = &a->t[1];
    const size_t es = fe_dtype_info(d->dtypes[0])->size;
    int64_t s[FE_MAX_RANK] = {1, 1, 1, 1}, xs[FE_MAX_RANK] = {0}, ys[FE_MAX_RANK] = {0};
    for (int i = 0; i < x->rank; i++) {
        s[i] = i == 0 ? a->v[0] : x->shape[i];
        xs[i] = x->stride[i];
        ys[i] = y->stride[i];
    }
    const char *px = x->data;
    char *py = y->data;
    for (int64_t i0 = 0; i0 < s[0]; i0++)
        for (int64_t i1 = 0; i1 < s[1]; i1++)
            for (int64_t i2 = 0; i2 < s[2]; i2++)
                for (int64_t i3 = 0; i3 < s[3]; i3++) {
                    int64_t ox = i0 * xs[0] + i1 * xs[1] + i2 * xs[2] + i3 * xs[3];
                    int64_t oy = i0 * ys[0] + i1 * ys[1] + i2 * ys[2] + i3 * ys[3];
                    memcpy(py + oy * (int64_t)es, px + ox * (int64_t)es, es);
                }
}

static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double n = (double)a->v[0] * (double)a->ext[1] * (double)a->ext[2] * (double)a->ext[3];
    out->flops = 0;
    out->bytes = 2.0 * n * (double)fe_dtype_info(d->dtypes[0])->size;
}

/* x and y from the case's shape and variant (layout.h): contiguous unless the layout bits say
 * otherwise; strides stay in elements, non-negative, and y never overlaps itself. */
static void operands_for(const fe_case *c, const double *params, fe_tensor *out) {
    (void)params;
    const fe_dtype dt = fe_layout_case_dtype(c);
    const int lay = fe_layout_case_layout(c), rank = c->n_dims;
    fe_tensor x = fe_tensor_contiguous(NULL, dt, rank, c->dims), y = x;
    if (lay & FE_LAYOUT_X_PADDED) {
        if (rank == 1) {
            x.stride[0] = 3;
        } else {
            int64_t s = 1;
            for (int i = rank - 1; i >= 0; i--) {
                x.stride[i] = s;
                s *= i == rank - 1 ? x.shape[i] + 7 : x.shape[i];
            }
        }
    }
    if (lay & FE_LAYOUT_X_BCAST0) x.stride[0] = 0;
    if (lay & FE_LAYOUT_X_STEP2)
        for (int i = 0; i < rank; i++) x.stride[i] *= 2;
    if (lay & FE_LAYOUT_Y_COLMAJOR) {
        int64_t s = 1;
        for (int i = 0; i < rank; i++) {
            y.stride[i] = s;
            s *= y.shape[i];
        }
    }
    out[0] = x;
    out[1] = y;
}

#define V FE_LAYOUT_VARIANT
static const fe_case cases[] = {
    /* first: the catalog also runs the first case at lengths around each kernel's tile */
    {.name = "7x9 x-slice", .dims = {7, 9, 0, V(FE_DTYPE_F32, FE_LAYOUT_X_PADDED)},
     .n_dims = 2},
    {.name = "1x1", .dims = {1, 1}, .n_dims = 2},
    {.name = "7x9", .dims = {7, 9}, .n_dims = 2},
    {.name = "17x33 bf16 x-slice", .dims = {17, 33, 0, V(FE_DTYPE_BF16, FE_LAYOUT_X_PADDED)},
     .n_dims = 2},
    {.name = "100x3 i8 y-colmajor", .dims = {100, 3, 0, V(FE_DTYPE_I8, FE_LAYOUT_Y_COLMAJOR)},
     .n_dims = 2},
    {.name = "64x64 f16 x-slice y-colmajor",
     .dims = {64, 64, 0, V(FE_DTYPE_F16, FE_LAYOUT_X_PADDED | FE_LAYOUT_Y_COLMAJOR)},
     .n_dims = 2},
    {.name = "257 i32 stride 3", .dims = {257, 0, 0, V(FE_DTYPE_I32, FE_LAYOUT_X_PADDED)},
     .n_dims = 1},
    {.name = "3x5x67 u8", .dims = {3, 5, 67, V(FE_DTYPE_U8, 0)}, .n_dims = 3},
    {.name = "2x3x5x7", .dims = {2, 3, 5, 7}, .n_dims = 4},
    {.name = "9x130 i8 x-slice", .dims = {9, 130, 0, V(FE_DTYPE_I8, FE_LAYOUT_X_PADDED)},
     .n_dims = 2},
    {.name = "5x70 u8 x-broadcast", .dims = {5, 70, 0, V(FE_DTYPE_U8, FE_LAYOUT_X_BCAST0)},
     .n_dims = 2},
    {.name = "4x6x100 bf16 x-step2", .dims = {4, 6, 100, V(FE_DTYPE_BF16, FE_LAYOUT_X_STEP2)},
     .n_dims = 3},
    {.name = "33x65 tile edge", .dims = {33, 65}, .n_dims = 2},
    {.name = "1x100003 i8 one row", .dims = {1, 100003, 0, V(FE_DTYPE_I8, 0)}, .n_dims = 2},
    {.name = "64MiB", .dims = {4096, 4096}, .n_dims = 2, .extensive = true, .bench = true},
};
#undef V

FE_OP_DEFINE(copy) {
    .name = "Copy",
    .summary = "y = x between strided views of one shape and dtype (bytes copied exactly)",
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .reference = reference,
    .kernels = copy_kernels, .n_kernels = FE_COUNT(copy_kernels),
    .cost = cost,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 0, .atol = 0,
    .roof = FE_ROOF_TRIAD,
};
