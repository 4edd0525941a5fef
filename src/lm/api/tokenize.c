/* lm/api/tokenize.c: text to ids and back through the model's tokenizer, and the streaming
 * detokenizer (whole UTF-8 characters only: fe_token_stream holds a character's first bytes
 * until the token that completes it). */
#include "lm/api/api.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

static fe_status need_tokenizer(fe_lm_model *m, const char *what) {
    return m->tok ? FE_OK
                  : fe_error_set(&m->err, FE_E_STATE, "%s: %s has no tokenizer; give one "
                                 "(fe_lm_open_options.tokenizer)", what, m->path);
}

fe_status fe_lm_tokenize(fe_lm_model *m, const char *text, size_t len, bool add_special,
                         bool parse_special, int32_t **ids, size_t *n) {
    if (!m) return FE_E_INVALID;
    fe_error_clear(&m->err);
    if (!ids || !n || (!text && len))
        return fe_error_set(&m->err, FE_E_INVALID, "tokenize: give text, ids and n");
    *ids = NULL;
    *n = 0;
    fe_status st = need_tokenizer(m, "tokenize");
    if (st != FE_OK) return st;
    bool bos = add_special && fe_tokenizer_add_bos(m->tok) && fe_tokenizer_bos(m->tok) >= 0;
    return fe_tokenizer_encode_alloc(m->tok, text ? text : "", len, bos, parse_special, ids, n, &m->err);
}

fe_status fe_lm_detokenize(fe_lm_model *m, const int32_t *ids, size_t n, char **text, size_t *len) {
    if (!m) return FE_E_INVALID;
    fe_error_clear(&m->err);
    if (!text || !len || (!ids && n))
        return fe_error_set(&m->err, FE_E_INVALID, "detokenize: give ids, text and len");
    *text = NULL;
    *len = 0;
    fe_status st = need_tokenizer(m, "detokenize");
    if (st != FE_OK) return st;
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        if (!fe_tokenizer_piece(m->tok, ids[i], &k))
            return fe_error_set(&m->err, FE_E_BOUNDS, "detokenize: id %d at %zu is outside the "
                                "vocabulary of %d", ids[i], i, fe_tokenizer_n_vocab(m->tok));
        need += k;
    }
    char *s = fe_malloc(need + 1);
    if (!s) return fe_error_set(&m->err, FE_E_NOMEM, "detokenize: out of memory");
    st = fe_tokenizer_decode(m->tok, ids, n, s, need + 1, len, &m->err);
    if (st != FE_OK) {
        fe_free(s);
        return st;
    }
    *text = s;
    return FE_OK;
}

const char *fe_lm_token_piece(const fe_lm_model *m, int32_t id, size_t *len) {
    size_t dummy;
    if (!len) len = &dummy;
    *len = 0;
    return m && m->tok ? fe_tokenizer_piece(m->tok, id, len) : NULL;
}

int32_t fe_lm_token_find(const fe_lm_model *m, const char *text) {
    return m && m->tok && text ? fe_tokenizer_find(m->tok, text, strlen(text)) : -1;
}

fe_status fe_lm_detokenizer_create(fe_lm_model *m, fe_lm_detokenizer **out) {
    if (!m) return FE_E_INVALID;
    fe_error_clear(&m->err);
    if (!out) return fe_error_set(&m->err, FE_E_INVALID, "detokenizer: give out");
    *out = NULL;
    fe_status st = need_tokenizer(m, "detokenizer");
    if (st != FE_OK) return st;
    fe_lm_detokenizer *d = fe_calloc(1, sizeof *d);
    if (d) d->cap = fe_token_stream_bound(m->tok);
    if (d) d->buf = fe_malloc(d->cap);
    if (!d || !d->buf) {
        fe_free(d);
        return fe_error_set(&m->err, FE_E_NOMEM, "detokenizer: out of memory");
    }
    d->m = m;
    fe_token_stream_init(&d->ts, m->tok);
    *out = d;
    return FE_OK;
}

void fe_lm_detokenizer_destroy(fe_lm_detokenizer *d) {
    if (!d) return;
    fe_free(d->buf);
    fe_free(d);
}

fe_status fe_lm_detokenizer_push(fe_lm_detokenizer *d, int32_t id, const char **text, size_t *len) {
    if (!d || !text || !len) return FE_E_INVALID;
    *text = "";
    *len = 0;
    fe_status st = fe_token_stream_push(&d->ts, id, d->buf, d->cap, len, &d->m->err);
    if (st == FE_OK) *text = d->buf;
    return st;
}

fe_status fe_lm_detokenizer_flush(fe_lm_detokenizer *d, const char **text, size_t *len) {
    if (!d || !text || !len) return FE_E_INVALID;
    *text = "";
    fe_status st = fe_token_stream_flush(&d->ts, d->buf, d->cap, len, &d->m->err);
    if (st == FE_OK) *text = d->buf;
    return st;
}
