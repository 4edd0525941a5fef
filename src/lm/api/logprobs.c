/* lm/api/logprobs.c: fe_lm_logprobs (see ferrum/lm.h): a token's log-probability under the
 * log-softmax of raw logits, and the most likely tokens', as OpenAI's and llama-server's
 * logprobs report them. The sum runs in double from the largest logit down (no overflow, no
 * underflow of the chosen token's term); the top tokens are kept in a small sorted array, as
 * n is at most FE_LM_MAX_TOP_LOGPROBS against a vocabulary of 10^5. */
#include <math.h>

#include "ferrum/lm.h"

/* Whether token a (logit la) ranks before b (lb): the larger logit, then the smaller id. */
static bool ranks_before(float la, int32_t a, float lb, int32_t b) { return la > lb || (la == lb && a < b); }

fe_status fe_lm_logprobs(const float *logits, int64_t vocab, int32_t token, int n_top,
                         float *logprob, int32_t *top_ids, float *top_logprobs) {
    if (!logits || vocab < 1 || token < 0 || token >= vocab || n_top < 0 ||
        n_top > FE_LM_MAX_TOP_LOGPROBS || !logprob || (n_top && (!top_ids || !top_logprobs)))
        return FE_E_INVALID;
    float max = logits[0];
    for (int64_t i = 1; i < vocab; i++)
        if (logits[i] > max) max = logits[i];
    if (!isfinite(max)) return FE_E_INVALID;
    double sum = 0;
    for (int64_t i = 0; i < vocab; i++) sum += exp((double)logits[i] - (double)max);
    if (!isfinite(sum)) return FE_E_INVALID; /* a NaN among them */
    const double lse = (double)max + log(sum);
    *logprob = (float)((double)logits[token] - lse);
    int have = 0;
    for (int64_t i = 0; i < vocab && n_top; i++) {
        float l = logits[i];
        if (have == n_top && !ranks_before(l, (int32_t)i, logits[top_ids[have - 1]], top_ids[have - 1])) continue;
        int at = have < n_top ? have++ : n_top - 1;
        while (at > 0 && ranks_before(l, (int32_t)i, logits[top_ids[at - 1]], top_ids[at - 1])) {
            top_ids[at] = top_ids[at - 1];
            at--;
        }
        top_ids[at] = (int32_t)i;
    }
    for (int k = 0; k < n_top; k++) {
        top_logprobs[k] = k < have ? (float)((double)logits[top_ids[k]] - lse) : -INFINITY;
        if (k >= have) top_ids[k] = -1;
    }
    return FE_OK;
}
