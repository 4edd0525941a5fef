/* ops/gemv/avx2.c: GEMV's AVX2 (+FMA, F16C) kernel: the row dots for each W dtype, nr = 1,
 * 2, 4 or 8 rows at once, rs bytes apart (one per memory stream), each stream prefetched
 * `pf` bytes ahead when pf > 0, widening W exactly in registers as the AVX-512 kernel does, at
 * 8 lanes: bf16 16 at a time (evens = lanes << 16, odds = lanes & 0xffff0000, x prepared as
 * evens then odds per 16), f16 by _mm256_cvtph_ps, q8_0 by cvtepi8_epi32, q4 nibbles by
 * cvtepu8_epi32; act_int8 by vpmaddwd on int16 for q8_0 W (the same integers as VNNI), and
 * for q4 W one block a step: its 16 nibble bytes unpacked to 32 u8 (low nibbles then high,
 * x's own order), vpmaddubsw against x's int8 and vpmaddwd by 1 into exact int32 lanes
 * (q4_0: ncorr's -8 * sum(x) added), times d dx, plus m dx sum(x) for q4_1. Where the
 * device has AVX-VNNI (int8_dot = 1) the int32 lanes come from vpdpbusd instead: q4's the
 * same integers, q8_0's (w ^ 0x80 against x, corrected by ncorr) those of AVX512-VNNI's
 * lanes, groups of 4 consecutive elements. With 16 ymm
 * registers, 8 rows keep one accumulator each, fewer rows two. Tails of f32 use masked
 * loads; of bf16 / f16 a zero-padded copy. The batch kernels (one row, up to 8 batches) are
 * avx2_batches.inc; the panel design (bf16 W as k-pair panels, panel) avx2_panels.inc;
 * the driver is driver.inc. */
#include <immintrin.h>
#include <string.h>

#include "ops/gemv/gemv.h"
#include "ops/kquant/kquant.h"
#include "core/quant.h"

#define GEMV_ISA FE_ISA_AVX2
#define GEMV_KNAME fe_gemv_avx2
#define gemv_kq_quant_x fe_kq_quant_x_avx2 /* act_int8 over the kquant dtypes */
#define GEMV_BF16_CHUNK 16
#define GEMV_Q4_PAIRS 0

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
    __m256 a##r = _mm256_setzero_ps(), b##r = _mm256_setzero_ps();                         \
    __m256 c##r = _mm256_setzero_ps(), d##r = _mm256_setzero_ps();                         \
    (void)c##r, (void)d##r;
