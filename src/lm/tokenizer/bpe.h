/* lm/tokenizer/bpe.h: the BPE merge table and the merge of one pre-tokenized piece.
 *
 * A merge is keyed by the ids of its two halves, (left, right) -> (rank, merged id), in an
 * open-addressing hash table (XXH3 of the 8-byte key). Merging a piece of n byte tokens pops
 * candidate pairs from a binary heap ordered by (rank, position), so a piece costs
 * O(n log n), not O(n^2); stale heap entries are recognised and dropped when popped. The
 * result is the one Hugging Face tokenizers, llama.cpp and tiktoken compute: repeatedly
 * merge the lowest-ranked adjacent pair, the leftmost among equals. */
#ifndef FE_LM_BPE_H
#define FE_LM_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_bpe_merges {
    uint64_t *keys; /* (left << 32) | right; UINT64_MAX marks an empty slot */
    int32_t *rank;
    int32_t *merged;
    size_t mask;  /* capacity - 1 (a power of two) */
    size_t count; /* merges held */
} fe_bpe_merges;

/* An empty table sized for about `expected` merges (it grows past that). FE_E_NOMEM. */
fe_status fe_bpe_merges_init(fe_bpe_merges *m, size_t expected);
void fe_bpe_merges_deinit(fe_bpe_merges *m);

/* Adds the merge (left, right) -> merged at `rank`. When the pair is already there the
 * first (lower) rank is kept and *added is false. FE_E_NOMEM when growing fails. */
fe_status fe_bpe_merges_add(fe_bpe_merges *m, int32_t left, int32_t right, int32_t rank,
                            int32_t merged, bool *added);

/* Looks the pair up: true with *rank and *merged set, false when it is not a merge. */
bool fe_bpe_merges_find(const fe_bpe_merges *m, int32_t left, int32_t right, int32_t *rank,
                        int32_t *merged);

/* Per-call working memory of fe_bpe_merge, grown to the longest piece seen; one per thread. */
typedef struct fe_bpe_scratch {
    int32_t *prev, *next;
    struct fe_bpe_cand *heap;
    size_t cap; /* symbols the arrays hold */
} fe_bpe_scratch;

/* Makes room for a piece of n symbols. FE_E_NOMEM. */
fe_status fe_bpe_scratch_reserve(fe_bpe_scratch *s, size_t n);
void fe_bpe_scratch_deinit(fe_bpe_scratch *s);

/* Merges the n symbols in ids[0..n) (byte tokens, or any ids) in place and returns how many
 * remain, in order, in ids[0..k). Every id must be >= 0. The scratch must have room for n
 * (reserve first). */
size_t fe_bpe_merge(const fe_bpe_merges *m, fe_bpe_scratch *s, int32_t *ids, size_t n);

#endif
