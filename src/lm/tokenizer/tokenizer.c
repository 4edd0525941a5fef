/* lm/tokenizer/tokenizer.c: encoding and decoding with a built tokenizer, and its queries.
 *
 * Encode finds added tokens first (leftmost, then longest), hands each stretch between them
 * to the pre-tokenizer chain, and merges each piece (bpe.c). All scratch belongs to the call
 * and is freed before it returns; its size follows the longest piece, so nothing persists
 * between calls and the tokenizer itself is never written (thread-safe). */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/tokenizer/tokenizer_internal.h"

int32_t fe_tokenizer_n_vocab(const fe_tokenizer *t) { return t->n_vocab; }
bool fe_tokenizer_is_sentencepiece(const fe_tokenizer *t) { return t->spm; }
int32_t fe_tokenizer_bos(const fe_tokenizer *t) { return t->bos; }
int32_t fe_tokenizer_eos(const fe_tokenizer *t) { return t->eos; }
bool fe_tokenizer_add_bos(const fe_tokenizer *t) { return t->add_bos && t->bos >= 0; }
size_t fe_tokenizer_max_piece(const fe_tokenizer *t) { return t->max_piece; }

int32_t fe_tokenizer_find(const fe_tokenizer *t, const char *text, size_t len) {
    return fe_tok_lookup(t, text, len);
}

fe_token_type fe_tokenizer_token_type(const fe_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab) return (fe_token_type)0;
    return (fe_token_type)t->type[id];
}

const char *fe_tokenizer_piece(const fe_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) {
        *len = 0;
        return NULL;
    }
    if (t->spm) { /* the text a SentencePiece token stands for (spm.h) */
        *len = t->text_len[id];
        return t->text_blob + t->text_off[id];
    }
    *len = t->len[id];
    return t->blob + t->off[id];
}

/* ---- encode ---- */

typedef struct enc {
    const fe_tokenizer *t;
    int32_t *ids; /* the output: the caller's (cap fixed) or ours (grown) */
    size_t cap, n;
    bool grow;
    int32_t *sym; /* a piece's symbols, for BPE */
    size_t sym_cap;
    fe_bpe_scratch bpe;
    fe_pretok_scratch pre;
    fe_spm_scratch spm;
    bool after_added; /* the start, or just after an added token (SentencePiece's prefix) */
    fe_error *err;
} enc;

static fe_status nomem(enc *e) {
    return fe_error_set(e->err, FE_E_NOMEM, "tokenizer: out of memory while encoding");
}

static fe_status emit(enc *e, int32_t id) {
    if (e->n == e->cap && e->grow) {
        size_t cap = e->cap ? 2 * e->cap : 256;
        int32_t *ids = fe_realloc(e->ids, cap * sizeof *ids);
        if (!ids) return nomem(e);
        e->ids = ids;
        e->cap = cap;
    }
    if (e->n < e->cap) e->ids[e->n] = id;
    e->n++;
    return FE_OK;
}

static fe_status on_piece(void *ctx, const char *s, size_t n) {
    enc *e = ctx;
    const fe_tokenizer *t = e->t;
    if (n == 1) {
        int32_t id = t->byte_id[(unsigned char)s[0]];
        return id >= 0 ? emit(e, id) : FE_OK; /* a byte the vocabulary lacks is dropped */
    }
    if (t->ignore_merges) {
        int32_t id = fe_tok_lookup(t, s, n);
        if (id >= 0) return emit(e, id);
    }
    if (n > e->sym_cap) {
        size_t cap = e->sym_cap ? e->sym_cap : 64;
        while (cap < n) cap *= 2;
        int32_t *sym = fe_malloc(cap * sizeof *sym);
        if (!sym) return nomem(e);
        fe_free(e->sym);
        e->sym = sym;
        e->sym_cap = cap;
    }
    if (fe_bpe_scratch_reserve(&e->bpe, n) != FE_OK) return nomem(e);
    /* A byte the vocabulary lacks is dropped before merging, so its neighbours may merge
     * across it, as in Hugging Face tokenizers. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[(unsigned char)s[i]];
        if (id >= 0) e->sym[m++] = id;
    }
    size_t k = fe_bpe_merge(&t->merges, &e->bpe, e->sym, m);
    for (size_t i = 0; i < k; i++) {
        fe_status st = emit(e, e->sym[i]);
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

static fe_status emit_id(void *ctx, int32_t id) { return emit(ctx, id); }

static fe_status stretch(enc *e, const char *s, size_t n) {
    if (e->t->spm) {
        bool prefix = e->t->add_space_prefix && e->after_added;
        e->after_added = false;
        char *normal = NULL;
        if (n && e->t->sp_normalize) { /* SentencePiece's normaliser first (spm_normalize.h) */
            fe_status st = fe_spm_normalize(&e->t->spm_norm, s, n, &normal, &n, e->err);
            if (st != FE_OK) return st;
            s = normal;
        }
        if (n && s[0] == ' ' && e->t->prefix_unless_space) prefix = false;
        fe_status st = FE_OK;
        if (n)
            st = e->t->unigram ? fe_unigram_encode(e->t, &e->spm, s, n, prefix, emit_id, e, e->err)
                               : fe_spm_encode(e->t, &e->spm, s, n, prefix, emit_id, e, e->err);
        fe_free(normal);
        return st;
    }
    return fe_pretok_split(&e->t->pre, &e->pre, s, n, on_piece, e, e->err);
}

