/* lm/tokenizer/tokenizer_build.c: building a tokenizer: the builder the loaders share
 * (tokenizer_internal.h), fe_tokenizer_create_bpe over plain arrays, and destruction. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "lm/tokenizer/bytelevel.h"
#include "lm/tokenizer/tokenizer_internal.h"

const char *fe_tok_quote(const char *s, size_t n, char buf[48]) {
    size_t k = n > 40 ? 40 : n;
    memcpy(buf, s, k);
    strcpy(buf + k, n > 40 ? "..." : "");
    for (size_t i = 0; i < k; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) buf[i] = '?';
    return buf;
}

fe_status fe_tok_new(int32_t n_vocab, const char *what, fe_tokenizer **out, fe_error *err) {
    *out = NULL;
    if (n_vocab <= 0 || n_vocab > FE_TOKENIZER_MAX_VOCAB)
        return fe_error_set(err, FE_E_FORMAT,
                            "%s: %d tokens; a vocabulary holds 1 to %d (ids 0..n-1)", what,
                            (int)n_vocab, FE_TOKENIZER_MAX_VOCAB);
    fe_tokenizer *t = fe_calloc(1, sizeof *t);
    if (!t) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    t->n_vocab = n_vocab;
    t->bos = t->eos = -1;
    t->off = fe_calloc((size_t)n_vocab, sizeof *t->off);
    t->len = fe_calloc((size_t)n_vocab, sizeof *t->len);
    t->type = fe_calloc((size_t)n_vocab, sizeof *t->type);
    if (!t->off || !t->len || !t->type) {
        fe_tokenizer_destroy(t);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory for %d tokens", what,
                            (int)n_vocab);
    }
    *out = t;
    return FE_OK;
}

static bool reserve(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    char *q = fe_realloc(*p, c);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

fe_status fe_tok_set(fe_tokenizer *t, int32_t id, const char *s, size_t n, fe_token_type type,
                     bool byte_level, bool overwrite, const char *what, fe_error *err) {
    char q[48], q2[48];
    if (id < 0 || id >= t->n_vocab)
        return fe_error_set(err, FE_E_FORMAT, "%s: token \"%s\" has id %ld, outside 0..%d", what,
                            fe_tok_quote(s, n, q), (long)id, (int)t->n_vocab - 1);
    if (t->type[id] && !overwrite)
        return fe_error_set(err, FE_E_FORMAT, "%s: id %d is given twice (\"%s\" and \"%s\")",
                            what, (int)id, fe_tok_quote(t->blob + t->off[id], t->len[id], q),
                            fe_tok_quote(s, n, q2));
    if (n > UINT32_MAX)
        return fe_error_set(err, FE_E_FORMAT, "%s: token %d is %zu bytes long", what, (int)id, n);
    if (!reserve(&t->blob, &t->blob_cap, t->blob_len + n))
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory for token text", what);
    char *dst = t->blob + t->blob_len;
    size_t raw = n;
    if (byte_level) {
        if (!fe_bytelevel_decode(s, n, dst, &raw))
            return fe_error_set(err, FE_E_FORMAT,
                                "%s: token %d \"%s\" is not valid UTF-8; byte-level BPE tokens "
                                "are UTF-8 text",
                                what, (int)id, fe_tok_quote(s, n, q));
    } else {
        if (n) memcpy(dst, s, n);
    }
    t->off[id] = t->blob_len;
    t->len[id] = (uint32_t)raw;
    t->type[id] = (uint8_t)type;
    t->blob_len += raw;
    return FE_OK;
}

static size_t index_slot(const fe_tokenizer *t, const char *s, size_t n) {
    return (size_t)fe_hash_bytes(s, n, 0) & t->index_mask;
}

int32_t fe_tok_lookup(const fe_tokenizer *t, const char *s, size_t n) {
    if (!t->index) return -1;
    for (size_t i = index_slot(t, s, n); t->index[i] >= 0; i = (i + 1) & t->index_mask) {
        int32_t id = t->index[i];
        if (t->len[id] == n && memcmp(t->blob + t->off[id], s, n) == 0) return id;
    }
    return -1;
}

static void index_insert(fe_tokenizer *t, int32_t id) {
    const char *s = t->blob + t->off[id];
    size_t n = t->len[id];
    size_t i = index_slot(t, s, n);
    for (; t->index[i] >= 0; i = (i + 1) & t->index_mask) {
        int32_t o = t->index[i];
        if (t->len[o] == n && memcmp(t->blob + t->off[o], s, n) == 0) return; /* first wins */
    }
    t->index[i] = id;
}

