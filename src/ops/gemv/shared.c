/* ops/gemv/shared.c: what GEMV's declaration, reference and per-ISA kernels share: the run
 * shape, the workspace layout, the prologue and act_int8's quantisation of x (plain C, one
 * copy, so kernels and reference quantise identical inputs identically), and the reference
 * (plain double over fe_dequant_row-decoded rows; act_int8 in exact integer block sums). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/gemv/gemv.h"
#include "ops/kquant/kquant.h"
#include "core/quant.h"

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

void fe_gemv_shape(const fe_args *a, const fe_design *d, gemv_shape *s) {
    const fe_tensor *w = &a->t[GEMV_W];
    s->dt = w->dtype;
    s->B = a->ext[GEMV_B];
    s->N = a->ext[GEMV_N];
    s->K = a->ext[GEMV_K];
    s->G = a->ext[GEMV_G];
    s->KP = round_up(s->K, 64);
    s->rows = a->v[GEMV_V_ROWS];
    s->batches = a->v[GEMV_V_BATCHES];
    bool grouped = w->rank == 3;
    s->repeat = grouped ? (int64_t)d->params[GEMV_REPEAT] : s->B;
    int64_t chunk = grouped ? s->repeat * (GEMV_CHUNK / s->repeat > 1 ? GEMV_CHUNK / s->repeat : 1)
                            : GEMV_CHUNK;
    s->chunk = chunk < s->B ? chunk : s->B;
    s->rs = fe_dtype_bytes(s->dt, s->K);
    s->ms = fe_dtype_bytes(s->dt, s->N * s->K);
    s->epi = (int)d->params[GEMV_EPI];
    s->pro = (int)d->params[GEMV_PRO];
    s->i8 = d->params[GEMV_INT8] != 0 ? (d->tunables[GEMV_DOT8] ? GEMV_I8_VNNI : GEMV_I8_EMUL)
                                      : GEMV_I8_NONE;
    s->rps = (int)d->tunables[GEMV_RPS];
    s->bpp = (int)d->tunables[GEMV_BPP];
    s->pf = d->tunables[GEMV_PF];
    s->panel = d->tunables[GEMV_PANEL] != 0;
}

/* xf is needed for the prologue, and for bf16 on the SIMD ISAs (the evens/odds layout) */
static bool needs_xf(const gemv_shape *s, fe_isa isa) {
    return s->pro != GEMV_PRO_NONE || (s->dt == FE_DTYPE_BF16 && isa != FE_ISA_SCALAR);
}

size_t fe_gemv_slot_bytes(const gemv_shape *s, fe_isa isa) {
    size_t kp = (size_t)s->KP, n = 0;
    if (needs_xf(s, isa)) n += kp * 4;
    /* q16, q8, ncorr (kp/4 int32), dx (kp/32 floats), dx16 (kp/4 floats), dxs (kp/16
     * floats) */
    if (s->i8 != GEMV_I8_NONE) n += kp * 2 + kp + kp + kp / 8 + kp + kp / 4;
    return (n + 63) / 64 * 64;
}

size_t fe_gemv_worker_bytes(const gemv_shape *s, fe_isa isa) {
    size_t n = (size_t)s->chunk * fe_gemv_slot_bytes(s, isa);
    /* the scalar kernel decodes one row at a time into f32 */
    if (isa == FE_ISA_SCALAR && s->i8 == GEMV_I8_NONE && s->dt != FE_DTYPE_F32)
        n += (size_t)s->KP * 4;
    return (n + 63) / 64 * 64;
}

void fe_gemv_slot_layout(const gemv_shape *s, fe_isa isa, unsigned char *p, gemv_x *x) {
    size_t kp = (size_t)s->KP;
    memset(x, 0, sizeof *x);
    if (needs_xf(s, isa)) {
        x->xf = (const float *)p;
        p += kp * 4;
    }
    if (s->i8 != GEMV_I8_NONE) {
        x->q16 = (const int16_t *)p;
        p += kp * 2;
        x->q8 = (const int8_t *)p;
        p += kp;
        x->ncorr = (const int32_t *)p;
        x->bsums = (const int16_t *)p; /* kquant dtypes only, which read no ncorr */
        p += kp;
        x->dx16 = (const float *)p;
        p += kp;
        x->dx = (const float *)p;
        p += kp / 8;
        x->dxs = (const float *)p;
    }
}

void fe_gemv_rmsnorm_x(const float *x, const float *nw, int64_t K, double eps, float *out) {
    double s[4] = {0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 4 <= K; j += 4)
        for (int i = 0; i < 4; i++) s[i] += (double)x[j + i] * x[j + i];
    for (; j < K; j++) s[0] += (double)x[j] * x[j];
    double ss = (s[0] + s[1]) + (s[2] + s[3]);
    float inv = (float)(1.0 / sqrt(ss / (double)K + eps));
    for (j = 0; j < K; j++) out[j] = nw ? x[j] * inv * nw[j] : x[j] * inv;
}

