/* tests/support/spm_vocab.h: a small SentencePiece BPE vocabulary for tests and the fuzzer:
 * ids 0..3 <pad> <eos> <bos> (CONTROL) <unk> (UNKNOWN), 4..259 the byte tokens <0x00>..<0xFF>,
 * then pieces with scores (listed in spm_vocab.c), "\n" and "  " USER_DEFINED and
 * "<turn>" CONTROL. */
#ifndef FE_TESTS_SPM_VOCAB_H
#define FE_TESTS_SPM_VOCAB_H

#include "lm/tokenizer/tokenizer.h"

enum { SPM_BYTE0 = 4, SPM_PIECES = 260 };

/* The id of piece s in the vocabulary (-1 when none). */
int32_t spm_vocab_id(const char *s);
/* Builds it; add_space_prefix as given; unigram: as a Unigram vocabulary (unknown <unk>)
 * rather than BPE. NULL on failure (message printed). */
fe_tokenizer *spm_vocab_make(bool add_space_prefix, bool unigram);

#endif
