/* ops/mha/mha.h: what the attention declarations (mha.c, segmented_mha.c, slot_mha.c and the
 * KV cache write, kv_write.c) and their kernels (kernels.inc, compiled per ISA) share:
 * indices into params, tunables, extents and per-call values, the key range a query
 * attends, the score scale, and the workspace layout.
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
#include <string.h>

#include "ops/op.h"
#include "ops/rope/rope.h" /* the RoPE forms KVWrite and SlotMHA take */

enum { MHA_P_CAUSAL, MHA_P_WINDOW, MHA_P_SCALE };   /* params */
enum { MHA_WIDTH, MHA_BQ, MHA_BKV, MHA_ROWS, MHA_SPLIT }; /* tunables (MHA_SPLIT: MHA only) */
enum { MHA_SQ, MHA_S, MHA_D, MHA_LAST_OFFSET };      /* extents */
enum { MHA_V_KV, MHA_V_ROWS, MHA_V_OFFSET };         /* per-call values */

/* SegmentedMHA (segmented_mha.c) shares MHA's params, tunables and workspace; its operands
 * are q, k, v, lengths (i32, one per segment), out; q, k, v and out have R rows. */
enum { SMHA_R, SMHA_D };                             /* extents */
enum { SMHA_V_ROWS };                                /* per-call values */

/* The slotted KV cache of KVWrite (kv_write.c) and SlotMHA (slot_mha.c), the batched decode
 * step's: kv (2N, S, Hkv, D) f32 or f16 holds N slots of S positions, slot s's keys at kv[s] and its
 * values at kv[N + s] (each an (S, Hkv, D) cache as MHA reads it). Both ops take B rows, row
 * r in slot slots[r] at position positions[r] (i32 operands, given per call: the graph's
 * inputs), and an optional RoPE table (P, D) that turns the row's key (KVWrite) or query
 * (SlotMHA) at its position, by ops/rope/rotate.inc (RoPE's arithmetic, bit for bit).
 *   KVWrite  k (B, Hkv, D), v (B, Hkv, D), slots, positions, table -> kv
 *   SlotMHA  q (B, Hq, D), kv, slots, positions, table -> out (B, Hq, D) */
enum { KVW_K, KVW_V, KVW_SLOTS, KVW_POSITIONS, KVW_TABLE, KVW_KV };       /* operands */
enum { SLOT_Q, SLOT_KV, SLOT_SLOTS, SLOT_POSITIONS, SLOT_TABLE, SLOT_OUT }; /* operands */
enum { KVW_P_FORM };                                 /* KVWrite's params */
enum { SLOT_P_WINDOW, SLOT_P_SCALE, SLOT_P_FORM };   /* SlotMHA's params */
enum { SLOT_WIDTH, SLOT_BKV, SLOT_SPLIT };           /* SlotMHA's tunables (KVWrite: WIDTH) */
/* extents of both: B rows, N slots, L positions the cache and the table both hold
 * (min(S, P); S without a table), D head_dim */
enum { SLOT_B, SLOT_N, SLOT_L, SLOT_D };
enum { SLOT_V_ROWS };                                /* per-call values of both */

/* slots.c. Infer's checks of both (kv (2N, S, Hkv, D) with x's head_dim; slots and positions
 * one a row of x (k or q); a table (P, D) with D even) and their extents. */
fe_status fe_slot_infer(fe_op_ctx *c, int x, int kv, int slots, int positions, int table);
/* Every row's slot in [0, N) and position in [0, L), before any work. */
fe_status fe_slot_rows_check(const fe_args *a, int slots, int positions, char *why,
                             size_t why_n);
/* Test shapes: dims = {B, SLOT_CASE_HEADS(N, Hq, Hkv), SLOT_CASE_CACHE(S, P), D / 2}, the
 * pairs last so the catalog's tile edges vary an even head_dim; P 0: no table. x (k or q) is
 * (B, Hkv or Hq, D); kv is f16 where the case's name starts "f16/", else f32. */
