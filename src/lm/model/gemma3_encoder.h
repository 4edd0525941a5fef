/* lm/model/gemma3_encoder.h: EmbeddingGemma's encoder (embedgemma.h) as one graph, compiled once
 * for `slots` sentences of at most max_tokens tokens and called with the sentences' lengths,
 * packed row after row as the BERT encoder packs them (encoder.h): the GEMMs, norms and the
 * GeGLU run over the n = sum of lengths rows only; each sentence's RoPE starts at position 0
 * and its attention covers its own rows (global layers all of them, local layers those with
 * |i - j| < window), bidirectionally.
 *
 * After the graph, on the host: mean pooling over each sentence's rows, the Dense head
 * (2_Dense then 3_Dense, no bias, Identity), Matryoshka truncation, L2.
 *
 * Lifetimes: the model is borrowed and must outlive the encoder; hidden states handed out
 * live until the next call. One call at a time. */
#ifndef FE_LM_GEMMA3_ENCODER_H
#define FE_LM_GEMMA3_ENCODER_H

#include "lm/model/embedgemma.h"
#include "lm/model/encoder.h"

typedef struct fe_gemma3_encoder fe_gemma3_encoder;

/* o's max_tokens (0: min(512, max_position_embeddings)), slots (0: 8), packaging and verbose
 * are read; dot_bf16 is FE_E_UNSUPPORTED here (f32 only). FE_E_INVALID naming the option for
 * values out of range. */
fe_status fe_gemma3_encoder_create(fe_device *dev, const fe_embedgemma *m,
                                   const fe_encoder_options *o, fe_gemma3_encoder **out,
                                   fe_error *err);
void fe_gemma3_encoder_destroy(fe_gemma3_encoder *e);
const char *fe_gemma3_encoder_message(const fe_gemma3_encoder *e);
int64_t fe_gemma3_encoder_max_tokens(const fe_gemma3_encoder *e);
int fe_gemma3_encoder_slots(const fe_gemma3_encoder *e);
/* The embedding's width: the last Dense layer's out features, else hidden. */
int64_t fe_gemma3_encoder_dim(const fe_gemma3_encoder *e);
/* The compiled graph; borrowed, lives as long as e. */
fe_graph *fe_gemma3_encoder_graph(fe_gemma3_encoder *e);

/* As fe_encoder_forward: *hidden is (sum of lens, hidden), the final norm applied. */
fe_status fe_gemma3_encoder_forward(fe_gemma3_encoder *e, const int32_t *const *ids,
                                    const int64_t *lens, int n_seqs, const float **hidden);

/* A sentence's embedding from its hidden rows h (n, hidden): mean pooled, through the Dense
 * head, cut to dim values (0: all), scaled to unit L2 norm when normalize. out has dim values
 * (or fe_gemma3_encoder_dim). FE_E_NOMEM. */
fe_status fe_gemma3_encoder_embed(const fe_embedgemma *m, const float *h, int64_t n, int64_t dim,
                                  bool normalize, float *out);

#endif
