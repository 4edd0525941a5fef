/* core/quant.c: block decode and encode in plain C (see quant.h). */
#include "core/quant.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(fe_block_q8_0) == 34, "q8_0 block is 34 bytes");
_Static_assert(sizeof(fe_block_q4_0) == 18, "q4_0 block is 18 bytes");
_Static_assert(sizeof(fe_block_q4_1) == 20, "q4_1 block is 20 bytes");
_Static_assert(sizeof(fe_block_q5_0) == 22, "q5_0 block is 22 bytes");

static uint32_t q5_0_high_bits(const fe_block_q5_0 *b) {
    return (uint32_t)b->qh[0] | (uint32_t)b->qh[1] << 8 | (uint32_t)b->qh[2] << 16 |
           (uint32_t)b->qh[3] << 24;
}

bool fe_dequant_row(fe_dtype dt, const void *src, float *dst, int64_t n) {
    switch (dt) {
    case FE_DTYPE_F32:
        memcpy(dst, src, (size_t)n * 4);
        return true;
    case FE_DTYPE_BF16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = fe_bf16_to_f32(s[i]);
        return true;
    }
    case FE_DTYPE_F16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = fe_f16_to_f32(s[i]);
        return true;
    }
    case FE_DTYPE_Q8_0: {
        const fe_block_q8_0 *b = src;
        for (int64_t k = 0; k < n / FE_QBLOCK; k++) {
            float d = fe_f16_to_f32(b[k].d);
            for (int j = 0; j < 32; j++) dst[k * 32 + j] = d * (float)b[k].qs[j];
        }
        return true;
    }
    case FE_DTYPE_Q4_0: {
        const fe_block_q4_0 *b = src;
        for (int64_t k = 0; k < n / FE_QBLOCK; k++) {
            float d = fe_f16_to_f32(b[k].d);
            for (int j = 0; j < 16; j++) {
                dst[k * 32 + j] = d * (float)((b[k].qs[j] & 15) - 8);
                dst[k * 32 + j + 16] = d * (float)((b[k].qs[j] >> 4) - 8);
            }
        }
        return true;
    }
    case FE_DTYPE_Q4_1: {
        const fe_block_q4_1 *b = src;
        for (int64_t k = 0; k < n / FE_QBLOCK; k++) {
            float d = fe_f16_to_f32(b[k].d), m = fe_f16_to_f32(b[k].m);
            for (int j = 0; j < 16; j++) {
                dst[k * 32 + j] = d * (float)(b[k].qs[j] & 15) + m;
                dst[k * 32 + j + 16] = d * (float)(b[k].qs[j] >> 4) + m;
            }
        }
        return true;
    }
    case FE_DTYPE_Q5_0: {
        const fe_block_q5_0 *b = src;
        for (int64_t k = 0; k < n / FE_QBLOCK; k++) {
            float d = fe_f16_to_f32(b[k].d);
            uint32_t qh = q5_0_high_bits(&b[k]);
            for (int j = 0; j < 16; j++) {
                int q0 = (b[k].qs[j] & 15) | (int)((qh >> j) & 1) << 4;
                int q1 = (b[k].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
                dst[k * 32 + j] = d * (float)(q0 - 16);
                dst[k * 32 + j + 16] = d * (float)(q1 - 16);
            }
        }
        return true;
    }
    case FE_DTYPE_Q4_K: fe_dequant_q4_k(src, dst, n); return true;
    case FE_DTYPE_Q6_K: fe_dequant_q6_k(src, dst, n); return true;
    default:
        return false;
    }
}

/* roundf (half away from zero) for |v| < 2^31, inline: this file is built for baseline
 * x86-64, where roundf and fmaxf are calls into libm (half the time of drawing the tuner's
 * q8_0 lm_head inputs). v - trunc(v) is exact; every float in [-128, 128] rounds to
 * roundf's value (checked exhaustively; -0 becomes +0, the same int8). */
