/* tests/test_tokenizer_spm.c: SentencePiece BPE (lm/tokenizer/spm.c) on a small vocabulary
 * (support/spm_vocab.c): merges go by score, highest first and leftmost among equals, not by
 * a merge list; characters outside the vocabulary fall back to their bytes; spaces are "▁";
 * the space prefix goes first and after added tokens; USER_DEFINED pieces are always matched,
 * CONTROL ones only when specials are allowed; decoding gives the text back. And the builder
 * refuses malformed vocabularies by name. The real Gemma tokenizer is checked against
 * llama.cpp's ids in test_gemma3. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "support/spm_vocab.h"

#define SP "\xe2\x96\x81"

static void expect_ids(fe_tokenizer *t, const char *text, bool special, const char *const *pieces, int n) {
    int32_t *ids;
    size_t got;
    fe_error err;
    assert_int_equal(fe_tokenizer_encode_alloc(t, text, strlen(text), false, special, &ids, &got, &err), FE_OK);
    bool same = (int)got == n;
    for (int i = 0; same && i < n; i++) {
        int32_t want = spm_vocab_id(pieces[i]);
        if (want < 0 && strncmp(pieces[i], "<0x", 3) == 0) want = SPM_BYTE0 + (int32_t)strtol(pieces[i] + 3, NULL, 16);
        if (want < 0 && strcmp(pieces[i], "<turn>") == 0) want = spm_vocab_id("<turn>");
        same = ids[i] == want;
    }
    if (!same) {
        for (size_t i = 0; i < got; i++) print_message("%d ", ids[i]);
        fail_msg("\"%s\": %zu ids, not the %d expected", text, got, n);
    }
    fe_free(ids);
}

#define IDS(t, text, special, ...)                                                               \
    do {                                                                                         \
        const char *const p_[] = {__VA_ARGS__};                                                  \
        expect_ids(t, text, special, p_, (int)(sizeof p_ / sizeof p_[0]));                       \
    } while (0)

static void pieces_merge_by_score_highest_first(void **s) {
    (void)s;
    fe_tokenizer *t = spm_vocab_make(false, false);
    assert_non_null(t);
    IDS(t, "abc", false, "abc");               /* ab (-3) first, then ab+c = abc */
    IDS(t, "bcc", false, "bc", "c");           /* bc (-4) and cc (-4) tie: the leftmost */
    IDS(t, "ccbc", false, "cc", "bc");
    IDS(t, "xxx", false, "xxx");               /* x+x is a piece (xx), so xxx can be reached */
    IDS(t, "hi", false, "hi");
    fe_tokenizer_destroy(t);
}

static void spaces_become_the_space_piece(void **s) {
    (void)s;
    fe_tokenizer *t = spm_vocab_make(false, false);
    IDS(t, "a hi", false, "a", SP "hi");
    IDS(t, " ab", false, SP "ab");
    IDS(t, "c c", false, "c", SP, "c");       /* "▁c" is not a piece */
    fe_tokenizer_destroy(t);
    t = spm_vocab_make(true, false);                  /* a space first, and after added tokens */
    IDS(t, "hi", false, SP "hi");
    IDS(t, "hi<turn>hi", true, SP "hi", "<turn>", SP "hi");
    fe_tokenizer_destroy(t);
}

static void unknown_characters_fall_back_to_bytes(void **s) {
    (void)s;
    fe_tokenizer *t = spm_vocab_make(false, false);
    IDS(t, "a\xc3\xa9", false, "a", "\xc3\xa9");                    /* é is a piece */
    IDS(t, "\xe2\x98\x83", false, "<0xE2>", "<0x98>", "<0x83>");    /* ☃ is not */
    /* an invalid lead byte claims the bytes after it as one character (llama.cpp's split):
     * both fall back to bytes */
    IDS(t, "\xff" "a", false, "<0xFF>", "<0x61>");
    IDS(t, "a\xff", false, "a", "<0xFF>");
    fe_tokenizer_destroy(t);
}

static void added_pieces_match_before_merging(void **s) {
    (void)s;
    fe_tokenizer *t = spm_vocab_make(false, false);
    IDS(t, "a\nb", false, "a", "\n", "b");        /* USER_DEFINED: always */
    IDS(t, "a   b", false, "a", "  ", SP, "b");  /* a run of two, then the last space */
    IDS(t, "a<turn>", true, "a", "<turn>");       /* CONTROL: when specials are allowed */
    int32_t *ids;
    size_t n;
    fe_error err;
    assert_int_equal(fe_tokenizer_encode_alloc(t, "<turn>", 6, false, false, &ids, &n, &err), FE_OK);
    assert_true(n > 1); /* not allowed: the text is tokenized as text */
    fe_free(ids);
    fe_tokenizer_destroy(t);
}

static void decoding_gives_the_text_back(void **s) {
    (void)s;
    fe_tokenizer *t = spm_vocab_make(false, false);
    /* (an invalid byte inside the text is not given back: as in llama.cpp, its lead byte
     * claims the bytes after it as one character, a space's "▁" included) */
    const char *texts[] = {"a hi abc", " leading", "x\n\n  y \xe2\x98\x83 end \xff\xfe", ""};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        int32_t *ids;
        size_t n, len;
        fe_error err;
        char out[256];
        assert_int_equal(fe_tokenizer_encode_alloc(t, texts[k], strlen(texts[k]), false, false, &ids, &n, &err), FE_OK);
        assert_int_equal(fe_tokenizer_decode(t, ids, n, out, sizeof out, &len, &err), FE_OK);
        assert_int_equal(len, strlen(texts[k]));
        assert_memory_equal(out, texts[k], len);
        fe_free(ids);
    }
    assert_true(fe_tokenizer_is_sentencepiece(t));
    fe_tokenizer_destroy(t);
}

static void malformed_vocabularies_are_refused_by_name(void **s) {
    (void)s;
    const char *tokens[3] = {"a", "b", "ab"};
    float scores[3] = {0, 0, NAN};
    fe_spm_spec spec = fe_spm_spec_default();
    spec.tokens = tokens, spec.n_tokens = 3;
    fe_tokenizer *t = NULL;
    fe_error err;
    assert_int_equal(fe_tokenizer_create_spm(&spec, &t, &err), FE_E_FORMAT); /* no scores */
    assert_non_null(strstr(err.message, "scores"));
    spec.scores = scores;
    assert_int_equal(fe_tokenizer_create_spm(&spec, &t, &err), FE_E_FORMAT); /* NaN */
    assert_non_null(strstr(err.message, "token 2"));
    scores[2] = -1;
    spec.bos_id = 7;
    assert_int_equal(fe_tokenizer_create_spm(&spec, &t, &err), FE_E_FORMAT); /* BOS past it */
    assert_null(t);
    spec.bos_id = -1, spec.n_tokens = 0;
    assert_int_equal(fe_tokenizer_create_spm(&spec, &t, &err), FE_E_FORMAT);
    spec.n_tokens = 3;
    assert_int_equal(fe_tokenizer_create_spm(&spec, &t, &err), FE_OK);
    fe_tokenizer_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pieces_merge_by_score_highest_first),
        cmocka_unit_test(spaces_become_the_space_piece),
        cmocka_unit_test(unknown_characters_fall_back_to_bytes),
        cmocka_unit_test(added_pieces_match_before_merging),
        cmocka_unit_test(decoding_gives_the_text_back),
        cmocka_unit_test(malformed_vocabularies_are_refused_by_name),
    };
    return cmocka_run_group_tests_name("tokenizer_spm", tests, NULL, NULL);
}
