/* lm/tokenizer/spm_normalize.c: SentencePiece's normaliser (see spm_normalize.h): reading the
 * precompiled charsmap, the longest-prefix walk of its double-array trie, and the whitespace
 * rules. Every offset the trie can yield is checked when the blob is read, and the walk checks
 * each position it visits, so a malformed blob is refused or stops a match, never read past. */
#include "lm/tokenizer/spm_normalize.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

/* darts-clone's unit: bits 0-7 the label (bit 31 set marks a value unit, which no byte
 * matches), bit 8 "has a leaf", bits 10-31 the offset to the children (shifted by 8 more when
 * bit 9 is set); a value unit holds its value in bits 0-30. */
static uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xffu); }
static bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1u; }
static uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }
static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

fe_status fe_spm_normalizer_init(fe_spm_normalizer *nz, const void *blob, size_t n,
                                 bool remove_extra_whitespaces, const char *what, fe_error *err) {
    memset(nz, 0, sizeof *nz);
    nz->remove_extra_whitespaces = remove_extra_whitespaces;
    if (n == 0) return FE_OK;
    const unsigned char *b = blob;
    if (n < 4)
        return fe_error_set(err, FE_E_FORMAT, "%s: the precompiled charsmap has %zu bytes; it "
                            "starts with a 4-byte trie size (give the model's own charsmap, or "
                            "none)", what, n);
    size_t trie = (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
    if (trie == 0 || trie % 4 != 0 || trie > n - 4)
        return fe_error_set(err, FE_E_FORMAT, "%s: the precompiled charsmap's trie is %zu bytes "
                            "of a %zu-byte blob; it must be whole 4-byte units inside the blob",
                            what, trie, n);
    size_t strings = n - 4 - trie;
    if (strings == 0 || b[n - 1] != 0)
        return fe_error_set(err, FE_E_FORMAT, "%s: the precompiled charsmap's replacement "
                            "strings do not end with a NUL; the blob is cut short", what);
    nz->n_units = trie / 4;
    nz->units = fe_malloc(trie);
    nz->strings = fe_malloc(strings);
    if (!nz->units || !nz->strings) {
        fe_spm_normalizer_deinit(nz);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory for the charsmap", what);
    }
    for (size_t i = 0; i < nz->n_units; i++) {
        const unsigned char *u = b + 4 + 4 * i;
        nz->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
                       (uint32_t)u[3] << 24;
    }
    memcpy(nz->strings, b + 4 + trie, strings);
    nz->strings_len = strings;
    for (size_t i = 0; i < nz->n_units; i++) /* value units: where the strings start */
        if ((nz->units[i] >> 31) && unit_value(nz->units[i]) >= strings) {
            uint32_t v = unit_value(nz->units[i]);
            fe_spm_normalizer_deinit(nz);
            return fe_error_set(err, FE_E_FORMAT, "%s: the precompiled charsmap's trie unit "
                                "%zu points at string offset %u, past the %zu bytes of "
                                "strings", what, i, v, strings);
        }
    return FE_OK;
}

void fe_spm_normalizer_deinit(fe_spm_normalizer *nz) {
    fe_free(nz->units);
    fe_free(nz->strings);
    memset(nz, 0, sizeof *nz);
}

/* The longest key of the trie that s[0..n) starts with: its length (0: none) and, in *rep,
 * the offset of its replacement string. */
static size_t longest_match(const fe_spm_normalizer *nz, const unsigned char *s, size_t n,
                            uint32_t *rep) {
    size_t best = 0;
    size_t pos = unit_offset(nz->units[0]);
    for (size_t i = 0; i < n; i++) {
        pos ^= s[i];
        if (pos >= nz->n_units) break;
        uint32_t u = nz->units[pos];
        if (unit_label(u) != s[i]) break;
        pos ^= unit_offset(u);
        if (pos >= nz->n_units) break;
        if (unit_has_leaf(u)) {
            uint32_t v = nz->units[pos];
            if (v >> 31) best = i + 1, *rep = unit_value(v);
        }
    }
    return best;
}

/* The byte length of the valid UTF-8 character at s[0..n), 0 when it is not one (a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF or cut short). */
static size_t utf8_char(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (len > n || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return len;
}

typedef struct outbuf {
    char *p;
    size_t n, cap;
} outbuf;

static bool put(outbuf *o, const char *s, size_t n) {
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? o->cap : 64;
        while (cap < o->n + n) cap *= 2;
        char *p = fe_realloc(o->p, cap);
        if (!p) return false;
        o->p = p, o->cap = cap;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
    return true;
}

/* The replacement of the longest prefix of s[0..n): *piece, *piece_n; returns the bytes it
 * consumes (>= 1). */
static size_t next_piece(const fe_spm_normalizer *nz, const unsigned char *s, size_t n,
                         const char **piece, size_t *piece_n) {
    static const char replacement[3] = {'\xef', '\xbf', '\xbd'}; /* U+FFFD */
    uint32_t rep = 0;
    size_t m = nz->units ? longest_match(nz, s, n, &rep) : 0;
    if (m > 0) {
        *piece = nz->strings + rep;
        *piece_n = strlen(*piece); /* a NUL ends the strings (checked at init) */
        return m;
    }
    size_t c = utf8_char(s, n);
    if (c == 0) {
        *piece = replacement, *piece_n = 3;
        return 1;
    }
    *piece = (const char *)s, *piece_n = c;
    return c;
}

fe_status fe_spm_normalize(const fe_spm_normalizer *nz, const char *text, size_t n, char **out,
                           size_t *out_n, fe_error *err) {
    const unsigned char *s = (const unsigned char *)text;
    const bool squeeze = nz->remove_extra_whitespaces;
    outbuf o = {0};
    size_t i = 0;
    bool prev_space = squeeze; /* at the start, a space is leading: dropped */
    bool ok = true;
    while (i < n && ok) {
        const char *piece;
        size_t piece_n;
        i += next_piece(nz, s + i, n - i, &piece, &piece_n);
        if (prev_space)
            while (piece_n > 0 && piece[0] == ' ') piece++, piece_n--;
        if (piece_n == 0) continue;
        ok = put(&o, piece, piece_n);
        prev_space = squeeze && piece[piece_n - 1] == ' ';
    }
    if (squeeze)
        while (o.n > 0 && o.p[o.n - 1] == ' ') o.n--;
    if (ok && nz->collapse_spaces) {
        size_t k = 0;
        for (size_t j = 0; j < o.n; j++)
            if (!(o.p[j] == ' ' && k > 0 && o.p[k - 1] == ' ')) o.p[k++] = o.p[j];
        o.n = k;
    }
    if (!ok) {
        fe_free(o.p);
        return fe_error_set(err, FE_E_NOMEM, "tokenizer: out of memory while normalising");
    }
    *out = o.p;
    *out_n = o.n;
    return FE_OK;
}
