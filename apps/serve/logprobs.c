/* apps/serve/logprobs.c: a generated token's log-probabilities (logprobs.h). The values are
 * the log-softmax of the raw logits the sampler drew from (before penalties and temperature),
 * as OpenAI and llama-server report them; the pieces point into the model's vocabulary. */
#include "logprobs.h"

_Static_assert((int)SERVE_MAX_TOP_LOGPROBS <= (int)FE_LM_MAX_TOP_LOGPROBS, "the library lists as many");

bool logprobs_record(const fe_lm_model *m, const float *logits, int32_t token, int n_top,
                     reply_logprobs *l) {
    if (!logits) return false;
    fe_lm_model_info info;
    fe_lm_model_get_info(m, &info);
    int32_t ids[SERVE_MAX_TOP_LOGPROBS];
    float values[SERVE_MAX_TOP_LOGPROBS];
    reply_token_logprobs t = {.n_top = n_top};
    if (fe_lm_logprobs(logits, info.vocab, token, n_top, &t.chosen.logprob, ids, values) != FE_OK) return false;
    t.chosen.piece = fe_lm_token_piece(m, token, &t.chosen.len);
    for (int k = 0; k < n_top; k++) {
        t.top[k].logprob = values[k];
        t.top[k].piece = ids[k] >= 0 ? fe_lm_token_piece(m, ids[k], &t.top[k].len) : NULL;
        if (!t.top[k].piece) t.top[k].len = 0;
    }
    return reply_logprobs_push(l, &t);
}
