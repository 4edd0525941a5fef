/* ops/sample/sample.h: what Sample's declaration (sample.c), its shared pieces (shared.c) and
 * its kernels (kernels.inc) share: indices, the draw, the workspace layout.
 *
 * logits (B, V) f32 -> token (B) i32, for the first rows rows; the rule every kernel and the
 * reference follow exactly is written at the top of sample.c. */
#ifndef FE_OPS_SAMPLE_H
#define FE_OPS_SAMPLE_H

#include "ops/op.h"

enum { SAMPLE_WIDTH, SAMPLE_RPI };                              /* tunables */
enum { SAMPLE_B, SAMPLE_V, SAMPLE_MAXPOS };                     /* extents */
enum { SAMPLE_V_ROWS, SAMPLE_V_POS };                           /* per-call values */
enum { SAMPLE_TEMP, SAMPLE_TOPK, SAMPLE_TOPP, SAMPLE_SEED };    /* params */

/* The largest pos: positions are i32 in the graphs that carry them. */
#define FE_SAMPLE_MAX_POS ((int64_t)2147483647)

/* Sets of at most this many tokens are put in index order by sorting their indices; larger
 * ones by a pass over the row with a threshold test (the same list either way). */
enum { FE_SAMPLE_SORT_MAX = 4096 };

/* The uniform draw in [0, 1) for row `row` at position `pos`: a pure function of (seed,
 * pos, row), splitmix64 applied three times, top 53 bits. */
double fe_sample_draw(uint64_t seed, int64_t pos, int64_t row);

/* A token with its sort key (its logit, NaN as -inf): the order is key descending, then
 * index ascending. */
typedef struct fe_sample_ent {
    float k;
    int32_t i;
} fe_sample_ent;

/* One worker's scratch for a row of V logits: w (V doubles), ent (V entries), then V i32
 * (a member list in index order; the reference's membership flags). */
size_t fe_sample_ws_per_worker(int64_t V);
static inline double *fe_sample_ws_w(void *ws, int64_t V, int ith) {
    return (double *)((char *)ws + (size_t)ith * fe_sample_ws_per_worker(V));
}
static inline fe_sample_ent *fe_sample_ws_ent(void *ws, int64_t V, int ith) {
    return (fe_sample_ent *)((char *)fe_sample_ws_w(ws, V, ith) + ((size_t)V * 8 + 63) / 64 * 64);
}
static inline void *fe_sample_ws_rest(void *ws, int64_t V, int ith) {
    return (char *)fe_sample_ws_ent(ws, V, ith) + ((size_t)V * 8 + 63) / 64 * 64;
}

#endif
