/* ops/kquant/shared.c: what the q5_0 / q4_k / q6_k kernels' callers share, in plain C: the
 * quantisation of x for act_int8 (one copy, so every ISA and the references see the same
 * bytes) and the int8 dot product as a reference, element by element through quant.h's
 * accessors rather than the kernels' run-by-run loops. */
#include <math.h>
#include <string.h>

#include "ops/kquant/kquant.h"
#include "core/quant.h"

void fe_kq_quant_x(const float *x, int64_t K, int xb, int8_t *q, float *dx, int16_t *bsums) {
    for (int64_t k = 0; k < K / xb; k++) {
        const float *v = x + k * xb;
        float amax = 0.0f;
        for (int j = 0; j < xb; j++) {
            float a = fabsf(v[j]);
            amax = a > amax ? a : amax;
        }
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        dx[k] = d;
        for (int j = 0; j < xb; j++) { /* round half to even by the 1.5 * 2^23 trick */
            float t = v[j] * id;
            t = t < 127.0f ? t : 127.0f;
            t = t > -127.0f ? t : -127.0f;
            q[k * xb + j] = (int8_t)(int)((t + 12582912.0f) - 12582912.0f);
        }
    }
    for (int64_t g = 0; g < K / 16; g++) {
        int s = 0;
        for (int j = 0; j < 16; j++) s += q[16 * g + j];
        bsums[g] = (int16_t)s;
    }
}

void fe_kq_quant_x_bounded(const float *x, int64_t K, int64_t k, int xb, int8_t *q, float *dx,
                           int16_t *bsums) {
    fe_kq_quant_x_bounded_by(fe_kq_quant_x, x, K, k, xb, q, dx, bsums);
}

void fe_kq_quant_x_bounded_by(fe_kq_quant_fn quant, const float *x, int64_t K, int64_t k, int xb,
                              int8_t *q, float *dx, int16_t *bsums) {
    const int64_t full = k / xb * xb;
    quant(x, full, xb, q, dx, bsums);
    int64_t done = full;
    if (full < k) {
        float t[256] = {0};
        memcpy(t, x + full, (size_t)(k - full) * sizeof *t);
        quant(t, xb, xb, q + full, dx + full / xb, bsums + full / 16);
        done += xb;
    }
    memset(q + done, 0, (size_t)(K - done));
    for (int64_t b = done / xb; b < K / xb; b++) dx[b] = 0.0f;
    for (int64_t g = done / 16; g < K / 16; g++) bsums[g] = 0;
}

double fe_kq_dot_int8_ref(fe_dtype dt, const unsigned char *row, const int8_t *q,
                          const float *dx, const int16_t *bsums, int64_t K) {
    (void)bsums; /* recomputed from q: the reference does not trust the prepared sums */
    double acc = 0;
    if (dt == FE_DTYPE_Q5_0) {
        float w[32];
        for (int64_t k = 0; k < K / 32; k++) {
            const fe_block_q5_0 *b = (const fe_block_q5_0 *)row + k;
            fe_dequant_row(FE_DTYPE_Q5_0, b, w, 32);
            const float d = fe_f16_to_f32(b->d);
            int32_t s = 0; /* w / d is the exact integer q - 16 */
            for (int j = 0; j < 32; j++) s += (d != 0.0f ? (int32_t)lrintf(w[j] / d) : 0) * q[32 * k + j];
            acc += (double)d * dx[k] * s;
        }
        return acc;
    }
    for (int64_t k = 0; k < K / 256; k++) {
        const int8_t *xq = q + 256 * k;
        int32_t s = 0, t = 0;
        if (dt == FE_DTYPE_Q4_K) {
            const fe_block_q4_k *b = (const fe_block_q4_k *)row + k;
            for (int j = 0; j < 8; j++) {
                int sc, m;
                int32_t sj = 0, tj = 0;
                fe_q4_k_scale_min(b->scales, j, &sc, &m);
                for (int l = 0; l < 32; l++) {
                    sj += fe_q4_k_q(b, 32 * j + l) * xq[32 * j + l];
                    tj += xq[32 * j + l];
                }
                s += sc * sj;
                t += m * tj;
            }
            acc += (double)fe_f16_to_f32(b->d) * dx[k] * s -
                   (double)fe_f16_to_f32(b->dmin) * dx[k] * t;
        } else {
            const fe_block_q6_k *b = (const fe_block_q6_k *)row + k;
            for (int j = 0; j < 16; j++) {
                int32_t sj = 0;
                for (int l = 0; l < 16; l++) sj += (fe_q6_k_q(b, 16 * j + l) - 32) * xq[16 * j + l];
                s += b->scales[j] * sj;
            }
            acc += (double)fe_f16_to_f32(b->d) * dx[k] * s;
        }
    }
    return acc;
}
