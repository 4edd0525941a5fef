/* lm/eval/bert_oracle.h: an independent float32 forward pass of a BERT-family encoder, written
 * plainly (loops over rows, heads and columns, double accumulators, no graph, no operator), to
 * check the encoder graph against. One sentence at a time, type ids all 0. */
#ifndef FE_LM_BERT_ORACLE_H
#define FE_LM_BERT_ORACLE_H

#include "lm/model/bert.h"

/* The last hidden states out (n, hidden) of the n token ids. FE_E_BOUNDS for n outside
 * 1..max_positions or an id outside the vocabulary; FE_E_NOMEM. */
fe_status fe_bert_oracle_forward(const fe_bert_weights *w, const int32_t *ids, int64_t n,
                                 float *out, fe_error *err);

#endif
