/* bench/bench_gemv_panel.c: an experiment for issue 13's 3x, not a kernel of ferrum: how fast a
 * GEMV over B x rows could be with act_int8 q4_1 weights when the vector lanes hold 16
 * outputs (W rows) instead of 16 partial sums of one row, W read in its stored form or packed
 * once into panels (pack_q4_1: what a load-time pack would give). The GEMV batch
 * passes (ops/gemv, avx512_batches.inc) keep the one-row kernel's lanes (so every batch's y is
 * bit-identical to the one-row GEMV), and pay per (row, batch, pair of blocks) a vpdpbusd, a
 * conversion, a scale product and an FMA: ~5 512-bit operations for 64 multiply-adds. Here,
 * per 16 rows and block, the rows' nibbles are transposed once (stored form: 16 loads, a 4x4
 * dword transpose, the scales gathered; panels: 4 loads), split into low and high nibbles,
 * and each x row then takes 8 vpdpbusd
 * (x's 4 bytes broadcast), one conversion, one product and two FMAs for 512 multiply-adds.
 * Each output's sum runs block after block (an order of its own, so not bit-identical to
 * the one-row GEMV; checked here against a double reference within 1e-5 relative), and
 * each x row's y is the same bytes at every B (checked: B = 1, 2, 4, 8 against 12).
 *
 * Timed, one worker (the prototype is single-threaded; give FERRUM_WORKERS=1 so the GEMV
 * beside it also runs on one), CPU time, alternating with ferrum's GEMV at batches_per_pass 8
 * on the same W and x: SmolLM2-135M's gate (1536x576), down (576x1536) and head (49152x576) at
 * B = 1, 2, 4, 8, 12 with W warm, then a decode step's 211 GEMVs with W streamed from memory.
 * Both include x's quantisation (the prototype's in AVX-512, as the GEMV's); neither the
 * epilogue.
 *
 * The decode step also runs ferrum's own panel design (GEMV panel = 1, ops/gemv/panel.h, which
 * grew out of this prototype) from layouts made once, beside the passes (pinned to panel = 0).
 *
 * Usage: FERRUM_WORKERS=1 bench_gemv_panel */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/quant.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "ops/gemv/gemv.h"
#include "ops/kernel.h"
#include "support/bench_device.h"
#include "support/peak.h"

enum { RUNS = 15, MAX_B = 12 };

#define PANEL __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))

/* x rows quantised per 32-block (fe_gemv_quant_x), with dx and dx * sum(q) per block */
typedef struct qx {
    int8_t *q;
    float *dx, *xt;
} qx;

/* fe_gemv_quant_x's bytes and scales (the avx512 GEMV's in-register form of it), plus each
 * block's dx * sum(q) */
PANEL static void quant_rows(const float *x, int64_t B, int64_t K, qx *out) {
    const __m512 lim = _mm512_set1_ps(127.0f), nlim = _mm512_set1_ps(-127.0f);
    for (int64_t b = 0; b < B; b++) {
        int8_t *q = out->q + b * K;
        float *dx = out->dx + b * (K / 32), *xt = out->xt + b * (K / 32);
        const float *xb = x + b * K;
        for (int64_t k = 0; k < K / 32; k++) {
            const __m512 v0 = _mm512_loadu_ps(xb + 32 * k), v1 = _mm512_loadu_ps(xb + 32 * k + 16);
            const __m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1));
            const float amax = _mm512_reduce_max_ps(m);
            const float dk = amax / 127.0f, id = dk != 0.0f ? 1.0f / dk : 0.0f;
            const __m512 vid = _mm512_set1_ps(id);
            const __m512i q0 = _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(v0, vid), lim), nlim));
            const __m512i q1 = _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(v1, vid), lim), nlim));
            _mm_storeu_si128((__m128i *)(q + 32 * k), _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(q + 32 * k + 16), _mm512_cvtepi32_epi8(q1));
            dx[k] = dk;
            xt[k] = dk * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        }
    }
}

#define AI static inline __attribute__((always_inline))
/* block j of 16 outputs (their nibbles in lo / hi, scales dw, mins mw) dotted with NB x
 * rows from b, into acc: both forms' per-row work */
