/* lm/api/batch.c: fe_lm_batch (ferrum/lm.h): generations for many slots over one batched
 * causal LM (lm/model/batch.c). Each slot runs generate.c's rules: its prompt a chunk per
 * step, then every token drawn on the host and accepted the same way (stop tokens, text
 * through the emitter with stop strings held back, the callback, max tokens, a full cache);
 * the tokens of all slots generating are fed back in one decode call per step. */
#include "lm/api/api.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/model/batch.h"

typedef enum { SLOT_IDLE = 0, SLOT_PROMPT, SLOT_DECODE, SLOT_DONE } slot_state;

typedef struct batch_slot {
    slot_state state;
    int32_t *ids;            /* the prompt (owned), then */
    int64_t n_ids;
    int32_t *seq;            /* (max_seq_len + 1) prompt, then the tokens drawn (penalties) */
    int64_t n_seq;
    int32_t pending;         /* the token to feed at the next decode call */
    fe_lm_sampling sampling;
    fe_lm_host_sampler sampler;
    fe_lm_stop stop;
    char *strings[FE_LM_MAX_STOP_STRINGS]; /* the stop strings, copied */
    fe_lm_emitter em;
    bool em_live;
    fe_lm_token_fn cb;
    void *user;
    fe_lm_generate_result r;
    uint64_t t0, t_first;
    fe_lm_candidate *cand;   /* (vocab) */
    int32_t *counts;         /* (vocab) */
    const float *token_logits; /* during its callback: the logits its token was drawn from */
} batch_slot;

struct fe_lm_batch {
    fe_lm_model *m;
    fe_batch *b;
    int n_slots;
    int64_t max_seq_len;
    batch_slot *slots;
    fe_error err;
};

fe_lm_batch_options fe_lm_batch_options_default(void) {
    return (fe_lm_batch_options){.slots = 4, .cache_type = FE_LM_CACHE_F16};
}
const char *fe_lm_batch_message(const fe_lm_batch *b) { return b ? b->err.message : "no batch (NULL)"; }
int fe_lm_batch_slots(const fe_lm_batch *b) { return b ? b->n_slots : 0; }

int64_t fe_lm_batch_reusable(const fe_lm_batch *b, int slot, const int32_t *ids, int64_t n) {
    return b && ids ? fe_batch_reusable(b->b, slot, ids, n) : 0;
}

static void slot_clear(batch_slot *s) {
    free(s->ids);
    s->ids = NULL;
    for (int i = 0; i < FE_LM_MAX_STOP_STRINGS; i++) {
        free(s->strings[i]);
        s->strings[i] = NULL;
    }
    if (s->em_live) fe_lm_emitter_deinit(&s->em);
    s->em_live = false;
}

void fe_lm_batch_destroy(fe_lm_batch *b) {
    if (!b) return;
    for (int i = 0; b->slots && i < b->n_slots; i++) {
        slot_clear(&b->slots[i]);
        fe_free(b->slots[i].seq);
        fe_free(b->slots[i].cand);
        fe_free(b->slots[i].counts);
    }
    fe_free(b->slots);
    fe_batch_destroy(b->b);
    fe_free(b);
}