#define SLOT_CASE_HEADS(n, hq, hkv) ((n) * 1000000 + (hq) * 1000 + (hkv))
#define SLOT_CASE_CACHE(s, p) ((s) * 10000 + (p))
void fe_slot_operands(const fe_case *c, int x, int kv, int slots, int positions, int table,
                      bool x_is_q, fe_tensor *out);

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

/* row_block's default for SegmentedMHA: the row-blocked path where attention is
 * bidirectional (encoders), one row at a time where it is causal. (MHA's resolve, mha.c,
 * takes the row-blocked path for causal prefill chunks as well.) */
static inline void fe_mha_resolve_rows(fe_op_ctx *c) {
    if (!c->tunable_set[MHA_ROWS]) {
        c->tunables[MHA_ROWS] = c->params[MHA_P_CAUSAL] == 0;
        c->tunable_set[MHA_ROWS] = true;
    }
}

/* Element i of a cache (k, v or a slotted kv: f32 or f16) as a double: the references'. */
static inline double fe_mha_kv_at(const fe_tensor *t, int64_t i) {
    if (t->dtype == FE_DTYPE_F16) return fe_f16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

/* The factor on q . k: the scale param, or 1 / sqrt(D) when it is 0. */
static inline double fe_mha_scale(const fe_design *d, int64_t head_dim) {
    double s = d->params[MHA_P_SCALE];
    return s != 0 ? s : 1.0 / sqrt((double)head_dim);
}

/* The MHA design one SlotMHA item runs under (mha_item, fe_mha_keys and fe_mha_ws read MHA's
 * indices): causal, SlotMHA's window and scale, its B_kv, one query row per item. A SlotMHA
 * row thus runs the operations an MHA step of that one row runs, in the same order. */
static inline fe_design fe_slot_mha_item_design(const fe_design *d) {
    fe_design m = *d;
    m.params[MHA_P_CAUSAL] = 1;
    m.params[MHA_P_WINDOW] = d->params[SLOT_P_WINDOW];
    m.params[MHA_P_SCALE] = d->params[SLOT_P_SCALE];
    m.tunables[MHA_WIDTH] = d->tunables[SLOT_WIDTH];
    m.tunables[MHA_BQ] = 1;
    m.tunables[MHA_BKV] = d->tunables[SLOT_BKV];
    m.tunables[MHA_ROWS] = 0; /* an item is one row */
    m.tunables[MHA_SPLIT] = d->tunables[SLOT_SPLIT];
    return m;
}

/* kv_split's domain, MHA's and SlotMHA's alike (a SlotMHA row keeps its MHA step's bytes
 * only where both cut the keys the same way) */
#define FE_MHA_SPLIT_DOMAIN \
    {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1, 2, 3, 4, 6, 8, 16}, .n_choices = 8}

/* kv_split's default for a step of one row block on the one-row path (MHA's decode step,
 * every SlotMHA row), from its domain (dom) and the workers w: the fewest segments, at least
 * w, on more than one worker, else 0 (why and what it measured: mha.c's resolve). MHA and
 * SlotMHA resolve it alike, so a SlotMHA row keeps the bytes of the MHA step of that row
 * alone. */
static inline int64_t fe_mha_split_default(const fe_domain *dom, int64_t w) {
    if (w <= 1) return 0;
    int64_t s = dom->choices[dom->n_choices - 1];
    for (int i = dom->n_choices - 1; i >= 0 && dom->choices[i] >= w; i--) s = dom->choices[i];
    return s;
}