#define HSUM(r)                                                                            \
    if (NR > r)                                                                            \
        out[r] = hsum(NR <= 2 ? _mm256_add_ps(_mm256_add_ps(a##r, b##r), _mm256_add_ps(c##r, d##r)) \
                              : _mm256_add_ps(a##r, b##r));
/* the second accumulator of row r: b with up to 4 rows, a with 8 (registers run out) */
#define B2(r) (*(NR > 4 ? &a##r : &b##r))
#define SEC(B, r) (*(NR > 4 ? &a##r : &B##r))
/* The float dtypes' main loops: CHUNK(k, A, B) takes 16 elements at k into accumulators
 * A, B of every row; with 1 or 2 rows two chunks go at once, into a, b and c, d. */
#define MAIN_LOOP(CHUNK)                                                                   \
    if (NR <= 2)                                                                           \
        for (; k + 32 <= K; k += 32) {                                                     \
            CHUNK(k, a, b)                                                                 \
            CHUNK(k + 16, c, d)                                                            \
        }                                                                                  \
    for (; k + 16 <= K; k += 16) {                                                         \
        CHUNK(k, a, b)                                                                     \
    }

static const int32_t tail_mask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
/* lanes below n on (n clamped to 0..8) */
static inline __m256i tail8(int64_t n) {
    return _mm256_loadu_si256((const __m256i *)(tail_mask + 8 - (n < 0 ? 0 : n < 8 ? n : 8)));
}
static inline float hsum(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline __m256 bcast_f16(uint16_t h) { return _mm256_set1_ps(_cvtsh_ss(h)); }

AI void dot_f32(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
                int64_t pf, const int NR) {
    ROWS(float)
    int64_t k = 0;
#define S(r, kk, A, B)                                                                     \
    if (NR > r) {                                                                          \
        PF(w##r + (kk), 0)                                                                 \
        A##r = _mm256_fmadd_ps(_mm256_loadu_ps(w##r + (kk)), x0, A##r);                    \
        SEC(B, r) = _mm256_fmadd_ps(_mm256_loadu_ps(w##r + (kk) + 8), x1, SEC(B, r));      \
    }
#define CHUNK(kk, A, B)                                                                    \
    {                                                                                      \
        const __m256 x0 = _mm256_loadu_ps(x + (kk)), x1 = _mm256_loadu_ps(x + (kk) + 8);   \
        R8X(S, kk, A, B)                                                                   \
    }
    MAIN_LOOP(CHUNK)
#undef CHUNK
#undef S
    for (; k < K; k += 8) {
        const __m256i m = tail8(K - k);
        const __m256 x0 = _mm256_maskload_ps(x + k, m);
#define S(r) if (NR > r) a##r = _mm256_fmadd_ps(_mm256_maskload_ps(w##r + k, m), x0, a##r);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* 16 bf16 or f16 at p, the last chunk copied zero-padded when fewer than 16 remain */
static inline __m256i load16h(const uint16_t *p, int64_t n) {
    if (n >= 16) return _mm256_loadu_si256((const __m256i *)p);
    uint16_t t[16] = {0};
    memcpy(t, p, (size_t)n * 2);
    return _mm256_loadu_si256((const __m256i *)t);
}

/* x: evens then odds per 16, zero up to KP */
AI void dot_bf16(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
                 int64_t pf, const int NR) {
    ROWS(uint16_t)
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    int64_t k = 0;
#define S(r, kk, A, B)                                                                     \
    if (NR > r) {                                                                          \
        PF(w##r + (kk), 0)                                                                 \
        const __m256i v = LOAD(w##r + (kk));                                               \
        A##r = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), xe, A##r);   \
        SEC(B, r) = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v, hi)), xo, SEC(B, r)); \
    }
#define CHUNK(kk, A, B)                                                                    \
    {                                                                                      \
        const __m256 xe = _mm256_loadu_ps(x + (kk)), xo = _mm256_loadu_ps(x + (kk) + 8);   \
        R8X(S, kk, A, B)                                                                   \
    }
#define LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
    MAIN_LOOP(CHUNK)
#undef LOAD
    if (k < K) {
#define LOAD(p) load16h(p, K - k)
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
        A##r = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w##r + (kk)))), \
                               x0, A##r);                                                  \
        SEC(B, r) = _mm256_fmadd_ps(                                                       \
            _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w##r + (kk) + 8))), x1, SEC(B, r)); \
    }
#define CHUNK(kk, A, B)                                                                    \
    {                                                                                      \
        const __m256 x0 = _mm256_loadu_ps(x + (kk)), x1 = _mm256_loadu_ps(x + (kk) + 8);   \
        R8X(S, kk, A, B)                                                                   \
    }
    MAIN_LOOP(CHUNK)
#undef CHUNK
#undef S
    if (k < K) {
        const __m256i m0 = tail8(K - k), m1 = tail8(K - k - 8);
        const __m256 x0 = _mm256_maskload_ps(x + k, m0);
        const __m256 x1 = K - k > 8 ? _mm256_maskload_ps(x + k + 8, m1) : _mm256_setzero_ps();
        const int64_t n = K - k;
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const __m256i v = load16h(w##r + k, n);                                            \
        a##r = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(v)), x0, a##r);      \
        B2(r) = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(v, 1)), x1, B2(r)); \
    }
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* 16 i8 at p as two 8-lane f32 vectors */
static inline void i8x16(const int8_t *p, __m256 *lo, __m256 *hi) {
    const __m128i v = _mm_loadu_si128((const __m128i *)p);
    *lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
    *hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(v, v)));
}

AI __m256 q8_block(const fe_block_q8_0 *p, __m256 x0, __m256 x1, __m256 x2, __m256 x3,
                   __m256 acc) {
    __m256 q0, q1, q2, q3;
    i8x16(p->qs, &q0, &q1);
    i8x16(p->qs + 16, &q2, &q3);
    __m256 t = _mm256_mul_ps(q0, x0);
    t = _mm256_fmadd_ps(q1, x1, t);
    t = _mm256_fmadd_ps(q2, x2, t);
    t = _mm256_fmadd_ps(q3, x3, t);
    return _mm256_fmadd_ps(t, bcast_f16(p->d), acc);
}

/* x (no vector arrays: GCC keeps those in memory and copies them in 16-byte pieces) */
#define LOADX(xp)                                                                          \
    const __m256 x0 = _mm256_loadu_ps(xp), x1 = _mm256_loadu_ps((xp) + 8);                 \
    const __m256 x2 = _mm256_loadu_ps((xp) + 16), x3 = _mm256_loadu_ps((xp) + 24);

AI void dot_q8(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
               int64_t pf, const int NR) {
    ROWS(fe_block_q8_0)
    const int64_t nb = K / 32;
    int64_t j = 0;
    for (; j + 2 <= nb; j += 2) {
        {
            LOADX(x + 32 * j)
#define S(r) if (NR > r) { PF(w##r + j, 0) PF(w##r + j, 64) a##r = q8_block(w##r + j, x0, x1, x2, x3, a##r); }
            R8(S)
#undef S
        }
        {
            LOADX(x + 32 * j + 32)
#define S(r) if (NR > r) B2(r) = q8_block(w##r + j + 1, x0, x1, x2, x3, B2(r));
            R8(S)
#undef S
        }
    }
    if (j < nb) {
        LOADX(x + 32 * j)
#define S(r) if (NR > r) a##r = q8_block(w##r + j, x0, x1, x2, x3, a##r);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* q4_0 (Q1 = 0) and q4_1 (Q1 = 1): a += d * dot(q, x); b += c * sum(x), c = m or -8 d */
AI void dot_q4(const unsigned char *w, size_t rs, int64_t K, const float *x, float *out,
               int64_t pf, const int NR, const int Q1) {
    const size_t bs = Q1 ? sizeof(fe_block_q4_1) : sizeof(fe_block_q4_0);
    ROWS(unsigned char)
    const __m128i m4 = _mm_set1_epi8(15);
    for (int64_t j = 0; j < K / 32; j++) {
        LOADX(x + 32 * j)
        const __m256 xs = _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3));
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const unsigned char *p = w##r + (size_t)j * bs;                                    \
        PF(p, 0)                                                                           \
        uint16_t hd, hm;                                                                   \
        memcpy(&hd, p, 2);                                                                 \
        memcpy(&hm, p + 2, 2);                                                             \
        const __m128i v = _mm_loadu_si128((const __m128i *)(p + bs - 16));                 \
        const __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4); \
        __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo)), x0);        \
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(lo, lo))), x1, t); \
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi)), x2, t);          \
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(hi, hi))), x3, t); \
        const __m256 d = bcast_f16(hd);                                                    \
        a##r = _mm256_fmadd_ps(t, d, a##r);                                                \
        B2(r) = _mm256_fmadd_ps(xs, Q1 ? bcast_f16(hm) : _mm256_mul_ps(d, _mm256_set1_ps(-8.0f)), B2(r)); \
    }
        R8(S)
