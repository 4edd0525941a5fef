/* lm/tokenizer/bpe.c: the merge table (open addressing, XXH3 keys) and the heap-driven merge of one
 * piece (see bpe.h). Invariant: the table is never more than half full, so a probe ends. */
#include "lm/tokenizer/bpe.h"

#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"

#define EMPTY UINT64_MAX

static uint64_t pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
}

static size_t slot_of(uint64_t key, size_t mask) {
    return (size_t)fe_hash_bytes(&key, sizeof key, 0) & mask;
}

static fe_status alloc_table(fe_bpe_merges *m, size_t cap) {
    m->keys = fe_malloc(cap * sizeof *m->keys);
    m->rank = fe_malloc(cap * sizeof *m->rank);
    m->merged = fe_malloc(cap * sizeof *m->merged);
    if (!m->keys || !m->rank || !m->merged) {
        fe_bpe_merges_deinit(m);
        return FE_E_NOMEM;
    }
    memset(m->keys, 0xFF, cap * sizeof *m->keys);
    m->mask = cap - 1;
    m->count = 0;
    return FE_OK;
}

fe_status fe_bpe_merges_init(fe_bpe_merges *m, size_t expected) {
    memset(m, 0, sizeof *m);
    size_t cap = 64;
    while (cap < 2 * expected + 2) cap *= 2;
    return alloc_table(m, cap);
}

void fe_bpe_merges_deinit(fe_bpe_merges *m) {
    fe_free(m->keys);
    fe_free(m->rank);
    fe_free(m->merged);
    memset(m, 0, sizeof *m);
}

static void insert(fe_bpe_merges *m, uint64_t key, int32_t rank, int32_t merged) {
    size_t i = slot_of(key, m->mask);
    while (m->keys[i] != EMPTY) i = (i + 1) & m->mask;
    m->keys[i] = key;
    m->rank[i] = rank;
    m->merged[i] = merged;
    m->count++;
}

static fe_status grow(fe_bpe_merges *m) {
    fe_bpe_merges old = *m;
    fe_status st = alloc_table(m, (old.mask + 1) * 2);
    if (st != FE_OK) {
        *m = old;
        return st;
    }
    for (size_t i = 0; i <= old.mask; i++)
        if (old.keys[i] != EMPTY) insert(m, old.keys[i], old.rank[i], old.merged[i]);
    fe_bpe_merges_deinit(&old);
    return FE_OK;
}

fe_status fe_bpe_merges_add(fe_bpe_merges *m, int32_t left, int32_t right, int32_t rank,
                            int32_t merged, bool *added) {
    uint64_t key = pair_key(left, right);
    for (size_t i = slot_of(key, m->mask); m->keys[i] != EMPTY; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) {
            *added = false;
            return FE_OK;
        }
    }
    if (2 * (m->count + 1) > m->mask + 1) {
        fe_status st = grow(m);
        if (st != FE_OK) return st;
    }
    insert(m, key, rank, merged);
    *added = true;
    return FE_OK;
}

bool fe_bpe_merges_find(const fe_bpe_merges *m, int32_t left, int32_t right, int32_t *rank,
                        int32_t *merged) {
    uint64_t key = pair_key(left, right);
    for (size_t i = slot_of(key, m->mask); m->keys[i] != EMPTY; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) {
            *rank = m->rank[i];
            *merged = m->merged[i];
            return true;
        }
    }
    return false;
}

/* A candidate merge of the symbols at pos and next[pos]. It may go stale (either symbol
 * merged since); when popped it is applied only if the pair now at pos still has its rank.
 * That is exact: every pair formed is pushed, so a pair now at pos with a lower rank would
 * have popped first, and one with the same rank is the same merge in the same order. */
struct fe_bpe_cand {
    int32_t rank, pos;
};

fe_status fe_bpe_scratch_reserve(fe_bpe_scratch *s, size_t n) {
    if (n <= s->cap) return FE_OK;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) cap *= 2;
    /* at most n - 1 initial pairs plus two per merge (n - 1 merges): under 3n */
    int32_t *prev = fe_malloc(cap * sizeof *prev);
    int32_t *next = fe_malloc(cap * sizeof *next);
    struct fe_bpe_cand *heap = fe_malloc(3 * cap * sizeof *heap);
    if (!prev || !next || !heap) {
        fe_free(prev);
        fe_free(next);
        fe_free(heap);
        return FE_E_NOMEM;
    }
    fe_bpe_scratch_deinit(s);
    s->prev = prev;
    s->next = next;
    s->heap = heap;
    s->cap = cap;
    return FE_OK;
}

void fe_bpe_scratch_deinit(fe_bpe_scratch *s) {
    fe_free(s->prev);
    fe_free(s->next);
    fe_free(s->heap);
    memset(s, 0, sizeof *s);
}

static bool before(const struct fe_bpe_cand *a, const struct fe_bpe_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(struct fe_bpe_cand *h, size_t *n, struct fe_bpe_cand c) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&c, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static struct fe_bpe_cand heap_pop(struct fe_bpe_cand *h, size_t *n) {
    struct fe_bpe_cand top = h[0], last = h[--*n];
    size_t i = 0, len = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= len) break;
        if (c + 1 < len && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (len) h[i] = last;
    return top;
}

static void consider(const fe_bpe_merges *m, const int32_t *ids, struct fe_bpe_cand *h,
                     size_t *nh, int32_t pos, int32_t nxt) {
    if (pos < 0 || nxt < 0) return;
    int32_t rank, merged;
    if (fe_bpe_merges_find(m, ids[pos], ids[nxt], &rank, &merged))
        heap_push(h, nh, (struct fe_bpe_cand){rank, pos});
}

size_t fe_bpe_merge(const fe_bpe_merges *m, fe_bpe_scratch *s, int32_t *ids, size_t n) {
    if (n < 2) return n;
    int32_t *prev = s->prev, *next = s->next;
    struct fe_bpe_cand *h = s->heap;
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) consider(m, ids, h, &nh, (int32_t)i, (int32_t)i + 1);
    while (nh > 0) {
        struct fe_bpe_cand c = heap_pop(h, &nh);
        int32_t r = next[c.pos], rank, merged;
        /* stale: the left symbol was absorbed (-1), or the pair at pos is another one now */
        if (ids[c.pos] < 0 || r < 0) continue;
        if (!fe_bpe_merges_find(m, ids[c.pos], ids[r], &rank, &merged) || rank != c.rank)
            continue;
        ids[c.pos] = merged;
        ids[r] = -1;
        next[c.pos] = next[r];
        if (next[r] >= 0) prev[next[r]] = c.pos;
        consider(m, ids, h, &nh, prev[c.pos], c.pos);
        consider(m, ids, h, &nh, c.pos, next[c.pos]);
    }
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) ids[k++] = ids[i];
    return k;
}
