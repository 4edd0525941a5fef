/* lm/model/embedgemma.h: EmbeddingGemma (a Gemma 3 body run as a bidirectional encoder, then
 * mean pooling, a Dense 768 -> 3072 -> 768 head without bias or activation, and L2) as
 * sentence-transformers saves it:
 *
 *   config.json              Hugging Face Gemma3TextModel (model_type "gemma3_text")
 *   model.safetensors        embed_tokens.weight, layers.N.{input_layernorm, self_attn.{q,k,v,o}
 *                            _proj, self_attn.{q,k}_norm, post_attention_layernorm,
 *                            pre_feedforward_layernorm, mlp.{gate,up,down}_proj,
 *                            post_feedforward_layernorm}.weight, norm.weight (a "model."
 *                            prefix is accepted too)
 *   2_Dense/, 3_Dense/       config.json (in_features, out_features, bias false,
 *                            activation_function Identity) and model.safetensors (linear.weight)
 *
 * Hugging Face stores Gemma's RMSNorm weights as w (the norm multiplies by 1 + w); they are
 * held here as 1 + w, as the GGUF converter writes them and the Gemma 3 blocks read them.
 * Every weight is held as f32 in memory the model owns (BF16/F16/F32 in the files).
 *
 * Bidirectional attention (config use_bidirectional_attention true, as EmbeddingGemma's):
 * global layers attend every token of the sentence; local layers attend the tokens j with
 * |i - j| < window, window = sliding_window / 2 + 1, which is what transformers' Gemma3
 * does (its config halves sliding_window for bidirectional attention, and the mask's
 * overlay is abs(q - kv) < sliding_window). */
#ifndef FE_LM_EMBEDGEMMA_H
#define FE_LM_EMBEDGEMMA_H

#include "lm/model/weights.h"

typedef struct fe_embedgemma {
    fe_lm_config cfg;      /* family GEMMA3; sliding_window as config.json gives it */
    int64_t window;        /* local layers: keys with |i - j| < window (sliding_window/2 + 1) */
    fe_tensor embed;       /* (vocab, hidden) */
    fe_tensor norm;        /* (hidden), 1 + w */
    fe_llama_layer *layers; /* cfg.n_layers, the Gemma norms as 1 + w */
    int n_dense;           /* 0 (a bare Gemma3TextModel) or 2 */
    fe_tensor dense[2];    /* (out, in) each: 2_Dense, 3_Dense */
    void **owned;
    int n_owned, cap_owned;
} fe_embedgemma;

/* Whether the folder's config.json says model_type "gemma3_text" (or "gemma3" with
 * Gemma3TextModel architectures). False when unreadable. */
bool fe_embedgemma_is_folder(const char *dir);

/* From config.json text: the Gemma3TextModel keys (vocab_size, hidden_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, intermediate_size,
 * rms_norm_eps, rope_theta, rope_local_base_freq (or transformers 5's rope_parameters per
 * layer type, over them), sliding_window, query_pre_attn_scalar,
 * max_position_embeddings, layer_types or sliding_window_pattern, hidden_activation,
 * use_bidirectional_attention). FE_E_FORMAT naming a missing or mistyped key; FE_E_UNSUPPORTED
 * for hidden_activation other than gelu_pytorch_tanh, logit soft-capping, rope_scaling,
 * use_bidirectional_attention false (a causal Gemma: `ferrum generate`), or layer_types not
 * in Gemma 3's pattern. */
fe_status fe_embedgemma_config_from_json(const char *text, size_t len, const char *what,
                                         fe_lm_config *out, int64_t *window, fe_error *err);

/* The preset "embeddinggemma-300m" (google/embeddinggemma-300m's published config:
 * hidden 768, 24 layers, 3 heads, 1 KV head, head_dim 256, FFN 1152, vocab 262144, sliding
 * window 512, pattern 6, rope 1e6 / 10000, max positions 2048, Dense 768 -> 3072 -> 768) or
 * "embeddinggemma-tiny" (the same architecture at test size). FE_E_NOTFOUND listing them. */
fe_status fe_embedgemma_preset(const char *name, fe_lm_config *out, int64_t *window,
                               int64_t *dense_mid, fe_error *err);

/* Opens the folder (config.json, model.safetensors, 2_Dense, 3_Dense when modules.json lists
 * them). Errors name the file and the rule: FE_E_NOTFOUND for a missing tensor or Dense
 * folder modules.json lists, FE_E_SHAPE for a mis-shaped tensor, FE_E_FORMAT for a tensor
 * the model does not have, FE_E_UNSUPPORTED for a Dense with bias or an activation other
 * than Identity, FE_E_DTYPE for dtypes other than F32/BF16/F16. */
fe_status fe_embedgemma_load(const char *dir, fe_embedgemma *out, fe_error *err);

/* Random weights in cfg's shapes (dense_mid 0: no Dense head), deterministic in seed. */
fe_status fe_embedgemma_random(const fe_lm_config *cfg, int64_t window, int64_t dense_mid,
                               uint64_t seed, fe_embedgemma *out, fe_error *err);

/* Writes m as sentence-transformers saves EmbeddingGemma into dir (created; its parent must
 * exist): the files fe_embedgemma_load reads, modules.json, 1_Pooling/config.json (mean),
 * config_sentence_transformers.json (the query/document prompts) and 4_Normalize; no
 * tokenizer (the caller adds one). All F32; norms written back as w (HF's form). FE_E_IO
 * naming the path. */
fe_status fe_embedgemma_write(const fe_embedgemma *m, const char *dir, fe_error *err);

void fe_embedgemma_free(fe_embedgemma *m);

#endif
