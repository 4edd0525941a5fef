/* lm/tokenizer/unigram.h: SentencePiece Unigram as llama.cpp's UGM tokenizer runs it (T5 and
 * other encoders): the segmentation of each stretch whose pieces' scores sum highest (Viterbi
 * over byte offsets at character boundaries), NORMAL pieces with their scores, USER_DEFINED ones
 * with score 0; a character no piece starts with is the unknown token, scored min score - 10,
 * and a run of them is one unknown token. Spaces are "▁" and the space prefix is as for
 * SentencePiece BPE (spm.h). With BYTE tokens in the vocabulary (SentencePiece's byte_fallback)
 * a run of unknown characters is spelled in <0xXX> tokens instead. SentencePiece's normaliser
 * (spm_normalize.h), when the tokenizer has one, runs on the stretch before this. */
#ifndef FE_LM_UNIGRAM_H
#define FE_LM_UNIGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"
#include "lm/tokenizer/spm.h"

struct fe_tokenizer;

/* Encodes text[0..n) (raw) as spm.h's fe_spm_encode does, by Unigram; the scratch is shared
 * with it. FE_E_NOMEM. */
fe_status fe_unigram_encode(const struct fe_tokenizer *t, fe_spm_scratch *s, const char *text,
                            size_t n, bool space_prefix, fe_spm_emit_fn emit, void *ctx,
                            fe_error *err);

#endif
