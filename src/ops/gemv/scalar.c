/* ops/gemv/scalar.c: GEMV's scalar kernel (baseline x86-64, plain C): each W row decoded by
 * fe_dequant_row into the worker's row buffer (f32 rows read in place), then dotted with x in
 * eight f32 partial sums folded into double every 512 elements; act_int8 rows dotted block by
 * block in exact int32 sums, scaled in double. The driver is driver.inc. */
#include "ops/gemv/gemv.h"
#include "ops/quant/quant.h"

#define GEMV_ISA FE_ISA_SCALAR
#define GEMV_KNAME fe_gemv_scalar
#define GEMV_BF16_CHUNK 0
#define gemv_quant_x fe_gemv_quant_x

static float dot_f32(const float *w, const float *x, int64_t K) {
    double acc = 0;
    for (int64_t c = 0; c < K; c += 512) {
        int64_t n = K - c < 512 ? K - c : 512, j = 0;
        float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (; j + 8 <= n; j += 8)
            for (int i = 0; i < 8; i++) s[i] += w[c + j + i] * x[c + j + i];
        for (; j < n; j++) s[0] += w[c + j] * x[c + j];
        acc += (double)((s[0] + s[1]) + (s[2] + s[3])) + (double)((s[4] + s[5]) + (s[6] + s[7]));
    }
    return (float)acc;
}

static float dot_q8_i8(const fe_block_q8_0 *w, const gemv_x *x, int64_t K) {
    double acc = 0;
    for (int64_t k = 0; k < K / 32; k++) {
        int32_t is = 0;
        for (int j = 0; j < 32; j++) is += (int32_t)w[k].qs[j] * x->q8[k * 32 + j];
        acc += (double)is * ((double)fe_f16_to_f32(w[k].d) * x->dx[k]);
    }
    return (float)acc;
}

static void gemv_dot(const gemv_shape *s, const unsigned char *w, size_t stride, int nr,
                     const gemv_x *x, float *rowbuf, float *out) {
    for (int i = 0; i < nr; i++) {
        const unsigned char *row = w + (size_t)i * stride;
        if (s->i8 != GEMV_I8_NONE) {
            out[i] = dot_q8_i8((const fe_block_q8_0 *)row, x, s->K);
        } else if (s->dt == FE_DTYPE_F32) {
            out[i] = dot_f32((const float *)row, x->xf, s->K);
        } else {
            fe_dequant_row(s->dt, row, rowbuf, s->K);
            out[i] = dot_f32(rowbuf, x->xf, s->K);
        }
    }
}

#include "ops/gemv/driver.inc"
