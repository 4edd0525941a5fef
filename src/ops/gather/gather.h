/* ops/gather/gather.h: what Gather's declaration (gather.c) and kernels (kernels.inc) share.
 *
 * table (V, D) in f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q4_k or q6_k; ids (n) i32; out (n, D) f32: out row r
 * is table row ids[r], widened or dequantised exactly as fe_dequant_row does (so the result
 * is bit for bit the reference's). Extents V, D, n; per-call value "rows" (the first rows
 * ids; later out rows are untouched). Work items are (row, column block) pairs of
 * cols_per_item columns, so even one id spreads over the workers. */
#ifndef FE_OPS_GATHER_H
#define FE_OPS_GATHER_H

#include <math.h>

#include "ops/op.h"

enum { GATHER_WIDTH, GATHER_CPI };             /* tunables */
enum { GATHER_V, GATHER_D, GATHER_N };         /* extents */
enum { GATHER_V_ROWS };                        /* per-call values */

/* bytes of the first n elements of a row of dtype dt (n a multiple of the block for block
 * types) */
static inline int64_t fe_gather_bytes(fe_dtype dt, int64_t n) {
    const fe_dtype_traits *t = fe_dtype_info(dt);
    return n / t->block * (int64_t)t->size;
}

/* A row whose id is outside [0, V) is written NaN and the table is not read. check()
 * refuses such ids before a run; this guards what it cannot see: ids a graph makes in an
 * earlier step of the same call, which are bound (and checked) before that step runs. */
static inline void fe_gather_bad_row(float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = (float)NAN;
}

#endif
