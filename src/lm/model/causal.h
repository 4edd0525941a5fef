/* lm/model/causal.h: a causal language model (Llama family) as one graph with two versions — a
 * prefill chunk of C rows and a decode step — each compiled once. max_seq_len sizes only
 * the KV caches (max_seq_len, n_kv_heads, head_dim) per layer and the RoPE table. Prompts
 * run chunk by chunk against the caches; only the last row goes to the head; the next token
 * is sampled on the device and carried with the position, so decoding is a device loop. */
#ifndef FE_LM_CAUSAL_H
#define FE_LM_CAUSAL_H

#include "ferrum/graph.h"
#include "lm/model/blocks.h"
#include "lm/model/weights.h"

typedef struct fe_causal_options {
    int64_t max_seq_len; /* KV cache rows; 0: min(4096, the model's context) */
    int64_t chunk;       /* prefill rows per call; 0: 512 (at most max_seq_len) */
    double temperature;  /* 0: greedy */
    int64_t top_k;       /* 0: off */
    double top_p;        /* 1: off */
    uint64_t seed;
    fe_packaging packaging;
    bool verbose;        /* print each version's packaging and per-call values */
    const fe_profile *profile; /* the compiles' tunables as data; NULL: none; outlives m */
    fe_layout_store *layouts;  /* the weights' layouts, shared with the model's other graphs;
                                * NULL: the graph keeps its own; outlives m */
    /* Prefill dot products over bf16 matrices: AUTO (the default) rounds the activations to
     * bf16 and multiplies with bf16 dot products (GEMM act_bf16: about 1.7x the f32 path on
     * AVX512_BF16, as llama.cpp computes; KL to the f32 oracle ~1e-4) ; F32 keeps them f32
     * (exact to the oracle). Over block-quantised matrices (q8_0, q4_0, q4_1) AUTO and INT8
     * quantise the activations to int8 per row and 32-block and sum exact integer products
     * (GEMM act_int8, as llama.cpp's Q8 activations); so do they over q5_0, q4_k and q6_k
     * (per 256-block for the K types, llama.cpp's q8_K); F32 widens the blocks to f32. BF16
     * over block matrices rounds their values to bf16 as well (GEMM act_bf16), and AUTO does
     * so over all of them where the device has AMX-BF16 tiles (lm/model/dots.h:
     * faster there, and nearer the oracle than int8). Other weight dtypes always use f32. */
    enum {
        FE_PREFILL_DOT_AUTO = 0,
        FE_PREFILL_DOT_F32,
        FE_PREFILL_DOT_BF16,
        FE_PREFILL_DOT_INT8
    } prefill_dot;
    /* GEMV dot products over block-quantised matrices (q8_0 .. q6_k), the decode step's
     * and the head's: AUTO (the default) quantises the activation to int8 per 32-block (per
     * 256 for q4_k/q6_k, llama.cpp's q8_K) and
     * sums exact integer products (GEMV act_int8: 1.3-1.9x the f32 path, as llama.cpp's Q8
     * activations); F32 keeps it f32 (exact to the oracle). Float matrices are always f32. */
    enum { FE_DECODE_DOT_AUTO = 0, FE_DECODE_DOT_F32 } decode_dot;
    /* The body's steps: plain, every fold taken (the default), none, or priced by fold_price
     * (lm/model/blocks.h); FE_BODY_HAND_FUSED is the reference the folds are tested against */
    fe_body_form body;
    fe_fold_price_fn fold_price;
    void *fold_user;
    /* The KV cache's dtype: FE_DTYPE_F32 (the default, the zero value: exact) or FE_DTYPE_F16
     * (half the memory and half the bytes a decode step's attention reads; each new key and
     * value rounded to f16 once, by a Convert step after its product or RoPE) */
    fe_dtype kv_dtype;
} fe_causal_options;

fe_causal_options fe_causal_options_default(void);

typedef struct fe_causal fe_causal;

/* Builds the graph over borrowed weights and device (both must outlive the model) and
 * compiles its two versions. */
fe_status fe_causal_create(fe_device *dev, const fe_llama_weights *w, const fe_causal_options *o,
                           fe_causal **out, fe_error *err);
void fe_causal_destroy(fe_causal *m);
const char *fe_causal_message(const fe_causal *m);

/* Runs tokens[0..n) as the sequence from position 0 on, reusing the cache rows of the
 * previous sequence up to the chunk holding the first token that differs (a chat turn
 * reruns only the chunks that changed, and gives the same logits as a run from scratch).
 * *logits (vocab floats, valid until the next call) are the last row's; *next is the token
 * drawn after it. */
fe_status fe_causal_prompt(fe_causal *m, const int32_t *tokens, int64_t n, const float **logits,
                           int32_t *next);

/* Decodes up to n tokens on the device, starting from the token drawn last; on_token sees
 * each (and its logits) and may stop the loop by returning nonzero. */
typedef int (*fe_token_fn)(void *user, int32_t token, const float *logits);
fe_status fe_causal_decode(fe_causal *m, int n, fe_token_fn on_token, void *user);

/* One decode step with a token the host chose (a host-side sampler's): the token goes into
 * the caches at the next position and *logits (vocab floats, valid until the next call) are
 * the logits after it; *next is the token the device drew after it, carried as after any
 * call, so fe_causal_decode may go on from it. The same decode step as the device loop (its
 * numbers are bit-identical), as a version with the token as input, compiled on first use.
 * FE_E_STATE before a prompt, FE_E_BOUNDS when the cache is full or the token is outside
 * the vocabulary. */
fe_status fe_causal_step(fe_causal *m, int32_t token, const float **logits, int32_t *next);

/* Teacher-forced logits: for each i, the logits after tokens[0..i], one decode-sized call a
 * position through the prefill version (bounded to one row). out is n * vocab floats. */
fe_status fe_causal_teacher_forced(fe_causal *m, const int32_t *tokens, int64_t n, float *out);

/* The sequence position the next token takes, and the model's graph (for stats, drawing). */
int64_t fe_causal_position(const fe_causal *m);
/* The cache rows the last fe_causal_prompt kept (did not run again), and the cache's rows. */
int64_t fe_causal_reused(const fe_causal *m);
/* The rows a prompt of tokens[0..n) would keep from the cache: whole chunks before the first
 * token that differs from the cached sequence, never the last row (it runs for its logits). */
int64_t fe_causal_reusable(const fe_causal *m, const int32_t *tokens, int64_t n);
int64_t fe_causal_max_seq_len(const fe_causal *m);
fe_graph *fe_causal_graph(fe_causal *m);

#endif
