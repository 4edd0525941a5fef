/* lm/model/batch.h: the Llama-family causal LM for many sequences at once: one graph over
 * `slots` KV caches (a state (2 (slots + 1), max_seq_len, n_kv_heads, head_dim) per layer:
 * each slot's keys, then each slot's values; the extra slot is a sink the unused rows of a
 * decode call write to), with its versions:
 * - a prefill chunk of C rows for one slot (a per-call slot index picks its cache): the
 *   same steps as the single-sequence model's prefill (causal.c), so a slot's prompt logits
 *   are bit-identical to a session's;
 * - a batched decode step of B rows, each its own slot and position (the inputs "slots" and
 *   "positions" beside the tokens "rows"): its products are GEMVs over all the rows (each
 *   weight block read and decoded once for up to 8 rows), the KV write of every row one
 *   KVWrite step and the attention of every row against its own slot one SlotMHA step (RoPE
 *   inside both); bit-identical per row to the single-sequence decode step. Compiled for
 *   B = 1, 2, 4 ... and every slot; a call takes the smallest that holds its rows (the rows
 *   past them write to the sink).
 * Sampling is the caller's (host), from the logits. One caller at a time. */
#ifndef FE_LM_BATCH_H
#define FE_LM_BATCH_H

#include "ferrum/graph.h"
#include "lm/model/blocks.h"
#include "lm/model/weights.h"

/* Slots of one batch, and so rows of one decode call, at most. */
enum { FE_BATCH_MAX_ROWS = 12 };

typedef struct fe_batch_options {
    int slots;           /* KV caches; 1..FE_BATCH_MAX_ROWS */
    int64_t max_seq_len; /* rows per cache */
    int64_t chunk;       /* prefill rows per call; 0: 256 */
    int prefill_dot;     /* fe_causal_options' values (FE_PREFILL_DOT_*, FE_DECODE_DOT_*) */
    int decode_dot;
    fe_packaging packaging;
    const fe_profile *profile;
    fe_layout_store *layouts; /* as fe_causal_options' */
    fe_body_form body;   /* plain steps, every fold taken (the default); lm/model/blocks.h */
    fe_dtype kv_dtype;   /* the caches': FE_DTYPE_F32 (the zero value) or FE_DTYPE_F16 */
} fe_batch_options;

typedef struct fe_batch fe_batch;

/* Builds and compiles the versions over borrowed weights and device. */
fe_status fe_batch_create(fe_device *dev, const fe_llama_weights *w, const fe_batch_options *o,
                          fe_batch **out, fe_error *err);
void fe_batch_destroy(fe_batch *b);
const char *fe_batch_message(const fe_batch *b);

/* Runs at most max_chunks chunks (0: all) of tokens[0..n) as slot's sequence from position
 * 0, reusing the slot's cached chunks before the first token that differs (as
 * fe_causal_prompt). *done once the whole prompt ran; then *logits (vocab floats, valid
 * until the next call) are the last row's. Call again with the same tokens to go on. */
fe_status fe_batch_prefill(fe_batch *b, int slot, const int32_t *tokens, int64_t n,
                           int64_t max_chunks, bool *done, const float **logits);
/* One decode step for rows r < n_rows: tokens[r] goes into slots[r]'s cache at its next
 * position (distinct slots, each with a prompt, none full); *logits are n_rows x vocab floats
 * (valid until the next call), row r's after tokens[r]. */
fe_status fe_batch_decode(fe_batch *b, const int *slots, const int32_t *tokens, int n_rows,
                          const float **logits);
/* The tokens in slot's cache. */
int64_t fe_batch_position(const fe_batch *b, int slot);
/* The rows of slot's cache a prefill of tokens[0..n) would keep (whole chunks before the
 * first token that differs; never the last row). */
int64_t fe_batch_reusable(const fe_batch *b, int slot, const int32_t *tokens, int64_t n);
int64_t fe_batch_max_seq_len(const fe_batch *b);
/* The graph (its versions: the prefill chunk, the decode steps of 1, 2, 4 ... rows); borrowed. */
fe_graph *fe_batch_graph(fe_batch *b);

#endif
