/* lm/tokenizer/spm.h: SentencePiece BPE as llama.cpp runs it for tokenizer.ggml.model "llama"
 * (Gemma, Llama 2, Mistral): no merge table, only piece scores.
 *
 * A stretch of text (between added tokens) has its spaces escaped to U+2581 "▁" (one space
 * first when the tokenizer adds a space prefix and the stretch follows the start or an added
 * token), is split into UTF-8 characters, and adjacent symbols are merged while their
 * concatenation is a piece: always the candidate pair with the highest score, the leftmost
 * among equal scores (llama.cpp's llm_tokenizer_spm_session). A final symbol that is not a
 * piece (a character outside the vocabulary) falls back to its bytes as <0xXX> tokens. */
#ifndef FE_LM_SPM_H
#define FE_LM_SPM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

struct fe_tokenizer;

/* After the pieces are set and indexed (fe_tok_index): the <0xXX> byte tokens (else a
 * one-byte piece) into spm_byte, and the decoded text of every token (BYTE tokens their
 * byte, others with "▁" as a space) into text_blob. FE_E_NOMEM. */
fe_status fe_spm_finish(struct fe_tokenizer *t, const char *what, fe_error *err);

/* Working memory of one encode call, grown to the longest stretch. */
typedef struct fe_spm_scratch {
    char *text;                 /* the escaped stretch */
    struct fe_spm_sym *sym;
    struct fe_spm_pair *heap;
    size_t text_cap, sym_cap, heap_cap, heap_n;
} fe_spm_scratch;

void fe_spm_scratch_deinit(fe_spm_scratch *s);

typedef fe_status (*fe_spm_emit_fn)(void *ctx, int32_t id);

/* Encodes text[0..n) (raw, unescaped), calling emit for each id in order; space_prefix: one
 * "▁" first. FE_E_NOMEM. */
fe_status fe_spm_encode(const struct fe_tokenizer *t, fe_spm_scratch *s, const char *text,
                        size_t n, bool space_prefix, fe_spm_emit_fn emit, void *ctx,
                        fe_error *err);

#endif
