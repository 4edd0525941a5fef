/* lm/tokenizer/tokenizer_tiktoken.c: the tiktoken loader (Llama 3's tokenizer.model).
 *
 * A tiktoken file lists "<base64 of the token's bytes> <rank>" per line; the rank is the id.
 * tiktoken merges the adjacent pair whose concatenation has the lowest rank, and takes a
 * piece that is itself a token whole. The same, in merge-table form: every split of a token
 * into two tokens is a merge ranked by the token, and ignore_merges on. Special tokens are not
 * in the file; they come from the caller or are Llama 3.1's 256. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/mapped.h"
#include "lm/tokenizer/tokenizer_internal.h"

/* Llama 3.1's special tokens, ids n_ranks + index (Meta's tokenizer.py / HF tokenizer.json). */
static const char *const LLAMA31_NAMED[] = {
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>",
};
enum { LLAMA31_SPECIALS = 256, LLAMA31_NAMED_COUNT = 11 };

static int b64(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

bool fe_tok_b64_decode(const char *s, size_t n, char *out, size_t *len) {
    if (n == 0 || n % 4) return false;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)s[i + (size_t)j];
            if (c == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
            } else {
                if (pad) return false; /* data after padding */
                v[j] = b64(c);
                if (v[j] < 0) return false;
            }
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (char)(x >> 16);
        if (pad < 2) out[o++] = (char)(x >> 8);
        if (pad < 1) out[o++] = (char)x;
    }
    *len = o;
    return true;
}

struct entry {
    size_t off, len; /* decoded bytes in the buffer */
    int32_t rank;
};

/* Parses every line into entries (bytes into *buf); *n_ids is the largest rank + 1. */
static fe_status parse(const char *text, size_t len, const char *what, char **buf,
                       struct entry **ents, size_t *n_ents, int32_t *n_ids, fe_error *err) {
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    *buf = fe_malloc(len + 1);
    *ents = fe_malloc((lines + 1) * sizeof **ents);
    if (!*buf || !*ents) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    size_t used = 0, k = 0, line = 0;
    int32_t max = -1;
    for (size_t i = 0; i < len;) {
        line++;
        const char *s = text + i;
        const char *nl = memchr(s, '\n', len - i);
        size_t n = nl ? (size_t)(nl - s) : len - i;
        i += n + (nl ? 1 : 0);
        if (n && s[n - 1] == '\r') n--;
        if (n == 0) continue;
        const char *sp = memchr(s, ' ', n);
        size_t got;
        if (!sp || !fe_tok_b64_decode(s, (size_t)(sp - s), *buf + used, &got))
            return fe_error_set(err, FE_E_FORMAT,
                                "%s: line %zu is not \"<base64 token> <rank>\" (tiktoken format)",
                                what, line);
        int64_t rank = 0;
        const char *r = sp + 1, *end = s + n;
        if (r == end) rank = -1;
        for (; r < end && rank >= 0; r++) {
            if (*r < '0' || *r > '9' || rank >= FE_TOKENIZER_MAX_VOCAB) rank = -1;
            else rank = rank * 10 + (*r - '0');
        }
        if (rank < 0 || rank >= FE_TOKENIZER_MAX_VOCAB)
            return fe_error_set(err, FE_E_FORMAT,
                                "%s: line %zu: the rank is not a number in 0..%d", what, line,
                                FE_TOKENIZER_MAX_VOCAB - 1);
        (*ents)[k++] = (struct entry){used, got, (int32_t)rank};
        used += got;
        if (rank > max) max = (int32_t)rank;
    }
    if (max < 0) return fe_error_set(err, FE_E_FORMAT, "%s: no tokens", what);
    *n_ents = k;
    *n_ids = max + 1;
    return FE_OK;
}

/* Every split of a token into two tokens is a merge, ranked by the token (= its id). */
static fe_status derive_merges(fe_tokenizer *t, const char *what, fe_error *err) {
    if (fe_bpe_merges_init(&t->merges, 2 * (size_t)t->n_vocab) != FE_OK)
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory for merges", what);
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (t->type[id] != FE_TOKEN_NORMAL) continue;
        const char *s = t->blob + t->off[id];
        for (size_t k = 1; k < t->len[id]; k++) {
            int32_t l = fe_tok_lookup(t, s, k), r = fe_tok_lookup(t, s + k, t->len[id] - k);
            if (l < 0 || r < 0) continue;
            bool added;
            if (fe_bpe_merges_add(&t->merges, l, r, id, id, &added) != FE_OK)
                return fe_error_set(err, FE_E_NOMEM, "%s: out of memory for merges", what);
        }
    }
    return FE_OK;
}

