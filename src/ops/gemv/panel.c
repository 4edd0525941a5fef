/* ops/gemv/panel.c: the panel design's W format (panel.h): packing one group of 16 rows
 * into panels, the layout made once per weight (fe_op.layout / layout_make for w and up),
 * and the worker's workspace. Plain C: packing is a byte shuffle, done once per model (or
 * per call and group without a layout). */
#include <stddef.h>
#include <string.h>

#include "core/quant.h"
#include "ops/gemv/panel.h"

/* Where row L's bytes of a K-type block lie in a (group, block) of panel: n runs of 4 bytes,
 * run v of `field` (the stored block's bytes at `src`) at `dst` + 64 v + 4 L. q4_k: qs (32
 * runs), scales (3), then d and dmin as f16 lanes; q6_k: ql (32), qh (16), scales (4), d. */
typedef struct kq_field {
    size_t src, dst;
    int runs; /* 4-byte runs, 0 for an f16 lane (2 bytes at dst + 2 L) */
} kq_field;

static int kq_fields(fe_dtype dt, kq_field *f) {
    const size_t qb = fe_gemv_panel_qbytes(dt), pd = fe_gemv_panel_doff(dt);
    if (dt == FE_DTYPE_Q4_K) {
        f[0] = (kq_field){offsetof(fe_block_q4_k, qs), 0, 32};
        f[1] = (kq_field){offsetof(fe_block_q4_k, scales), qb, 3};
        f[2] = (kq_field){offsetof(fe_block_q4_k, d), pd, 0};
        f[3] = (kq_field){offsetof(fe_block_q4_k, dmin), pd + 32, 0};
        return 4;
    }
    f[0] = (kq_field){offsetof(fe_block_q6_k, ql), 0, 32};
    f[1] = (kq_field){offsetof(fe_block_q6_k, qh), PANEL_Q6_K_QH, 16};
    f[2] = (kq_field){offsetof(fe_block_q6_k, scales), qb, 4};
    f[3] = (kq_field){offsetof(fe_block_q6_k, d), pd, 0};
    return 4;
}

/* a K type's (group, block): each row's fields to their lanes (rows past N zero) */
static void pack_kq(fe_dtype dt, const unsigned char *w, size_t rs, int64_t N, int64_t g,
                    int64_t j, unsigned char *o) {
    kq_field f[4];
    const int nf = kq_fields(dt, f);
    const size_t bs = fe_dtype_info(dt)->size;
    memset(o, 0, fe_gemv_panel_block_bytes(dt));
    for (int L = 0; L < PANEL_ROWS && g * PANEL_ROWS + L < N; L++) {
        const unsigned char *b = w + (size_t)(g * PANEL_ROWS + L) * rs + (size_t)j * bs;
        for (int i = 0; i < nf; i++) {
            if (!f[i].runs) memcpy(o + f[i].dst + 2 * L, b + f[i].src, 2);
            for (int v = 0; v < f[i].runs; v++)
                memcpy(o + f[i].dst + 64 * v + 4 * L, b + f[i].src + 4 * v, 4);
        }
    }
}