void fe_gemv_quant_x(const float *x, int64_t K, int8_t *q, float *dx) {
    for (int64_t k = 0; k < K / 32; k++) {
        const float *xb = x + k * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) { /* not fmaxf: a libm call here without fast-math */
            float a = fabsf(xb[j]);
            amax = a > amax ? a : amax;
        }
        float dk = amax / 127.0f, id = dk != 0.0f ? 1.0f / dk : 0.0f;
        dx[k] = dk;
        /* round half to even (as nearbyintf and cvtps2dq) by the 1.5 * 2^23 trick, exact
         * for |v| <= 2^22, without a libm call per element; clamped first, so a non-finite
         * x gives +-127 rather than an undefined conversion */
        for (int j = 0; j < 32; j++) {
            float v = xb[j] * id;
            v = v < 127.0f ? v : 127.0f;
            v = v > -127.0f ? v : -127.0f;
            q[k * 32 + j] = (int8_t)(int)((v + 12582912.0f) - 12582912.0f);
        }
    }
}

/* per block s = sum(wq xq) (wq: q8_0's qs, q4_0's nibble - 8, q4_1's nibble) and t = sum(xq)
 * in int32, exact; then d dx s (+ m dx t) in double: d dx is exact (11 + 24 significant
 * bits), each product rounds at most once (q8_0's s takes up to 19 bits) */
double fe_gemv_dot_int8(fe_dtype dt, const unsigned char *row, const int8_t *q, const float *dx,
                        int64_t K) {
    double acc = 0;
    for (int64_t k = 0; k < K / 32; k++) {
        const int8_t *xq = q + 32 * k;
        int32_t s = 0, t = 0;
        double d, m = 0;
        for (int j = 0; j < 32; j++) t += xq[j];
        if (dt == FE_DTYPE_Q8_0) {
            const fe_block_q8_0 *b = (const fe_block_q8_0 *)row + k;
            for (int j = 0; j < 32; j++) s += b->qs[j] * xq[j];
            d = fe_f16_to_f32(b->d);
        } else {
            bool q1 = dt == FE_DTYPE_Q4_1;
            const fe_block_q4_0 *b0 = (const fe_block_q4_0 *)row + k;
            const fe_block_q4_1 *b1 = (const fe_block_q4_1 *)row + k;
            const uint8_t *qs = q1 ? b1->qs : b0->qs;
            int off = q1 ? 0 : 8;
            for (int j = 0; j < 16; j++)
                s += ((qs[j] & 15) - off) * xq[j] + ((qs[j] >> 4) - off) * xq[j + 16];
            d = fe_f16_to_f32(q1 ? b1->d : b0->d);
            if (q1) m = fe_f16_to_f32(b1->m);
        }
        acc += d * dx[k] * s + m * dx[k] * t;
    }
    return acc;
}

/* The reference: every bounded (batch, row) from W[g] rows decoded by fe_dequant_row, dot
 * products, prologue and epilogue in double. act_int8 designs take x quantised exactly as the
 * kernels do (fe_gemv_rmsnorm_x, fe_gemv_quant_x) and dot it block by block in integers
 * (fe_gemv_dot_int8), so the reference is exact about what they compute. */
