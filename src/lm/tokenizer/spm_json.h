/* lm/tokenizer/spm_json.h: a SentencePiece BPE tokenizer (spm.h) from a Hugging Face
 * tokenizer.json as Gemma ships one (EmbeddingGemma included): model type "BPE" with
 * byte_fallback true, the space escaped to "▁" by a Replace normalizer (a Prepend "▁" in it
 * asks for the space prefix), a vocab of pieces with <0xXX> byte tokens, and a merges list.
 *
 * The merges list becomes piece scores: the piece a merge of rank r makes scores -r, so the
 * SentencePiece loop (highest score first) merges in the merges' order; pieces no merge makes
 * score below all. Where two merges make the same piece the first (lowest rank) counts, which
 * is where SentencePiece-by-score and BPE-by-rank could part; tokenizers converted from a
 * SentencePiece model (Gemma's) list merges in score order, so they agree.
 *
 * The post-processor's TemplateProcessing "single" gives the special tokens put before and
 * after the text (Gemma: <bos> first; EmbeddingGemma: <bos> ... <eos>). */
#ifndef FE_LM_SPM_JSON_H
#define FE_LM_SPM_JSON_H

#include "lm/tokenizer/tokenizer.h"

enum { FE_SPM_JSON_MAX_AROUND = 4 };

typedef struct fe_spm_json_around {
    int n_before, n_after;
    int32_t before[FE_SPM_JSON_MAX_AROUND], after[FE_SPM_JSON_MAX_AROUND];
} fe_spm_json_around;

/* Whether the tokenizer.json text is a SentencePiece-style BPE (byte_fallback true). */
bool fe_spm_json_is(const char *text, size_t len);

/* FE_E_FORMAT naming the key for bad JSON or a missing/mistyped part, FE_E_UNSUPPORTED for a
 * model other than BPE-with-byte-fallback or a normalizer other than Replace/Prepend of
 * "▁", FE_E_NOMEM. */
fe_status fe_spm_json_load(const char *text, size_t len, const char *what, fe_tokenizer **out,
                           fe_spm_json_around *around, fe_error *err);

#endif
