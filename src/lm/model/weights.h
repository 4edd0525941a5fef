/* lm/model/weights.h: a Llama-family or Gemma 3 model's weights as views (any dtype ferrum
 * reads: f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q4_k, q6_k), named as the model's body and the oracle see them, plus where they
 * come from. Three fills:
 *
 *  - read: views into a GGUF or safetensors checkpoint opened with fe_gguf_open /
 *    fe_safetensors_open (mapped, not copied);
 *  - random(seed): numbers drawn in the config's shapes, no file needed;
 *  - unread: the same checkpoint opened header-only (fe_gguf_open_header /
 *    fe_safetensors_open_header): every tensor has the shape and dtype the read fill would
 *    give it and data NULL, so a model can be traced, compiled and drawn without reading a
 *    byte of its weights; `unread` is set, and whatever would read them (the oracle, the
 *    writer, a graph call) refuses with FE_E_STATE.
 *
 * Shapes are (out, in) row-major, as checkpoints store matrices. */
#ifndef FE_LM_WEIGHTS_H
#define FE_LM_WEIGHTS_H

#include "lm/model/config.h"
#include "ferrum/ops.h"

typedef struct fe_llama_layer {
    fe_tensor attn_norm;           /* (hidden) */
    fe_tensor wq, wk, wv, wo;      /* (heads*hd, hidden), (kv*hd, hidden) x2, (hidden, heads*hd) */
    fe_tensor ffn_norm;            /* (hidden) */
    fe_tensor w_gate, w_up, w_down; /* (ffn, hidden) x2, (hidden, ffn) */
    /* Gemma 3 only (rank 0 for Llama): the QK-norms (head_dim) and the sandwich norms after
     * attention and after the feed-forward (hidden), all f32, stored as llama.cpp's converter
     * writes them: 1 + w (Gemma's RMSNorm multiplies by 1 + w), so applied as they are */
    fe_tensor q_norm, k_norm, post_attn_norm, post_ffn_norm;
} fe_llama_layer;

typedef struct fe_llama_weights {
    fe_lm_config cfg;
    fe_tensor embed;         /* (vocab, hidden) */
    fe_tensor norm;          /* (hidden) */
    fe_tensor lm_head;       /* (vocab, hidden): the embedding itself when tied */
    fe_llama_layer *layers;  /* cfg.n_layers */
    fe_tensor rope_freqs;    /* (head_dim / 2) f32 divisors of the rotary frequencies, when the
                              * config says FE_LM_ROPE_FREQS_TENSOR (llama.cpp's Llama 3 files);
                              * rank 0 otherwise */
    bool rope_interleaved;   /* GGUF's Llama q/k are permuted for pairs (2i, 2i+1); HF's use
                              * rotate-half pairs (i, i + hd/2) */
    bool unread;             /* the unread fill: shapes and dtypes only, every data NULL */
    void *owned;             /* memory the weights own (random fill), or NULL */
    void *source;            /* the open checkpoint they map (borrowed), or NULL */
    int source_kind;         /* 0 none, 1 GGUF, 2 safetensors */
} fe_llama_weights;

/* Random weights in the checkpoint's shapes and `dtype` (f32 or bf16): matrices drawn
 * uniform with std 1/sqrt(fan_in) so logits have a real spread, norms near 1 (a Gemma 3
 * config's QK and sandwich norms too). Deterministic in `seed`. Caller
 * fe_llama_weights_free()s. */
fe_status fe_llama_weights_random(const fe_lm_config *cfg, fe_dtype dtype, uint64_t seed,
                                  fe_llama_weights *out, fe_error *err);
/* The unread fill of the random weights: the same shapes and dtypes, data NULL, nothing drawn
 * (what fe_lm_model_open gives for random weights opened header-only). */
fe_status fe_llama_weights_shapes(const fe_lm_config *cfg, fe_dtype dtype, fe_llama_weights *out,
                                  fe_error *err);
/* The weights of an open GGUF (borrowed: the file must stay open), names checked strictly:
 * a missing, mis-shaped or mis-typed tensor is an error naming it, what was expected and
 * what was found. A file opened header-only gives the unread fill. */
struct fe_gguf;
fe_status fe_llama_weights_from_gguf(const struct fe_gguf *g, const fe_lm_config *cfg,
                                     fe_llama_weights *out, fe_error *err);
/* The weights of an open Hugging Face Llama safetensors checkpoint (borrowed: `st` must stay
 * open while the weights are used; weights_safetensors.c). Names: model.embed_tokens.weight,
 * model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
 * mlp.{gate,up,down}_proj}.weight, model.norm.weight, lm_head.weight (not read when the
 * config ties embeddings). BF16/F16/F32 matrices are mapped, not copied; norms stored in
 * bf16/f16 are converted once to f32 into memory the weights own. rope_interleaved is false
 * (HF rotates halves). Checked strictly: a missing tensor (FE_E_NOTFOUND), a mis-shaped one
 * (FE_E_SHAPE), one in a dtype other than BF16/F16/F32 (FE_E_DTYPE) or a tensor the map does
 * not know (FE_E_FORMAT, the first one named; the rotary_emb.inv_freq buffers older
 * conversions carry are known and skipped) is an error naming the tensor, what was expected
 * and what was found. A checkpoint opened header-only gives the unread fill, with the same
 * checks (alignment from the file offsets) and the norms declared f32 as the read fill makes
 * them, nothing converted. Caller fe_llama_weights_free()s, then closes `st`. */
struct fe_safetensors;
fe_status fe_llama_weights_from_safetensors(const struct fe_safetensors *st,
                                            const fe_lm_config *cfg, fe_llama_weights *out,
                                            fe_error *err);
void fe_llama_weights_free(fe_llama_weights *w);

/* Every distinct tensor of the model once: embed, norm, lm_head unless tied, rope_freqs when
 * present, then each layer's nine. Returns the count; out[0..min(count, cap)) are set (out
 * may be NULL to count). */
int fe_llama_weights_tensors(const fe_llama_weights *w, const fe_tensor **out, int cap);
/* Bytes of all of them (0 when out of memory). */
size_t fe_llama_weights_bytes(const fe_llama_weights *w);

/* FE_OK when w's data can be read; FE_E_STATE, with a message naming `what` (the reader:
 * "the oracle") and the fix, when w is the unread fill. */
fe_status fe_llama_weights_check_read(const fe_llama_weights *w, const char *what, fe_error *err);

#endif
