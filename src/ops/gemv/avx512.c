/* ops/gemv/avx512.c: GEMV's AVX-512 kernel: the row dots for each W dtype, nr = 1, 2, 4 or 8
 * rows at once, rs bytes apart (one per memory stream; x loaded once per step for all of
 * them; two f32 accumulators a row, four with one or two rows), each stream prefetched `pf`
 * bytes ahead when pf > 0, widening W exactly in registers:
 *   f32   two 16-lane loads per 32 elements, masked tail;
 *   bf16  32 bf16 in one 512-bit load: evens = lanes << 16, odds = lanes & 0xffff0000 (x is
 *         prepared as evens then odds per 32), masked 16-bit tail;
 *   f16   _mm512_cvtph_ps, masked 16-bit tail;
 *   q8_0  16 i8 -> cvtepi8_epi32 -> f32, per block dot then * d;
 *   q4_0 / q4_1  16 bytes -> cvtepu8_epi32, low nibbles = elements 0..15, high = 16..31;
 *         d * dot(q, x) per block, plus m (q4_1) or -8 d (q4_0) times the block's x sum;
 *   act_int8, q8_0 W: exact int32 block sums, either vpmaddwd on int16 (emulated) or
 *         AVX512-VNNI vpdpbusd (w ^ 0x80 as u8 times x as s8, less 128 * sum(x) per 4
 *         lanes, preset in the accumulator), then * (dw * dx) in f32;
 *   act_int8, q4 W: two blocks a step, their 32 nibble bytes unpacked into 64 u8 (low
 *         nibbles of both blocks, then high; x is prepared in that order) and dotted with
 *         x's int8 by vpdpbusd, or vpmaddubsw + vpmaddwd (emulated), into exact int32 lanes
 *         (q4_0: -8 * sum(x) per 4 lanes preset), then * (d dx) in f32; q4_1 adds m (dx
 *         sum(x)) per block. An odd last block goes alone in 256 bits.
 * The batch kernels (one row, up to 8 batches) are avx512_batches.inc; the panel design (bf16 W
 * as k-pair panels, panel) avx512_panels.inc; the driver is driver.inc. */
#include <immintrin.h>
#include <string.h>

#include "ops/gemm/gemm.h"
#include "ops/gemv/gemv.h"
#include "ops/kquant/kquant.h"
#include "core/quant.h"

#define GEMV_ISA FE_ISA_AVX512
#define GEMV_KNAME fe_gemv_avx512
#define gemv_kq_quant_x fe_kq_quant_x_avx512 /* act_int8 over the kquant dtypes */
#define GEMV_BF16_CHUNK 32
#define GEMV_Q4_PAIRS 1

#define AI static inline __attribute__((always_inline))
#define R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define R8X(X, ...)                                                                        \
    X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__)               \
    X(4, __VA_ARGS__) X(5, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__)
/* software prefetch pf bytes past p + off in a row stream, into L2 (as the panels' kernels:
 * ops/gemv/panel.h; integer arithmetic: the address may lie past the matrix, which a prefetch
 * never faults on) */
#define PF(p, off)                                                                         \
    if (pf) _mm_prefetch((const char *)((uintptr_t)(p) + (size_t)(off) + (size_t)pf), _MM_HINT_T1);
/* row r's pointer (row 0 for rows past nr: never read) and accumulators */
#define ROWS(T)                                                                            \
    const T *w0 = (const T *)w, *w1 = (const T *)(w + (NR > 1 ? rs : 0));                 \
    const T *w2 = (const T *)(w + (NR > 2 ? 2 * rs : 0));                                  \
    const T *w3 = (const T *)(w + (NR > 3 ? 3 * rs : 0));                                  \
    const T *w4 = (const T *)(w + (NR > 4 ? 4 * rs : 0));                                  \
    const T *w5 = (const T *)(w + (NR > 5 ? 5 * rs : 0));                                  \
    const T *w6 = (const T *)(w + (NR > 6 ? 6 * rs : 0));                                  \
    const T *w7 = (const T *)(w + (NR > 7 ? 7 * rs : 0));                                  \
    R8(ACC)
/* a, b: every dot; c, d: a second pair for the f32 / bf16 / f16 main loops with 1 or 2 rows
 * (unrolled twice, so even one row has four FMA chains in flight) */
#define ACC(r)                                                                             \
    __m512 a##r = _mm512_setzero_ps(), b##r = _mm512_setzero_ps();                         \
    __m512 c##r = _mm512_setzero_ps(), d##r = _mm512_setzero_ps();                         \
    (void)c##r, (void)d##r;
