/* fuzz/fuzz_spm.c: libFuzzer target for SentencePiece BPE and Unigram (lm/tokenizer/spm.c,
 * unigram.c) over arbitrary bytes, with the small vocabulary of tests/support/spm_vocab.c (byte
 * tokens, scored pieces, user-defined "\n" and "  ", a control token). The first byte picks the
 * space prefix, whether specials are matched and BPE or Unigram; the rest is the text. Claims: encoding never fails; every id
 * is in the vocabulary; for BPE, decode(encode(x)) == x when x is valid UTF-8 without a "▁" of
 * its own and no prefix is added (Unigram: not checked; with this
 * vocabulary's byte tokens its unknown runs fall back to <0xXX> tokens, SentencePiece's byte_fallback) (an invalid lead byte may claim a following space's "▁" bytes, and a
 * "▁" in the text decodes as a space, as in llama.cpp); a short output buffer reports the same
 * count. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "lm/tokenizer/bytelevel.h"
#include "support/spm_vocab.c" /* the fuzzer links the library only: the vocabulary comes with it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fe_tokenizer *toks[4];
    if (!toks[0])
        for (int i = 0; i < 4; i++)
            if (!(toks[i] = spm_vocab_make(i & 1, i & 2))) __builtin_trap();
    if (size == 0) return 0;
    const bool prefix = data[0] & 1, allow_special = data[0] & 2, unigram = data[0] & 4;
    const fe_tokenizer *t = toks[prefix | (unigram ? 2 : 0)];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int32_t *ids = NULL;
    size_t n = 0;
    if (fe_tokenizer_encode_alloc(t, text, len, false, allow_special, &ids, &n, NULL) != FE_OK)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= fe_tokenizer_n_vocab(t)) __builtin_trap();
    char *back = malloc(3 * len + 8);
    size_t blen;
    if (fe_tokenizer_decode(t, ids, n, back, 3 * len + 8, &blen, NULL) != FE_OK) __builtin_trap();
    bool plain = !prefix && !unigram && fe_utf8_valid(text, len) &&
                 !memmem(text, len, "\xe2\x96\x81", 3);
    if (plain && (blen != len || memcmp(back, text, len) != 0))
        __builtin_trap();
    if (n > 1) {
        int32_t small[1];
        size_t need;
        if (fe_tokenizer_encode(t, text, len, false, allow_special, small, 1, &need, NULL) !=
                FE_E_BOUNDS || need != n || small[0] != ids[0])
            __builtin_trap();
    }
    free(back);
    fe_free(ids);
    return 0;
}