fe_status fe_lm_batch_create(fe_lm_model *m, const fe_lm_batch_options *opts, fe_lm_batch **out,
                             fe_error *err) {
    if (out) *out = NULL;
    if (!m || !out) return fe_error_set(err, FE_E_INVALID, "fe_lm_batch_create: give a model and out");
    fe_lm_batch_options o = opts ? *opts : fe_lm_batch_options_default();
    if (o.slots == 0) o.slots = 4;
    if (o.cache_type != FE_LM_CACHE_F32 && o.cache_type != FE_LM_CACHE_F16)
        return fe_error_set(err, FE_E_INVALID, "batch: cache_type %d; give FE_LM_CACHE_F32 or "
                            "FE_LM_CACHE_F16", (int)o.cache_type);
    if (o.slots < 1 || o.slots > FE_LM_BATCH_MAX_SLOTS || o.max_seq_len < 0 || o.chunk < 0)
        return fe_error_set(err, FE_E_INVALID, "batch: %d slots, max_seq_len %lld, chunk %lld; give "
                            "1..%d slots and max_seq_len, chunk >= 0 (0: the default)", o.slots,
                            (long long)o.max_seq_len, (long long)o.chunk, FE_LM_BATCH_MAX_SLOTS);
    int64_t ctx = m->cfg.max_context > 0 ? m->cfg.max_context : 2048;
    if (o.max_seq_len == 0) o.max_seq_len = ctx < 2048 ? ctx : 2048;
    fe_lm_batch *b = fe_calloc(1, sizeof *b);
    if (!b) return fe_error_set(err, FE_E_NOMEM, "batch: out of memory");
    b->m = m;
    b->n_slots = o.slots;
    b->max_seq_len = o.max_seq_len;
    b->slots = fe_calloc((size_t)o.slots, sizeof *b->slots);
    bool ok = b->slots != NULL;
    for (int i = 0; ok && i < o.slots; i++) {
        batch_slot *s = &b->slots[i];
        s->seq = fe_malloc((size_t)(o.max_seq_len + 1) * sizeof *s->seq);
        s->cand = fe_malloc((size_t)m->cfg.vocab * sizeof *s->cand);
        s->counts = fe_calloc((size_t)m->cfg.vocab, sizeof *s->counts);
        ok = s->seq && s->cand && s->counts;
    }
    if (!ok) {
        fe_lm_batch_destroy(b);
        return fe_error_set(err, FE_E_NOMEM, "batch: out of memory");
    }
    fe_batch_options bo = {.slots = o.slots, .max_seq_len = o.max_seq_len, .chunk = o.chunk,
                           .prefill_dot = (int)o.prefill_dot, .decode_dot = (int)o.decode_dot,
                           .layouts = m->layouts,
                           .kv_dtype = o.cache_type == FE_LM_CACHE_F16 ? FE_DTYPE_F16 : FE_DTYPE_F32};
    fe_status st = fe_batch_create(m->dev, &m->w, &bo, &b->b, err);
    if (st != FE_OK) {
        fe_lm_batch_destroy(b);
        return st;
    }
    *out = b;
    return FE_OK;
}