AI PANEL void rows_dot_block(const __m512i lo[4], const __m512i hi[4], __m512 dw, __m512 mw,
                             const qx *x, int64_t b, int64_t j, int64_t nb, int64_t K,
                             __m512 *acc, const int NB) {
    for (int i = 0; i < NB; i++) {
        const int32_t *xq = (const int32_t *)(x->q + (b + i) * K + 32 * j);
        __m512i s = _mm512_setzero_si512();
        for (int d = 0; d < 4; d++) {
            s = _mm512_dpbusd_epi32(s, lo[d], _mm512_set1_epi32(xq[d]));
            s = _mm512_dpbusd_epi32(s, hi[d], _mm512_set1_epi32(xq[4 + d]));
        }
        const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(x->dx[(b + i) * nb + j]));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc[i]);
        acc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(x->xt[(b + i) * nb + j]), acc[i]);
    }
}

/* one group of 16 rows at g (lane L: row 4 (L % 4) + L / 4, the 4x4 transpose's order) with
 * NB x rows from b: y rows b.., columns n0.. */
AI PANEL void panel_group(const fe_block_q4_1 *g, int64_t nb, int64_t K, const qx *x, int64_t b,
                          __m512i hdr_idx, __m512i back, float *y, int64_t N, const int NB) {
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512 acc[8];
    for (int i = 0; i < NB; i++) acc[i] = _mm512_setzero_ps();
    const size_t rs = (size_t)nb;
    for (int64_t j = 0; j < nb; j++) {
        __m512i z[4];
        for (int q = 0; q < 4; q++) {
            const fe_block_q4_1 *r0 = g + (4 * q) * rs + j;
            __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)r0->qs));
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(r0 + rs)->qs), 1);
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(r0 + 2 * rs)->qs), 2);
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(r0 + 3 * rs)->qs), 3);
            z[q] = v;
        }
        /* z[q] 128-bit lane r: row 4q + r's dwords 0..3 */
        const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
        const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
        const __m512i v[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2),
                              _mm512_unpacklo_epi64(t1, t3), _mm512_unpackhi_epi64(t1, t3)};
        /* v[d] lane 4r + q: row 4q + r's dword d (k = 4d..4d+3 low, 16+4d.. high) */
        __m512i lo[4], hi[4];
        for (int d = 0; d < 4; d++) {
            lo[d] = _mm512_and_si512(v[d], m4);
            hi[d] = _mm512_and_si512(_mm512_srli_epi16(v[d], 4), m4);
        }
        const __m512i hdr = _mm512_i32gather_epi32(hdr_idx, (const void *)(g + j), 1);
        const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(hdr));
        const __m512 mw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(hdr, 16)));
        rows_dot_block(lo, hi, dw, mw, x, b, j, nb, K, acc, NB);
    }
    for (int i = 0; i < NB; i++) _mm512_storeu_ps(y + (b + i) * N, _mm512_permutexvar_ps(back, acc[i]));
}

/* y (B, N) = W (N, K, q4_1 stored) . x, 16 rows a group, x rows in passes of 8, 4, 2, 1 */
PANEL static void panel_q4_1(const fe_block_q4_1 *W, int64_t N, int64_t K, const qx *x,
                             int64_t B, float *y) {
    const int64_t nb = K / 32;
    int32_t lane_row[16];
    for (int L = 0; L < 16; L++) lane_row[L] = 4 * (L % 4) + L / 4;
    const __m512i rows = _mm512_loadu_si512(lane_row);
    const __m512i hdr_idx = _mm512_mullo_epi32(rows, _mm512_set1_epi32((int)(nb * 20)));
    for (int64_t n0 = 0; n0 + 16 <= N; n0 += 16) {
        const fe_block_q4_1 *g = W + n0 * nb;
        for (int64_t b = 0; b < B;) {
            const int64_t left = B - b;
            if (left >= 8) { panel_group(g, nb, K, x, b, hdr_idx, rows, y + n0, N, 8); b += 8; }
            else if (left >= 4) { panel_group(g, nb, K, x, b, hdr_idx, rows, y + n0, N, 4); b += 4; }
            else if (left >= 2) { panel_group(g, nb, K, x, b, hdr_idx, rows, y + n0, N, 2); b += 2; }
            else { panel_group(g, nb, K, x, b, hdr_idx, rows, y + n0, N, 1); b += 1; }
        }
    }
}

