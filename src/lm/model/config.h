/* lm/model/config.h: a decoder language model's hyperparameters (the Llama family, and Gemma 3
 * where `family` says so), read from a Hugging Face config.json, from GGUF metadata, or taken
 * from a named preset.
 *
 * Every reader ends with fe_lm_config_validate, so a config that comes back FE_OK obeys
 * every rule listed there; the model code may rely on them without checking again.
 * Missing optional keys take the values Hugging Face transformers' LlamaConfig gives them
 * (rms_norm_eps 1e-6, rope_theta 10000, max_position_embeddings 2048, no tying), so a
 * config means what it means there. Messages name the source, the key and the rule. */
#ifndef FE_LM_CONFIG_H
#define FE_LM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"
#include "lm/format/gguf.h"

typedef enum fe_lm_rope_scaling_type {
    FE_LM_ROPE_NONE = 0,
    FE_LM_ROPE_LINEAR,       /* positions divided by factor */
    FE_LM_ROPE_LLAMA3,       /* Llama 3.1/3.2 frequency bands (see lm/model/rope_table.h) */
    FE_LM_ROPE_FREQS_TENSOR, /* GGUF: per-frequency factors stored in tensor rope_freqs.weight */
} fe_lm_rope_scaling_type;

enum { FE_LM_MAX_EOS = 8, FE_LM_ARCH_MAX = 32, FE_LM_SOURCE_MAX = 160 };

/* Which body runs the config: Llama (pre-norm, SwiGLU) or Gemma 3 (gemma3.h: sandwich norms,
 * GeGLU, QK-norm, scaled embeddings, local sliding-window layers with their own RoPE base). */
typedef enum fe_lm_family { FE_LM_FAMILY_LLAMA = 0, FE_LM_FAMILY_GEMMA3 } fe_lm_family;

typedef struct fe_lm_config {
    char architecture[FE_LM_ARCH_MAX]; /* "llama" (HF model_type / GGUF general.architecture) */
    char source[FE_LM_SOURCE_MAX];     /* where it came from (path or preset), for messages */
    int64_t vocab;                     /* vocab_size */
    int64_t hidden;                    /* hidden_size */
    int64_t n_layers;                  /* num_hidden_layers */
    int64_t n_heads;                   /* num_attention_heads */
    int64_t n_kv_heads;                /* num_key_value_heads */
    int64_t head_dim;                  /* head_dim, else hidden / n_heads */
    int64_t ffn;                       /* intermediate_size */
    double rms_eps;                    /* rms_norm_eps */
    double rope_theta;                 /* rope_theta */
    struct {
        fe_lm_rope_scaling_type type;
        double factor;                            /* LINEAR, LLAMA3 */
        double low_freq_factor, high_freq_factor; /* LLAMA3 */
        int64_t original_max_position_embeddings; /* LLAMA3 */
    } rope_scaling;
    bool tied_embeddings; /* the output projection is the token embedding (transposed) */
    int64_t max_context;  /* max_position_embeddings */
    int32_t bos_id;       /* -1 when not known */
    int32_t eos_ids[FE_LM_MAX_EOS]; /* every id that ends generation, first is the main one */
    int n_eos;                      /* 0 when not known */
    fe_lm_family family;
    /* Gemma 3 (zero for Llama): layer l is local (sliding window) when l % swa_pattern <
     * swa_pattern - 1, attending keys in (p - sliding_window, p] with RoPE base
     * rope_theta_local; the others are global, with rope_theta. q . k is scaled by
     * attn_scale (query_pre_attn_scalar^-1/2); the embedding rows by embed_scale
     * (sqrt(hidden)). */
    int64_t sliding_window;
    int64_t swa_pattern;
    double rope_theta_local;
    double attn_scale;
    double embed_scale;
} fe_lm_config;

/* Whether layer l of a Gemma 3 config is a local (sliding-window) layer. */
static inline bool fe_lm_layer_is_local(const fe_lm_config *c, int64_t l) {
    return c->family == FE_LM_FAMILY_GEMMA3 && c->sliding_window > 0 && c->swa_pattern > 0 &&
           l % c->swa_pattern < c->swa_pattern - 1;
}

/* The named preset: "llama-3.2-1b" or "smollm2-135m". FE_E_NOTFOUND (message listing the
 * presets) for any other name. */
fe_status fe_lm_config_preset(const char *name, fe_lm_config *out, fe_error *err);

/* From the text of a Hugging Face config.json (`len` bytes, need not be NUL-terminated);
 * `what` names it in messages. FE_E_FORMAT when it is not JSON, a required key is missing
 * (vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size) or
 * a key has the wrong type; FE_E_UNSUPPORTED for a rope_scaling type other than
 * default/linear/llama3; FE_E_INVALID when the values break a rule (fe_lm_config_validate);
 * FE_E_NOMEM. *out is written only on success. */
fe_status fe_lm_config_from_json(const char *text, size_t len, const char *what,
                                 fe_lm_config *out, fe_error *err);

/* From a config.json file, or a folder holding one. FE_E_IO when it cannot be read, then
 * as fe_lm_config_from_json. */
fe_status fe_lm_config_from_json_file(const char *path, fe_lm_config *out, fe_error *err);

/* From an open GGUF file's metadata (`<arch>.block_count`, `.embedding_length`,
 * `.feed_forward_length`, `.attention.head_count(_kv)`, `.attention.key_length`,
 * `.attention.layer_norm_rms_epsilon`, `.rope.freq_base`, `.rope.dimension_count`,
 * `.rope.scaling.*`, `.context_length`, `.vocab_size` or the length of
 * tokenizer.ggml.tokens, tokenizer.ggml.{bos,eos,eot,eom}_token_id) and tensor table (tied
 * when there is no output.weight; rope_freqs.weight). general.architecture "gemma3" gives the
 * Gemma 3 family, with `.attention.sliding_window`, `.attention.sliding_window_pattern`
 * (default 6), `.rope.freq_base_swa` (default 10000) and the attention scale llama.cpp uses
 * (1 / sqrt(key_length)), and <end_of_turn> as a second end. Same errors as from_json;
 * FE_E_UNSUPPORTED when rope.dimension_count is not head_dim (partial rotary). */
fe_status fe_lm_config_from_gguf(const fe_gguf *g, fe_lm_config *out, fe_error *err);

/* Checks the rules: every size positive and below a sane bound, hidden a multiple of
 * n_heads, n_heads a multiple of n_kv_heads, head_dim even, rms_eps in (0, 1), rope_theta
 * > 0, scaling factors valid for their type (LLAMA3: factor >= 1, 0 < low < high,
 * original > 0), bos/eos ids inside the vocabulary. FE_E_INVALID naming the field (with
 * its config.json key) and the rule. */
fe_status fe_lm_config_validate(const fe_lm_config *c, fe_error *err);

#endif