#define HSUM(r)                                                                            \
    if (NR > r)                                                                            \
        out[r] = _mm512_reduce_add_ps(NR <= 2 ? _mm512_add_ps(_mm512_add_ps(a##r, b##r),   \
                                                              _mm512_add_ps(c##r, d##r))   \
                                              : _mm512_add_ps(a##r, b##r));

static inline __mmask16 tail16(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u); }
static inline __m512 bcast_f16(uint16_t h) { return _mm512_set1_ps(_cvtsh_ss(h)); }

/* The float dtypes' main loops: CHUNK(k, A, B) takes 32 elements at k into accumulators
 * A, B of every row; with 1 or 2 rows two chunks go at once, into a, b and c, d. */
#define MAIN_LOOP(CHUNK)                                                                   \
    if (NR <= 2)                                                                           \
        for (; k + 64 <= K; k += 64) {                                                     \
            CHUNK(k, a, b)                                                                 \
            CHUNK(k + 32, c, d)                                                            \
        }                                                                                  \
    for (; k + 32 <= K; k += 32) {                                                         \
        CHUNK(k, a, b)                                                                     \
    }

AI void dot_f32(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
                int64_t pf, const int NR) {
    ROWS(float)
    int64_t k = 0;
#define S(r, kk, A, B)                                                                     \
    if (NR > r) {                                                                          \
        PF(w##r + (kk), 0) PF(w##r + (kk), 64)                                             \
        A##r = _mm512_fmadd_ps(_mm512_loadu_ps(w##r + (kk)), x0, A##r);                    \
        B##r = _mm512_fmadd_ps(_mm512_loadu_ps(w##r + (kk) + 16), x1, B##r);               \
    }
#define CHUNK(kk, A, B)                                                                    \
    {                                                                                      \
        const __m512 x0 = _mm512_loadu_ps(x + (kk)), x1 = _mm512_loadu_ps(x + (kk) + 16);  \
        R8X(S, kk, A, B)                                                                   \
    }
    MAIN_LOOP(CHUNK)
#undef CHUNK
#undef S
    for (; k < K; k += 16) {
        const __mmask16 m = tail16(K - k);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + k);
#define S(r) if (NR > r) a##r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w##r + k), x0, a##r);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* x: evens then odds per 32, zero up to KP */
AI void dot_bf16(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
                 int64_t pf, const int NR) {
    ROWS(uint16_t)
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    int64_t k = 0;
#define S(r, kk, A, B)                                                                     \
    if (NR > r) {                                                                          \
        PF(w##r + (kk), 0)                                                                 \
        const __m512i v = LOAD(w##r + (kk));                                               \
        A##r = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), xe, A##r);   \
        B##r = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v, hi)), xo, B##r);    \
    }
#define CHUNK(kk, A, B)                                                                    \
    {                                                                                      \
        const __m512 xe = _mm512_loadu_ps(x + (kk)), xo = _mm512_loadu_ps(x + (kk) + 16);  \
        R8X(S, kk, A, B)                                                                   \
    }
#define LOAD(p) _mm512_loadu_si512(p)
    MAIN_LOOP(CHUNK)
#undef LOAD
    if (k < K) {
        const __mmask32 m = (__mmask32)((1ull << (K - k)) - 1u);
#define LOAD(p) _mm512_maskz_loadu_epi16(m, p)
        CHUNK(k, a, b)
#undef LOAD
    }
#undef CHUNK
#undef S
    R8(HSUM)
}

AI void dot_f16(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
                int64_t pf, const int NR) {
    ROWS(uint16_t)
    int64_t k = 0;
#define S(r, kk, A, B)                                                                     \
    if (NR > r) {                                                                          \
        PF(w##r + (kk), 0)                                                                 \
        A##r = _mm512_fmadd_ps(                                                            \
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w##r + (kk)))), x0, A##r); \
        B##r = _mm512_fmadd_ps(                                                            \
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w##r + (kk) + 16))), x1, B##r); \
    }
#define CHUNK(kk, A, B)                                                                    \
    {                                                                                      \
        const __m512 x0 = _mm512_loadu_ps(x + (kk)), x1 = _mm512_loadu_ps(x + (kk) + 16);  \
        R8X(S, kk, A, B)                                                                   \
    }
    MAIN_LOOP(CHUNK)
#undef CHUNK
#undef S
    for (; k < K; k += 16) {
        const __mmask16 m = tail16(K - k);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + k);
#define S(r)                                                                               \
    if (NR > r)                                                                            \
        a##r = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w##r + k)), x0, a##r);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* one q8_0 block's 32 values dotted with x0 (elements 0..15), x1 (16..31), times d */
AI __m512 q8_block(const fe_block_q8_0 *p, __m512 x0, __m512 x1, __m512 acc) {
    const __m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p->qs)));
    const __m512 q1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p->qs + 16))));
    return _mm512_fmadd_ps(_mm512_fmadd_ps(q1, x1, _mm512_mul_ps(q0, x0)), bcast_f16(p->d), acc);
}

AI void dot_q8(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
               int64_t pf, const int NR) {
    ROWS(fe_block_q8_0)
    const int64_t nb = K / 32;
    int64_t j = 0;
    for (; j + 2 <= nb; j += 2) {
        const float *xj = x + 32 * j;
        const __m512 x0 = _mm512_loadu_ps(xj), x1 = _mm512_loadu_ps(xj + 16);
        const __m512 x2 = _mm512_loadu_ps(xj + 32), x3 = _mm512_loadu_ps(xj + 48);
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        PF(w##r + j, 0) PF(w##r + j, 64)                                                   \
        a##r = q8_block(w##r + j, x0, x1, a##r);                                           \
        b##r = q8_block(w##r + j + 1, x2, x3, b##r);                                       \
    }
        R8(S)
#undef S
    }
    if (j < nb) {
        const __m512 x0 = _mm512_loadu_ps(x + 32 * j), x1 = _mm512_loadu_ps(x + 32 * j + 16);
#define S(r) if (NR > r) a##r = q8_block(w##r + j, x0, x1, a##r);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* q4_0 (Q1 = 0) and q4_1 (Q1 = 1): a += d * dot(q, x); b += c * sum(x) with c = m (q4_1),
 * or c = d and the result a - 8 b (q4_0) */
AI void dot_q4(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
               int64_t pf, const int NR, const int Q1) {
    const size_t bs = Q1 ? sizeof(fe_block_q4_1) : sizeof(fe_block_q4_0);
    ROWS(unsigned char)
    const __m512i m4 = _mm512_set1_epi32(15);
    for (int64_t j = 0; j < K / 32; j++) {
        const __m512 x0 = _mm512_loadu_ps(x + 32 * j), x1 = _mm512_loadu_ps(x + 32 * j + 16);
        const __m512 xs = _mm512_add_ps(x0, x1);
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const unsigned char *p = w##r + (size_t)j * bs;                                    \
        PF(p, 0)                                                                           \
        uint16_t hd, hm;                                                                   \
        memcpy(&hd, p, 2);                                                                 \
        memcpy(&hm, p + 2, 2);                                                             \
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + bs - 16))); \
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, m4));                     \
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));                     \
        const __m512 d = bcast_f16(hd);                                                    \
        a##r = _mm512_fmadd_ps(_mm512_fmadd_ps(hi, x1, _mm512_mul_ps(lo, x0)), d, a##r);   \
        b##r = _mm512_fmadd_ps(xs, Q1 ? bcast_f16(hm) : d, b##r);                          \
    }
        R8(S)