#undef S
    }
    R8(HSUM)
}
#undef LOADX

/* act_int8's quantisation of x in registers: fe_gemv_quant_x's IEEE operations in its order
 * (max is exact in any order; max_ps / min_ps pass NaN as its comparisons do; cvtps2dq rounds
 * half to even as its 1.5 * 2^23 trick does), so the same bytes and scales */
static void gemv_quant_x(const float *x, int64_t K, int8_t *q, float *dx) {
    const __m256 lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t k = 0; k < K / 32; k++) {
        __m256 v[4], m = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(x + 32 * k + 8 * i);
            m = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), m);
        }
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        const float amax = _mm_cvtss_f32(h);
        const float dk = amax / 127.0f, id = dk != 0.0f ? 1.0f / dk : 0.0f;
        const __m256 vid = _mm256_set1_ps(id);
        dx[k] = dk;
        __m256i i[4];
        for (int j = 0; j < 4; j++)
            i[j] = _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(_mm256_mul_ps(v[j], vid), lim), nlim));
        __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
        b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(q + 32 * k), b);
    }
}

/* AVX-VNNI's vpdpbusd on ymm (acc += u8 u times s8 x in groups of 4), as assembly ({vex}:
 * its VEX form; this file is built without -mavxvnni, and it runs only where resolve found
 * the device's avxvnni: int8_dot = 1) */
AI __m256i dpbusd_vex(__m256i acc, __m256i u, __m256i x) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(x));
    return acc;
}

/* act_int8: one q8_0 block's exact int32 lane sums against block j of x, times dw * dx:
 * vpmaddwd on int16 (VN 0), or AVX-VNNI's vpdpbusd (VN 1: the bytes w ^ 0x80, w + 128
 * unsigned, against x, corrected by ncorr, -128 times the sum of each group of 4 of x: the
 * driver's, as for AVX512-VNNI, so the lanes of the AVX-512 VNNI kernel) */
AI __m256 i8_block(const fe_block_q8_0 *p, const gemv_x *x, int64_t j, float dx, __m256 acc,
                   const int VN) {
    __m256i s;
    if (VN) {
        const __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p->qs),
                                           _mm256_set1_epi8((char)0x80));
        s = dpbusd_vex(_mm256_loadu_si256((const __m256i *)(x->ncorr + 8 * j)), u,
                       _mm256_loadu_si256((const __m256i *)(x->q8 + 32 * j)));
    } else {
        const int16_t *q16 = x->q16 + 32 * j;
        const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p->qs));
        const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p->qs + 16)));
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)q16);
        const __m256i x1 = _mm256_loadu_si256((const __m256i *)(q16 + 16));
        s = _mm256_add_epi32(_mm256_madd_epi16(w0, x0), _mm256_madd_epi16(w1, x1));
    }
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(_cvtsh_ss(p->d) * dx), acc);
}

