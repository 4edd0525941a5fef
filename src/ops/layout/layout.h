/* ops/layout/layout.h: what the layout family shares (Copy, Transpose, Convert): tunable
 * indices, the normalised copy plan the Copy kernels walk, and the test-case encoding.
 *
 * Copy and Transpose move bytes and never convert: any dtype in {f32, bf16, f16, i32, i8,
 * u8}, the same dtype on both sides, bit patterns copied exactly. Convert (convert.c) is the
 * one that changes a dtype. Kernels live in kernels.inc, compiled per ISA by the Makefile
 * (kernels.<isa>.o). No op supports x and y overlapping, nor a y view that overlaps itself
 * (a stride-0 axis in y): the result would depend on the worker split. */
#ifndef FE_OPS_LAYOUT_H
#define FE_OPS_LAYOUT_H

#include "ops/op.h"

#define FE_LAYOUT_DTYPES                                                                   \
    (FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_BF16) | FE_DT(FE_DTYPE_F16) |                   \
     FE_DT(FE_DTYPE_I32) | FE_DT(FE_DTYPE_I8) | FE_DT(FE_DTYPE_U8))

enum { COPY_WIDTH };
enum { CONVERT_WIDTH };

/* Convert's values one at a time (its reference, and its kernels' tails and other pairs):
 * element i of p in dtype dt (f32, f16 or bf16) as f32, exactly; f rounded into it */
static inline float fe_convert_get(fe_dtype dt, const void *p, int64_t i) {
    if (dt == FE_DTYPE_F16) return fe_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == FE_DTYPE_BF16) return fe_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}
static inline void fe_convert_put(fe_dtype dt, void *p, int64_t i, float f) {
    if (dt == FE_DTYPE_F16) ((uint16_t *)p)[i] = fe_f32_to_f16(f);
    else if (dt == FE_DTYPE_BF16) ((uint16_t *)p)[i] = fe_f32_to_bf16(f);
    else ((float *)p)[i] = f;
}
enum { TR_WIDTH, TR_BLOCK };

/* Test cases. A layout case's shape is dims[0 .. n_dims-1]. Params cannot carry the dtype
 * (they are part of the design key and would duplicate the operand dtype, and users would
 * have to repeat it), so when n_dims < FE_MAX_RANK the otherwise unused last slot,
 * dims[FE_MAX_RANK - 1], holds a test variant: FE_LAYOUT_VARIANT(dtype, layout bits). A
 * rank-4 case has no spare slot and is f32, contiguous. Transpose reads only the dtype. */
enum {
    FE_LAYOUT_X_PADDED = 1,   /* x a column slice of a wider parent: last-axis pitch + 7
                                 (rank 1: stride 3) */
    FE_LAYOUT_Y_COLMAJOR = 2, /* y column-major: strides (1, d0, d0*d1, ...) */
    FE_LAYOUT_X_BCAST0 = 4,   /* x broadcast along axis 0 (stride 0) */
    FE_LAYOUT_X_STEP2 = 8,    /* x strides doubled: every other element */
};
#define FE_LAYOUT_VARIANT(dtype, layout) ((int64_t)(dtype) + 8 * (int64_t)(layout))
fe_dtype fe_layout_case_dtype(const fe_case *c);
int fe_layout_case_layout(const fe_case *c);

/* A Copy's bounded view, normalised: size-1 axes dropped, axes ordered by y stride (largest
 * first, so rows write sequentially), and neighbours merged where they form one run on both
 * sides. What is left is `rows` rows (up to 3 outer axes) of `n` elements. */
typedef struct fe_copy_plan {
    int64_t es;             /* bytes per element */
    int n_outer;            /* 0..3 */
    int64_t outer[3];       /* outer axis sizes, outermost first */
    int64_t xo[3], yo[3];   /* their strides, in bytes */
    int64_t n;              /* elements per row; 0 when there is nothing to copy */
    int64_t xi, yi;         /* the row's strides, in elements */
    int64_t rows;           /* product of outer[]; 0 when there is nothing to copy */
} fe_copy_plan;
void fe_copy_plan_make(const fe_args *a, fe_copy_plan *p);
/* Byte offsets in x and y of the start of row `row` (0 <= row < rows). */
static inline void fe_copy_plan_row(const fe_copy_plan *p, int64_t row, int64_t *xo,
                                    int64_t *yo) {
    int64_t ox = 0, oy = 0;
    for (int k = p->n_outer - 1; k >= 0; k--) {
        int64_t i = row % p->outer[k];
        row /= p->outer[k];
        ox += i * p->xo[k];
        oy += i * p->yo[k];
    }
    *xo = ox;
    *yo = oy;
}

#endif