fe_status fe_lm_batch_start(fe_lm_batch *b, int slot, const int32_t *ids, int64_t n,
                            const fe_lm_sampling *sampling, const fe_lm_stop *stop,
                            fe_lm_token_fn callback, void *user) {
    if (!b) return FE_E_INVALID;
    fe_error_clear(&b->err);
    if (slot < 0 || slot >= b->n_slots)
        return fe_error_set(&b->err, FE_E_BOUNDS, "batch: slot %d; give 0..%d", slot, b->n_slots - 1);
    batch_slot *s = &b->slots[slot];
    if (s->state != SLOT_IDLE)
        return fe_error_set(&b->err, FE_E_STATE, "batch: slot %d is busy; start it once it has "
                            "finished (fe_lm_batch_finished)", slot);
    if (!ids || n < 1 || n >= b->max_seq_len)
        return fe_error_set(&b->err, FE_E_BOUNDS, "batch: a prompt of %lld tokens; give 1..%lld "
                            "(max_seq_len - 1: a row to generate in)", (long long)n,
                            (long long)b->max_seq_len - 1);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= b->m->cfg.vocab)
            return fe_error_set(&b->err, FE_E_BOUNDS, "batch: token %d at %lld is outside the "
                                "vocabulary of %lld", ids[i], (long long)i, (long long)b->m->cfg.vocab);
    fe_lm_sampling p = sampling ? *sampling : fe_lm_sampling_default();
    fe_lm_stop st = stop ? *stop : fe_lm_stop_default();
    if (!(p.temperature >= 0) || p.top_k < 0 || !(p.top_p > 0 && p.top_p <= 1) ||
        !(p.min_p >= 0 && p.min_p <= 1) || !(p.repeat_penalty > 0) || p.repeat_last_n < -1)
        return fe_error_set(&b->err, FE_E_INVALID, "batch: sampling out of range; give "
                            "temperature >= 0, top_k >= 0, top_p in (0, 1], min_p in [0, 1], "
                            "repeat_penalty > 0, repeat_last_n >= -1");
    if (st.max_tokens < -1 || st.n_tokens < -1 || st.n_tokens > FE_LM_MAX_STOP_TOKENS ||
        st.n_strings < 0 || st.n_strings > FE_LM_MAX_STOP_STRINGS)
        return fe_error_set(&b->err, FE_E_INVALID, "batch: stop out of range; give max_tokens >= "
                            "-1, at most %d tokens and %d strings", FE_LM_MAX_STOP_TOKENS,
                            FE_LM_MAX_STOP_STRINGS);
    for (int i = 0; i < st.n_strings; i++)
        if (!st.strings[i] || !*st.strings[i])
            return fe_error_set(&b->err, FE_E_INVALID, "batch: stop string %d is empty; give text", i);
    memset(&s->r, 0, sizeof s->r);
    s->ids = malloc((size_t)n * sizeof *ids);
    bool ok = s->ids != NULL;
    for (int i = 0; i < st.n_strings; i++) {
        s->strings[i] = strdup(st.strings[i]);
        ok = ok && s->strings[i];
        st.strings[i] = s->strings[i];
    }
    if (st.n_tokens < 0) st.n_tokens = fe_lm_model_stop_tokens(b->m, st.tokens, FE_LM_MAX_STOP_TOKENS);
    s->stop = st;
    fe_status rc = ok ? fe_lm_emitter_init(&s->em, b->m, &s->stop) : FE_E_NOMEM;
    if (rc != FE_OK) {
        slot_clear(s);
        return fe_error_set(&b->err, rc, "batch: %s", rc == FE_E_NOMEM ? "out of memory" : b->m->err.message);
    }
    s->em_live = true;
    memcpy(s->ids, ids, (size_t)n * sizeof *ids);
    s->n_ids = n;
    s->sampling = p;
    fe_lm_host_sampler_init(&s->sampler, &p);
    s->cb = callback;
    s->user = user;
    s->r.prompt_tokens = n;
    s->r.prompt_reused = fe_batch_reusable(b->b, slot, ids, n);
    s->r.sampled_on_host = true;
    s->t0 = fe_time_ns();
    s->state = SLOT_PROMPT;
    return FE_OK;
}

static void finish(batch_slot *s, fe_lm_stop_reason why) {
    s->r.stop_reason = why;
    s->state = SLOT_DONE;
}

/* A token drawn for slot s (generate.c's accept): false when its generation ends here. */
static bool accept(fe_lm_batch *b, int slot, int32_t tok) {
    batch_slot *s = &b->slots[slot];
    for (int i = 0; i < s->stop.n_tokens; i++)
        if (s->stop.tokens[i] == tok) return finish(s, FE_LM_STOP_EOS), false;
    if (!s->r.generated_tokens) s->t_first = fe_time_ns();
    s->r.generated_tokens++;
    s->seq[s->n_seq++] = tok;
    const char *text;
    size_t len;
    bool matched;
    if (fe_lm_emitter_push(&s->em, tok, &text, &len, &matched) != FE_OK) {
        fe_error_set(&b->err, FE_E_STATE, "batch: slot %d, token %d: %s", slot, tok, b->m->err.message);
        return finish(s, FE_LM_STOP_CALLBACK), false;
    }
    int stop = s->cb ? s->cb(s->user, tok, text, len) : 0;
    if (matched) return finish(s, FE_LM_STOP_STRING), false;
    if (stop) return finish(s, FE_LM_STOP_CALLBACK), false;
    if (s->stop.max_tokens >= 0 && s->r.generated_tokens >= s->stop.max_tokens)
        return finish(s, FE_LM_STOP_LENGTH), false;
    if (fe_batch_position(b->b, slot) >= b->max_seq_len) return finish(s, FE_LM_STOP_CACHE_FULL), false;
    s->pending = tok;
    return true;
}