static bool is_added_type(uint8_t type) {
    return type == FE_TOKEN_CONTROL || type == FE_TOKEN_USER_DEFINED;
}

fe_status fe_tok_index(fe_tokenizer *t, const char *what, fe_error *err) {
    size_t cap = 64;
    while (cap < 2 * (size_t)t->n_vocab) cap *= 2;
    fe_free(t->index);
    t->index = fe_malloc(cap * sizeof *t->index);
    if (!t->index) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    memset(t->index, 0xFF, cap * sizeof *t->index);
    t->index_mask = cap - 1;
    /* Ordinary tokens first, so an added token never shadows one with the same bytes. */
    for (int pass = 0; pass < 2; pass++)
        for (int32_t id = 0; id < t->n_vocab; id++) {
            if (!t->type[id]) {
                t->type[id] = FE_TOKEN_UNUSED; /* a gap in the file's ids: empty, never made */
                t->off[id] = 0;
                t->len[id] = 0;
            }
            if (t->len[id] && is_added_type(t->type[id]) == (pass == 1)) index_insert(t, id);
        }
    /* A byte without a token (SmolLM2 lacks 21, such as 0x04 and 0xF5..0xFF) is dropped
     * when met, as Hugging Face tokenizers (no unk_token) and llama.cpp drop it. */
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = fe_tok_lookup(t, &c, 1);
    }
    return FE_OK;
}

/* Converts s to raw bytes at t->tmp + at; *raw is their count. */
static fe_status to_raw(fe_tokenizer *t, size_t at, const char *s, size_t n, bool byte_level,
                        size_t *raw) {
    if (!reserve(&t->tmp, &t->tmp_cap, at + n)) return FE_E_NOMEM;
    if (!byte_level) {
        if (n) memcpy(t->tmp + at, s, n);
        *raw = n;
        return FE_OK;
    }
    return fe_bytelevel_decode(s, n, t->tmp + at, raw) ? FE_OK : FE_E_FORMAT;
}

fe_status fe_tok_merge(fe_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn,
                       int32_t rank, bool byte_level, const char *what, fe_error *err) {
    char q[48], q2[48];
    size_t a, b;
    fe_status st = to_raw(t, 0, l, ln, byte_level, &a);
    if (st == FE_OK) st = to_raw(t, a, r, rn, byte_level, &b);
    if (st == FE_E_NOMEM) return fe_error_set(err, st, "%s: out of memory", what);
    if (st != FE_OK)
        return fe_error_set(err, st, "%s \"%s %s\" is not valid UTF-8", what,
                            fe_tok_quote(l, ln, q), fe_tok_quote(r, rn, q2));
    int32_t left = fe_tok_lookup(t, t->tmp, a), right = fe_tok_lookup(t, t->tmp + a, b);
    int32_t merged = fe_tok_lookup(t, t->tmp, a + b);
    const char *missing = left < 0 ? "left" : right < 0 ? "right" : merged < 0 ? "merged" : NULL;
    if (missing) {
        char qm[48];
        const char *m = left < 0    ? fe_tok_quote(l, ln, qm)
                        : right < 0 ? fe_tok_quote(r, rn, qm)
                                    : fe_tok_quote(t->tmp, a + b, qm);
        return fe_error_set(err, FE_E_FORMAT,
                            "%s \"%s %s\": the %s token \"%s\" is not in the vocabulary; every "
                            "merge joins two tokens into a third",
                            what, fe_tok_quote(l, ln, q), fe_tok_quote(r, rn, q2), missing, m);
    }
    bool added;
    if (fe_bpe_merges_add(&t->merges, left, right, rank, merged, &added) != FE_OK)
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    return FE_OK;
}