/* The same design over W packed once into panels (what a load-time pack would give): per
 * 16 rows and block, the 4 transposed nibble vectors (256 bytes, lane order as above) then
 * the 16 d and 16 m as f16 (64 bytes): 320 bytes, the stored form's 16 x 20. */
PANEL static void pack_q4_1(const fe_block_q4_1 *W, int64_t N, int64_t K, unsigned char *P) {
    const int64_t nb = K / 32;
    for (int64_t n0 = 0; n0 + 16 <= N; n0 += 16)
        for (int64_t j = 0; j < nb; j++) {
            unsigned char *o = P + ((n0 / 16) * nb + j) * 320;
            for (int L = 0; L < 16; L++) {
                const fe_block_q4_1 *blk = W + (n0 + 4 * (L % 4) + L / 4) * nb + j;
                for (int d = 0; d < 4; d++) memcpy(o + 64 * d + 4 * L, blk->qs + 4 * d, 4);
                memcpy(o + 256 + 2 * L, &blk->d, 2);
                memcpy(o + 288 + 2 * L, &blk->m, 2);
            }
        }
}

AI PANEL void packed_group(const unsigned char *g, int64_t nb, int64_t K, const qx *x, int64_t b,
                           __m512i back, float *y, int64_t N, const int NB) {
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512 acc[8];
    for (int i = 0; i < NB; i++) acc[i] = _mm512_setzero_ps();
    for (int64_t j = 0; j < nb; j++) {
        const unsigned char *p = g + j * 320;
        _mm_prefetch((const char *)p + 1280, _MM_HINT_T0);
        _mm_prefetch((const char *)p + 1344, _MM_HINT_T0);
        _mm_prefetch((const char *)p + 1408, _MM_HINT_T0);
        _mm_prefetch((const char *)p + 1472, _MM_HINT_T0);
        _mm_prefetch((const char *)p + 1536, _MM_HINT_T0);
        __m512i lo[4], hi[4];
        for (int d = 0; d < 4; d++) {
            const __m512i v = _mm512_loadu_si512(p + 64 * d);
            lo[d] = _mm512_and_si512(v, m4);
            hi[d] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 256)));
        const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 288)));
        rows_dot_block(lo, hi, dw, mw, x, b, j, nb, K, acc, NB);
    }
    for (int i = 0; i < NB; i++) _mm512_storeu_ps(y + (b + i) * N, _mm512_permutexvar_ps(back, acc[i]));
}

PANEL static void packed_q4_1(const unsigned char *P, int64_t N, int64_t K, const qx *x,
                              int64_t B, float *y) {
    const int64_t nb = K / 32;
    int32_t lane_row[16];
    for (int L = 0; L < 16; L++) lane_row[L] = 4 * (L % 4) + L / 4;
    const __m512i rows = _mm512_loadu_si512(lane_row);
    for (int64_t n0 = 0; n0 + 16 <= N; n0 += 16) {
        const unsigned char *g = P + (n0 / 16) * nb * 320;
        for (int64_t b = 0; b < B;) {
            const int64_t left = B - b;
            if (left >= 8) { packed_group(g, nb, K, x, b, rows, y + n0, N, 8); b += 8; }
            else if (left >= 4) { packed_group(g, nb, K, x, b, rows, y + n0, N, 4); b += 4; }
            else if (left >= 2) { packed_group(g, nb, K, x, b, rows, y + n0, N, 2); b += 2; }
            else { packed_group(g, nb, K, x, b, rows, y + n0, N, 1); b += 1; }
        }
    }
}

static double reference(const fe_block_q4_1 *row, const qx *x, int64_t b, int64_t K) {
    const int64_t nb = K / 32;
    double acc = 0;
    for (int64_t j = 0; j < nb; j++) {
        const int8_t *q = x->q + b * K + 32 * j;
        int32_t s = 0;
        for (int i = 0; i < 16; i++) s += (row[j].qs[i] & 15) * q[i] + (row[j].qs[i] >> 4) * q[i + 16];
        acc += (double)fe_f16_to_f32(row[j].d) * x->dx[b * nb + j] * s +
               (double)fe_f16_to_f32(row[j].m) * x->xt[b * nb + j];
    }
    return acc;
}