static bool ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The added token that starts at text[i], longest first; NULL when none. */
static const struct fe_added_ref *added_at(const fe_tokenizer *t, const char *text, size_t len,
                                           size_t i, bool allow_special) {
    unsigned char b = (unsigned char)text[i];
    for (int k = t->added_start[b]; k < t->added_start[b + 1]; k++) {
        const struct fe_added_ref *a = &t->added[k];
        if (a->special && !allow_special) continue;
        if (a->len <= len - i && memcmp(t->blob + t->off[a->id], text + i, a->len) == 0) return a;
    }
    return NULL;
}

static fe_status encode(enc *e, const char *text, size_t len, bool add_bos, bool allow_special) {
    const fe_tokenizer *t = e->t;
    if (add_bos) {
        if (t->bos < 0)
            return fe_error_set(e->err, FE_E_INVALID,
                                "tokenizer: add_bos asked, but this tokenizer has no BOS token "
                                "(set one with fe_tokenizer_set_bos_eos, or pass add_bos false)");
        fe_status st = emit(e, t->bos);
        if (st != FE_OK) return st;
    }
    if (fe_pretok_scratch_init(&t->pre, &e->pre) != FE_OK) return nomem(e);
    e->after_added = true;
    size_t seg = 0, i = 0;
    fe_status st = FE_OK;
    while (i < len && st == FE_OK) {
        const struct fe_added_ref *a =
            t->n_added ? added_at(t, text, len, i, allow_special) : NULL;
        if (!a) {
            i++;
            continue;
        }
        size_t end = i;
        if (a->lstrip)
            while (end > seg && ascii_space(text[end - 1])) end--;
        st = stretch(e, text + seg, end - seg);
        if (st == FE_OK) st = emit(e, a->id);
        e->after_added = true;
        i += a->len;
        if (a->rstrip)
            while (i < len && ascii_space(text[i])) i++;
        seg = i;
    }
    if (st == FE_OK) st = stretch(e, text + seg, len - seg);
    return st;
}

static void enc_done(enc *e) {
    fe_free(e->sym);
    fe_bpe_scratch_deinit(&e->bpe);
    fe_pretok_scratch_deinit(&e->pre);
    fe_spm_scratch_deinit(&e->spm);
}

fe_status fe_tokenizer_encode(const fe_tokenizer *t, const char *text, size_t len, bool add_bos,
                              bool allow_special, int32_t *ids, size_t cap, size_t *n_ids,
                              fe_error *err) {
    *n_ids = 0;
    if (!text && len) return fe_error_set(err, FE_E_INVALID, "tokenizer: text is NULL");
    enc e = {.t = t, .ids = ids, .cap = ids ? cap : 0, .err = err};
    fe_status st = encode(&e, text, len, add_bos, allow_special);
    enc_done(&e);
    if (st != FE_OK) return st;
    *n_ids = e.n;
    if (e.n > e.cap)
        return fe_error_set(err, FE_E_BOUNDS, "tokenizer: the text takes %zu ids, the buffer %zu",
                            e.n, e.cap);
    return FE_OK;
}

fe_status fe_tokenizer_encode_alloc(const fe_tokenizer *t, const char *text, size_t len,
                                    bool add_bos, bool allow_special, int32_t **ids,
                                    size_t *n_ids, fe_error *err) {
    *ids = NULL;
    *n_ids = 0;
    if (!text && len) return fe_error_set(err, FE_E_INVALID, "tokenizer: text is NULL");
    enc e = {.t = t, .grow = true, .err = err};
    fe_status st = encode(&e, text, len, add_bos, allow_special);
    enc_done(&e);
    if (st != FE_OK) {
        fe_free(e.ids);
        return st;
    }
    *ids = e.ids;
    *n_ids = e.n;
    return FE_OK;
}

/* ---- decode ---- */

fe_status fe_tokenizer_decode(const fe_tokenizer *t, const int32_t *ids, size_t n, char *out,
                              size_t cap, size_t *len, fe_error *err) {
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab)
            return fe_error_set(err, FE_E_BOUNDS,
                                "tokenizer: ids[%zu] = %d is not a token (the vocabulary has %d)",
                                i, (int)id, (int)t->n_vocab);
        size_t k;
        const char *piece = fe_tokenizer_piece(t, id, &k);
        if (total < cap) memcpy(out + total, piece, k < cap - total ? k : cap - total);
        total += k;
    }
    *len = total;
    if (total < cap) out[total] = 0;
    if (total > cap)
        return fe_error_set(err, FE_E_BOUNDS, "tokenizer: the text is %zu bytes, the buffer %zu",
                            total, cap);
    return FE_OK;
}