fe_status fe_tok_merge_line(fe_tokenizer *t, const char *m, size_t n, int32_t rank,
                            const char *what, fe_error *err) {
    const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL; /* as llama.cpp: from 1 */
    if (!sp) {
        char q[48];
        return fe_error_set(err, FE_E_FORMAT, "%s \"%s\" is not two tokens split by a space",
                            what, fe_tok_quote(m, n, q));
    }
    return fe_tok_merge(t, m, (size_t)(sp - m), sp + 1, n - (size_t)(sp - m) - 1, rank, true,
                        what, err);
}

fe_status fe_tok_mark_added(fe_tokenizer *t, int32_t id, bool special, bool lstrip, bool rstrip,
                            fe_error *err) {
    if (id < 0 || id >= t->n_vocab)
        return fe_error_set(err, FE_E_FORMAT, "added token id %d is outside 0..%d", (int)id,
                            (int)t->n_vocab - 1);
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) {
            t->added[i] = (struct fe_added_ref){id, special, lstrip, rstrip, 0, 0};
            return FE_OK;
        }
    if (t->n_added == t->added_cap) {
        int cap = t->added_cap ? 2 * t->added_cap : 16;
        struct fe_added_ref *a = fe_realloc(t->added, (size_t)cap * sizeof *a);
        if (!a) return fe_error_set(err, FE_E_NOMEM, "out of memory for added tokens");
        t->added = a;
        t->added_cap = cap;
    }
    t->added[t->n_added++] = (struct fe_added_ref){id, special, lstrip, rstrip, 0, 0};
    return FE_OK;
}

static int cmp_added(const void *pa, const void *pb) {
    const struct fe_added_ref *a = pa, *b = pb;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1; /* longest first */
    return a->id < b->id ? -1 : a->id > b->id;
}

fe_status fe_tok_finish(fe_tokenizer *t, const char *what, fe_error *err) {
    if ((t->bos >= t->n_vocab) || (t->eos >= t->n_vocab))
        return fe_error_set(err, FE_E_FORMAT, "%s: BOS %d / EOS %d outside the %d tokens", what,
                            (int)t->bos, (int)t->eos, (int)t->n_vocab);
    /* an added token with no text can never match: drop it from the matcher */
    int k = 0;
    for (int i = 0; i < t->n_added; i++) {
        struct fe_added_ref a = t->added[i];
        a.len = t->len[a.id];
        if (!a.len) continue;
        a.first = (unsigned char)t->blob[t->off[a.id]];
        t->added[k++] = a;
    }
    t->n_added = k;
    if (t->n_added) qsort(t->added, (size_t)t->n_added, sizeof *t->added, cmp_added);
    for (int b = 0, i = 0; b <= 256; b++) {
        while (i < t->n_added && t->added[i].first < b) i++;
        t->added_start[b] = i;
    }
    t->max_piece = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->len[id] > t->max_piece) t->max_piece = t->len[id];
    fe_free(t->tmp);
    t->tmp = NULL;
    t->tmp_cap = 0;
    return FE_OK;
}

void fe_tokenizer_destroy(fe_tokenizer *t) {
    if (!t) return;
    fe_free(t->blob);
    fe_free(t->off);
    fe_free(t->len);
    fe_free(t->type);
    fe_free(t->index);
    fe_bpe_merges_deinit(&t->merges);
    fe_spm_normalizer_deinit(&t->spm_norm);
    fe_free(t->added);
    fe_pretok_deinit(&t->pre);
    fe_free(t->scores);
    fe_free(t->text_blob);
    fe_free(t->text_off);
    fe_free(t->text_len);
    fe_free(t->tmp);
    fe_free(t);
}

