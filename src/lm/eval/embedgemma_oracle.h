/* lm/eval/embedgemma_oracle.h: EmbeddingGemma's forward pass written plainly, for checking the
 * graph (gemma3_encoder.h): one sentence's hidden states after the final norm. */
#ifndef FE_LM_EMBEDGEMMA_ORACLE_H
#define FE_LM_EMBEDGEMMA_ORACLE_H

#include "lm/model/embedgemma.h"

/* hidden: (n, hidden). FE_E_NOMEM; FE_E_BOUNDS for an id outside the vocabulary. */
fe_status fe_oracle_embedgemma_hidden(const fe_embedgemma *m, const int32_t *tokens, int n,
                                      float *hidden, fe_error *err);

#endif
