/* lm/api/api.h: what the files behind ferrum/lm.h share: the model and session objects, the
 * chat template's resolution (chat.c, called at open), the host-side sampler (sampling.c)
 * and the text that generate hands out (emit.c: whole characters, stop strings held back). */
#ifndef FE_LM_API_H
#define FE_LM_API_H

#include "ferrum/lm.h"
#include "lm/format/gguf.h"
#include "lm/format/safetensors.h"
#include "lm/model/causal.h"
#include "lm/model/config.h"
#include "lm/model/weights.h"
#include "lm/tokenizer/chat_template.h"
#include "lm/tokenizer/tokenizer.h"

struct fe_lm_model {
    char *path;
    fe_lm_format format;
    fe_device *dev;
    bool own_dev;
    fe_gguf *gguf;          /* exactly one of gguf, st for a checkpoint; none when random */
    fe_safetensors *st;
    fe_lm_config cfg;
    fe_llama_weights w;
    fe_layout_store *layouts; /* the weights' layouts its sessions' plans read, made once */
    fe_lm_weights_memory weights; /* where prefault reads the weights in to */
    char weights_note[640];   /* fe_lm_model_info.weights_note */
    fe_tokenizer *tok;      /* NULL: none */
    char *tok_source;
    fe_chat_template chat;  /* FE_CHAT_UNKNOWN when chat_format is UNKNOWN or NONE */
    fe_lm_chat_format chat_format;
    char *chat_source;      /* NULL: chosen by the tokenizer's special tokens, or none */
    char chat_note[1400];
    fe_error err;
};

struct fe_lm_detokenizer {
    fe_token_stream ts;
    char *buf;
    size_t cap;
    fe_lm_model *m;
};

struct fe_lm_session {
    fe_lm_model *m;
    fe_lm_session_options o;
    fe_causal *c;
    const float *logits; /* the causal model's last logits, NULL before any */
    const float *token_logits; /* during a generate's callback: the logits its token was drawn
                                  from (fe_lm_session_token_logits); NULL otherwise */
    struct fe_lm_candidate *cand; /* (vocab) the host sampler's */
    int32_t *counts;              /* (vocab) the host sampler's */
    int32_t *seq;        /* (max_seq_len + 1) the sequence of the last generate: prompt, then
                            the tokens drawn (the penalties look back over it) */
    int64_t n_seq;
    fe_error err;
};

/* session.c: FE_OK when ids[0..n) can be a prompt (not NULL, 1..max_seq_len ids, each inside
 * the vocabulary); otherwise the session's message names the rule and the fix. */
fe_status fe_lm_session_check_prompt(fe_lm_session *s, const int32_t *ids, int64_t n);

/* chat.c: chooses the model's chat template (tokenizer_config.json beside the tokenizer
 * given or the safetensors checkpoint, else the GGUF's metadata; without one, the format
 * whose special tokens the tokenizer has) and says why in m->chat_note. Never fails: a
 * template that cannot be read is noted and ignored. */
void fe_lm_chat_resolve(fe_lm_model *m, const char *tokenizer_path);

/* sampling.c: whether s needs the host (min_p or a penalty on) */
bool fe_lm_sampling_needs_host(const fe_lm_sampling *s);
/* The host sampler's state across one generate: its random stream. */
typedef struct fe_lm_host_sampler {
    fe_lm_sampling p;
    uint64_t rng;
} fe_lm_host_sampler;
void fe_lm_host_sampler_init(fe_lm_host_sampler *h, const fe_lm_sampling *p);
typedef struct fe_lm_candidate {
    float logit;
    int32_t id;
} fe_lm_candidate;
/* The next token from logits (vocab floats), the penalties over history[0..n). cand and
 * counts are vocab long (scratch). */
int32_t fe_lm_host_sample(fe_lm_host_sampler *h, const float *logits, int64_t vocab,
                          const int32_t *history, int64_t n, fe_lm_candidate *cand,
                          int32_t *counts);

/* emit.c: the text generate hands to the callback. Whole UTF-8 characters only (the
 * detokenizer), and text that could begin a stop string held back until it cannot. */
typedef struct fe_lm_emitter {
    fe_lm_detokenizer *d;        /* NULL: no tokenizer (no text) */
    const fe_lm_stop *stop;
    char *held;                  /* text not yet handed out */
    size_t n_held, cap_held;
    bool matched;                /* a stop string was found: nothing more is handed out */
} fe_lm_emitter;
fe_status fe_lm_emitter_init(fe_lm_emitter *e, fe_lm_model *m, const fe_lm_stop *stop);
void fe_lm_emitter_deinit(fe_lm_emitter *e);
/* Appends token's text; *out (*len bytes) the text that may go out now. *matched when a stop string
 * completed (the text before it is in *out). */
fe_status fe_lm_emitter_push(fe_lm_emitter *e, int32_t token, const char **out, size_t *len,
                             bool *matched);
/* The end: everything still held (without a stop string's start: it never completed). */
fe_status fe_lm_emitter_finish(fe_lm_emitter *e, const char **out, size_t *len);

#endif