fe_bpe_spec fe_bpe_spec_default(void) {
    return (fe_bpe_spec){.pre = NULL, .bos_id = -1, .eos_id = -1, .add_bos = -1,
                         .ignore_merges = -1};
}

static size_t slen(const size_t *lens, const char *const *s, int i) {
    return lens ? lens[i] : strlen(s[i]);
}

fe_status fe_tokenizer_create_bpe(const fe_bpe_spec *spec, fe_tokenizer **out, fe_error *err) {
    const char *what = "tokenizer";
    *out = NULL;
    if (!spec || (spec->n_tokens > 0 && !spec->tokens) || (spec->n_merges > 0 && !spec->merges) ||
        (spec->n_added > 0 && !spec->added) || spec->n_merges < 0 || spec->n_added < 0)
        return fe_error_set(err, FE_E_INVALID, "%s: a count is negative or its array is NULL",
                            what);
    fe_tokenizer *t;
    fe_status st = fe_tok_new(spec->n_tokens, what, &t, err);
    if (st != FE_OK) return st;
    for (int i = 0; i < spec->n_tokens && st == FE_OK; i++) {
        int32_t ty = spec->token_types ? spec->token_types[i] : FE_TOKEN_NORMAL;
        if (ty < FE_TOKEN_NORMAL || ty > FE_TOKEN_BYTE) ty = FE_TOKEN_NORMAL;
        bool raw = is_added_type((uint8_t)ty);
        st = fe_tok_set(t, i, spec->tokens[i], slen(spec->token_lens, spec->tokens, i),
                        (fe_token_type)ty, !raw, false, what, err);
        if (st == FE_OK && raw) st = fe_tok_mark_added(t, i, ty == FE_TOKEN_CONTROL, 0, 0, err);
    }
    if (st == FE_OK) st = fe_tok_index(t, what, err);
    if (st == FE_OK && fe_bpe_merges_init(&t->merges, (size_t)spec->n_merges) != FE_OK)
        st = fe_error_set(err, FE_E_NOMEM, "%s: out of memory for merges", what);
    for (int i = 0; i < spec->n_merges && st == FE_OK; i++) {
        const char *m = spec->merges[i];
        size_t n = slen(spec->merge_lens, spec->merges, i);
        char name[48];
        snprintf(name, sizeof name, "%s: merge %d", what, i);
        st = fe_tok_merge_line(t, m, n, i, name, err);
    }
    for (int i = 0; i < spec->n_added && st == FE_OK; i++) {
        const fe_added_token *a = &spec->added[i];
        size_t n = a->len ? a->len : strlen(a->text);
        st = fe_tok_set(t, a->id, a->text, n, a->special ? FE_TOKEN_CONTROL : FE_TOKEN_USER_DEFINED,
                        false, true, what, err);
        if (st == FE_OK) st = fe_tok_mark_added(t, a->id, a->special, a->lstrip, a->rstrip, err);
    }
    bool ignore = false, bos = false;
    const char *pre = spec->pre ? spec->pre : "gpt2";
    if (st == FE_OK) st = fe_pretok_add_named(&t->pre, pre, strlen(pre), &ignore, &bos, err);
    if (st == FE_OK) {
        t->ignore_merges = spec->ignore_merges < 0 ? ignore : spec->ignore_merges != 0;
        t->add_bos = spec->add_bos < 0 ? bos : spec->add_bos != 0;
        t->bos = spec->bos_id < 0 ? -1 : spec->bos_id;
        t->eos = spec->eos_id < 0 ? -1 : spec->eos_id;
        st = fe_tok_finish(t, what, err);
    }
    if (st != FE_OK) {
        fe_tokenizer_destroy(t);
        return st;
    }
    *out = t;
    return FE_OK;
}

fe_status fe_tokenizer_set_bos_eos(fe_tokenizer *t, int32_t bos, int32_t eos) {
    if (bos >= t->n_vocab || eos >= t->n_vocab) return FE_E_BOUNDS;
    t->bos = bos < 0 ? -1 : bos;
    t->eos = eos < 0 ? -1 : eos;
    return FE_OK;
}