/* One worker's workspace: the scores of one block for up to four heads (4 x B_kv), the
 * running max and sum of each of an item's B_q x group query vectors, and contiguous copies
 * of one block's k and v rows of the item's kv head (B_kv x D each); for the row-blocked
 * path (kernels.inc: a vector of query rows at once, one lane a row, the group's heads
 * together, two a pass) two heads' block scores down the keys (2 x B_kv x FE_MHA_LANES:
 * B_kv x VW floats apart, whatever the ISA's VW), each head's queries and
 * outputs transposed (group x D x FE_MHA_LANES each) and each head's running max and sum
 * (group x 2 x FE_MHA_LANES). Each part starts on a 64-byte line.
 * row_block = 2 (the same path on AMX tiles, amx.inc) adds, with Dp = D up to a multiple of
 * 32, Bk = B_kv up to one and T = the item's tiles of 16 rows (B_q / 16, at least one):
 *   tq  every (head, row tile)'s q^T tiles, three bf16 parts: Dp / 32 steps of 3 KiB
 *   to  every (head, row tile)'s o^T (Dp x 16 floats) and trm its running max and sum (2 x 16)
 *   tk  the block's keys, high and low parts (2 x Bk x Dp halves)
 *   tv  the block's values transposed, high and low parts (2 x Dp x Bk halves)
 *   tp  a head's weights p as pairs of keys, three parts (3 x Bk / 2 x 16 words)
 *   tc  a head's p . v of the block (Dp x 16 floats) */
#define FE_MHA_LANES 16 /* the widest vector (AVX-512's 16 floats) */
typedef struct fe_mha_ws {
    float *s, *m, *l, *k, *v;
    float *st, *qt, *ot, *rm;
    char *tq;
    float *to, *trm, *tc;
    uint16_t *tk, *tv;
    uint32_t *tp;
} fe_mha_ws;

static inline size_t fe_mha_lines(int64_t floats) { return ((size_t)floats * 4 + 63) / 64 * 64; }

enum { FE_MHA_TILE_ROWS = 16 }; /* query rows an AMX tile holds (row_block = 2) */

/* row_block = 2's extents (above): Dp, Bk and T */
static inline int64_t fe_mha_tiles_dp(int64_t head_dim) { return (head_dim + 31) / 32 * 32; }
static inline int64_t fe_mha_tiles_bk(const fe_design *d) {
    return (d->tunables[MHA_BKV] + 31) / 32 * 32;
}
static inline int64_t fe_mha_tiles_t(const fe_design *d) {
    return (d->tunables[MHA_BQ] + FE_MHA_TILE_ROWS - 1) / FE_MHA_TILE_ROWS;
}

/* row_block = 2's parts' floats (4-byte units), in the order of fe_mha_ws */
enum { FE_MHA_TILE_PARTS = 7 };
static inline void fe_mha_tiles_parts(const fe_design *d, int64_t group, int64_t head_dim,
                                      int64_t out[FE_MHA_TILE_PARTS]) {
    const int64_t dp = fe_mha_tiles_dp(head_dim), bk = fe_mha_tiles_bk(d);
    const int64_t ht = group * fe_mha_tiles_t(d);
    out[0] = ht * dp / 32 * 768;   /* tq: three parts */
    out[1] = ht * dp * 16;         /* to */
    out[2] = ht * 2 * 16;          /* trm */
    out[3] = dp * 16;              /* tc */
    out[4] = bk * dp;              /* tk: 2 x Bk x Dp halves */
    out[5] = bk * dp;              /* tv */
    out[6] = 3 * bk / 2 * 16;      /* tp: 3 parts x Bk / 2 key pairs x 16 words */
}

/* Bytes per worker (a multiple of 64). */
static inline size_t fe_mha_ws_per_worker(const fe_design *d, int64_t group, int64_t head_dim) {
    int64_t bq = d->tunables[MHA_BQ], bkv = d->tunables[MHA_BKV];
    size_t b = fe_mha_lines(4 * bkv) + 2 * fe_mha_lines(bq * group) +
               2 * fe_mha_lines(bkv * head_dim) + fe_mha_lines(2 * bkv * FE_MHA_LANES) +
               2 * fe_mha_lines(group * head_dim * FE_MHA_LANES) +
               fe_mha_lines(group * 2 * FE_MHA_LANES);
    if (d->tunables[MHA_ROWS] == 2) {
        int64_t p[FE_MHA_TILE_PARTS];
        fe_mha_tiles_parts(d, group, head_dim, p);
        for (int i = 0; i < FE_MHA_TILE_PARTS; i++) b += fe_mha_lines(p[i]);
    }
    return b;
}

