/* ops/gemv/scalar.c: GEMV's scalar kernel (baseline x86-64, plain C): each W row decoded by
 * fe_dequant_row into the worker's row buffer (f32 rows read in place), then dotted with x in
 * eight f32 partial sums folded into double every 512 elements; act_int8 rows (q8_0, q4_0,
 * q4_1) dotted block by block in exact int32 sums, scaled in double (fe_gemv_dot_int8, the
 * reference's own). The driver is driver.inc. */
#include "ops/gemv/gemv.h"
#include "ops/kquant/kquant.h"
#include "core/quant.h"

#define GEMV_ISA FE_ISA_SCALAR
#define GEMV_KNAME fe_gemv_scalar
#define gemv_kq_quant_x fe_kq_quant_x_scalar /* act_int8 over the kquant dtypes */
#define GEMV_BF16_CHUNK 0
#define GEMV_Q4_PAIRS 0
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

static void gemv_dot(const gemv_shape *s, const unsigned char *w, size_t stride, int nr,
                     const gemv_x *x, float *rowbuf, float *out) {
    for (int i = 0; i < nr; i++) {
        const unsigned char *row = w + (size_t)i * stride;
        if (fe_kq_serves(s->dt)) {
            out[i] = s->i8 != GEMV_I8_NONE
                         ? fe_kq_dot_int8_scalar(s->dt, row, x->q8, x->dx, x->bsums, s->K)
                         : fe_kq_dot_f32_scalar(s->dt, row, x->xf, s->K);
        } else if (s->i8 != GEMV_I8_NONE) {
            out[i] = (float)fe_gemv_dot_int8(s->dt, row, x->q8, x->dx, s->K);
        } else if (s->dt == FE_DTYPE_F32) {
            out[i] = dot_f32((const float *)row, x->xf, s->K);
        } else {
            fe_dequant_row(s->dt, row, rowbuf, s->K);
            out[i] = dot_f32(rowbuf, x->xf, s->K);
        }
    }
}

/* Batch passes: every dtype but the kquant family's (whose row kernels decode as they dot):
 * a block row decoded once into the row buffer for all nb batches, int8 rows dotted per batch
 * by the reference's own block sums; the same calls as gemv_dot, so the same bits. */
static bool gemv_batches_serve(const gemv_shape *s) { return !fe_kq_serves(s->dt); }

static void gemv_dot_batches(const gemv_shape *s, const unsigned char *w,
                             const unsigned char *nx, int nrc, const gemv_x *x, int nb,
                             float *rowbuf, float *out) {
    (void)nx, (void)nrc; /* no prefetch; one accumulation order whatever the rows */
    const float *row = (const float *)w;
    if (s->i8 == GEMV_I8_NONE && s->dt != FE_DTYPE_F32) {
        fe_dequant_row(s->dt, w, rowbuf, s->K);
        row = rowbuf;
    }
    for (int b = 0; b < nb; b++)
        out[b] = s->i8 != GEMV_I8_NONE ? (float)fe_gemv_dot_int8(s->dt, w, x[b].q8, x[b].dx, s->K)
                                       : dot_f32(row, x[b].xf, s->K);
}

#include "ops/gemv/panel_scalar.inc"
#include "ops/gemv/driver.inc"
