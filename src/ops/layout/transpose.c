/* ops/layout/transpose.c: Transpose, y = x with its last two axes swapped, x (..., R, C) ->
 * y (..., C, R), contiguous: the declaration, infer, reference, cost and test cases (kernels
 * in kernels.inc). */
#include <string.h>

#include "ops/layout/layout.h"

FE_KERNELS(transpose, 1, 8, 16);

static const fe_tunable_decl tunables[] = {
    [TR_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [TR_BLOCK] = {"block",
                  {.kind = FE_DOMAIN_CHOICES, .choices = {8, 16, 32, 64}, .n_choices = 4}, 32,
                  true, "tile edge in elements: workers take block x block tiles"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_LAYOUT_DTYPES, 2, FE_MAX_RANK},
    {"y", FE_OUT, FE_LAYOUT_DTYPES, 2, FE_MAX_RANK},
};

/* batch: the product of the leading axes (1 at rank 2); R, C: x's last two axes */
static const char *const extents[] = {"batch", "R", "C"};

static const fe_value_decl values[] = {
    {"batches", "batch", 0, "the first matrices (leading axes flattened) to transpose", 0, 0,
     FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *x = &c->operands[0], *y = &c->operands[1];
    if (x->dtype != y->dtype)
        return fe_op_refuse(c, FE_E_DTYPE, "x is %s but y is %s: Transpose moves bytes and does "
                            "not convert; give y the dtype of x", fe_dtype_info(x->dtype)->name,
                            fe_dtype_info(y->dtype)->name);
    fe_tensor want = *x;
    const int r = x->rank;
    want.shape[r - 2] = x->shape[r - 1];
    want.shape[r - 1] = x->shape[r - 2];
    bool same = y->rank == r;
    for (int i = 0; same && i < r; i++) same = y->shape[i] == want.shape[i];
    if (!same) {
        char sx[96], sy[96], sw[96];
        fe_shape_format(x->rank, x->shape, sx, sizeof sx);
        fe_shape_format(y->rank, y->shape, sy, sizeof sy);
        fe_shape_format(want.rank, want.shape, sw, sizeof sw);
        return fe_op_refuse(c, FE_E_SHAPE, "x has shape %s but y has %s: y must be x with its "
                            "last two axes swapped, (..., R, C) -> (..., C, R); give y the "
                            "shape %s", sx, sy, sw);
    }
    int64_t batch = 1;
    for (int i = 0; i < r - 2; i++) batch *= x->shape[i];
    c->ext[0] = batch;
    c->ext[1] = x->shape[r - 2];
    c->ext[2] = x->shape[r - 1];
    return FE_OK;
}

static void reference(const fe_args *a, const fe_design *d) {
    const int64_t es = (int64_t)fe_dtype_info(d->dtypes[0])->size;
    const int64_t R = a->ext[1], C = a->ext[2];
    const char *x = a->t[0].data;
    char *y = a->t[1].data;
    for (int64_t b = 0; b < a->v[0]; b++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++)
                memcpy(y + ((b * C + c) * R + r) * es, x + ((b * R + r) * C + c) * es,
                       (size_t)es);
}

static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double n = (double)a->v[0] * (double)a->ext[1] * (double)a->ext[2];
    out->flops = 0;
    out->bytes = 2.0 * n * (double)fe_dtype_info(d->dtypes[0])->size;
}

/* x contiguous with the case's shape; y contiguous with the last two axes swapped. The dtype
 * comes from the case's variant (layout.h); layout bits are ignored (both contiguous). */
static void operands_for(const fe_case *c, const double *params, fe_tensor *out) {
    (void)params;
    const fe_dtype dt = fe_layout_case_dtype(c);
    const int rank = c->n_dims;
    int64_t ys[FE_MAX_RANK];
    memcpy(ys, c->dims, sizeof ys);
    ys[rank - 2] = c->dims[rank - 1];
    ys[rank - 1] = c->dims[rank - 2];
    out[0] = fe_tensor_contiguous(NULL, dt, rank, c->dims);
    out[1] = fe_tensor_contiguous(NULL, dt, rank, ys);
}

#define V FE_LAYOUT_VARIANT
static const fe_case cases[] = {
    /* first: the catalog also runs the first case at lengths around each kernel's tile */
    {.name = "7x9", .dims = {7, 9}, .n_dims = 2},
    {.name = "1x1", .dims = {1, 1}, .n_dims = 2},
    {.name = "17x33 bf16", .dims = {17, 33, 0, V(FE_DTYPE_BF16, 0)}, .n_dims = 2},
    {.name = "100x3 i8", .dims = {100, 3, 0, V(FE_DTYPE_I8, 0)}, .n_dims = 2},
    {.name = "64x64", .dims = {64, 64}, .n_dims = 2},
    {.name = "3x17x33 i32", .dims = {3, 17, 33, V(FE_DTYPE_I32, 0)}, .n_dims = 3},
    {.name = "2x3x5x7", .dims = {2, 3, 5, 7}, .n_dims = 4},
    {.name = "33x65 tile edge", .dims = {33, 65}, .n_dims = 2},
    {.name = "31x47 f16", .dims = {31, 47, 0, V(FE_DTYPE_F16, 0)}, .n_dims = 2},
    {.name = "130x66 u8", .dims = {130, 66, 0, V(FE_DTYPE_U8, 0)}, .n_dims = 2},
    {.name = "2x100x200", .dims = {2, 100, 200}, .n_dims = 3},
    {.name = "64MiB", .dims = {4096, 4096}, .n_dims = 2, .extensive = true, .bench = true},
};
#undef V

FE_OP_DEFINE(transpose) {
    .name = "Transpose",
    .summary = "y = x with the last two axes swapped: (..., R, C) -> (..., C, R)",
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .reference = reference,
    .kernels = transpose_kernels, .n_kernels = FE_COUNT(transpose_kernels),
    .cost = cost,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 0, .atol = 0,
    .roof = FE_ROOF_TRIAD,
};
