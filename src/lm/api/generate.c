/* lm/api/generate.c: fe_lm_session_generate: prefill (reusing the cache rows a previous call
 * left), then tokens drawn one by one until a stop: on the device inside the decode loop
 * when the sampling is the one compiled into the graph (greedy by default), else on the host
 * from the logits (min_p, penalties), each token fed back as a decode step with its token
 * given. Every token goes through one accept(): stop tokens, text out, stop strings, the
 * callback, max tokens, a full cache. */
#include "lm/api/api.h"

#include <string.h>

#include "core/error.h"

fe_lm_stop fe_lm_stop_default(void) { return (fe_lm_stop){.max_tokens = -1, .n_tokens = -1}; }

const char *fe_lm_stop_reason_name(fe_lm_stop_reason r) {
    static const char *names[] = {"length", "eos", "stop string", "callback", "cache full"};
    return (unsigned)r <= FE_LM_STOP_CACHE_FULL ? names[r] : "unknown";
}

typedef struct gen {
    fe_lm_session *s;
    fe_lm_stop stop;          /* stop tokens resolved */
    fe_lm_emitter em;
    fe_lm_token_fn cb;
    void *user;
    fe_lm_generate_result r;
    uint64_t t0, t_first;
    bool done;
    fe_status st;
} gen;

static bool is_stop_token(const gen *g, int32_t tok) {
    for (int i = 0; i < g->stop.n_tokens; i++)
        if (g->stop.tokens[i] == tok) return true;
    return false;
}

static int finish(gen *g, fe_lm_stop_reason why) {
    g->r.stop_reason = why;
    g->done = true;
    return 1;
}

/* A token drawn; 1 when generation stops here. */
static int accept(gen *g, int32_t tok) {
    fe_lm_session *s = g->s;
    if (is_stop_token(g, tok)) return finish(g, FE_LM_STOP_EOS);
    if (!g->r.generated_tokens) g->t_first = fe_time_ns();
    g->r.generated_tokens++;
    s->seq[s->n_seq++] = tok;
    const char *text;
    size_t len;
    bool matched;
    g->st = fe_lm_emitter_push(&g->em, tok, &text, &len, &matched);
    if (g->st != FE_OK) {
        fe_error_set(&s->err, g->st, "generate: token %d: %s", tok, s->m->err.message);
        return finish(g, FE_LM_STOP_CALLBACK);
    }
    int stop = g->cb ? g->cb(g->user, tok, text, len) : 0;
    if (matched) return finish(g, FE_LM_STOP_STRING);
    if (stop) return finish(g, FE_LM_STOP_CALLBACK);
    if (g->stop.max_tokens >= 0 && g->r.generated_tokens >= g->stop.max_tokens)
        return finish(g, FE_LM_STOP_LENGTH);
    /* the token is fed at the next position: there must be a row for it */
    if (fe_causal_position(s->c) >= fe_causal_max_seq_len(s->c)) return finish(g, FE_LM_STOP_CACHE_FULL);
    return 0;
}

static int on_device_token(void *user, int32_t tok, const float *logits) {
    gen *g = user;
    g->s->token_logits = logits;
    return accept(g, tok);
}

static fe_status check_args(fe_lm_session *s, const fe_lm_sampling *p, const fe_lm_stop *stop) {
    if (!(p->temperature >= 0) || p->top_k < 0 || !(p->top_p > 0 && p->top_p <= 1) ||
        !(p->min_p >= 0 && p->min_p <= 1) || !(p->repeat_penalty > 0) || p->repeat_last_n < -1)
        return fe_error_set(&s->err, FE_E_INVALID, "generate: sampling temperature %g, top_k %lld, "
                            "top_p %g, min_p %g, repeat_penalty %g, repeat_last_n %lld; give "
                            "temperature >= 0, top_k >= 0, top_p in (0, 1], min_p in [0, 1], "
                            "repeat_penalty > 0, repeat_last_n >= -1", p->temperature,
                            (long long)p->top_k, p->top_p, p->min_p, p->repeat_penalty,
                            (long long)p->repeat_last_n);
    if (stop->max_tokens < -1 || stop->n_tokens < -1 || stop->n_tokens > FE_LM_MAX_STOP_TOKENS ||
        stop->n_strings < 0 || stop->n_strings > FE_LM_MAX_STOP_STRINGS)
        return fe_error_set(&s->err, FE_E_INVALID, "generate: stop max_tokens %lld, %d tokens, %d "
                            "strings; give max_tokens >= -1, at most %d tokens (-1: the model's) "
                            "and %d strings", (long long)stop->max_tokens, stop->n_tokens,
                            stop->n_strings, FE_LM_MAX_STOP_TOKENS, FE_LM_MAX_STOP_STRINGS);
    for (int i = 0; i < stop->n_strings; i++)
        if (!stop->strings[i] || !*stop->strings[i])
            return fe_error_set(&s->err, FE_E_INVALID, "generate: stop string %d is %s; give text", i,
                                stop->strings[i] ? "empty" : "NULL");
    return FE_OK;
}