#undef S
    }
#define H(r)                                                                               \
    if (NR > r)                                                                            \
        out[r] = _mm512_reduce_add_ps(Q1 ? _mm512_add_ps(a##r, b##r)                       \
                                         : _mm512_fmadd_ps(b##r, _mm512_set1_ps(-8.0f), a##r));
    R8(H)
#undef H
}

/* act_int8's quantisation of x in registers: fe_gemv_quant_x's IEEE operations in its order
 * (max is exact in any order; max_ps / min_ps pass NaN as its comparisons do; cvtps2dq rounds
 * half to even as its 1.5 * 2^23 trick does), so the same bytes and scales */
static void gemv_quant_x(const float *x, int64_t K, int8_t *q, float *dx) {
    const __m512 lim = _mm512_set1_ps(127.0f), nlim = _mm512_set1_ps(-127.0f);
    for (int64_t k = 0; k < K / 32; k++) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * k), v1 = _mm512_loadu_ps(x + 32 * k + 16);
        __m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps());
        m = _mm512_max_ps(_mm512_abs_ps(v1), m);
        const float amax = _mm512_reduce_max_ps(m);
        const float dk = amax / 127.0f, id = dk != 0.0f ? 1.0f / dk : 0.0f;
        const __m512 vid = _mm512_set1_ps(id);
        dx[k] = dk;
#define Q(v) _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(                                      \
    _mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(v, vid), lim), nlim)))
        _mm_storeu_si128((__m128i *)(q + 32 * k), Q(v0));
        _mm_storeu_si128((__m128i *)(q + 32 * k + 16), Q(v1));
