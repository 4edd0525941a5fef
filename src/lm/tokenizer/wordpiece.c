/* lm/tokenizer/wordpiece.c: the WordPiece tokenizer (see wordpiece.h): the vocabulary (an
 * open-addressing table from token text to id), special tokens matched in raw text, the
 * BERT pre-tokenizer's words and the greedy longest-match pieces of each, [CLS]/[SEP] and
 * truncation. Invariant after create: every id has its text; unk is a valid id. */
#include "lm/tokenizer/wordpiece.h"

#include <string.h>
#include <utf8proc.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/tokenizer/bert_normalize.h"

struct fe_wordpiece {
    int32_t n_vocab;
    char **text;    /* (n_vocab) NUL-terminated token text */
    uint32_t *len;  /* (n_vocab) */
    int32_t *index; /* text -> id, open addressing, -1 empty */
    size_t mask;
    int32_t unk, cls, sep;
    char *prefix;
    size_t prefix_len;
    int max_chars;
    fe_bert_norm norm;
    int32_t *specials; /* ids of the special added tokens, matched in raw text */
    int n_specials;
    int64_t max_tokens;
};

fe_wordpiece_spec fe_wordpiece_spec_default(void) {
    return (fe_wordpiece_spec){.unk = "[UNK]", .cls = "[CLS]", .sep = "[SEP]", .prefix = "##",
                               .max_chars_per_word = 100, .clean_text = true,
                               .chinese_chars = true, .strip_accents = true, .lowercase = true};
}

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

int32_t fe_wordpiece_find(const fe_wordpiece *w, const char *s, size_t n) {
    for (size_t i = hash(s, n) & w->mask;; i = (i + 1) & w->mask) {
        int32_t id = w->index[i];
        if (id < 0) return -1;
        if (w->len[id] == n && memcmp(w->text[id], s, n) == 0) return id;
    }
}

int32_t fe_wordpiece_n_vocab(const fe_wordpiece *w) { return w->n_vocab; }
const char *fe_wordpiece_piece(const fe_wordpiece *w, int32_t id) {
    return id >= 0 && id < w->n_vocab ? w->text[id] : NULL;
}
int64_t fe_wordpiece_max_tokens(const fe_wordpiece *w) { return w->max_tokens; }
int32_t fe_wordpiece_cls(const fe_wordpiece *w) { return w->cls; }
int32_t fe_wordpiece_sep(const fe_wordpiece *w) { return w->sep; }

void fe_wordpiece_destroy(fe_wordpiece *w) {
    if (!w) return;
    for (int32_t i = 0; w->text && i < w->n_vocab; i++) fe_free(w->text[i]);
    fe_free(w->text);
    fe_free(w->len);
    fe_free(w->index);
    fe_free(w->prefix);
    fe_free(w->specials);
    fe_free(w);
}

/* The id of a named token that must exist (`role` names it in the message) */
static fe_status must_find(const fe_wordpiece *w, const char *s, const char *role, int32_t *id,
                           fe_error *err) {
    *id = fe_wordpiece_find(w, s, strlen(s));
    if (*id < 0)
        return fe_error_set(err, FE_E_FORMAT, "WordPiece: the %s token \"%.40s\" is not in the "
                            "vocabulary; give a vocabulary that holds it", role, s);
    return FE_OK;
}

static fe_status nomem(fe_wordpiece *w, fe_error *err) {
    fe_wordpiece_destroy(w);
    return fe_error_set(err, FE_E_NOMEM, "WordPiece: out of memory");
}