/* The device's sampler serves p when p is the one compiled into the graph. */
static bool on_device(const fe_lm_session *s, const fe_lm_sampling *p) {
    const fe_lm_sampling *c = &s->o.sampling;
    if (fe_lm_sampling_needs_host(p)) return false;
    if (p->temperature == 0 && c->temperature == 0) return true;
    return p->temperature == c->temperature && p->top_k == c->top_k && p->top_p == c->top_p &&
           p->seed == c->seed;
}

static void run(gen *g, const fe_lm_sampling *p, const int32_t *ids, int64_t n) {
    fe_lm_session *s = g->s;
    fe_causal *c = s->c;
    int32_t next;
    if ((g->st = fe_causal_prompt(c, ids, n, &s->logits, &next)) != FE_OK) {
        fe_error_set(&s->err, g->st, "prefill: %s", fe_causal_message(c));
        return;
    }
    g->r.prefill_seconds = (double)(fe_time_ns() - g->t0) / 1e9;
    g->r.prompt_reused = fe_causal_reused(c);
    memcpy(s->seq, ids, (size_t)n * sizeof *ids);
    s->n_seq = n;
    if (g->stop.max_tokens == 0) {
        finish(g, FE_LM_STOP_LENGTH);
        return;
    }
    if (!g->r.sampled_on_host) {
        s->token_logits = s->logits;
        if (accept(g, next)) return;
        int64_t room = fe_causal_max_seq_len(c) - fe_causal_position(c);
        int64_t want = g->stop.max_tokens < 0 ? room : g->stop.max_tokens - g->r.generated_tokens;
        int steps = (int)(want < room ? want : room);
        if ((g->st = fe_causal_decode(c, steps, on_device_token, g)) != FE_OK)
            fe_error_set(&s->err, g->st, "decode: %s", fe_causal_message(c));
        return;
    }
    fe_lm_host_sampler h;
    fe_lm_host_sampler_init(&h, p);
    for (;;) {
        int32_t tok = fe_lm_host_sample(&h, s->logits, s->m->cfg.vocab, s->seq, s->n_seq, s->cand,
                                        s->counts);
        s->token_logits = s->logits;
        if (accept(g, tok)) return;
        if ((g->st = fe_causal_step(c, tok, &s->logits, NULL)) != FE_OK) {
            fe_error_set(&s->err, g->st, "decode: %s", fe_causal_message(c));
            return;
        }
    }
}

fe_status fe_lm_session_generate(fe_lm_session *s, const int32_t *ids, int64_t n,
                                 const fe_lm_sampling *sampling, const fe_lm_stop *stop,
                                 fe_lm_token_fn callback, void *user,
                                 fe_lm_generate_result *result) {
    if (!s) return FE_E_INVALID;
    fe_lm_sampling p = sampling ? *sampling : fe_lm_sampling_default();
    gen g = {.s = s, .stop = stop ? *stop : fe_lm_stop_default(), .cb = callback, .user = user,
             .t0 = fe_time_ns()};
    if (result) memset(result, 0, sizeof *result);
    fe_status st = fe_lm_session_check_prompt(s, ids, n);
    if (st == FE_OK) st = check_args(s, &p, &g.stop);
    if (st != FE_OK) return st;
    if (g.stop.n_tokens < 0) g.stop.n_tokens = fe_lm_model_stop_tokens(s->m, g.stop.tokens, FE_LM_MAX_STOP_TOKENS);
    if ((st = fe_lm_emitter_init(&g.em, s->m, &g.stop)) != FE_OK)
        return fe_error_set(&s->err, st, "generate: %s", s->m->err.message);
    g.r.prompt_tokens = n;
    g.r.sampled_on_host = !on_device(s, &p);
    run(&g, &p, ids, n);
    s->token_logits = NULL;
    if (g.st == FE_OK && !g.done) finish(&g, FE_LM_STOP_CACHE_FULL); /* the loop ran out of rows */
    const char *text;
    size_t len;
    if (g.st == FE_OK && (g.st = fe_lm_emitter_finish(&g.em, &text, &len)) == FE_OK && len && callback)
        callback(user, -1, text, len);
    fe_lm_emitter_deinit(&g.em);
    uint64_t end = fe_time_ns();
    if (g.r.generated_tokens) {
        g.r.first_token_seconds = (double)(g.t_first - g.t0) / 1e9;
        g.r.decode_seconds = (double)(end - g.t_first) / 1e9;
    }
    if (result) *result = g.r;
    return g.st;
}
