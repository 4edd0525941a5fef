/* lm/model/gemma3.h: one Gemma 3 decoder layer, traced from the shared blocks (blocks.h), for the
 * causal LM's body (causal.c), which owns the embedding (scaled by sqrt(hidden)), the head and
 * the caches' shapes. What differs from a Llama layer:
 *
 *   h = rmsnorm(x) * attn_norm                           (norm weights stored as 1 + w)
 *   q = rmsnorm_per_head(h Wq^T) * q_norm, k likewise     QK-norm, then RoPE (rotate-half) with
 *                                                         the layer's base (local or global)
 *   a = MHA(q, K[:end], V[:end]), q . k scaled by attn_scale, local layers windowed to
 *       (p - sliding_window, p]
 *   x = x + rmsnorm(a Wo^T) * post_attn_norm              sandwich norm
 *   h = rmsnorm(x) * ffn_norm
 *   x = x + rmsnorm((gelu_tanh(h Wg^T) * (h Wu^T)) Wd^T) * post_ffn_norm
 *
 * The per-head norm runs over (C * heads, head_dim) rows: the projection writes into a state of
 * the layer stack seen as (C, heads * head_dim) rows (bound n) and as (C * heads, head_dim)
 * rows (bound n * heads), since a bound on C cannot be carried through that reshape. */
#ifndef FE_LM_GEMMA3_H
#define FE_LM_GEMMA3_H

#include "lm/model/blocks.h"
#include "lm/model/config.h"

/* What the layer reads of the body around it. */
typedef struct fe_gemma3_io {
    fe_block_mode mm;
    fe_h rope;        /* the layer's (max_seq_len, head_dim) cos/sin table */
    fe_val pos, n, end; /* the chunk's first position, its rows, pos + n */
    int64_t C, S;     /* rows a call traces (1 for decode), cache rows */
    fe_dtype kv_dtype; /* the caches' dtype: f32 or f16 */
} fe_gemma3_io;

/* x after layer l (x: (C, hidden) with bound n). Weights "layers.<l>.{attn_norm, wq, wk, wv,
 * q_norm, k_norm, wo, post_attn_norm, ffn_norm, w_gate, w_up, w_down, post_ffn_norm}", states
 * "layers.<l>.{k,v}_cache" and the per-head scratch "gemma3.{q,k}.<C>". */
fe_h fe_gemma3_layer(fe_trace *t, const fe_lm_config *c, const fe_gemma3_io *io, int64_t l, fe_h x);

#endif
