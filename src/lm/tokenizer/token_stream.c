/* lm/tokenizer/token_stream.c: streaming decode, token by token, to always-valid UTF-8.
 *
 * Invariant: the stream holds at most 3 bytes, and they are a proper prefix of a valid UTF-8
 * character (what one token left cut off for the next to finish). Everything else is written
 * out at once: valid characters as they are, each maximal invalid subpart as U+FFFD. */
#include <string.h>

#include "core/error.h"
#include "lm/tokenizer/bytelevel.h"
#include "lm/tokenizer/tokenizer_internal.h"

void fe_token_stream_init(fe_token_stream *s, const fe_tokenizer *t) {
    memset(s, 0, sizeof *s);
    s->tok = t;
}

size_t fe_token_stream_bound(const fe_tokenizer *t) { return 3 * (t->max_piece + 3) + 1; }

static const char REPLACEMENT[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

fe_status fe_token_stream_push(fe_token_stream *s, int32_t id, char *out, size_t cap,
                               size_t *len, fe_error *err) {
    *len = 0;
    size_t n;
    const char *piece = fe_tokenizer_piece(s->tok, id, &n);
    if (!piece)
        return fe_error_set(err, FE_E_BOUNDS, "token stream: %d is not a token (the vocabulary "
                            "has %d)", (int)id, (int)s->tok->n_vocab);
    size_t total = (size_t)s->n_held + n;
    /* worst case: every byte a U+FFFD of 3 bytes, and the NUL */
    if (cap < 3 * total + 1)
        return fe_error_set(err, FE_E_BOUNDS,
                            "token stream: the output needs %zu bytes for token %d, has %zu "
                            "(fe_token_stream_bound gives enough for any token)",
                            3 * total + 1, (int)id, cap);
    const unsigned char *p = (const unsigned char *)piece;
#define AT(k) ((k) < (size_t)s->n_held ? s->held[(k)] : p[(k) - (size_t)s->n_held])
    size_t i = 0, o = 0;
    while (i < total) {
        unsigned char c[4];
        size_t m = total - i < 4 ? total - i : 4;
        for (size_t j = 0; j < m; j++) c[j] = AT(i + j);
        int k = fe_utf8_char(c, m, NULL);
        if (k > 0) {
            memcpy(out + o, c, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else if (k < 0) {
            memcpy(out + o, REPLACEMENT, 3);
            o += 3;
            i += (size_t)-k;
        } else {
            break; /* a character cut short at the end: hold it */
        }
    }
    unsigned char rest[4];
    size_t r = total - i;
    for (size_t j = 0; j < r; j++) rest[j] = AT(i + j);
#undef AT
    memcpy(s->held, rest, r);
    s->n_held = (int)r;
    out[o] = 0;
    *len = o;
    return FE_OK;
}

fe_status fe_token_stream_flush(fe_token_stream *s, char *out, size_t cap, size_t *len,
                                fe_error *err) {
    *len = 0;
    if (cap < 4)
        return fe_error_set(err, FE_E_BOUNDS, "token stream: flush needs 4 bytes of output");
    size_t o = 0;
    if (s->n_held) {
        memcpy(out, REPLACEMENT, 3);
        o = 3;
    }
    s->n_held = 0;
    out[o] = 0;
    *len = o;
    return FE_OK;
}