static int cmp_double(const void *a, const void *b) {
    double p = *(const double *)a, q = *(const double *)b;
    return p < q ? -1 : p > q;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned char next_byte(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (unsigned char)((rng * 0x2545f4914f6cdd1dull) >> 56);
}

static int bench(fe_device *dev, const char *name, int64_t N, int64_t K) {
    const size_t wbytes = fe_dtype_bytes(FE_DTYPE_Q4_1, N * K);
    fe_block_q4_1 *w = fe_aligned_alloc(64, wbytes);
    float *x = fe_aligned_alloc(64, (size_t)(MAX_B * K) * 4);
    float *y0 = fe_aligned_alloc(64, (size_t)(MAX_B * N) * 4), *y1 = fe_aligned_alloc(64, (size_t)(MAX_B * N) * 4);
    qx q = {fe_aligned_alloc(64, (size_t)(MAX_B * K)), fe_aligned_alloc(64, (size_t)(MAX_B * K / 32) * 4),
            fe_aligned_alloc(64, (size_t)(MAX_B * K / 32) * 4)};
    unsigned char *wb = (unsigned char *)w, *pk = fe_aligned_alloc(64, wbytes);
    for (size_t i = 0; i < wbytes; i++) wb[i] = next_byte();
    for (int64_t i = 0; i < N * K / 32; i++) { /* finite scales around 0.01 */
        w[i].d = fe_f32_to_f16(0.001f * (float)(1 + next_byte() % 16));
        w[i].m = fe_f32_to_f16(-0.001f * (float)(1 + next_byte() % 16));
    }
    for (int64_t i = 0; i < MAX_B * K; i++) x[i] = (float)(next_byte() % 200) / 100.0f - 1.0f;
    int status = 0;
    pack_q4_1(w, N, K, pk);
    float *y2 = fe_aligned_alloc(64, (size_t)(MAX_B * N) * 4);
    /* correctness at MAX_B */
    quant_rows(x, MAX_B, K, &q);
    panel_q4_1(w, N, K, &q, MAX_B, y1);
    packed_q4_1(pk, N, K, &q, MAX_B, y2);
    double worst = 0;
    for (int64_t b = 0; b < MAX_B; b++)
        for (int64_t n = 0; n < N; n++) {
            const double r = reference(w + n * (K / 32), &q, b, K);
            const double e = fabs(y1[b * N + n] - r) / (fabs(r) + 1e-3);
            const double e2 = fabs(y2[b * N + n] - r) / (fabs(r) + 1e-3);
            worst = e > worst ? e : worst;
            worst = e2 > worst ? e2 : worst;
        }
    /* outputs in lanes: each x row's y is the same bytes whatever the rows beside it */
    for (int64_t B = 1; B < MAX_B; B *= 2) {
        packed_q4_1(pk, N, K, &q, B, y1);
        if (memcmp(y1, y2, (size_t)(B * N) * 4) != 0) {
            printf("  %s: the packed panel's y at B=%lld differs from B=%d's\n", name, (long long)B, MAX_B);
            status = 1;
        }
    }
    panel_q4_1(w, N, K, &q, MAX_B, y1);
    if (worst > 1e-5) {
        printf("  %s: panel differs from the reference by %.3g (relative)\n", name, worst);
        status = 1;
    }
    const int64_t Bs[5] = {1, 2, 4, 8, 12};
    for (int bi = 0; bi < 5; bi++) {
        const int64_t B = Bs[bi], nk[2] = {N, K}, xk[2] = {B, K}, yn[2] = {B, N};
        fe_tensor ops[6] = {fe_tensor_contiguous(w, FE_DTYPE_Q4_1, 2, nk),
                            fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xk), {.rank = 0}, {.rank = 0},
                            {.rank = 0}, fe_tensor_contiguous(y0, FE_DTYPE_F32, 2, yn)};
        const fe_setting params[1] = {{"act_int8", 1}};
        const fe_setting tun[2] = {{"batches_per_pass", 8}, {"panel", 0}};
        fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6, .params = params,
                             .n_params = 1, .tunables = tun, .n_tunables = 2};
        fe_kernel *k = NULL;
        fe_error err = {0};
        if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) {
            printf("  %s: cannot make the GEMV: %s\n", name, err.message);
            status = 1;
            break;
        }
        double t[3][RUNS];
        fe_kernel_run(k, ops, 6, NULL, 0);
        for (int run = 0; run < RUNS; run++) {
            double a = fe_peak_clock_s();
            fe_kernel_run(k, ops, 6, NULL, 0);
            double m = fe_peak_clock_s();
            quant_rows(x, B, K, &q);
            panel_q4_1(w, N, K, &q, B, y1);
            double e = fe_peak_clock_s();
            quant_rows(x, B, K, &q);
            packed_q4_1(pk, N, K, &q, B, y2);
            double f = fe_peak_clock_s();
            t[0][run] = (m - a) * 1e3;
            t[1][run] = (e - m) * 1e3;
            t[2][run] = (f - e) * 1e3;
        }
        fe_kernel_destroy(k);
        for (int i = 0; i < 3; i++) qsort(t[i], RUNS, sizeof(double), cmp_double);
        printf("  %-5s B=%-2lld  passes %7.3f ms (%.3f-%.3f)   stored-form panel %7.3f (%.3f-%.3f) "
               "%.2fx   packed panel %7.3f (%.3f-%.3f) %.2fx\n",
               name, (long long)B, t[0][RUNS / 2], t[0][0], t[0][RUNS - 1], t[1][RUNS / 2],
               t[1][0], t[1][RUNS - 1], t[0][RUNS / 2] / t[1][RUNS / 2], t[2][RUNS / 2], t[2][0],
               t[2][RUNS - 1], t[0][RUNS / 2] / t[2][RUNS / 2]);
        fflush(stdout);
    }
    fe_free(w);
    fe_free(x);
    fe_free(y0);
    fe_free(y1);
    fe_free(y2);
    fe_free(pk);
    fe_free(q.q);
    fe_free(q.dx);
    fe_free(q.xt);
    return status;
}