/* q8_0 rows, act_int8 (VN: by AVX-VNNI): block j into a, j + 1 into the second accumulator,
 * an odd last one into a */
AI void dot_i8(const unsigned char *w, size_t rs, int64_t K, const gemv_x *x, float *out,
               int64_t pf, const int NR, const int VN) {
    ROWS(fe_block_q8_0)
    const int64_t nb = K / 32;
    int64_t j = 0;
    for (; j + 2 <= nb; j += 2) {
        const float d0 = x->dx[j], d1 = x->dx[j + 1];
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        PF(w##r + j, 0) PF(w##r + j, 64)                                                   \
        a##r = i8_block(w##r + j, x, j, d0, a##r, VN);                                     \
        B2(r) = i8_block(w##r + j + 1, x, j + 1, d1, B2(r), VN);                           \
    }
        R8(S)
#undef S
    }
    if (j < nb) {
        const float d0 = x->dx[j];
#define S(r) if (NR > r) a##r = i8_block(w##r + j, x, j, d0, a##r, VN);
        R8(S)
#undef S
    }
    R8(HSUM)
}

/* u . x in groups of 4 into int32 lanes, plus nc: vpdpbusd (VN, AVX-VNNI), else vpmaddubsw
 * (u <= 15: pairs at most 2 * 15 * 127, no saturation) and vpmaddwd by 1; the same integers */
AI __m256i q4_lanes(__m256i u, __m256i xq, __m256i nc, const int VN) {
    if (VN) return dpbusd_vex(nc, u, xq);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u, xq), _mm256_set1_epi16(1)), nc);
}

/* act_int8 with q4_0 (Q1 = 0) or q4_1 (Q1 = 1) W: u = (v & 15, v >> 4) for the block's 16
 * bytes v, its exact int32 lanes against x (q4_lanes); sc = (d, m) * (dx, dx t): d dx scales
 * the lanes, m dx t (lane 1, q4_1's term) is added to the second accumulator */
AI void dot_q4i8(const unsigned char *w, size_t rs, int64_t K, const gemv_x *x, float *out,
                 int64_t pf, const int NR, const int Q1, const int VN) {
    const size_t bs = Q1 ? sizeof(fe_block_q4_1) : sizeof(fe_block_q4_0);
    ROWS(unsigned char)
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128 lane1 = _mm_castsi128_ps(_mm_setr_epi32(0, -1, 0, 0));
    for (int64_t j = 0; j < K / 32; j++) {
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(x->q8 + 32 * j));
        const __m256i nc = Q1 ? _mm256_setzero_si256()
                              : _mm256_loadu_si256((const __m256i *)(x->ncorr + 8 * j));
        const __m128 xs = _mm_castpd_ps(_mm_load_sd((const double *)(x->dxs + 2 * j)));
#define S(r)                                                                               \
    if (NR > r) {                                                                          \
        const unsigned char *p = w##r + (size_t)j * bs;                                    \
        PF(p, 0)                                                                           \
        uint32_t h = 0;                                                                    \
        memcpy(&h, p, Q1 ? 4 : 2);                                                         \
        const __m128i v = _mm_loadu_si128((const __m128i *)(p + bs - 16));                 \
        const __m256i u = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, m4)), \
                                                  _mm_and_si128(_mm_srli_epi16(v, 4), m4), 1); \
        const __m256i is = q4_lanes(u, xq, nc, VN);                                        \
        const __m128 sc = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h)), xs);        \
        a##r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_broadcastss_ps(sc), a##r);  \
        if (Q1) B2(r) = _mm256_add_ps(B2(r), _mm256_zextps128_ps256(_mm_and_ps(sc, lane1))); \
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

/* q4_0 (Q1 = 0) or q4_1 rows: int8 x by AVX-VNNI or emulated, or f32 x */
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
#define C(n) dot_i8(w, rs, K, x, out, s->pf, n, 1)
            NR_SWITCH(C)
#undef C
        } else if (s->i8 == GEMV_I8_EMUL) {
#define C(n) dot_i8(w, rs, K, x, out, s->pf, n, 0)
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
                         ? fe_kq_dot_int8_avx2(s->dt, w + (size_t)i * rs, x->q8, x->dx, x->bsums, K)
                         : fe_kq_dot_f32_avx2(s->dt, w + (size_t)i * rs, x->xf, K);
        break;
    default: break;
    }
}

#include "ops/gemv/avx2_batches.inc"
#include "ops/gemv/avx2_panels.inc"
#define GEMV_PANELS_RUN gemv_panels_run
#include "ops/gemv/panel_avx2.inc"
#include "ops/gemv/driver.inc"