#undef Q
    }
}

/* act_int8, emulated: one block's exact int32 lane sums (vpmaddwd of int16 w and x) */
AI __m512 i8_block(const fe_block_q8_0 *p, const int16_t *q16, float dx, __m512 acc) {
    const __m512i w16 = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p->qs));
    const __m512i s = _mm512_madd_epi16(w16, _mm512_loadu_si512(q16));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(_cvtsh_ss(p->d) * dx), acc);
}

AI void dot_i8(const unsigned char *w, size_t rs, int64_t K, const gemv_x *x, float *out,
               int64_t pf, const int NR) {
    ROWS(fe_block_q8_0)
    const int64_t nb = K / 32;
    int64_t j = 0;
    for (; j + 2 <= nb; j += 2) {
        const float d0 = x->dx[j], d1 = x->dx[j + 1];
        const int16_t *q = x->q16 + 32 * j;
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        PF(w##r + j, 0) PF(w##r + j, 64)                                                   \
        a##r = i8_block(w##r + j, q, d0, a##r);                                            \
        b##r = i8_block(w##r + j + 1, q + 32, d1, b##r);                                   \
    }
        R8(S)
#undef S
    }
    if (j < nb) {
        const float d0 = x->dx[j];
        const int16_t *q = x->q16 + 32 * j;
#define S(r) if (NR > r) a##r = i8_block(w##r + j, q, d0, a##r);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* act_int8 with AVX512-VNNI: two blocks per vpdpbusd (lanes 0..7 block j, 8..15 block j+1) */
#define VNNI __attribute__((target("avx512vnni")))
AI VNNI void dot_vnni(const unsigned char *w, size_t rs, int64_t K, const gemv_x *x,
                      float *out, int64_t pf, const int NR) {
    ROWS(fe_block_q8_0)
    const int64_t nb = K / 32;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    int64_t j = 0;
    for (; j + 2 <= nb; j += 2) {
        const __m512i xq = _mm512_loadu_si512(x->q8 + 32 * j);
        const __m512i nc = _mm512_loadu_si512(x->ncorr + 8 * j);
        const __m512 dx = _mm512_loadu_ps(x->dx16 + 8 * j);
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const fe_block_q8_0 *p = w##r + j;                                                 \
        PF(p, 0) PF(p, 64)                                                                 \
        const __m512i u = _mm512_xor_si512(                                                \
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p[0].qs)), \
                               _mm256_loadu_si256((const __m256i *)p[1].qs), 1), flip);    \
        const __m512i is = _mm512_dpbusd_epi32(nc, u, xq);                                 \
        const __m128i dd = _mm_insert_epi16(_mm_cvtsi32_si128(p[0].d), (short)p[1].d, 1);  \
        const __m512 dw = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(dd))); \
        a##r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(dw, dx), a##r);       \
    }
        R8(S)
#undef S
    }
    if (j < nb) {
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(x->q8 + 32 * j));
        const __m256i nc = _mm256_loadu_si256((const __m256i *)(x->ncorr + 8 * j));
        const float dx = x->dx[j];
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const fe_block_q8_0 *p = w##r + j;                                                 \
        const __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p->qs),      \
                                           _mm512_castsi512_si256(flip));                  \
        const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_dpbusd_epi32(nc, u, xq)), \
                                       _mm256_set1_ps(_cvtsh_ss(p->d) * dx));              \
        b##r = _mm512_add_ps(b##r, _mm512_insertf32x8(_mm512_setzero_ps(), f, 0));         \
    }
        R8(S)
#undef S
    }
    R8(HSUM)
}
#define VNNI_N(n)                                                                          \
    static VNNI void dot_vnni_##n(const unsigned char *w, size_t rs, int64_t K,            \
                                  const gemv_x *x, float *out, int64_t pf) {               \
        dot_vnni(w, rs, K, x, out, pf, n);                                                     \
    }
VNNI_N(1)
VNNI_N(2)
VNNI_N(4)
VNNI_N(8)

/* vpdpbusd (acc += u8 u times s8 x, in groups of 4) as assembly: this file is built without
 * -mavx512vnni and the q4 kernel below is shared with the emulated path, which must not
 * carry VNNI code; it runs only where resolve found avx512vnni */