/* Worker ith's parts of the workspace at ws. */
static inline fe_mha_ws fe_mha_ws_at(void *ws, const fe_design *d, int64_t group,
                                     int64_t head_dim, int ith) {
    int64_t bq = d->tunables[MHA_BQ], bkv = d->tunables[MHA_BKV];
    char *p = (char *)ws + (size_t)ith * fe_mha_ws_per_worker(d, group, head_dim);
    fe_mha_ws w;
    memset(&w, 0, sizeof w);
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
    p += fe_mha_lines(2 * bkv * FE_MHA_LANES);
    w.qt = (float *)p;
    p += fe_mha_lines(group * head_dim * FE_MHA_LANES);
    w.ot = (float *)p;
    p += fe_mha_lines(group * head_dim * FE_MHA_LANES);
    w.rm = (float *)p;
    if (d->tunables[MHA_ROWS] == 2) {
        int64_t t[FE_MHA_TILE_PARTS];
        char *at[FE_MHA_TILE_PARTS]; /* the parts, in fe_mha_tiles_parts' order */
        fe_mha_tiles_parts(d, group, head_dim, t);
        p += fe_mha_lines(group * 2 * FE_MHA_LANES);
        for (int i = 0; i < FE_MHA_TILE_PARTS; p += fe_mha_lines(t[i]), i++) at[i] = p;
        w.tq = at[0], w.to = (float *)at[1], w.trm = (float *)at[2], w.tc = (float *)at[3];
        w.tk = (uint16_t *)at[4], w.tv = (uint16_t *)at[5], w.tp = (uint32_t *)at[6];
    }
    return w;
}

/* MHA's kv_split = S >= 1 (kernels.inc): after the workers' parts, S key segments' softmax
 * states of every query row and head: the accumulators (Sq x Hq x D), then the running max
 * and sum (Sq x Hq each), each on 64-byte lines. Bytes of one segment's and of all. */
static inline size_t fe_mha_segment_bytes(int64_t rows, int64_t Hq, int64_t head_dim) {
    return fe_mha_lines(rows * Hq * head_dim) + 2 * fe_mha_lines(rows * Hq);
}

void fe_mha_scalar(const fe_args *, const fe_design *, int, int);
void fe_mha_avx2(const fe_args *, const fe_design *, int, int);
void fe_mha_avx512(const fe_args *, const fe_design *, int, int);
void fe_segmented_mha_scalar(const fe_args *, const fe_design *, int, int);
void fe_segmented_mha_avx2(const fe_args *, const fe_design *, int, int);
void fe_segmented_mha_avx512(const fe_args *, const fe_design *, int, int);
void fe_kv_write_scalar(const fe_args *, const fe_design *, int, int);
void fe_kv_write_avx2(const fe_args *, const fe_design *, int, int);
void fe_kv_write_avx512(const fe_args *, const fe_design *, int, int);
void fe_slot_mha_scalar(const fe_args *, const fe_design *, int, int);
void fe_slot_mha_avx2(const fe_args *, const fe_design *, int, int);
void fe_slot_mha_avx512(const fe_args *, const fe_design *, int, int);

/* SlotMHA's workspace per worker: an MHA item's (fe_mha_ws, for the item design) and the
 * row's Hq query heads turned by RoPE (Hq x D), each on 64-byte lines. */
static inline size_t fe_slot_mha_ws_per_worker(const fe_design *item, int64_t Hq,
                                               int64_t group, int64_t head_dim) {
    return fe_mha_ws_per_worker(item, group, head_dim) + fe_mha_lines(Hq * head_dim);
}

#endif
