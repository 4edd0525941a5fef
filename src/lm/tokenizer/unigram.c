/* lm/tokenizer/unigram.c: SentencePiece Unigram by Viterbi (see unigram.h). best[e] is the
 * highest score sum of a segmentation of the first e bytes and the piece that ends it; starts
 * are taken in increasing order and a later candidate replaces an earlier one only when its
 * sum is strictly higher (llama.cpp's order, so ties resolve alike). With byte fallback, a run
 * of unknown characters is spelled in its bytes' <0xXX> tokens, as SentencePiece does. */
#include "lm/tokenizer/unigram.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/tokenizer/tokenizer_internal.h"

typedef struct best {
    double score;
    int64_t start; /* -1: not reached */
    int32_t id;
} best;

static size_t utf8_len(unsigned char c) {
    static const size_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lens[c >> 4];
}

fe_status fe_unigram_encode(const fe_tokenizer *t, fe_spm_scratch *s, const char *text, size_t n,
                            bool space_prefix, fe_spm_emit_fn emit, void *ctx, fe_error *err) {
    static const char sp[3] = {'\xe2', '\x96', '\x81'};
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += text[i] == ' ';
    const size_t len = n + 2 * spaces + (space_prefix ? 3 : 0);
    if (len == 0) return FE_OK;
    char *x = fe_malloc(len);
    best *b = fe_malloc((len + 1) * sizeof *b);
    size_t *out = fe_malloc((len + 1) * sizeof *out); /* the ends e of the pieces, last first */
    (void)s;
    if (!x || !b || !out) {
        fe_free(x), fe_free(b), fe_free(out);
        return fe_error_set(err, FE_E_NOMEM, "tokenizer: out of memory while encoding");
    }
    size_t k = 0;
    if (space_prefix) memcpy(x, sp, 3), k = 3;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == ' ') memcpy(x + k, sp, 3), k += 3;
        else x[k++] = text[i];
    }
    for (size_t i = 0; i <= len; i++) b[i] = (best){-INFINITY, -1, -1};
    b[0].score = 0;
    b[0].start = 0;
    const size_t longest = t->max_piece;
    for (size_t i = 0; i < len; i++) {
        if (b[i].start < 0) continue;
        size_t c = utf8_len((unsigned char)x[i]);
        if (c > len - i) c = len - i;
        bool single = false; /* a piece covers the character at i */
        for (size_t m = 1; m <= longest && i + m <= len; m++) {
            int32_t id = fe_tok_lookup(t, x + i, m);
            if (id < 0) continue;
            fe_token_type ty = (fe_token_type)t->type[id];
            if (ty != FE_TOKEN_NORMAL && ty != FE_TOKEN_USER_DEFINED) continue;
            double sc = b[i].score + (ty == FE_TOKEN_USER_DEFINED ? 0.0 : t->scores[id]);
            if (m == c) single = true;
            if (sc > b[i + m].score) b[i + m] = (best){sc, (int64_t)i, id};
        }
        if (!single && b[i].score + t->unk_score > b[i + c].score)
            b[i + c] = (best){b[i].score + t->unk_score, (int64_t)i, t->unk_id};
    }
    size_t m = 0; /* backtrack, merging runs of the unknown token: a run's piece is its last */
    bool prev_unknown = false;
    for (size_t e = len; e > 0; e = (size_t)b[e].start) {
        bool unknown = b[e].id == t->unk_id;
        if (prev_unknown && unknown) b[out[m - 1]].start = b[e].start;
        else out[m++] = e;
        prev_unknown = unknown;
    }
    fe_status st = FE_OK;
    for (size_t i = m; i-- > 0 && st == FE_OK;) {
        const best *p = &b[out[i]];
        if (p->id != t->unk_id || !t->byte_fallback) {
            if (p->id >= 0) st = emit(ctx, p->id);
            continue;
        }
        for (size_t k = (size_t)p->start; k < out[i] && st == FE_OK; k++) {
            int32_t id = t->spm_byte[(unsigned char)x[k]];
            if (id < 0) id = t->unk_id; /* a byte with no token: unknown (or dropped) */
            if (id >= 0) st = emit(ctx, id);
        }
    }
    fe_free(x), fe_free(b), fe_free(out);
    return st;
}