AI __m512i dpbusd512(__m512i acc, __m512i u, __m512i x) {
    __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(x));
    return acc;
}
AI __m256i dpbusd256(__m256i acc, __m256i u, __m256i x) {
    __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(x));
    return acc;
}
/* the same integers emulated: u8 times s8 pairwise to s16 (vpmaddubsw; no saturation with
 * u <= 15), pairs of those to s32 (vpmaddwd by 1) */
AI __m512i idot512(__m512i acc, __m512i u, __m512i x, const int VN) {
    if (VN) return dpbusd512(acc, u, x);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, x), _mm512_set1_epi16(1)));
}
AI __m256i idot256(__m256i acc, __m256i u, __m256i x, const int VN) {
    if (VN) return dpbusd256(acc, u, x);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
}

/* the f16 scales of q4 blocks at p (nb = 1 or 2 blocks, bs bytes apart) as 4 f32 lanes:
 * (d0, m0, d1, m1), m = 0 for q4_0 */
AI __m128 q4_scales(const unsigned char *p, size_t bs, int nb, const int Q1) {
    uint32_t h0 = 0, h1 = 0;
    memcpy(&h0, p, Q1 ? 4 : 2);
    if (nb > 1) memcpy(&h1, p + bs, Q1 ? 4 : 2);
    return _mm_cvtph_ps(_mm_unpacklo_epi32(_mm_cvtsi32_si128((int)h0), _mm_cvtsi32_si128((int)h1)));
}

/* act_int8 with q4_0 (Q1 = 0) or q4_1 (Q1 = 1) W, vpdpbusd (VN = 1) or emulated; x->q8 in
 * pairs of blocks laid out low halves then high (gemv.h). Per pair and row: the 2 x 16
 * nibble bytes t = (v0, v1) unpacked to u = (v0 & 15, v1 & 15, v0 >> 4, v1 >> 4), the
 * elements x's q8 holds in that order; int32 lanes 0..3, 8..11 are block j's, 4..7, 12..15
 * block j + 1's; sc = (d0, m0, d1, m1) * (dx0, dx0 t0, dx1, dx1 t1) gives both blocks' d dx
 * (spread over their lanes) and m dx t (lanes 1, 3: q4_1's term, added into b). */
AI void dot_q4i8(const unsigned char *w, size_t rs, int64_t K, const gemv_x *x, float *out,
                 int64_t pf, const int NR, const int Q1, const int VN) {
    const size_t bs = Q1 ? sizeof(fe_block_q4_1) : sizeof(fe_block_q4_0);
    ROWS(unsigned char)
    const int64_t nb = K / 32;
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m512i spread = _mm512_set_epi32(2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0);
    int64_t j = 0;
    for (; j + 2 <= nb; j += 2) {
        const __m512i xq = _mm512_loadu_si512(x->q8 + 32 * j);
        const __m512i nc = Q1 ? _mm512_setzero_si512() : _mm512_loadu_si512(x->ncorr + 8 * j);
        const __m128 xs = _mm_loadu_ps(x->dxs + 2 * j);
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const unsigned char *p = w##r + (size_t)j * bs;                                    \
        PF(p, 0)                                                                           \
        const __m256i t = _mm256_inserti128_si256(                                         \
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p + bs - 16))),       \
            _mm_loadu_si128((const __m128i *)(p + 2 * bs - 16)), 1);                       \
        const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(t, m4)), \
                                             _mm256_and_si256(_mm256_srli_epi16(t, 4), m4), 1); \
        const __m512 sc = _mm512_castps128_ps512(_mm_mul_ps(q4_scales(p, bs, 2, Q1), xs)); \
        a##r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot512(nc, u, xq, VN)),                 \
                               _mm512_permutexvar_ps(spread, sc), a##r);                   \
        if (Q1) b##r = _mm512_mask_add_ps(b##r, 0xa, b##r, sc);                            \
    }
        R8(S)
