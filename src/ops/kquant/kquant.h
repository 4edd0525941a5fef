/* ops/kquant/kquant.h: the row kernels that GEMV, GEMM and Gather share for the blocks ferrum
 * reads but does not hand-tune per operator: q5_0 (32-blocks) and the K super-blocks q4_k and
 * q6_k (256-blocks; layouts in core/quant.h). One source (kernels.inc) compiled per ISA, so
 * each operator's avx512 / avx2 / scalar kernel calls its own ISA's copy.
 *
 *   dequant   n elements of a row as f32, bit for bit what fe_dequant_row gives (the same
 *             float operations in the same order, no fused multiply-add);
 *   dot_f32   one row dotted with f32 x: each block decoded as dequant does, then multiplied
 *             and summed in VW-lane f32 partial sums, folded in double per block (the exact
 *             f32 path: within f32 summation error of the double reference);
 *   dot_int8  act_int8: one row dotted with x quantised to int8 (fe_kq_quant_x): per
 *             sub-block an exact integer sum, then (as llama.cpp's q4_K x q8_K, q6_K x q8_K,
 *             q5_0 x q8_0):
 *               q5_0  sum_b d dx_b sum(q - 16) xq                     (x in 32-blocks)
 *               q4_k  d dx sum_j sc_j sum(q xq) - dmin dx sum_j m_j (bsum of sub-block j)
 *               q6_k  d dx sum_j sc_j sum((q - 32) xq)                 (x in 256-blocks)
 *             the integer sums exact in int32, the scaling in double (fe_kq_dot_int8_ref is
 *             the same computation, one element at a time). */
#ifndef FE_OPS_KQUANT_H
#define FE_OPS_KQUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "ferrum/core.h"

/* dtypes the family serves */
static inline bool fe_kq_serves(fe_dtype dt) {
    return dt == FE_DTYPE_Q5_0 || dt == FE_DTYPE_Q4_K || dt == FE_DTYPE_Q6_K;
}
/* act_int8's block of x for W of dtype dt: 256 for the K types (q8_k), else 32 (q8_0) */
static inline int fe_kq_xblock(fe_dtype dt) {
    return dt == FE_DTYPE_Q4_K || dt == FE_DTYPE_Q6_K ? 256 : 32;
}

/* x (K a multiple of xb = 32 or 256) to int8 per xb-block: dx = amax / 127, q = x * (1 / dx)
 * rounded half to even (clamped to +-127), and bsums, the sum of each 16 q (K / 16 of them).
 * The same bytes on every ISA (plain C, shared by kernels and reference). */
void fe_kq_quant_x(const float *x, int64_t K, int xb, int8_t *q, float *dx, int16_t *bsums);

/* fe_kq_quant_x over the first k of a row's K columns: the xb-block that straddles k is
 * quantised padded with zeros, the blocks past it are zero (q, dx and bsums), so a dot over
 * the first round_up(k, xb) columns sees exactly the first k. GEMM's kernels and reference. */
void fe_kq_quant_x_bounded(const float *x, int64_t K, int64_t k, int xb, int8_t *q, float *dx,
                           int16_t *bsums);

/* fe_kq_quant_x's contract, as each ISA's copy (fe_kq_quant_x_<isa>, below) implements it */
typedef void (*fe_kq_quant_fn)(const float *x, int64_t K, int xb, int8_t *q, float *dx,
                               int16_t *bsums);

/* fe_kq_quant_x_bounded by the quantiser `quant` (fe_kq_quant_x or an ISA's copy: the same
 * bytes) */
void fe_kq_quant_x_bounded_by(fe_kq_quant_fn quant, const float *x, int64_t K, int64_t k, int xb,
                              int8_t *q, float *dx, int16_t *bsums);

/* the int8 dot of the reference, element by element */
double fe_kq_dot_int8_ref(fe_dtype dt, const unsigned char *row, const int8_t *q,
                          const float *dx, const int16_t *bsums, int64_t K);

#define FE_KQ_DECLARE(isa)                                                                  \
    void fe_kq_dequant_##isa(fe_dtype dt, const void *src, float *dst, int64_t n);          \
    float fe_kq_dot_f32_##isa(fe_dtype dt, const unsigned char *row, const float *x,        \
                              int64_t K);                                                   \
    float fe_kq_dot_int8_##isa(fe_dtype dt, const unsigned char *row, const int8_t *q,      \
                               const float *dx, const int16_t *bsums, int64_t K);     \
    void fe_kq_quant_x_##isa(const float *x, int64_t K, int xb, int8_t *q, float *dx,       \
                             int16_t *bsums);
FE_KQ_DECLARE(scalar)
FE_KQ_DECLARE(avx2)
FE_KQ_DECLARE(avx512)
#undef FE_KQ_DECLARE

#endif