fe_status fe_wordpiece_create(const fe_wordpiece_spec *sp, fe_wordpiece **out, fe_error *err) {
    *out = NULL;
    if (sp->n_tokens < 1 || sp->n_tokens > (1 << 24) || !sp->tokens || sp->n_specials < 0 ||
        (sp->n_specials && !sp->specials) || sp->max_chars_per_word < 1 || sp->max_tokens < 0 ||
        !sp->unk || !sp->prefix)
        return fe_error_set(err, FE_E_INVALID, "WordPiece: give 1..2^24 tokens, an unk token, a "
                            "prefix, max_chars_per_word >= 1 and max_tokens >= 0 (have %d tokens)",
                            sp->n_tokens);
    fe_wordpiece *w = fe_calloc(1, sizeof *w);
    if (!w) return fe_error_set(err, FE_E_NOMEM, "WordPiece: out of memory");
    w->n_vocab = sp->n_tokens;
    size_t slots = 16;
    while (slots < 2 * (size_t)sp->n_tokens) slots *= 2;
    w->mask = slots - 1;
    w->text = fe_calloc((size_t)sp->n_tokens, sizeof *w->text);
    w->len = fe_calloc((size_t)sp->n_tokens, sizeof *w->len);
    w->index = fe_malloc(slots * sizeof *w->index);
    w->prefix = fe_strdup(sp->prefix);
    if (!w->text || !w->len || !w->index || !w->prefix) return nomem(w, err);
    w->prefix_len = strlen(sp->prefix);
    memset(w->index, 0xff, slots * sizeof *w->index);
    for (int32_t id = 0; id < sp->n_tokens; id++) {
        const char *s = sp->tokens[id];
        size_t n = s ? strlen(s) : 0;
        fe_status st = n ? fe_utf8_check(s, n, err) : FE_E_FORMAT;
        if (st != FE_OK) {
            fe_wordpiece_destroy(w);
            return fe_error_set(err, FE_E_FORMAT, "WordPiece: token %d is %s; every token must be "
                                "non-empty UTF-8 text", id, n ? "not valid UTF-8" : "empty");
        }
        int32_t first = fe_wordpiece_find(w, s, n);
        if (first >= 0) {
            fe_wordpiece_destroy(w);
            return fe_error_set(err, FE_E_FORMAT, "WordPiece: token %d \"%.40s\" is given twice "
                                "(also id %d); give each token once", id, s, first);
        }
        if (!(w->text[id] = fe_strdup(s))) return nomem(w, err);
        w->len[id] = (uint32_t)n;
        size_t i = hash(s, n) & w->mask;
        while (w->index[i] >= 0) i = (i + 1) & w->mask;
        w->index[i] = id;
    }
    w->cls = w->sep = -1;
    fe_status st = must_find(w, sp->unk, "unk", &w->unk, err);
    if (st == FE_OK && sp->cls) st = must_find(w, sp->cls, "cls", &w->cls, err);
    if (st == FE_OK && sp->sep) st = must_find(w, sp->sep, "sep", &w->sep, err);
    int extra = (w->cls >= 0) + (w->sep >= 0);
    if (st == FE_OK && sp->max_tokens > 0 && sp->max_tokens < extra)
        st = fe_error_set(err, FE_E_INVALID, "WordPiece: max_tokens %lld leaves no room for "
                          "[CLS] and [SEP]; give at least %d", (long long)sp->max_tokens, extra);
    if (st == FE_OK && sp->n_specials) {
        w->specials = fe_malloc((size_t)sp->n_specials * sizeof *w->specials);
        if (!w->specials) return nomem(w, err);
        for (int i = 0; st == FE_OK && i < sp->n_specials; i++)
            st = must_find(w, sp->specials[i], "special added", &w->specials[i], err);
        w->n_specials = sp->n_specials;
    }
    if (st != FE_OK) {
        fe_wordpiece_destroy(w);
        return st;
    }
    w->max_chars = sp->max_chars_per_word;
    w->norm = (fe_bert_norm){sp->clean_text, sp->chinese_chars, sp->strip_accents, sp->lowercase};
    w->max_tokens = sp->max_tokens;
    *out = w;
    return FE_OK;
}

fe_status fe_wordpiece_normalize(const fe_wordpiece *w, const char *text, size_t len, char **out,
                                 size_t *out_len, fe_error *err) {
    return fe_bert_normalize(&w->norm, text, len, out, out_len, err);
}

/* ---- encoding ---- */

typedef struct ids {
    int32_t *v;
    size_t n, cap;
    char *scratch; /* prefix + a word */
    size_t scratch_cap;
} ids;

static bool add(ids *a, int32_t id) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int32_t *v = fe_realloc(a->v, cap * sizeof *v);
        if (!v) return false;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = id;
    return true;
}

/* The pieces of one word s[0..n) of `chars` characters: greedy longest match from the left,
 * the prefix on every piece after the first; one unk when a stretch has no piece. */
