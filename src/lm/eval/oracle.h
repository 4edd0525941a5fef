/* lm/eval/oracle.h: a plain float32 forward pass of the Llama family (oracle.c) and of Gemma 3
 * (oracle_gemma3.c), written independently of graphs and operators (double accumulation, libm, weights decoded row by row) — the oracle
 * the causal LM is checked against. Readable in one sitting; never fast. */
#ifndef FE_LM_ORACLE_H
#define FE_LM_ORACLE_H

#include "lm/model/weights.h"

/* Teacher-forced logits for tokens[0..n): logits[i * vocab + v] is the model's score for
 * token v following tokens[0..i]. logits is caller-owned (n * vocab floats). FE_E_STATE for
 * unread weights (weights.h). */
fe_status fe_oracle_logits(const fe_llama_weights *w, const int32_t *tokens, int n,
                           float *logits, fe_error *err);
/* Gemma 3's pass; fe_oracle_logits calls it for a Gemma 3 config (after its checks). */
fe_status fe_oracle_gemma3_logits(const fe_llama_weights *w, const int32_t *tokens, int n,
                                  float *logits, fe_error *err);

#endif