fe_status fe_tokenizer_from_tiktoken(const char *text, size_t len, const char *what,
                                     const fe_added_token *specials, int n_specials,
                                     const char *pre, fe_tokenizer **out, fe_error *err) {
    *out = NULL;
    if (!what) what = "tokenizer.model";
    if (n_specials < 0 || (n_specials && !specials))
        return fe_error_set(err, FE_E_INVALID, "%s: n_specials is negative or specials NULL",
                            what);
    char *buf = NULL;
    struct entry *ents = NULL;
    size_t n_ents = 0;
    int32_t n_ranks = 0;
    fe_tokenizer *t = NULL;
    fe_status st = parse(text, len, what, &buf, &ents, &n_ents, &n_ranks, err);
    int32_t n = n_ranks;
    if (st == FE_OK && !specials) n += LLAMA31_SPECIALS;
    for (int i = 0; st == FE_OK && i < n_specials; i++)
        if (specials[i].id >= n) n = specials[i].id + 1;
    if (st == FE_OK) st = fe_tok_new(n, what, &t, err);
    for (size_t i = 0; st == FE_OK && i < n_ents; i++)
        st = fe_tok_set(t, ents[i].rank, buf + ents[i].off, ents[i].len, FE_TOKEN_NORMAL, false,
                        false, what, err);
    for (int i = 0; st == FE_OK && !specials && i < LLAMA31_SPECIALS; i++) {
        char name[40];
        if (i < LLAMA31_NAMED_COUNT) snprintf(name, sizeof name, "%s", LLAMA31_NAMED[i]);
        else snprintf(name, sizeof name, "<|reserved_special_token_%d|>", i - LLAMA31_NAMED_COUNT + 3);
        st = fe_tok_set(t, n_ranks + i, name, strlen(name), FE_TOKEN_CONTROL, false, false, what,
                        err);
        if (st == FE_OK) st = fe_tok_mark_added(t, n_ranks + i, true, false, false, err);
    }
    for (int i = 0; st == FE_OK && i < n_specials; i++) {
        const fe_added_token *a = &specials[i];
        size_t k = a->len ? a->len : strlen(a->text);
        st = fe_tok_set(t, a->id, a->text, k, a->special ? FE_TOKEN_CONTROL : FE_TOKEN_USER_DEFINED,
                        false, false, what, err);
        if (st == FE_OK) st = fe_tok_mark_added(t, a->id, a->special, a->lstrip, a->rstrip, err);
    }
    fe_free(buf);
    fe_free(ents);
    if (st == FE_OK) st = fe_tok_index(t, what, err);
    if (st == FE_OK) st = derive_merges(t, what, err);
    bool ignore, add_bos = false;
    if (!pre) pre = "llama3";
    if (st == FE_OK) st = fe_pretok_add_named(&t->pre, pre, strlen(pre), &ignore, &add_bos, err);
    if (st == FE_OK) {
        t->ignore_merges = true; /* tiktoken takes a piece that is a token whole */
        t->add_bos = add_bos;
        if (!specials) {
            t->bos = n_ranks;     /* <|begin_of_text|> */
            t->eos = n_ranks + 1; /* <|end_of_text|> */
        }
        st = fe_tok_finish(t, what, err);
    }
    if (st != FE_OK) {
        fe_tokenizer_destroy(t);
        return st;
    }
    *out = t;
    return FE_OK;
}

fe_status fe_tokenizer_load_tiktoken(const char *path, const fe_added_token *specials,
                                     int n_specials, const char *pre, fe_tokenizer **out,
                                     fe_error *err) {
    *out = NULL;
    fe_mapped m;
    fe_status st = fe_mapped_open(path, &m, err);
    if (st != FE_OK) return st;
    st = fe_tokenizer_from_tiktoken((const char *)m.data, m.size, path, specials, n_specials, pre,
                                    out, err);
    fe_mapped_close(&m);
    return st;
}
