/* lm/model/encoder.h: a BERT-family text encoder as one graph, compiled once for a batch of
 * `slots` sentences of at most `max_tokens` tokens each, and called with the sentences'
 * lengths per call.
 *
 * The sentences of a call are packed row after row (no padding): the GEMMs, LayerNorms and the
 * GELU run over the first n = sum of lengths rows only (x[:n]), and each sentence attends over
 * its own rows: one SegmentedMHA step per layer for all sentences, given the call's lengths
 * (0 for a slot with no sentence). Pooling (mean, CLS, last), L2 normalisation and
 * Matryoshka truncation run on the host over the hidden states of each sentence's rows.
 *
 * Lifetimes: the weights are borrowed and must outlive the encoder; hidden states handed out
 * live until the next call. One call at a time.
 *
 * Known limits: one sentence per slot, token type 0 (no sentence pairs); at most 32 slots
 * (FE_ENCODER_MAX_SLOTS, the packing's words; both encoders' graphs now read only "n" and the
 * lengths input, so the limit could grow). */
#ifndef FE_LM_ENCODER_H
#define FE_LM_ENCODER_H

#include <stdbool.h>

#include "ferrum/graph.h"
#include "lm/model/bert.h"
#include "lm/model/blocks.h"

/* Per-call words the graph has: n and one offset per slot after the first, 32 in all (the
 * graph's limit on per-call values). */
enum { FE_ENCODER_MAX_SLOTS = 32 };

typedef struct fe_encoder_options {
    int64_t max_tokens; /* tokens a sentence may have ([CLS] and [SEP] included); 0: 256, at
                           most the model's max_position_embeddings */
    int slots;          /* sentences per call, 1..FE_ENCODER_MAX_SLOTS; 0: 8 */
    bool dot_bf16;      /* the layer matrices rounded to bf16 once, each GEMM's activations
                           to bf16 (GEMM act_bf16: bf16 products summed in f32, twice the
                           multiply-adds a cycle where the CPU has AVX512_BF16); off: f32,
                           exact to the oracle's rounding */
    fe_packaging packaging;
    bool verbose;
    fe_body_form body;  /* plain steps, every fold taken (the default); lm/model/blocks.h */
} fe_encoder_options;

fe_encoder_options fe_encoder_options_default(void);

typedef struct fe_encoder fe_encoder;

/* Builds and compiles the graph. FE_E_INVALID (naming the option and its range) for
 * max_tokens past the model's positions or slots out of range; errors of compiling. */
fe_status fe_encoder_create(fe_device *dev, const fe_bert_weights *w, const fe_encoder_options *o,
                            fe_encoder **out, fe_error *err);
void fe_encoder_destroy(fe_encoder *e);
const char *fe_encoder_message(const fe_encoder *e);
int64_t fe_encoder_max_tokens(const fe_encoder *e);
int fe_encoder_slots(const fe_encoder *e);
fe_graph *fe_encoder_graph(fe_encoder *e);

/* Runs n_seqs (1..slots) sentences: ids[s] of lens[s] (1..max_tokens) tokens. *hidden is
 * (sum of lens, hidden): sentence s's rows follow sentence s-1's; it lives until the next call.
 * FE_E_BOUNDS naming the sentence for a length or id out of range. */
fe_status fe_encoder_forward(fe_encoder *e, const int32_t *const *ids, const int64_t *lens,
                             int n_seqs, const float **hidden);

/* The per-call word of where packed sentence s (1..FE_ENCODER_MAX_SLOTS-1) starts: "o<s>". */
const char *fe_encoder_start_word(int s);

/* Packs n_seqs (1..slots) sentences ids[s] of lens[s] (1..max_tokens) tokens, each id in
 * [0, vocab), one after another into ids_out (and each token's position in its sentence into
 * positions_out, unless NULL), and fills words[0..slots) with the call's per-call words: where
 * sentences 1..slots-1 start (empty slots start at the end), then "n", the rows in all.
 * FE_E_BOUNDS naming the sentence, in err, for a count, length or id out of range. */
fe_status fe_encoder_pack(const int32_t *const *ids, const int64_t *lens, int n_seqs, int slots,
                          int64_t max_tokens, int64_t vocab, int32_t *ids_out,
                          int32_t *positions_out, fe_word *words, fe_error *err);

typedef enum fe_pooling { FE_POOLING_MEAN, FE_POOLING_CLS, FE_POOLING_LAST } fe_pooling;

/* A sentence's vector from its hidden rows h (n, H): pooled, cut to its first dim values
 * (Matryoshka; 0 or H: all), then scaled to unit L2 norm when normalize. out has dim values. */
void fe_encoder_pool(const float *h, int64_t n, int64_t H, fe_pooling pooling, int64_t dim,
                     bool normalize, float *out);

#endif
