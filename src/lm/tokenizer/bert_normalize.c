/* lm/tokenizer/bert_normalize.c: BERT's normaliser and pre-tokenizer character classes (see
 * bert_normalize.h). The steps run in Hugging Face BertNormalizer's order: clean_text,
 * handle_chinese_chars, strip_accents (NFD, nonspacing marks dropped), lowercase. */
#include "lm/tokenizer/bert_normalize.h"

#include <utf8proc.h>

#include "core/alloc.h"
#include "core/error.h"

fe_status fe_utf8_check(const char *text, size_t len, fe_error *err) {
    size_t i = 0;
    while (i < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)text + i,
                                              (utf8proc_ssize_t)(len - i), &cp);
        if (n < 0)
            return fe_error_set(err, FE_E_INVALID, "text is not valid UTF-8 at byte %zu (0x%02x); "
                                "give UTF-8 text (convert it, e.g. with iconv)", i,
                                (unsigned)(unsigned char)text[i]);
        i += (size_t)n;
    }
    return FE_OK;
}

bool fe_bert_is_whitespace(int32_t cp) {
    if ((cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85) return true;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool fe_bert_is_punctuation(int32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
        (cp >= 123 && cp <= 126))
        return true;
    utf8proc_category_t c = utf8proc_category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

/* BertNormalizer's is_control: Cc, Cf, Cn, Co, except tab, newline and carriage return */
static bool is_control(int32_t cp) {
    if (cp == '\t' || cp == '\n' || cp == '\r') return false;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN ||
           c == UTF8PROC_CATEGORY_CO;
}

/* The CJK Unified Ideographs blocks BERT's _is_chinese_char names (not all of CJK: Hiragana,
 * Katakana and Hangul are written with spaces or are split as other letters) */
static bool is_cjk(int32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* A growing array of code points */
typedef struct cps {
    int32_t *v;
    size_t n, cap;
} cps;

static bool push(cps *a, int32_t cp) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int32_t *v = fe_realloc(a->v, cap * sizeof *v);
        if (!v) return false;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = cp;
    return true;
}

/* Steps clean_text and handle_chinese_chars, code point by code point */
static bool clean_and_space(const fe_bert_norm *o, const char *text, size_t len, cps *out) {
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t cp;
        i += (size_t)utf8proc_iterate((const utf8proc_uint8_t *)text + i,
                                      (utf8proc_ssize_t)(len - i), &cp);
        if (o->clean_text) {
            if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
            if (fe_bert_is_whitespace(cp)) cp = ' ';
        }
        bool ok = o->chinese_chars && is_cjk(cp) ? push(out, ' ') && push(out, cp) && push(out, ' ')
                                                  : push(out, cp);
        if (!ok) return false;
    }
    return true;
}

/* The canonical decomposition (NFD, marks in canonical order) of a[0..n), into d */
static fe_status decompose(const cps *a, cps *d, fe_error *err) {
    size_t bytes = 0;
    for (size_t i = 0; i < a->n; i++) {
        utf8proc_uint8_t b[4];
        bytes += (size_t)utf8proc_encode_char(a->v[i], b);
    }
    utf8proc_uint8_t *s = fe_malloc(bytes + 1);
    if (!s) return fe_error_set(err, FE_E_NOMEM, "WordPiece normaliser: out of memory");
    size_t o = 0;
    for (size_t i = 0; i < a->n; i++) o += (size_t)utf8proc_encode_char(a->v[i], s + o);
    /* a canonical decomposition is at most 4 code points per input code point */
    size_t cap = 4 * a->n + 1;
    d->v = fe_malloc(cap * sizeof *d->v);
    utf8proc_ssize_t n = d->v ? utf8proc_decompose(s, (utf8proc_ssize_t)o, d->v,
                                                   (utf8proc_ssize_t)cap, UTF8PROC_DECOMPOSE)
                              : -1;
    fe_free(s);
    if (!d->v) return fe_error_set(err, FE_E_NOMEM, "WordPiece normaliser: out of memory");
    FE_ASSERT(n >= 0 && (size_t)n <= cap);
    d->n = (size_t)n, d->cap = cap;
    return FE_OK;
}

fe_status fe_bert_normalize(const fe_bert_norm *o, const char *text, size_t len, char **out,
                            size_t *out_len, fe_error *err) {
    *out = NULL;
    *out_len = 0;
    fe_status st = fe_utf8_check(text, len, err);
    if (st != FE_OK) return st;
    cps a = {0}, d = {0};
    if (!clean_and_space(o, text, len, &a)) {
        fe_free(a.v);
        return fe_error_set(err, FE_E_NOMEM, "WordPiece normaliser: out of memory");
    }
    if (o->strip_accents) {
        st = decompose(&a, &d, err);
        fe_free(a.v);
        if (st != FE_OK) return st;
        size_t k = 0;
        for (size_t i = 0; i < d.n; i++)
            if (utf8proc_category(d.v[i]) != UTF8PROC_CATEGORY_MN) d.v[k++] = d.v[i];
        d.n = k;
    } else {
        d = a;
    }
    /* lower-casing: the full mapping, where only U+0130 differs from the simple one */
    char *s = fe_malloc(8 * d.n + 1);
    if (!s) {
        fe_free(d.v);
        return fe_error_set(err, FE_E_NOMEM, "WordPiece normaliser: out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < d.n; i++) {
        int32_t cp = d.v[i];
        if (o->lowercase && cp == 0x130) {
            n += (size_t)utf8proc_encode_char('i', (utf8proc_uint8_t *)s + n);
            cp = 0x307;
        } else if (o->lowercase) {
            cp = utf8proc_tolower(cp);
        }
        n += (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)s + n);
    }
    s[n] = '\0';
    fe_free(d.v);
    *out = s;
    *out_len = n;
    return FE_OK;
}
