/* fuzz/fuzz_wordpiece.c: libFuzzer target for the WordPiece tokenizer over arbitrary input. The
 * first byte picks the mode: even, the rest is a tokenizer.json (loading must fail cleanly or
 * give a tokenizer that encodes a fixed text); odd, the rest is text for a built-in BERT-style
 * vocabulary with every normaliser switch drawn from the byte's bits. Claims: never a crash or
 * leak; invalid UTF-8 is refused, valid text always encodes; every id is in the vocabulary;
 * [CLS] first and [SEP] last; the maximum holds; clean_text alone normalises idempotently. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "lm/tokenizer/bert_normalize.h"
#include "lm/tokenizer/wordpiece.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s", "un", "##aff", "##able", "a",
    "##a", "b", "##b", ",", ".", "!", "(", ")", "'", "cafe", "中", "国", "##中", "hello", "world",
    "##ing", "i", "##i", "e", "##e", "ß", "ss", "你", "好", "😀", "def", "_", ":",
};

static void check_ids(const fe_wordpiece *w, const int32_t *ids, size_t n, int64_t max) {
    if (n < 2 || ids[0] != fe_wordpiece_cls(w) || ids[n - 1] != fe_wordpiece_sep(w)) abort();
    if (max > 0 && (int64_t)n > max) abort();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= fe_wordpiece_n_vocab(w)) abort();
}

static void built_in(uint8_t mode, const char *text, size_t n) {
    const char *specials[3] = {"[CLS]", "[SEP]", "[MASK]"};
    fe_wordpiece_spec sp = fe_wordpiece_spec_default();
    sp.tokens = VOCAB, sp.n_tokens = (int)(sizeof VOCAB / sizeof VOCAB[0]), sp.specials = specials, sp.n_specials = 3;
    sp.clean_text = mode & 2, sp.chinese_chars = mode & 4, sp.strip_accents = mode & 8;
    sp.lowercase = mode & 16, sp.max_chars_per_word = mode & 32 ? 3 : 100;
    sp.max_tokens = mode & 64 ? 2 + (mode >> 7) * 3 : 0;
    fe_wordpiece *w;
    if (fe_wordpiece_create(&sp, &w, NULL) != FE_OK) abort();
    int32_t *ids;
    size_t n_ids;
    bool valid = fe_utf8_check(text, n, NULL) == FE_OK;
    fe_status st = fe_wordpiece_encode(w, text, n, 0, &ids, &n_ids, NULL);
    if (valid != (st == FE_OK) && st != FE_E_NOMEM) abort();
    if (st == FE_OK) {
        check_ids(w, ids, n_ids, sp.max_tokens);
        fe_free(ids);
        char *a, *b;
        size_t na, nb;
        if (fe_wordpiece_normalize(w, text, n, &a, &na, NULL) == FE_OK) {
            if (fe_wordpiece_normalize(w, a, na, &b, &nb, NULL) == FE_OK) {
                /* clean_text alone is idempotent (CJK spacing adds spaces again, and lower-casing
                 * U+0130 makes a mark that stripping would then drop) */
                bool clean_only = sp.clean_text && !sp.chinese_chars && !sp.strip_accents && !sp.lowercase;
                if (clean_only && (na != nb || memcmp(a, b, na) != 0)) abort();
                fe_free(b);
            }
            fe_free(a);
        }
    }
    fe_wordpiece_destroy(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *rest = (const char *)data + 1;
    if (data[0] & 1) {
        built_in(data[0], rest, size - 1);
        return 0;
    }
    fe_wordpiece *w;
    if (fe_wordpiece_from_json(rest, size - 1, "fuzz", &w, NULL) != FE_OK) return 0;
    int32_t *ids;
    size_t n;
    static const char text[] = "Hello, WORLD! Café 中国 [SEP] unaffable";
    if (fe_wordpiece_encode(w, text, sizeof text - 1, 0, &ids, &n, NULL) == FE_OK) {
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= fe_wordpiece_n_vocab(w)) abort();
        fe_free(ids);
    }
    fe_wordpiece_destroy(w);
    return 0;
}
