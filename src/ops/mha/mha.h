/* ops/mha/mha.h: what the MHA declaration (mha.c) and its kernels (kernels.inc, compiled per
 * ISA) share: indices into params, tunables, extents and per-call values, the key range a
 * query attends, the score scale, and the workspace layout.
 *
 * Operands, all f32, contiguous:
 *   q   (Sq, Hq, D)   query rows; row i sits at position q_offset + i
 *   k   (S, Hkv, D)   the key cache: row j is position j (one write per position is contiguous)
 *   v   (S, Hkv, D)   the value cache, laid out like k
 *   out (Sq, Hq, D)
 * Hq is a multiple of Hkv: q head h reads kv head h / (Hq / Hkv) (grouped-query attention).
 * Only keys [0, kv_valid) exist; only rows [0, q_rows) are computed (later rows untouched). */
#ifndef FE_OPS_MHA_H
#define FE_OPS_MHA_H

#include <math.h>

#include "ops/op.h"

enum { MHA_P_CAUSAL, MHA_P_WINDOW, MHA_P_SCALE };   /* params */
enum { MHA_WIDTH, MHA_BQ, MHA_BKV, MHA_ROWS };       /* tunables */
enum { MHA_SQ, MHA_S, MHA_D, MHA_LAST_OFFSET };      /* extents */
enum { MHA_V_KV, MHA_V_ROWS, MHA_V_OFFSET };         /* per-call values */

/* SegmentedMHA (segmented_mha.c) shares MHA's params, tunables and workspace; its operands
 * are q, k, v, lengths (i32, one per segment), out; q, k, v and out have R rows. */
enum { SMHA_R, SMHA_D };                             /* extents */
enum { SMHA_V_ROWS };                                /* per-call values */

/* The keys [*lo, *hi) a query at position p attends, given kv_valid keys: causal stops at p;
 * a window w > 0 keeps keys within w - 1 of p (causal: (p - w, p]; bidirectional: both
 * sides, (p - w, p + w)). Empty (lo >= hi) when nothing is left. lo and hi never decrease
 * as p grows. */
static inline void fe_mha_keys(const fe_design *d, int64_t kv, int64_t p, int64_t *lo,
                               int64_t *hi) {
    int64_t w = (int64_t)d->params[MHA_P_WINDOW];
    int64_t l = 0, h = kv;
    if (d->params[MHA_P_CAUSAL] != 0) {
        if (p + 1 < h) h = p + 1;
    } else if (w > 0 && p + w < h) {
        h = p + w;
    }
    if (w > 0 && p - w + 1 > l) l = p - w + 1;
    *lo = l;
    *hi = h;
}

/* row_block's default (resolve, both declarations): the row-blocked path where attention
 * is bidirectional (encoders), one row at a time where it is causal. Causal prefill keeps the
 * one-row path's rounding, which the greedy answers pinned by tests were made with (an int8
 * prefill turns a change of 1e-6 in attention into a different near tie); the row-blocked
 * path serves it as well, where a call site or a profile asks. */
static inline void fe_mha_resolve_rows(fe_op_ctx *c) {
    if (!c->tunable_set[MHA_ROWS]) {
        c->tunables[MHA_ROWS] = c->params[MHA_P_CAUSAL] == 0;
        c->tunable_set[MHA_ROWS] = true;
    }
}

/* The factor on q . k: the scale param, or 1 / sqrt(D) when it is 0. */
static inline double fe_mha_scale(const fe_design *d, int64_t head_dim) {
    double s = d->params[MHA_P_SCALE];
    return s != 0 ? s : 1.0 / sqrt((double)head_dim);
}

/* One worker's workspace: the scores of one block for up to four heads (4 x B_kv), the
 * running max and sum of each of an item's B_q x group query vectors, and contiguous copies
 * of one block's k and v rows of the item's kv head (B_kv x D each); for the row-blocked
 * path (kernels.inc: a vector of query rows at once, one lane a row) a block's scores
 * down the keys (B_kv x FE_MHA_LANES) and the rows' queries and outputs transposed (D x
 * FE_MHA_LANES each). Each part starts on a 64-byte line. */
#define FE_MHA_LANES 16 /* the widest vector (AVX-512's 16 floats) */
typedef struct fe_mha_ws {
    float *s, *m, *l, *k, *v;
    float *st, *qt, *ot;
} fe_mha_ws;

static inline size_t fe_mha_lines(int64_t floats) { return ((size_t)floats * 4 + 63) / 64 * 64; }

/* Bytes per worker (a multiple of 64). */
static inline size_t fe_mha_ws_per_worker(const fe_design *d, int64_t group, int64_t head_dim) {
    int64_t bq = d->tunables[MHA_BQ], bkv = d->tunables[MHA_BKV];
    return fe_mha_lines(4 * bkv) + 2 * fe_mha_lines(bq * group) +
           2 * fe_mha_lines(bkv * head_dim) + fe_mha_lines(bkv * FE_MHA_LANES) +
           2 * fe_mha_lines(head_dim * FE_MHA_LANES);
}

/* Worker ith's parts of the workspace at ws. */
static inline fe_mha_ws fe_mha_ws_at(void *ws, const fe_design *d, int64_t group,
                                     int64_t head_dim, int ith) {
    int64_t bq = d->tunables[MHA_BQ], bkv = d->tunables[MHA_BKV];
    char *p = (char *)ws + (size_t)ith * fe_mha_ws_per_worker(d, group, head_dim);
    fe_mha_ws w;
    w.s = (float *)p;
    p += fe_mha_lines(4 * bkv);
    w.m = (float *)p;
    p += fe_mha_lines(bq * group);
    w.l = (float *)p;
    p += fe_mha_lines(bq * group);
    w.k = (float *)p;
    p += fe_mha_lines(bkv * head_dim);
    w.v = (float *)p;
    p += fe_mha_lines(bkv * head_dim);
    w.st = (float *)p;
    p += fe_mha_lines(bkv * FE_MHA_LANES);
    w.qt = (float *)p;
    p += fe_mha_lines(head_dim * FE_MHA_LANES);
    w.ot = (float *)p;
    return w;
}

void fe_mha_scalar(const fe_args *, const fe_design *, int, int);
void fe_mha_avx2(const fe_args *, const fe_design *, int, int);
void fe_mha_avx512(const fe_args *, const fe_design *, int, int);
void fe_segmented_mha_scalar(const fe_args *, const fe_design *, int, int);
void fe_segmented_mha_avx2(const fe_args *, const fe_design *, int, int);
void fe_segmented_mha_avx512(const fe_args *, const fe_design *, int, int);

#endif
