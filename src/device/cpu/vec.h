/* device/cpu/vec.h: one small vector vocabulary over float32 for the kernels of every ISA.
 *
 * A kernel source written with these names (vf, VW, v_add, v_exp...) is compiled once per ISA:
 * under -mavx512f it uses 16-lane __m512, under -mavx2 8-lane __m256, and otherwise a 1-lane
 * float, which is the scalar kernel. Tails use masked loads and stores, so no kernel reads or
 * writes past its view. FE_KSUFFIX names the ISA for kernel symbols: FE_KNAME(add) is
 * fe_add_avx512 in the AVX-512 object.
 *
 * v_load_f16 and v_store_f16 move VW IEEE halves (an f16 KV cache): widened exactly, and
 * rounded to nearest, ties to even, as fe_f32_to_f16 rounds (F16C and AVX-512 alike).
 *
 * exp, tanh and erf are our own (Cephes-style polynomials): exp within ~2 ulp on
 * [-87, 88], tanh within ~3e-7 absolute, erf within 1.5e-7 absolute (Abramowitz-Stegun
 * 7.1.26). Operators declare tolerances that cover these. */
#ifndef FE_DEVICE_CPU_VEC_H
#define FE_DEVICE_CPU_VEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ferrum/core.h" /* fe_f16_to_f32, fe_f32_to_f16: the scalar build's f16 */

/* The Makefile names the build it makes (-DFE_BUILD_SCALAR / _AVX2 / _AVX512 beside the ISA's
 * flags); a name and flags that disagree would file kernels under the wrong ISA. */
#if (defined(FE_BUILD_AVX512) && !defined(__AVX512F__)) ||                                 \
    (defined(FE_BUILD_AVX2) && (!defined(__AVX2__) || defined(__AVX512F__))) ||            \
    (defined(FE_BUILD_SCALAR) && defined(__AVX2__))
#error "FE_BUILD_<ISA> disagrees with the ISA flags: build kernels.inc with the Makefile's rules"
#endif

#if defined(__AVX512F__)
#include <immintrin.h>
#define FE_KSUFFIX avx512
#define VW 16
typedef __m512 vf;
typedef __mmask16 vm;
static inline vf v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vf v_load_n(const float *p, int64_t n) {
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p);
}
static inline void v_store_n(float *p, vf v, int64_t n) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
}
static inline vf v_load_f16(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline vf v_load_f16_n(const uint16_t *p, int64_t n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1u), p));
}
static inline void v_store_f16(uint16_t *p, vf v) {
    _mm256_storeu_si256((__m256i *)p,
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
/* non-temporal when p is 64-byte aligned */
static inline void v_stream(float *p, vf v) {
    if (((uintptr_t)p & 63) == 0) _mm512_stream_ps(p, v);
    else _mm512_storeu_ps(p, v);
}
/* elements before p reaches the alignment v_stream streams at (< VW): a loop that first
 * stores that many with v_store_n streams every full vector after */
static inline int64_t v_stream_head(const float *p) {
    return (int64_t)(((64 - ((uintptr_t)p & 63)) & 63) / sizeof(float));
}
static inline vf v_set1(float x) { return _mm512_set1_ps(x); }
static inline vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf v_div(vf a, vf b) { return _mm512_div_ps(a, b); }
/* 1/a from the 14-bit estimate and one Newton step: within ~2 ulp, for finite a != 0 */
static inline vf v_rcp(vf a) {
    vf r = _mm512_rcp14_ps(a);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(a, r, _mm512_set1_ps(2.0f)));
}
static inline vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf v_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf v_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf v_sqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf v_abs(vf a) { return _mm512_abs_ps(a); }
static inline vf v_round(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vm v_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vf v_blend(vm m, vf yes, vf no) { return _mm512_mask_blend_ps(m, no, yes); }
/* copies the sign of s onto the magnitude of a */
static inline vf v_copysign(vf a, vf s) {
    __m512i sign = _mm512_set1_epi32((int)0x80000000);
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(a),
                                                         _mm512_castps_si512(s), sign, 0xd8));
}
/* y * 2^n for integral n in [-126, 127] */
static inline vf v_ldexp(vf y, vf n) {
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}
static inline float v_hsum(vf a) { return _mm512_reduce_add_ps(a); }
static inline void v_fence(void) { _mm_sfence(); } /* orders v_stream stores before a barrier */
static inline float v_hmax(vf a) { return _mm512_reduce_max_ps(a); }

