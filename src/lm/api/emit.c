/* lm/api/emit.c: the text a generate hands out, token by token: whole UTF-8 characters (the
 * streaming detokenizer; an id the tokenizer does not have has no text), and never a stop
 * string or its start. Text that could be the
 * start of a stop string (the longest end of the held text that begins one) is held back
 * until the next token shows it is not; a stop string found whole ends the text before it.
 *
 * Invariant: held[0..n_held) is text not yet handed out, and it is empty or a proper
 * prefix-candidate of some stop string (or, between push and the copy out, about to be
 * handed out). */
#include "lm/api/api.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

fe_status fe_lm_emitter_init(fe_lm_emitter *e, fe_lm_model *m, const fe_lm_stop *stop) {
    memset(e, 0, sizeof *e);
    e->stop = stop;
    return m->tok ? fe_lm_detokenizer_create(m, &e->d) : FE_OK;
}

void fe_lm_emitter_deinit(fe_lm_emitter *e) {
    fe_lm_detokenizer_destroy(e->d);
    fe_free(e->held);
    memset(e, 0, sizeof *e);
}

static fe_status append(fe_lm_emitter *e, const char *s, size_t n) {
    /* twice the text: the second half is where the text handed out is copied */
    if (2 * (e->n_held + n) + 2 > e->cap_held) {
        size_t cap = 2 * (e->n_held + n) + 64;
        char *b = fe_realloc(e->held, cap);
        if (!b) return FE_E_NOMEM;
        e->held = b;
        e->cap_held = cap;
    }
    memcpy(e->held + e->n_held, s, n);
    e->n_held += n;
    return FE_OK;
}

/* Bytes at the end of held that begin some stop string (the longest such end). */
static size_t possible_start(const fe_lm_emitter *e) {
    size_t keep = 0;
    for (int i = 0; i < e->stop->n_strings; i++) {
        const char *s = e->stop->strings[i];
        size_t len = strlen(s);
        if (!len) continue;
        for (size_t k = len - 1 < e->n_held ? len - 1 : e->n_held; k > keep; k--)
            if (memcmp(e->held + e->n_held - k, s, k) == 0) {
                keep = k;
                break;
            }
    }
    return keep;
}

/* Hands out held[0..n) (copied after the held text, so it survives the move), keeps the rest. */
static void hand_out(fe_lm_emitter *e, size_t n, size_t rest_from, const char **out, size_t *len) {
    char *o = e->held + e->cap_held / 2;
    memcpy(o, e->held, n);
    o[n] = 0;
    memmove(e->held, e->held + rest_from, e->n_held - rest_from);
    e->n_held -= rest_from;
    *out = o;
    *len = n;
}

fe_status fe_lm_emitter_push(fe_lm_emitter *e, int32_t token, const char **out, size_t *len,
                             bool *matched) {
    *out = "";
    *len = 0;
    *matched = false;
    if (!e->d || e->matched) return FE_OK;
    const char *t;
    size_t n;
    /* the model's vocabulary may be larger than the tokenizer's (padded): those ids have no text */
    if (!fe_lm_token_piece(e->d->m, token, &n)) return FE_OK;
    fe_status st = fe_lm_detokenizer_push(e->d, token, &t, &n);
    if (st == FE_OK) st = append(e, t, n);
    if (st != FE_OK || !e->n_held) return st;
    size_t first = e->n_held;
    for (int i = 0; i < e->stop->n_strings; i++) {
        const char *s = e->stop->strings[i];
        const char *at = *s ? memmem(e->held, e->n_held, s, strlen(s)) : NULL;
        if (at && (size_t)(at - e->held) < first) first = (size_t)(at - e->held);
    }
    if (first < e->n_held) {
        e->matched = *matched = true;
        hand_out(e, first, e->n_held, out, len);
        return FE_OK;
    }
    size_t ready = e->n_held - possible_start(e);
    hand_out(e, ready, ready, out, len);
    return FE_OK;
}

fe_status fe_lm_emitter_finish(fe_lm_emitter *e, const char **out, size_t *len) {
    *out = "";
    *len = 0;
    if (!e->d || e->matched) return FE_OK;
    const char *t;
    size_t n;
    fe_status st = fe_lm_detokenizer_flush(e->d, &t, &n);
    if (st == FE_OK) st = append(e, t, n);
    if (st == FE_OK && e->n_held) hand_out(e, e->n_held, e->n_held, out, len);
    return st;
}