static inline float round_half_away(float v) {
    const float t = (float)(int32_t)v, r = v - t;
    return r >= 0.5f ? t + 1.0f : r <= -0.5f ? t - 1.0f : t;
}

bool fe_quant_row(fe_dtype dt, const float *src, void *dst, int64_t n) {
    if (dt == FE_DTYPE_Q4_K) {
        fe_quant_q4_k(src, dst, n);
        return true;
    }
    if (dt == FE_DTYPE_Q6_K) {
        fe_quant_q6_k(src, dst, n);
        return true;
    }
    for (int64_t k = 0; k < n / FE_QBLOCK; k++) {
        const float *x = src + k * FE_QBLOCK;
        switch (dt) {
        case FE_DTYPE_Q8_0: {
            fe_block_q8_0 *b = (fe_block_q8_0 *)dst + k;
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
            float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
            b->d = fe_f32_to_f16(d);
            for (int j = 0; j < 32; j++) b->qs[j] = (int8_t)round_half_away(x[j] * id);
            break;
        }
        case FE_DTYPE_Q4_0: {
            fe_block_q4_0 *b = (fe_block_q4_0 *)dst + k;
            float amax = 0, max = 0;
            for (int j = 0; j < 32; j++)
                if (fabsf(x[j]) > amax) {
                    amax = fabsf(x[j]);
                    max = x[j];
                }
            float d = max / -8.0f, id = d ? 1.0f / d : 0.0f;
            b->d = fe_f32_to_f16(d);
            for (int j = 0; j < 16; j++) {
                int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[j + 16] * id + 8.5f);
                q0 = q0 > 15 ? 15 : q0;
                q1 = q1 > 15 ? 15 : q1;
                b->qs[j] = (uint8_t)(q0 | (q1 << 4));
            }
            break;
        }
        case FE_DTYPE_Q4_1: {
            fe_block_q4_1 *b = (fe_block_q4_1 *)dst + k;
            float mn = x[0], mx = x[0];
            for (int j = 1; j < 32; j++) {
                mn = fminf(mn, x[j]);
                mx = fmaxf(mx, x[j]);
            }
            float d = (mx - mn) / 15.0f, id = d ? 1.0f / d : 0.0f;
            b->d = fe_f32_to_f16(d);
            b->m = fe_f32_to_f16(mn);
            for (int j = 0; j < 16; j++) {
                int q0 = (int)((x[j] - mn) * id + 0.5f), q1 = (int)((x[j + 16] - mn) * id + 0.5f);
                q0 = q0 > 15 ? 15 : q0;
                q1 = q1 > 15 ? 15 : q1;
                b->qs[j] = (uint8_t)(q0 | (q1 << 4));
            }
            break;
        }
        case FE_DTYPE_Q5_0: { /* ggml's quantize_row_q5_0_ref */
            fe_block_q5_0 *b = (fe_block_q5_0 *)dst + k;
            float amax = 0, max = 0;
            for (int j = 0; j < 32; j++)
                if (fabsf(x[j]) > amax) {
                    amax = fabsf(x[j]);
                    max = x[j];
                }
            float d = max / -16.0f, id = d ? 1.0f / d : 0.0f;
            b->d = fe_f32_to_f16(d);
            uint32_t qh = 0;
            for (int j = 0; j < 16; j++) {
                int q0 = (int)(x[j] * id + 16.5f), q1 = (int)(x[j + 16] * id + 16.5f);
                q0 = q0 > 31 ? 31 : q0;
                q1 = q1 > 31 ? 31 : q1;
                b->qs[j] = (uint8_t)((q0 & 15) | (q1 & 15) << 4);
                qh |= (uint32_t)(q0 >> 4 & 1) << j | (uint32_t)(q1 >> 4 & 1) << (j + 16);
            }
            for (int i = 0; i < 4; i++) b->qh[i] = (uint8_t)(qh >> (8 * i));
            break;
        }
        default:
            return false;
        }
    }
    return true;
}
