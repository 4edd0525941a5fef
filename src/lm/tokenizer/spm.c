/* lm/tokenizer/spm.c: SentencePiece BPE over piece scores (see spm.h). Symbols live in one
 * array as (offset, length, prev, next) over the escaped text; candidate pairs in a binary
 * max-heap ordered by (score, -left); a popped pair whose symbols changed since it was pushed
 * (either emptied, or their lengths no longer add up to the pair's) is stale and dropped. */
#include "lm/tokenizer/spm.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/tokenizer/tokenizer_internal.h"

struct fe_spm_sym {
    size_t off, n;
    int64_t prev, next;
};

struct fe_spm_pair {
    float score;
    int64_t left, right;
    size_t size;
};

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

fe_status fe_spm_finish(fe_tokenizer *t, const char *what, fe_error *err) {
    for (int b = 0; b < 256; b++) {
        static const char hex[] = "0123456789ABCDEF";
        char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'}, c = (char)b;
        t->spm_byte[b] = fe_tok_lookup(t, name, 6);
        if (t->spm_byte[b] < 0) t->spm_byte[b] = fe_tok_lookup(t, &c, 1);
    }
    t->text_blob = fe_malloc(t->blob_len + 1);
    t->text_off = fe_calloc((size_t)t->n_vocab, sizeof *t->text_off);
    t->text_len = fe_calloc((size_t)t->n_vocab, sizeof *t->text_len);
    if (!t->text_blob || !t->text_off || !t->text_len)
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory for the token texts", what);
    size_t k = 0; /* a token's text is never longer than its piece */
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *p = t->blob + t->off[id];
        size_t n = t->len[id];
        t->text_off[id] = k;
        if (t->type[id] == FE_TOKEN_BYTE && n == 6 && memcmp(p, "<0x", 3) == 0 && p[5] == '>' &&
            hex_digit(p[3]) >= 0 && hex_digit(p[4]) >= 0) {
            t->text_blob[k++] = (char)(hex_digit(p[3]) * 16 + hex_digit(p[4]));
        } else {
            for (size_t i = 0; i < n; i++) {
                if (i + 2 < n && memcmp(p + i, "\xe2\x96\x81", 3) == 0) {
                    t->text_blob[k++] = ' ';
                    i += 2;
                } else {
                    t->text_blob[k++] = p[i];
                }
            }
        }
        t->text_len[id] = (uint32_t)(k - t->text_off[id]);
    }
    return FE_OK;
}

void fe_spm_scratch_deinit(fe_spm_scratch *s) {
    fe_free(s->text);
    fe_free(s->sym);
    fe_free(s->heap);
    memset(s, 0, sizeof *s);
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = fe_realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

/* a before b in the heap: the higher score, then the leftmost */
static bool before(const struct fe_spm_pair *a, const struct fe_spm_pair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(fe_spm_scratch *s, struct fe_spm_pair p) {
    size_t i = s->heap_n++;
    while (i > 0 && before(&p, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = p;
}

static struct fe_spm_pair heap_pop(fe_spm_scratch *s) {
    struct fe_spm_pair top = s->heap[0], last = s->heap[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c])) c++;
        if (!before(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

/* the pair (left, right) as a candidate when its text is a piece */
static bool try_pair(const fe_tokenizer *t, fe_spm_scratch *s, int64_t left, int64_t right) {
    if (left < 0 || right < 0) return true;
    const struct fe_spm_sym *l = &s->sym[left], *r = &s->sym[right];
    int32_t id = fe_tok_lookup(t, s->text + l->off, l->n + r->n);
    if (id < 0) return true;
    if (!grow((void **)&s->heap, &s->heap_cap, s->heap_n + 1, sizeof *s->heap)) return false;
    heap_push(s, (struct fe_spm_pair){t->scores[id], left, right, l->n + r->n});
    return true;
}

/* the length of the UTF-8 character a lead byte starts (1 for a stray continuation byte) */
static size_t utf8_len(unsigned char c) {
    static const size_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lens[c >> 4];
}

fe_status fe_spm_encode(const fe_tokenizer *t, fe_spm_scratch *s, const char *text, size_t n,
                        bool space_prefix, fe_spm_emit_fn emit, void *ctx, fe_error *err) {
    static const char sp[3] = {'\xe2', '\x96', '\x81'}; /* U+2581, SentencePiece's space */
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += text[i] == ' ';
    size_t len = n + 2 * spaces + (space_prefix ? 3 : 0); /* a space is 1 byte, "▁" 3 */
    if (len == 0) return FE_OK;
    s->heap_n = 0;
    if (!grow((void **)&s->text, &s->text_cap, len, 1) ||
        !grow((void **)&s->sym, &s->sym_cap, len, sizeof *s->sym))
        return fe_error_set(err, FE_E_NOMEM, "tokenizer: out of memory while encoding");
    size_t k = 0;
    if (space_prefix) memcpy(s->text, sp, 3), k = 3;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == ' ') memcpy(s->text + k, sp, 3), k += 3;
        else s->text[k++] = text[i];
    }
    int64_t count = 0;
    for (size_t off = 0; off < len; count++) {
        size_t c = utf8_len((unsigned char)s->text[off]);
        if (c > len - off) c = len - off;
        s->sym[count] = (struct fe_spm_sym){off, c, count - 1, off + c == len ? -1 : count + 1};
        off += c;
    }
    bool ok = true;
    for (int64_t i = 1; ok && i < count; i++) ok = try_pair(t, s, i - 1, i);
    while (ok && s->heap_n) {
        struct fe_spm_pair p = heap_pop(s);
        struct fe_spm_sym *l = &s->sym[p.left], *r = &s->sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s->sym[r->next].prev = p.left;
        ok = try_pair(t, s, l->prev, p.left) && try_pair(t, s, p.left, l->next);
    }
    if (!ok) return fe_error_set(err, FE_E_NOMEM, "tokenizer: out of memory while encoding");
    for (int64_t i = 0; i >= 0; i = s->sym[i].next) {
        const struct fe_spm_sym *y = &s->sym[i];
        int32_t id = fe_tok_lookup(t, s->text + y->off, y->n);
        if (id >= 0) {
            fe_status st = emit(ctx, id);
            if (st != FE_OK) return st;
            continue;
        }
        for (size_t j = 0; j < y->n; j++) { /* byte fallback; a byte without a token is dropped */
            int32_t b = t->spm_byte[(unsigned char)s->text[y->off + j]];
            fe_status st = b >= 0 ? emit(ctx, b) : FE_OK;
            if (st != FE_OK) return st;
        }
    }
    return FE_OK;
}
