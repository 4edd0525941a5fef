/* lm/tokenizer/tokenizer_internal.h: the tokenizer object and the builder every loader drives
 * (arrays, tokenizer.json, GGUF, tiktoken).
 *
 * Building goes: fe_tok_new (ids 0..n-1, all unset) -> fe_tok_set per token -> fe_tok_index
 * (the raw-bytes -> id table and the 256 byte tokens) -> fe_tok_merge per merge and
 * fe_tok_mark_added per added token, with a pre-tokenizer chain on t->pre -> fe_tok_finish.
 * On any error the caller destroys the half-built object with fe_tokenizer_destroy.
 *
 * Invariants after fe_tok_finish: every id has a piece (possibly empty, type UNUSED for a gap
 * in a file's ids); byte_id[b] is the token whose piece is the single byte b, or -1 when the
 * vocabulary has none (the byte is then dropped from a piece before merging); every merge's
 * three ids are valid; `added` is sorted by (first byte, length descending) and
 * added_start[b]..added_start[b+1] are those whose text starts with byte b. */
#ifndef FE_LM_TOKENIZER_INTERNAL_H
#define FE_LM_TOKENIZER_INTERNAL_H

#include "lm/tokenizer/bpe.h"
#include "lm/tokenizer/pretokenize.h"
#include "lm/tokenizer/spm.h"
#include "lm/tokenizer/spm_normalize.h"
#include "lm/tokenizer/unigram.h"
#include "lm/tokenizer/tokenizer.h"

struct fe_added_ref {
    int32_t id;
    bool special, lstrip, rstrip;
    unsigned char first; /* first byte of the text, and its length: the sort keys */
    uint32_t len;
};

struct fe_tokenizer {
    int32_t n_vocab;
    char *blob; /* every token's raw bytes */
    size_t blob_len, blob_cap;
    size_t *off;   /* (n_vocab) piece of id i: blob + off[i], len[i] bytes */
    uint32_t *len; /* (n_vocab) */
    uint8_t *type; /* (n_vocab) fe_token_type; 0 while unset during building */
    int32_t *index; /* raw bytes -> id, open addressing, -1 empty */
    size_t index_mask;
    int32_t byte_id[256];
    fe_bpe_merges merges;
    struct fe_added_ref *added;
    int n_added, added_cap;
    int32_t added_start[257];
    fe_pretok pre;
    bool ignore_merges; /* a piece that is itself a token is not merged (Llama 3) */
    bool add_bos;
    int32_t bos, eos;
    /* SentencePiece BPE (spm.h) instead of byte-level BPE: pieces hold "▁" for spaces,
     * stretches are encoded by scores, bytes fall back to the <0xXX> tokens in spm_byte */
    bool spm;
    bool add_space_prefix; /* spm: a "▁" before the first stretch and after added tokens */
    float *scores;         /* spm: (n_vocab) piece scores */
    bool unigram;          /* spm: Unigram (unigram.h) rather than BPE over the scores */
    int32_t unk_id;        /* unigram: the unknown token (-1: none, such characters dropped) */
    double unk_score;      /* unigram: its score, the lowest normal piece's minus 10 */
    bool byte_fallback;    /* unigram: the vocabulary has BYTE tokens; what no piece covers
                              is spelled in them (SentencePiece's byte_fallback), not unk */
    bool sp_normalize;     /* spm: each stretch goes through spm_norm first */
    bool prefix_unless_space; /* spm: no space prefix before a stretch that starts with a
                                 space (Hugging Face's Metaspace, prepend_scheme "always") */
    fe_spm_normalizer spm_norm;
    int32_t spm_byte[256]; /* spm: the token of each byte, -1 when none */
    char *text_blob;       /* spm: what each token decodes to ("▁" as a space, <0xXX> as the */
    size_t *text_off;      /* byte), text_blob + text_off[id], text_len[id] bytes */
    uint32_t *text_len;
    size_t max_piece;
    char *tmp; /* build-time scratch for converted strings */
    size_t tmp_cap;
};

fe_status fe_tok_new(int32_t n_vocab, const char *what, fe_tokenizer **out, fe_error *err);
/* Decodes standard padded base64 s[0..n) into out (n * 3 / 4 bytes); false when malformed
 * (tiktoken ranks, tokenizer.json's precompiled charsmap). */
bool fe_tok_b64_decode(const char *s, size_t n, char *out, size_t *len);
/* Gives id its text s[0..n): byte-level text decoded to raw bytes when byte_level, raw bytes
 * otherwise. A second set of the same id is FE_E_FORMAT unless overwrite. */
fe_status fe_tok_set(fe_tokenizer *t, int32_t id, const char *s, size_t n, fe_token_type type,
                     bool byte_level, bool overwrite, const char *what, fe_error *err);
fe_status fe_tok_index(fe_tokenizer *t, const char *what, fe_error *err);
/* The merge left+right at rank; both halves and their concatenation must be tokens. A pair
 * given twice keeps its first rank. `what` names the merge in messages ("merges[12]"). */
fe_status fe_tok_merge(fe_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn,
                       int32_t rank, bool byte_level, const char *what, fe_error *err);
/* The same for a merge written as one line "left right" (byte-level): split at the first
 * space after the first byte, as llama.cpp does; a line without one is FE_E_FORMAT. */
fe_status fe_tok_merge_line(fe_tokenizer *t, const char *m, size_t n, int32_t rank,
                            const char *what, fe_error *err);
/* Marks id as an added token, matched in text before pre-tokenization. */
fe_status fe_tok_mark_added(fe_tokenizer *t, int32_t id, bool special, bool lstrip, bool rstrip,
                            fe_error *err);
fe_status fe_tok_finish(fe_tokenizer *t, const char *what, fe_error *err);

/* Raw bytes -> id (-1 when none); valid from fe_tok_index on. */
int32_t fe_tok_lookup(const fe_tokenizer *t, const char *s, size_t n);

/* A short printable form of s[0..n) for messages: at most 40 bytes, "..." when cut. */
const char *fe_tok_quote(const char *s, size_t n, char buf[48]);

#endif
