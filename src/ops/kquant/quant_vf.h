/* ops/kquant/quant_vf.h: act_int8's quantisation of x in vf lanes (device/cpu/vec.h, AVX2 or
 * AVX-512), one copy for the GEMM's int8 design (ops/gemm/int8.inc: fe_gemv_quant_x's 32-blocks)
 * and the kquant family's quantiser (ops/kquant/kernels.inc: fe_kq_quant_x's 32- or 256-blocks).
 * Their IEEE operations in their order: max is exact in any order (max over |x| passes a NaN
 * by, as their comparison does), the same division and reciprocal, the same multiply, min / max
 * clamp a NaN to 127 as their comparisons do, cvtps2dq rounds half to even as their 1.5 x 2^23
 * trick does for |v| <= 127: the same bytes and scales. Include after device/cpu/vec.h, in a
 * build with VW > 1. */
#ifndef FE_OPS_KQUANT_QUANT_VF_H
#define FE_OPS_KQUANT_QUANT_VF_H

#include <stdint.h>

/* the scale of a block of x (n a multiple of VW): dx = max|x| / 127, and *id = 1 / dx (0 for
 * a block of zeros) */
static inline float fe_quant_vf_scale(const float *x, int64_t n, float *id) {
    vf m = v_zero();
    for (int64_t j = 0; j < n; j += VW) m = v_max(v_abs(v_load(x + j)), m);
    const float dx = v_hmax(m) / 127.0f;
    *id = dx != 0.0f ? 1.0f / dx : 0.0f;
    return dx;
}

/* n (a multiple of VW) values of x times id, clamped to +-127, rounded half to even, into q */
static inline void fe_quant_vf_q(const float *x, int64_t n, float id, int8_t *q) {
    const vf lim = v_set1(127.0f), nlim = v_set1(-127.0f), vid = v_set1(id);
    for (int64_t j = 0; j < n; j += VW) {
        const vf v = v_max(v_min(v_mul(v_load(x + j), vid), lim), nlim);
#if VW == 16
        _mm_storeu_si128((__m128i *)(q + j), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
#else
        const __m256i i = _mm256_cvtps_epi32(v);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
        _mm_storel_epi64((__m128i *)(q + j), _mm_packs_epi16(w, w));
#endif
    }
}

#endif