/* A decode step's GEMVs as SmolLM2-135M has them (30 layers of q, k, v, o, gate, up, down,
 * then the head; every matrix its own W, 84 MB of q4_1 in all, so W streams from memory as in
 * the model), plain act_int8 GEMVs without the fused prologue and epilogues: ferrum's GEMV
 * (passes of 8) against packed panels, alternating, ms per step at each B. */
typedef struct mat {
    int64_t N, K;
    fe_block_q4_1 *w;
    unsigned char *pk;
} mat;

static int bench_step(fe_device *dev) {
    enum { LAYERS = 30, PER = 7, NMAT = LAYERS * PER + 1, STEP_RUNS = 9 };
    static const int64_t shp[PER][2] = {{576, 576}, {192, 576}, {192, 576}, {576, 576},
                                        {1536, 576}, {1536, 576}, {576, 1536}};
    mat m[NMAT];
    int status = 0;
    for (int i = 0; i < NMAT; i++) {
        m[i].N = i < NMAT - 1 ? shp[i % PER][0] : 49152;
        m[i].K = i < NMAT - 1 ? shp[i % PER][1] : 576;
        const size_t wb = fe_dtype_bytes(FE_DTYPE_Q4_1, m[i].N * m[i].K);
        m[i].w = fe_aligned_alloc(64, wb);
        m[i].pk = fe_aligned_alloc(64, wb);
        if (!m[i].w || !m[i].pk) {
            printf("  step: out of memory\n");
            return 1;
        }
        for (int64_t b = 0; b < m[i].N * m[i].K / 32; b++) {
            m[i].w[b].d = fe_f32_to_f16(0.001f * (float)(1 + next_byte() % 16));
            m[i].w[b].m = fe_f32_to_f16(-0.001f * (float)(1 + next_byte() % 16));
            for (int j = 0; j < 16; j++) m[i].w[b].qs[j] = next_byte();
        }
        pack_q4_1(m[i].w, m[i].N, m[i].K, m[i].pk);
    }
    float *x = fe_aligned_alloc(64, (size_t)(MAX_B * 1536) * 4);
    float *y = fe_aligned_alloc(64, (size_t)(MAX_B * 49152) * 4);
    qx q = {fe_aligned_alloc(64, (size_t)(MAX_B * 1536)), fe_aligned_alloc(64, (size_t)(MAX_B * 48) * 4),
            fe_aligned_alloc(64, (size_t)(MAX_B * 48) * 4)};
    for (int64_t i = 0; i < MAX_B * 1536; i++) x[i] = (float)(next_byte() % 200) / 100.0f - 1.0f;
    const int64_t Bs[5] = {1, 2, 4, 8, 12};
    for (int bi = 0; bi < 5 && !status; bi++) {
        const int64_t B = Bs[bi];
        /* one kernel per distinct (N, K), W pointed at each matrix per call */
        const int64_t dims[4][2] = {{576, 576}, {192, 576}, {1536, 576}, {576, 1536}};
        fe_kernel *k[5] = {0}, *kp[5] = {0};
        for (int d = 0; d < 10 && !status; d++) {
            const int dd = d % 5;
            const int64_t nk[2] = {dd < 4 ? dims[dd][0] : 49152, dd < 4 ? dims[dd][1] : 576};
            const int64_t xk[2] = {B, nk[1]}, yn[2] = {B, nk[0]};
            fe_tensor ops[6] = {fe_tensor_contiguous(m[0].w, FE_DTYPE_Q4_1, 2, nk),
                                fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xk), {.rank = 0},
                                {.rank = 0}, {.rank = 0}, fe_tensor_contiguous(y, FE_DTYPE_F32, 2, yn)};
            const fe_setting params[1] = {{"act_int8", 1}};
            const fe_setting tun[2] = {{"batches_per_pass", 8}, {"panel", d >= 5}};
            fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6, .params = params,
                                 .n_params = 1, .tunables = tun, .n_tunables = 2};
            fe_error err = {0};
            if (fe_kernel_create(dev, &req, d < 5 ? &k[dd] : &kp[dd], &err) != FE_OK) {
                printf("  step: cannot make the GEMV: %s\n", err.message);
                status = 1;
            }
        }
        /* ferrum's panel design reads each matrix from its layout, made once */
        void *lay[NMAT] = {0};
        for (int i = 0; i < NMAT && !status; i++) {
            const int d = i == NMAT - 1 ? 4 : m[i].N == 192 ? 1 : m[i].N == 1536 ? 2 : m[i].K == 1536 ? 3 : 0;
            const int64_t nk[2] = {m[i].N, m[i].K};
            const fe_tensor wt = fe_tensor_contiguous(m[i].w, FE_DTYPE_Q4_1, 2, nk);
            lay[i] = fe_aligned_alloc(64, fe_kernel_layout_bytes(kp[d], 0, NULL));
            if (!lay[i] || fe_kernel_make_layout(kp[d], 0, &wt, lay[i]) != FE_OK) status = 1;
        }
        double t[4][STEP_RUNS];
        for (int run = 0; run <= STEP_RUNS && !status; run++) { /* run 0 warms up */
            const double a = fe_peak_clock_s();
            for (int i = 0; i < NMAT; i++) {
                const int d = i == NMAT - 1 ? 4 : m[i].N == 192 ? 1 : m[i].N == 1536 ? 2 : m[i].K == 1536 ? 3 : 0;
                const int64_t nk[2] = {m[i].N, m[i].K}, xk[2] = {B, m[i].K}, yn[2] = {B, m[i].N};
                fe_tensor ops[6] = {fe_tensor_contiguous(m[i].w, FE_DTYPE_Q4_1, 2, nk),
                                    fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xk), {.rank = 0},
                                    {.rank = 0}, {.rank = 0}, fe_tensor_contiguous(y, FE_DTYPE_F32, 2, yn)};
                if (fe_kernel_run(k[d], ops, 6, NULL, 0) != FE_OK) status = 1;
            }
            const double b = fe_peak_clock_s();
            for (int i = 0; i < NMAT; i++) {
                quant_rows(x, B, m[i].K, &q);
                packed_q4_1(m[i].pk, m[i].N, m[i].K, &q, B, y);
            }
            const double c = fe_peak_clock_s();
            for (int i = 0; i < NMAT; i++) quant_rows(x, B, m[i].K, &q);
            const double e = fe_peak_clock_s();
            for (int i = 0; i < NMAT; i++) {
                const int d = i == NMAT - 1 ? 4 : m[i].N == 192 ? 1 : m[i].N == 1536 ? 2 : m[i].K == 1536 ? 3 : 0;
                const int64_t nk[2] = {m[i].N, m[i].K}, xk[2] = {B, m[i].K}, yn[2] = {B, m[i].N};
                fe_tensor ops[6] = {fe_tensor_contiguous(m[i].w, FE_DTYPE_Q4_1, 2, nk),
                                    fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xk), {.rank = 0},
                                    {.rank = 0}, {.rank = 0}, fe_tensor_contiguous(y, FE_DTYPE_F32, 2, yn)};
                const void *ls[6] = {lay[i]};
                if (fe_kernel_run_layouts(kp[d], ops, 6, ls, NULL, 0) != FE_OK) status = 1;
            }
            const double f = fe_peak_clock_s();
            if (run > 0) {
                t[0][run - 1] = (b - a) * 1e3;
                t[1][run - 1] = (c - b) * 1e3;
                t[2][run - 1] = (e - c) * 1e3;
                t[3][run - 1] = (f - e) * 1e3;
            }
        }
        for (int d = 0; d < 5; d++) fe_kernel_destroy(k[d]);
        for (int d = 0; d < 5; d++) fe_kernel_destroy(kp[d]);
        for (int i = 0; i < NMAT; i++) fe_free(lay[i]);
        if (status) break;
        for (int i = 0; i < 4; i++) qsort(t[i], STEP_RUNS, sizeof(double), cmp_double);
        printf("  step  B=%-2lld  passes %7.2f ms (%.2f-%.2f) %6.1f rows/s   packed panel %7.2f ms "
               "(%.2f-%.2f) %6.1f rows/s   %.2fx   (its x quantisation alone: %.2f ms)   "
               "ferrum panel = 1 %7.2f ms (%.2f-%.2f) %6.1f rows/s %.2fx\n",
               (long long)B, t[0][STEP_RUNS / 2], t[0][0], t[0][STEP_RUNS - 1],
               1e3 * (double)B / t[0][STEP_RUNS / 2], t[1][STEP_RUNS / 2], t[1][0],
               t[1][STEP_RUNS - 1], 1e3 * (double)B / t[1][STEP_RUNS / 2],
               t[0][STEP_RUNS / 2] / t[1][STEP_RUNS / 2], t[2][STEP_RUNS / 2], t[3][STEP_RUNS / 2],
               t[3][0], t[3][STEP_RUNS - 1], 1e3 * (double)B / t[3][STEP_RUNS / 2],
               t[0][STEP_RUNS / 2] / t[3][STEP_RUNS / 2]);
        fflush(stdout);
    }
    for (int i = 0; i < NMAT; i++) {
        fe_free(m[i].w);
        fe_free(m[i].pk);
    }
    fe_free(x);
    fe_free(y);
    fe_free(q.q);
    fe_free(q.dx);
    fe_free(q.xt);
    return status;
}

int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1) {
        printf("usage: FERRUM_WORKERS=1 bench_gemv_panel\n"
               "  act_int8 q4_1 GEMV over B = 1..12 rows: ferrum's batch passes against an\n"
               "  outputs-in-lanes prototype, one worker, CPU time (see the file's opening)\n");
        return 0;
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni")) {
        printf("bench_gemv_panel: needs AVX512-VNNI; nothing to time here\n");
        return 0;
    }
    fe_peak_cpu_time(true);
    fe_device *dev = bench_device_open("bench_gemv_panel");
    if (!dev) return 1;
    bench_print_load("start");
    printf("clock: process CPU time, ms per call, median (min-max) of %d alternated runs\n", RUNS);
    int status = 0;
    status |= bench(dev, "gate", 1536, 576);
    status |= bench(dev, "down", 576, 1536);
    status |= bench(dev, "head", 49152, 576);
    printf("a decode step's GEMVs (SmolLM2-135M's 211 matrices, W streamed), ms per step, median "
           "(min-max) of 9:\n");
    status |= bench_step(dev);
    bench_print_load("end");
    fe_device_destroy(dev);
    return status;
}