void fe_gemv_panel_pack(fe_dtype dt, const unsigned char *w, size_t rs, int64_t N, int64_t K,
                        int64_t g, unsigned char *dst) {
    if (fe_gemv_panel_kq(dt)) {
        for (int64_t j = 0; j < K / 256; j++)
            pack_kq(dt, w, rs, N, g, j, dst + (size_t)j * fe_gemv_panel_block_bytes(dt));
        return;
    }
    const int64_t nb = K / 32;
    const size_t bb = fe_gemv_panel_block_bytes(dt), qb = fe_gemv_panel_qbytes(dt);
    const size_t pd = fe_gemv_panel_doff(dt);
    const size_t blk = fe_dtype_info(dt)->size;
    /* where each block keeps its quants and scales */
    const size_t qoff = dt == FE_DTYPE_Q8_0   ? offsetof(fe_block_q8_0, qs)
                        : dt == FE_DTYPE_Q4_0 ? offsetof(fe_block_q4_0, qs)
                        : dt == FE_DTYPE_Q5_0 ? offsetof(fe_block_q5_0, qs)
                                              : offsetof(fe_block_q4_1, qs);
    const size_t doff = dt == FE_DTYPE_Q8_0   ? offsetof(fe_block_q8_0, d)
                        : dt == FE_DTYPE_Q4_0 ? offsetof(fe_block_q4_0, d)
                        : dt == FE_DTYPE_Q5_0 ? offsetof(fe_block_q5_0, d)
                                              : offsetof(fe_block_q4_1, d);
    const int nv = (int)(qb / 64);
    for (int64_t j = 0; j < nb; j++) {
        unsigned char *o = dst + (size_t)j * bb;
        memset(o, 0, bb);
        for (int L = 0; L < PANEL_ROWS; L++) {
            const int64_t r = g * PANEL_ROWS + L;
            if (r >= N) break;
            const unsigned char *b = w + (size_t)r * rs + (size_t)j * blk;
            for (int v = 0; v < nv; v++) memcpy(o + 64 * v + 4 * L, b + qoff + 4 * v, 4);
            if (dt == FE_DTYPE_Q5_0) { /* byte 4L + e, bit q: qh's bit 4q + e */
                const uint8_t *qh = b + offsetof(fe_block_q5_0, qh);
                for (int e = 0; e < 4; e++)
                    for (int q = 0; q < 8; q++)
                        o[qb + 4 * L + e] |= (unsigned char)(((qh[(4 * q + e) / 8] >> ((4 * q + e) % 8)) & 1) << q);
            }
            memcpy(o + pd + 2 * L, b + doff, 2);
            if (dt == FE_DTYPE_Q4_1) memcpy(o + pd + 32 + 2 * L, b + offsetof(fe_block_q4_1, m), 2);
        }
    }
}

/* the panel design reads w and up (the paired matrix) from layouts: every matrix's panels,
 * all N rows (the per-call rows bound only skips groups) */
size_t fe_gemv_panel_layout(const fe_args *a, const fe_design *d, int operand,
                            uint64_t *format) {
    const fe_dtype dt = d->dtypes[GEMV_W];
    if ((operand != GEMV_W && operand != GEMV_UP) || !d->present[operand] ||
        d->tunables[GEMV_PANEL] == 0 || d->params[GEMV_INT8] == 0 || !fe_gemv_panel_serves(dt))
        return 0;
    if (format) *format = fe_gemv_panel_format(dt);
    const int64_t mats = a->t[operand].rank == 3 ? a->ext[GEMV_G] : 1;
    return (size_t)mats * fe_gemv_panel_matrix_bytes(dt, a->ext[GEMV_N], a->ext[GEMV_K]);
}

void fe_gemv_panel_layout_make(const fe_args *a, const fe_design *d, int operand, void *dst,
                               int ith, int nth) {
    const fe_dtype dt = d->dtypes[GEMV_W];
    const int64_t N = a->ext[GEMV_N], K = a->ext[GEMV_K];
    const int64_t mats = a->t[operand].rank == 3 ? a->ext[GEMV_G] : 1;
    const int64_t groups = (N + PANEL_ROWS - 1) / PANEL_ROWS;
    const size_t rs = fe_dtype_bytes(dt, K), ms = fe_dtype_bytes(dt, N * K);
    const size_t gb = fe_gemv_panel_group_bytes(dt, K);
    int64_t u0, u1; /* (matrix, group) units */
    fe_split(mats * groups, ith, nth, 1, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t m = u / groups, g = u % groups;
        fe_gemv_panel_pack(dt, (const unsigned char *)a->t[operand].data + (size_t)m * ms, rs,
                           N, K, g, (unsigned char *)dst + (size_t)u * gb);
    }
}

size_t fe_gemv_panel_slot_bytes(const gemv_shape *s) {
    size_t K = (size_t)s->K, n = K + (K / 32) * 12;
    if (s->pro != GEMV_PRO_NONE) n += K * 4;
    return (n + 63) / 64 * 64;
}

int64_t fe_gemv_panel_chunk(const gemv_shape *s) { return s->B < GEMV_CHUNK ? s->B : GEMV_CHUNK; }

size_t fe_gemv_panel_worker_bytes(const gemv_shape *s) {
    return (size_t)fe_gemv_panel_chunk(s) * fe_gemv_panel_slot_bytes(s) + 2 * fe_gemv_panel_group_bytes(s->dt, s->K);
}