#elif defined(__AVX2__)
#include <immintrin.h>
#define FE_KSUFFIX avx2
#define VW 8
typedef __m256 vf;
typedef __m256 vm;
static const int32_t fe_vec_tail_mask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static inline __m256i v_tail(int64_t n) {
    return _mm256_loadu_si256((const __m256i *)(fe_vec_tail_mask + 8 - n));
}
static inline vf v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void v_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf v_load_n(const float *p, int64_t n) { return _mm256_maskload_ps(p, v_tail(n)); }
static inline void v_store_n(float *p, vf v, int64_t n) { _mm256_maskstore_ps(p, v_tail(n), v); }
static inline vf v_load_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline vf v_load_f16_n(const uint16_t *p, int64_t n) { /* no masked 16-bit load */
    uint16_t t[8] = {0};
    for (int64_t c = 0; c < n; c++) t[c] = p[c];
    return v_load_f16(t);
}
static inline void v_store_f16(uint16_t *p, vf v) {
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline void v_stream(float *p, vf v) {
    if (((uintptr_t)p & 31) == 0) _mm256_stream_ps(p, v);
    else _mm256_storeu_ps(p, v);
}
static inline int64_t v_stream_head(const float *p) {
    return (int64_t)(((32 - ((uintptr_t)p & 31)) & 31) / sizeof(float));
}
static inline vf v_set1(float x) { return _mm256_set1_ps(x); }
static inline vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf v_div(vf a, vf b) { return _mm256_div_ps(a, b); }
/* 1/a from the 12-bit estimate and one Newton step: within ~2 ulp of 2^-22 relative */
static inline vf v_rcp(vf a) {
    vf r = _mm256_rcp_ps(a);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(a, r, _mm256_set1_ps(2.0f)));
}
static inline vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf v_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf v_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf v_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf v_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf v_round(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vm v_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vf v_blend(vm m, vf yes, vf no) { return _mm256_blendv_ps(no, yes, m); }
static inline vf v_copysign(vf a, vf s) {
    __m256 sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, a), _mm256_and_ps(sign, s));
}
static inline vf v_ldexp(vf y, vf n) {
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}
static inline void v_fence(void) { _mm_sfence(); }
static inline float v_hsum(vf a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float v_hmax(vf a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#else /* scalar: a one-lane "vector" */
#define FE_KSUFFIX scalar
#define VW 1
typedef float vf;
typedef int vm;
static inline vf v_load(const float *p) { return *p; }
static inline void v_store(float *p, vf v) { *p = v; }
static inline vf v_load_n(const float *p, int64_t n) { return n > 0 ? *p : 0.0f; }
static inline void v_store_n(float *p, vf v, int64_t n) { if (n > 0) *p = v; }
static inline vf v_load_f16(const uint16_t *p) { return fe_f16_to_f32(*p); }
static inline vf v_load_f16_n(const uint16_t *p, int64_t n) { return n > 0 ? fe_f16_to_f32(*p) : 0.0f; }
static inline void v_store_f16(uint16_t *p, vf v) { *p = fe_f32_to_f16(v); }
static inline void v_stream(float *p, vf v) { *p = v; }
static inline int64_t v_stream_head(const float *p) { (void)p; return 0; }
static inline vf v_set1(float x) { return x; }
static inline vf v_add(vf a, vf b) { return a + b; }
static inline vf v_sub(vf a, vf b) { return a - b; }
static inline vf v_mul(vf a, vf b) { return a * b; }
static inline vf v_div(vf a, vf b) { return a / b; }
static inline vf v_rcp(vf a) { return 1.0f / a; }
/* unfused: baseline x86-64 has no FMA and libm's fmaf is emulated in software */
static inline vf v_fma(vf a, vf b, vf c) { return a * b + c; }
static inline vf v_max(vf a, vf b) { return a > b ? a : b; }
static inline vf v_min(vf a, vf b) { return a < b ? a : b; }
static inline vf v_sqrt(vf a) { return sqrtf(a); }
static inline vf v_abs(vf a) { return fabsf(a); }
static inline vf v_round(vf a) { return nearbyintf(a); }
static inline vm v_lt(vf a, vf b) { return a < b; }
static inline vf v_blend(vm m, vf yes, vf no) { return m ? yes : no; }
static inline vf v_copysign(vf a, vf s) { return copysignf(a, s); }
static inline vf v_ldexp(vf y, vf n) {
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &e, 4);
    return y * s;
}
static inline void v_fence(void) {}
static inline float v_hsum(vf a) { return a; }
static inline float v_hmax(vf a) { return a; }
#endif

#define FE_KCAT2(a, b) a##_##b
#define FE_KCAT(a, b) FE_KCAT2(a, b)
#define FE_KNAME(name) FE_KCAT(fe_##name, FE_KSUFFIX)

static inline vf v_zero(void) { return v_set1(0.0f); }

/* e^x: round x / ln 2 to n, reduce r = x - n ln 2 (two-part ln 2), a degree-6 polynomial for
 * e^r, then scale by 2^n (AVX-512: vscalefps; the others build 2^n in the exponent bits).
 * x is clamped to [-87.3, 88.37] on every ISA, so e^x is never a denormal: below -87.3 it
 * is e^-87.3 (1.2e-38, the smallest normal float's neighbourhood), an absolute error under
 * 1.2e-38. A denormal result would cost a microcode assist on Intel's cores, and the
 * attention's softmax takes e^x of every masked score (-inf): with AVX-512's earlier clamp at
 * -103.9 those assists held SmolLM2's MHA at 1.33x its time on AMX (docs/performance.md, the
 * thirtieth session). NaN stays NaN (max/min return their second operand on NaN). */
static inline vf v_exp(vf x) {
    x = v_min(v_set1(88.3762f), v_max(v_set1(-87.3365f), x));
#if defined(__AVX512F__)
    vf n = v_round(v_mul(x, v_set1(1.44269504088896341f)));
#else
    vf n = v_min(v_round(v_mul(x, v_set1(1.44269504088896341f))), v_set1(127.0f));
#endif
    vf r = v_fma(n, v_set1(-0.693359375f), x);
    r = v_fma(n, v_set1(2.12194440e-4f), r);
    vf p = v_set1(1.9875691500e-4f);
    p = v_fma(p, r, v_set1(1.3981999507e-3f));
    p = v_fma(p, r, v_set1(8.3334519073e-3f));
    p = v_fma(p, r, v_set1(4.1665795894e-2f));
    p = v_fma(p, r, v_set1(1.6666665459e-1f));
    p = v_fma(p, r, v_set1(5.0000001201e-1f));
    vf y = v_add(v_fma(v_mul(p, r), r, r), v_set1(1.0f));
#if defined(__AVX512F__)
    return _mm512_scalef_ps(y, n);
#else
    return v_ldexp(y, n);
#endif
}

/* 1 / (1 + e^-x) */
static inline vf v_sigmoid(vf x) { return v_rcp(v_add(v_set1(1.0f), v_exp(v_sub(v_zero(), x)))); }

/* A rational minimax form on [-7.9, 7.9] (the one Eigen's fast tanh uses), x itself below
 * 4e-4 and +-1 past the clamp: no exp, one reciprocal. */
static inline vf v_tanh(vf x) {
    vf c = v_min(v_set1(7.90531110763549805f), v_max(v_set1(-7.90531110763549805f), x));
    vf x2 = v_mul(c, c);
    vf p = v_set1(-2.76076847742355e-16f);
    p = v_fma(p, x2, v_set1(2.00018790482477e-13f));
    p = v_fma(p, x2, v_set1(-8.60467152213735e-11f));
    p = v_fma(p, x2, v_set1(5.12229709037114e-08f));
    p = v_fma(p, x2, v_set1(1.48572235717979e-05f));
    p = v_fma(p, x2, v_set1(6.37261928875436e-04f));
    p = v_fma(p, x2, v_set1(4.89352455891786e-03f));
    p = v_mul(p, c);
    vf q = v_set1(1.19825839466702e-06f);
    q = v_fma(q, x2, v_set1(1.18534705686654e-04f));
    q = v_fma(q, x2, v_set1(2.26843463243900e-03f));
    q = v_fma(q, x2, v_set1(4.89352518554385e-03f));
    vf r = v_mul(p, v_rcp(q));
    return v_blend(v_lt(v_abs(x), v_set1(0.0004f)), x, r);
}

/* Abramowitz-Stegun 7.1.26, |error| <= 1.5e-7 */
static inline vf v_erf(vf x) {
    vf a = v_abs(x);
    vf t = v_rcp(v_fma(v_set1(0.3275911f), a, v_set1(1.0f)));
    vf p = v_set1(1.061405429f);
    p = v_fma(p, t, v_set1(-1.453152027f));
    p = v_fma(p, t, v_set1(1.421413741f));
    p = v_fma(p, t, v_set1(-0.284496736f));
    p = v_fma(p, t, v_set1(0.254829592f));
    p = v_mul(p, t);
    vf y = v_sub(v_set1(1.0f), v_mul(p, v_exp(v_sub(v_zero(), v_mul(a, a)))));
    return v_copysign(y, x);
}

/* VW x VW transpose in registers: r[i] lane j becomes r[j] lane i */
static inline __attribute__((always_inline)) void v_transpose(vf r[VW]) {
#if VW == 16
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + j], 128-bit lane L: column 4L + j of rows 4i..4i+3 */
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    /* then a 4 x 4 transpose of 128-bit lanes */
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
        t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
        r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD);
    }
#elif VW == 8
    __m256 t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        s[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x31);
    }
#else
    (void)r;
#endif
}

#endif
