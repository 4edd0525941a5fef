/* tests/support/tiny_llama.h: the tiny Llama-shaped model the LM tests share (vocab 320,
 * hidden 64, 2 layers, 4/2 heads, head_dim 16, FFN 160), and a seeded draw of token ids. */
#ifndef FE_TESTS_TINY_LLAMA_H
#define FE_TESTS_TINY_LLAMA_H

#include <stdbool.h>
#include <stdint.h>

#include "lm/model/config.h"

/* tied: the head is the embedding; llama3: theta 500000 with Llama 3 scaling (original
 * context 64), bos 1 and eos {2, 7}; otherwise theta 10000, no bos/eos. eps 1e-5. */
fe_lm_config tiny_llama_config(bool tied, bool llama3);
/* Fails the test unless every field of a and b agrees (rms_eps within eps_tol). */
void tiny_llama_expect_same_config(const fe_lm_config *a, const fe_lm_config *b, double eps_tol);
/* n ids in [0, V) from an LCG seeded with seed; caller free()s. */
int32_t *tiny_llama_tokens(int n, int64_t V, uint64_t seed);

#endif
