/* lm/model/bert.h: a BERT-family encoder's hyperparameters (from a Hugging Face config.json,
 * model_type "bert": BERT, MiniLM, all-MiniLM-L6-v2) and its weights, as the encoder graph
 * (encoder.h) and the oracle (eval/bert_oracle.h) read them.
 *
 * The architecture: word + absolute position + token-type embeddings, LayerNorm; then per
 * layer, post-LN: x = LN(x + attn(x) Wo + bo), x = LN(x + GELU_erf(x Wi + bi) Wo2 + bo2), every
 * projection with a bias, attention bidirectional over the sentence's tokens.
 *
 * Weights are f32 in memory: f32 tensors of a checkpoint are mapped in place when aligned,
 * anything else (BF16, F16, unaligned) is converted once into memory the weights own. */
#ifndef FE_LM_BERT_H
#define FE_LM_BERT_H

#include <stdint.h>

#include "ferrum/ops.h"

struct fe_safetensors;

typedef struct fe_bert_config {
    char source[160];      /* where it came from, for messages */
    int64_t vocab;         /* vocab_size */
    int64_t hidden;        /* hidden_size */
    int64_t n_layers;      /* num_hidden_layers */
    int64_t n_heads;       /* num_attention_heads */
    int64_t head_dim;      /* hidden / n_heads */
    int64_t ffn;           /* intermediate_size */
    int64_t max_positions; /* max_position_embeddings */
    int64_t type_vocab;    /* type_vocab_size */
    double ln_eps;         /* layer_norm_eps */
} fe_bert_config;

/* From config.json text (`what` names it): model_type "bert" (or absent with BertModel
 * architectures), hidden_act "gelu" (the erf form), position_embedding_type "absolute".
 * FE_E_FORMAT for bad JSON or a missing/mistyped key, FE_E_UNSUPPORTED for another model
 * type, activation or position embedding, FE_E_INVALID for values that break a rule (sizes
 * positive and sane, hidden a multiple of heads, eps in (0, 1)), each naming the key. */
fe_status fe_bert_config_from_json(const char *text, size_t len, const char *what,
                                   fe_bert_config *out, fe_error *err);
/* From a config.json file or a folder holding one (FE_E_IO when unreadable). */
fe_status fe_bert_config_from_file(const char *path, fe_bert_config *out, fe_error *err);

typedef struct fe_bert_layer {
    fe_tensor wq, bq, wk, bk, wv, bv; /* (hidden, hidden), (hidden) */
    fe_tensor wo, bo;                 /* attention output (hidden, hidden), (hidden) */
    fe_tensor ln1_w, ln1_b;           /* after attention (hidden) */
    fe_tensor wi, bi;                 /* intermediate (ffn, hidden), (ffn) */
    fe_tensor wf, bf;                 /* FFN output (hidden, ffn), (hidden) */
    fe_tensor ln2_w, ln2_b;           /* after the FFN (hidden) */
} fe_bert_layer;

typedef struct fe_bert_weights {
    fe_bert_config cfg;
    fe_tensor word;       /* (vocab, hidden) */
    fe_tensor position;   /* (max_positions, hidden) */
    fe_tensor type;       /* (type_vocab, hidden) */
    fe_tensor ln_w, ln_b; /* embeddings LayerNorm (hidden) */
    fe_bert_layer *layers; /* cfg.n_layers */
    void **owned;          /* memory the weights own */
    int n_owned, cap_owned;
} fe_bert_weights;

/* The weights of an open safetensors checkpoint (borrowed: `st` must stay open while they
 * are used). Names as transformers' BertModel saves them, with or without a "bert." prefix:
 * embeddings.{word,position,token_type}_embeddings.weight, embeddings.LayerNorm.{weight,bias},
 * encoder.layer.N.attention.self.{query,key,value}.{weight,bias},
 * encoder.layer.N.attention.output.{dense,LayerNorm}.{weight,bias},
 * encoder.layer.N.intermediate.dense.{weight,bias}, encoder.layer.N.output.{dense,LayerNorm}
 * .{weight,bias}. The pooler and the position_ids buffer are known and not read; any other
 * tensor is FE_E_FORMAT (named), a missing one FE_E_NOTFOUND, a mis-shaped one FE_E_SHAPE, a
 * dtype other than F32/BF16/F16 FE_E_DTYPE. Caller fe_bert_weights_free()s, then closes st. */
fe_status fe_bert_weights_from_safetensors(const struct fe_safetensors *st,
                                           const fe_bert_config *cfg, fe_bert_weights *out,
                                           fe_error *err);
/* Random weights in cfg's shapes (matrices uniform with std 1/sqrt(fan_in), LayerNorm weights
 * near 1, biases and embeddings small), deterministic in seed. */
fe_status fe_bert_weights_random(const fe_bert_config *cfg, uint64_t seed, fe_bert_weights *out,
                                 fe_error *err);
void fe_bert_weights_free(fe_bert_weights *w);

#endif
