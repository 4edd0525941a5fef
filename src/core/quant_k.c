/* core/quant_k.c: GGUF's K super-blocks q4_k and q6_k in plain C (layouts in quant.h):
 * decode exactly as ggml's dequantize_row_q4_K / _q6_K (the same float operations in the
 * same order: (d * sc) * q - (dmin * m), (d * sc) * (q - 32)), and a simple encoder for tests
 * and conversion: one pass of per-sub-block min/max (q4_k) or signed-max (q6_k) scales, the
 * scales themselves quantised to 6 bits (q4_k) or int8 (q6_k) against the block's largest. */
#include <math.h>
#include <string.h>

#include "core/quant.h"

_Static_assert(sizeof(fe_block_q4_k) == 144, "q4_k block is 144 bytes");
_Static_assert(sizeof(fe_block_q6_k) == 210, "q6_k block is 210 bytes");
_Static_assert(sizeof(fe_block_q8_k) == 292, "q8_k block is 292 bytes");

void fe_dequant_q4_k(const fe_block_q4_k *b, float *dst, int64_t n) {
    for (int64_t k = 0; k < n / FE_QK; k++, b++) {
        const float d = fe_f16_to_f32(b->d), dmin = fe_f16_to_f32(b->dmin);
        for (int run = 0; run < 4; run++) {
            const uint8_t *q = b->qs + 32 * run;
            for (int h = 0; h < 2; h++) {
                int sc, m;
                fe_q4_k_scale_min(b->scales, 2 * run + h, &sc, &m);
                const float d1 = d * (float)sc, m1 = dmin * (float)m;
                for (int l = 0; l < 32; l++)
                    *dst++ = d1 * (float)(h ? q[l] >> 4 : q[l] & 15) - m1;
            }
        }
    }
}

void fe_dequant_q6_k(const fe_block_q6_k *b, float *dst, int64_t n) {
    for (int64_t k = 0; k < n / FE_QK; k++, b++, dst += FE_QK) {
        const float d = fe_f16_to_f32(b->d);
        for (int e = 0; e < FE_QK; e++)
            dst[e] = d * (float)b->scales[e / 16] * (float)(fe_q6_k_q(b, e) - 32);
    }
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void fe_quant_q4_k(const float *src, fe_block_q4_k *b, int64_t n) {
    for (int64_t k = 0; k < n / FE_QK; k++, b++, src += FE_QK) {
        float scale[8], mins[8], max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) { /* x ~ scale * q - min, q in 0..15, min >= 0 */
            const float *x = src + 32 * j;
            float lo = 0, hi = x[0];
            for (int l = 0; l < 32; l++) {
                lo = fminf(lo, x[l]);
                hi = fmaxf(hi, x[l]);
            }
            scale[j] = (hi - lo) / 15.0f;
            mins[j] = -lo;
            max_scale = fmaxf(max_scale, scale[j]);
            max_min = fmaxf(max_min, mins[j]);
        }
        const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
        b->d = fe_f32_to_f16(d);
        b->dmin = fe_f32_to_f16(dmin);
        const float dh = fe_f16_to_f32(b->d), dminh = fe_f16_to_f32(b->dmin);
        uint8_t ls[8], lm[8];
        for (int j = 0; j < 8; j++) {
            ls[j] = (uint8_t)clampi(dh > 0 ? (int)lrintf(scale[j] / dh) : 0, 0, 63);
            lm[j] = (uint8_t)clampi(dminh > 0 ? (int)ceilf(mins[j] / dminh) : 0, 0, 63);
        }
        memset(b->scales, 0, sizeof b->scales);
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                b->scales[j] = ls[j];
                b->scales[j + 4] = lm[j];
            } else {
                b->scales[j + 4] = (uint8_t)((ls[j] & 15) | (lm[j] & 15) << 4);
                b->scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
                b->scales[j] |= (uint8_t)((lm[j] >> 4) << 6);
            }
        }
        memset(b->qs, 0, sizeof b->qs);
        for (int e = 0; e < FE_QK; e++) {
            int sc, m;
            fe_q4_k_scale_min(b->scales, e / 32, &sc, &m);
            const float d1 = dh * (float)sc, m1 = dminh * (float)m;
            int q = d1 > 0 ? clampi((int)lrintf((src[e] + m1) / d1), 0, 15) : 0;
            int run = e / 64, i = e % 64;
            b->qs[32 * run + i % 32] |= (uint8_t)(i < 32 ? q : q << 4);
        }
    }
}

void fe_quant_q6_k(const float *src, fe_block_q6_k *b, int64_t n) {
    for (int64_t k = 0; k < n / FE_QK; k++, b++, src += FE_QK) {
        float scale[16], max_abs = 0, max_scale = 0;
        for (int j = 0; j < 16; j++) { /* x ~ scale * q, q in -32..31: scale = max / -32 */
            float amax = 0, max = 0;
            for (int l = 0; l < 16; l++)
                if (fabsf(src[16 * j + l]) > amax) {
                    amax = fabsf(src[16 * j + l]);
                    max = src[16 * j + l];
                }
            scale[j] = max / -32.0f;
            if (fabsf(scale[j]) > max_abs) {
                max_abs = fabsf(scale[j]);
                max_scale = scale[j];
            }
        }
        const float iscale = max_abs > 0 ? -128.0f / max_scale : 0.0f;
        b->d = fe_f32_to_f16(iscale != 0 ? 1.0f / iscale : 0.0f);
        const float d = fe_f16_to_f32(b->d);
        for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)clampi((int)lrintf(iscale * scale[j]), -128, 127);
        memset(b->ql, 0, sizeof b->ql);
        memset(b->qh, 0, sizeof b->qh);
        for (int e = 0; e < FE_QK; e++) {
            const float ds = d * (float)b->scales[e / 16];
            int q = ds != 0 ? clampi((int)lrintf(src[e] / ds), -32, 31) + 32 : 32;
            int h = e / 128, r = (e % 128) / 32, l = e % 32;
            uint8_t *ql = b->ql + 64 * h + (r & 1 ? 32 : 0), *qh = b->qh + 32 * h;
            ql[l] |= (uint8_t)(r < 2 ? q & 15 : (q & 15) << 4);
            qh[l] |= (uint8_t)((q >> 4) << (2 * r));
        }
    }
}