static void draw(fe_lm_batch *b, int slot, const float *logits) {
    batch_slot *s = &b->slots[slot];
    int32_t tok = fe_lm_host_sample(&s->sampler, logits, b->m->cfg.vocab, s->seq, s->n_seq, s->cand,
                                    s->counts);
    s->token_logits = logits;
    if (accept(b, slot, tok)) s->state = SLOT_DECODE;
    s->token_logits = NULL;
}

/* The end of a slot's generation: the held text, the times. */
static void close_slot(batch_slot *s) {
    const char *text;
    size_t len;
    if (fe_lm_emitter_finish(&s->em, &text, &len) == FE_OK && len && s->cb) s->cb(s->user, -1, text, len);
    uint64_t end = fe_time_ns();
    if (s->r.generated_tokens) {
        s->r.first_token_seconds = (double)(s->t_first - s->t0) / 1e9;
        s->r.decode_seconds = (double)(end - s->t_first) / 1e9;
    }
    slot_clear(s);
}

fe_status fe_lm_batch_step(fe_lm_batch *b, int *running) {
    if (!b) return FE_E_INVALID;
    fe_error_clear(&b->err);
    fe_status st = FE_OK;
    /* a chunk of every prompt still running */
    for (int i = 0; i < b->n_slots && st == FE_OK; i++) {
        batch_slot *s = &b->slots[i];
        if (s->state != SLOT_PROMPT) continue;
        bool done = false;
        const float *logits = NULL;
        st = fe_batch_prefill(b->b, i, s->ids, s->n_ids, 1, &done, &logits);
        if (st != FE_OK) {
            fe_error_set(&b->err, st, "batch: slot %d: prefill: %s", i, fe_batch_message(b->b));
            break;
        }
        if (!done) continue;
        s->r.prefill_seconds = (double)(fe_time_ns() - s->t0) / 1e9;
        memcpy(s->seq, s->ids, (size_t)s->n_ids * sizeof *s->ids);
        s->n_seq = s->n_ids;
        if (s->stop.max_tokens == 0) finish(s, FE_LM_STOP_LENGTH);
        else draw(b, i, logits);
    }
    /* one decode call for every slot generating */
    int slots[FE_LM_BATCH_MAX_SLOTS], rows = 0;
    int32_t toks[FE_LM_BATCH_MAX_SLOTS];
    for (int i = 0; i < b->n_slots && st == FE_OK; i++)
        if (b->slots[i].state == SLOT_DECODE) slots[rows] = i, toks[rows++] = b->slots[i].pending;
    if (rows && st == FE_OK) {
        const float *logits;
        st = fe_batch_decode(b->b, slots, toks, rows, &logits);
        if (st != FE_OK) fe_error_set(&b->err, st, "batch: decode: %s", fe_batch_message(b->b));
        for (int r = 0; r < rows && st == FE_OK; r++) draw(b, slots[r], logits + (int64_t)r * b->m->cfg.vocab);
    }
    int n = 0;
    for (int i = 0; i < b->n_slots; i++) {
        batch_slot *s = &b->slots[i];
        if (st != FE_OK && (s->state == SLOT_PROMPT || s->state == SLOT_DECODE)) finish(s, FE_LM_STOP_CALLBACK);
        if (s->state == SLOT_DONE && s->em_live) close_slot(s);
        n += s->state == SLOT_PROMPT || s->state == SLOT_DECODE;
    }
    if (running) *running = n;
    return st;
}

bool fe_lm_batch_finished(fe_lm_batch *b, int slot, fe_lm_generate_result *result) {
    if (!b || slot < 0 || slot >= b->n_slots || b->slots[slot].state != SLOT_DONE) return false;
    if (result) *result = b->slots[slot].r;
    b->slots[slot].state = SLOT_IDLE;
    return true;
}

const float *fe_lm_batch_token_logits(const fe_lm_batch *b, int slot) {
    return b && slot >= 0 && slot < b->n_slots ? b->slots[slot].token_logits : NULL;
}