#undef S
    }
    if (j < nb) { /* one block, x in its own order */
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(x->q8 + 32 * j));
        const __m256i nc = Q1 ? _mm256_setzero_si256()
                              : _mm256_loadu_si256((const __m256i *)(x->ncorr + 8 * j));
        const __m128 xs = _mm_castpd_ps(_mm_load_sd((const double *)(x->dxs + 2 * j)));
        const __m128i m4h = _mm256_castsi256_si128(m4);
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const unsigned char *p = w##r + (size_t)j * bs;                                    \
        const __m128i v = _mm_loadu_si128((const __m128i *)(p + bs - 16));                 \
        const __m256i u = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, m4h)), \
                                                  _mm_and_si128(_mm_srli_epi16(v, 4), m4h), 1); \
        const __m128 sc = _mm_mul_ps(q4_scales(p, bs, 1, Q1), xs);                         \
        const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(idot256(nc, u, xq, VN)),         \
                                       _mm256_broadcastss_ps(sc));                         \
        a##r = _mm512_add_ps(a##r, _mm512_insertf32x8(_mm512_setzero_ps(), f, 0));         \
        if (Q1) b##r = _mm512_mask_add_ps(b##r, 0x2, b##r, _mm512_castps128_ps512(sc));    \
    }
        R8(S)
#undef S
    }
    R8(HSUM)
}

#define NR_SWITCH(call)                                                                    \
    switch (nr) {                                                                          \
    case 8: call(8); break;                                                                \
    case 4: call(4); break;                                                                \
    case 2: call(2); break;                                                                \
    default: call(1); break;                                                               \
    }

/* q4_0 (Q1 = 0) or q4_1 rows: int8 x by VNNI or emulated, or f32 x */
AI void dot_q4_any(const gemv_shape *s, const unsigned char *w, size_t rs, int nr,
                   const gemv_x *x, float *out, const int Q1) {
    const int64_t K = s->K;
    if (s->i8 == GEMV_I8_VNNI) {
#define C(n) dot_q4i8(w, rs, K, x, out, s->pf, n, Q1, 1)
        NR_SWITCH(C)
#undef C
    } else if (s->i8 == GEMV_I8_EMUL) {
#define C(n) dot_q4i8(w, rs, K, x, out, s->pf, n, Q1, 0)
        NR_SWITCH(C)
#undef C
    } else {
#define C(n) dot_q4(w, rs, K, x->xf, out, s->pf, n, Q1)
        NR_SWITCH(C)
#undef C
    }
}

static void gemv_dot(const gemv_shape *s, const unsigned char *w, size_t rs, int nr,
                     const gemv_x *x, float *rowbuf, float *out) {
    (void)rowbuf;
    const int64_t K = s->K;
    switch (s->dt) {
#define C(n) dot_f32(w, rs, K, x->xf, out, s->pf, n)
    case FE_DTYPE_F32: NR_SWITCH(C) break;
#undef C
#define C(n) dot_bf16(w, rs, K, x->xf, out, s->pf, n)
    case FE_DTYPE_BF16: NR_SWITCH(C) break;
#undef C
#define C(n) dot_f16(w, rs, K, x->xf, out, s->pf, n)
    case FE_DTYPE_F16: NR_SWITCH(C) break;
#undef C
    case FE_DTYPE_Q8_0:
        if (s->i8 == GEMV_I8_VNNI) {
#define C(n) dot_vnni_##n(w, rs, K, x, out, s->pf)
            NR_SWITCH(C)
#undef C
        } else if (s->i8 == GEMV_I8_EMUL) {
#define C(n) dot_i8(w, rs, K, x, out, s->pf, n)
            NR_SWITCH(C)
#undef C
        } else {
#define C(n) dot_q8(w, rs, K, x->xf, out, s->pf, n)
            NR_SWITCH(C)
#undef C
        }
        break;
    case FE_DTYPE_Q4_0: dot_q4_any(s, w, rs, nr, x, out, 0); break;
    case FE_DTYPE_Q4_1: dot_q4_any(s, w, rs, nr, x, out, 1); break;
    case FE_DTYPE_Q5_0:
    case FE_DTYPE_Q4_K:
    case FE_DTYPE_Q6_K: /* the kquant family's row kernels, one row at a time */
        for (int i = 0; i < nr; i++)
            out[i] = s->i8 != GEMV_I8_NONE
                         ? fe_kq_dot_int8_avx512(s->dt, w + (size_t)i * rs, x->q8, x->dx, x->bsums, K)
                         : fe_kq_dot_f32_avx512(s->dt, w + (size_t)i * rs, x->xf, K);
        break;
    default: break;
    }
}

#include "ops/gemv/avx512_batches.inc"
#include "ops/gemv/avx512_panels.inc"
#define GEMV_PANELS_RUN gemv_panels_run
#include "ops/gemv/panel_avx512.inc"
#include "ops/gemv/driver.inc"