void fe_gemv_reference(const fe_args *a, const fe_design *d) {
    gemv_shape s;
    fe_gemv_shape(a, d, &s);
    const int64_t K = s.K, N = s.N;
    const unsigned char *W = a->t[GEMV_W].data, *U = a->t[GEMV_UP].rank ? a->t[GEMV_UP].data : NULL;
    const float *X = a->t[GEMV_X].data, *R = a->t[GEMV_RES].rank ? a->t[GEMV_RES].data : NULL;
    const float *nw = a->t[GEMV_NW].rank ? a->t[GEMV_NW].data : NULL;
    float *Y = a->t[GEMV_Y].data;
    bool grouped = a->t[GEMV_W].rank == 3;
    float *row = malloc((size_t)K * 4), *urow = malloc((size_t)K * 4), *xn = malloc((size_t)K * 4);
    double *xd = malloc((size_t)K * 8);
    int8_t *q = malloc((size_t)K);
    float *dx = malloc((size_t)(K / 32 + 1) * 4);
    int16_t *bsums = malloc((size_t)(K / 16 + 1) * 2);
    const bool kq = fe_kq_serves(s.dt);
    bool ok = row && urow && xn && xd && q && dx && bsums;
    for (int64_t b = 0; b < s.batches; b++) {
        const float *x = X + b * K;
        int64_t g = grouped ? b / s.repeat : 0;
        if (!ok) {
            for (int64_t r = 0; r < s.rows; r++) Y[b * N + r] = NAN; /* fails the comparison */
            continue;
        }
        if (s.i8 != GEMV_I8_NONE) {
            if (s.pro == GEMV_PRO_RMSNORM) fe_gemv_rmsnorm_x(x, nw, K, d->params[GEMV_EPS], xn);
            else memcpy(xn, x, (size_t)K * 4);
            if (kq) fe_kq_quant_x(xn, K, fe_kq_xblock(s.dt), q, dx, bsums);
            else fe_gemv_quant_x(xn, K, q, dx);
        } else if (s.pro == GEMV_PRO_RMSNORM) {
            double ss = 0;
            for (int64_t j = 0; j < K; j++) ss += (double)x[j] * x[j];
            double inv = 1.0 / sqrt(ss / (double)K + d->params[GEMV_EPS]);
            for (int64_t j = 0; j < K; j++) xd[j] = x[j] * inv * (nw ? nw[j] : 1.0);
        } else {
            for (int64_t j = 0; j < K; j++) xd[j] = x[j];
        }
        for (int64_t r = 0; r < s.rows; r++) {
            size_t off = (size_t)g * s.ms + (size_t)r * s.rs;
            double acc = 0, up = 0;
            if (s.i8 != GEMV_I8_NONE && kq) {
                acc = (float)fe_kq_dot_int8_ref(s.dt, W + off, q, dx, bsums, K);
                if (U) up = (float)fe_kq_dot_int8_ref(s.dt, U + off, q, dx, bsums, K);
            } else if (s.i8 != GEMV_I8_NONE) {
                acc = fe_gemv_dot_int8(s.dt, W + off, q, dx, K);
                if (U) up = fe_gemv_dot_int8(s.dt, U + off, q, dx, K);
            } else {
                fe_dequant_row(s.dt, W + off, row, K);
                for (int64_t j = 0; j < K; j++) acc += (double)row[j] * xd[j];
                if (U) {
                    fe_dequant_row(s.dt, U + off, urow, K);
                    for (int64_t j = 0; j < K; j++) up += (double)urow[j] * xd[j];
                }
            }
            double y = acc;
            switch (s.epi) {
            case GEMV_EPI_SILU: y = acc / (1.0 + exp(-acc)); break;
            case GEMV_EPI_SWIGLU: y = acc / (1.0 + exp(-acc)) * up; break;
            case GEMV_EPI_GEGLU:
                y = 0.5 * acc * (1.0 + tanh(sqrt(2.0 / M_PI) * (acc + 0.044715 * acc * acc * acc))) * up;
                break;
            case GEMV_EPI_RESIDUAL: y = acc + R[b * N + r]; break;
            default: break;
            }
            Y[b * N + r] = (float)y;
        }
    }
    free(row);
    free(urow);
    free(xn);
    free(xd);
    free(q);
    free(dx);
    free(bsums);
}

size_t fe_gemv_bf16_panel_worker_bytes(const gemv_shape *s) {
    const size_t pairs = (size_t)(s->K + 1) / 2;
    return (size_t)s->chunk * (2 * pairs) * 4 + pairs * GEMV_PANEL_ROWS * 4 +
           (size_t)s->chunk * GEMV_PANEL_ROWS * 4 * 2 + 256;
}

void fe_gemv_bf16_pairs_layout(const void *b, int64_t N, int64_t K, int64_t p0, int64_t p1, float *dst) {
    /* a word is a row's 4 bytes at pair p (little-endian: element 2p low), so each panel is
     * a 32 x pairs transpose of words, done in blocks of 8 pairs (a 32-byte read per row, 8
     * whole 128-byte lines written); the last word of an odd K, and rows past N, built apart */
    enum { PB = 8 };
    const int64_t pairs = (K + 1) / 2, full = K / 2; /* words wholly inside every row */
    const unsigned char *src = b;
    for (int64_t q = p0; q < p1; q++) {
        uint32_t *out = (uint32_t *)(dst + q * pairs * GEMV_PANEL_ROWS);
        for (int64_t p = 0; p < pairs; p += PB) {
            const int64_t np = pairs - p < PB ? pairs - p : PB;
            uint32_t t[GEMV_PANEL_ROWS][PB];
            for (int o = 0; o < GEMV_PANEL_ROWS; o++) {
                const int64_t r = q * GEMV_PANEL_ROWS + o;
                const int64_t nf = r < N ? (full - p < np ? (full - p > 0 ? full - p : 0) : np) : 0;
                if (nf > 0) memcpy(t[o], src + (size_t)r * (size_t)K * 2 + (size_t)p * 4, (size_t)nf * 4);
                for (int64_t j = nf; j < np; j++) /* past N zero; an odd K's last: its low half */
                    t[o][j] = r < N && p + j < pairs ? ((const uint16_t *)src)[r * K + 2 * (p + j)] : 0u;
            }
            for (int64_t j = 0; j < np; j++)
                for (int o = 0; o < GEMV_PANEL_ROWS; o++) out[(p + j) * GEMV_PANEL_ROWS + o] = t[o][j];
        }
    }
}
