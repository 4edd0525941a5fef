/* apps/serve/logprobs.h: a generated token's log-probabilities as the server reports them
 * (reply.h's reply_token_logprobs): fe_lm_logprobs over the logits the token was drawn from,
 * with each token's piece of the vocabulary for the answer's "token" and "bytes". */
#ifndef FE_SERVE_LOGPROBS_H
#define FE_SERVE_LOGPROBS_H

#include <stdbool.h>
#include <stdint.h>

#include "ferrum/lm.h"
#include "reply.h"

/* Appends token's log-probability under logits (m's vocabulary; NULL: none known, appends
 * nothing and returns false) and the n_top most likely tokens' to l. false when out of
 * memory or the logits are refused (not finite). m must outlive l's pieces. */
bool logprobs_record(const fe_lm_model *m, const float *logits, int32_t token, int n_top,
                     reply_logprobs *l);

#endif