static bool word_pieces(const fe_wordpiece *w, const char *s, size_t n, size_t chars, ids *a) {
    if (chars > (size_t)w->max_chars) return add(a, w->unk);
    if (a->scratch_cap < w->prefix_len + n) {
        char *p = fe_realloc(a->scratch, w->prefix_len + n);
        if (!p) return false;
        a->scratch = p, a->scratch_cap = w->prefix_len + n;
    }
    memcpy(a->scratch, w->prefix, w->prefix_len);
    size_t first = a->n;
    for (size_t start = 0; start < n;) {
        int32_t found = -1;
        size_t end = n;
        while (end > start) {
            const char *key = start ? a->scratch : s + start;
            size_t kn = end - start + (start ? w->prefix_len : 0);
            if (start) memcpy(a->scratch + w->prefix_len, s + start, end - start);
            if ((found = fe_wordpiece_find(w, key, kn)) >= 0) break;
            do end--; while (end > start && ((unsigned char)s[end] & 0xC0) == 0x80);
        }
        if (found < 0) {
            a->n = first;
            return add(a, w->unk);
        }
        if (!add(a, found)) return false;
        start = end;
    }
    return true;
}

/* Normalises s[0..n) and appends the pieces of its words (split at whitespace, each
 * punctuation character a word of its own) */
static fe_status segment(const fe_wordpiece *w, const char *s0, size_t n0, ids *a, fe_error *err) {
    char *s;
    size_t n;
    fe_status st = fe_bert_normalize(&w->norm, s0, n0, &s, &n, err);
    if (st != FE_OK) return st;
    size_t start = 0, chars = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < n;) {
        utf8proc_int32_t cp;
        size_t k = (size_t)utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        bool space = fe_bert_is_whitespace(cp), punct = !space && fe_bert_is_punctuation(cp);
        if (space || punct) {
            if (chars) ok = word_pieces(w, s + start, i - start, chars, a);
            if (ok && punct) ok = word_pieces(w, s + i, k, 1, a);
            chars = 0;
            start = i + k;
        } else {
            chars++;
        }
        i += k;
    }
    if (ok && chars) ok = word_pieces(w, s + start, n - start, chars, a);
    fe_free(s);
    return ok ? FE_OK : fe_error_set(err, FE_E_NOMEM, "WordPiece: out of memory");
}

/* The first special token in s[from..n) (leftmost, then longest): its id, start and length */
static int32_t next_special(const fe_wordpiece *w, const char *s, size_t from, size_t n,
                            size_t *at, size_t *len) {
    int32_t best = -1;
    *at = n;
    for (int i = 0; i < w->n_specials; i++) {
        int32_t id = w->specials[i];
        const char *hit = memmem(s + from, n - from, w->text[id], w->len[id]);
        size_t p = hit ? (size_t)(hit - s) : n;
        if (hit && (p < *at || (p == *at && w->len[id] > *len))) best = id, *at = p, *len = w->len[id];
    }
    return best;
}

fe_status fe_wordpiece_encode(const fe_wordpiece *w, const char *text, size_t len,
                              int64_t max_tokens, int32_t **out, size_t *n_out, fe_error *err) {
    *out = NULL;
    *n_out = 0;
    fe_status st = fe_utf8_check(text, len, err);
    if (st != FE_OK) return st;
    if (max_tokens == 0) max_tokens = w->max_tokens;
    int extra = (w->cls >= 0) + (w->sep >= 0);
    if (max_tokens > 0 && max_tokens < extra)
        return fe_error_set(err, FE_E_INVALID, "WordPiece: a maximum of %lld tokens leaves no "
                            "room for [CLS] and [SEP]; give at least %d", (long long)max_tokens, extra);
    ids a = {0};
    bool ok = w->cls < 0 || add(&a, w->cls);
    for (size_t pos = 0; ok && st == FE_OK && pos < len;) {
        size_t at, slen = 0;
        int32_t sp = next_special(w, text, pos, len, &at, &slen);
        if (at > pos) st = segment(w, text + pos, at - pos, &a, err);
        if (st == FE_OK && sp >= 0) ok = add(&a, sp);
        pos = at + slen;
    }
    if (st == FE_OK && ok && max_tokens > 0 && a.n + (w->sep >= 0) > (size_t)max_tokens)
        a.n = (size_t)max_tokens - (w->sep >= 0);
    if (st == FE_OK && ok && w->sep >= 0) ok = add(&a, w->sep);
    fe_free(a.scratch);
    if (st == FE_OK && !ok) st = fe_error_set(err, FE_E_NOMEM, "WordPiece: out of memory");
    if (st != FE_OK) {
        fe_free(a.v);
        return st;
    }
    *out = a.v;
    *n_out = a.n;
    return FE_OK;
}
