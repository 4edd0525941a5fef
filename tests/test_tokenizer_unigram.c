/* tests/test_tokenizer_unigram.c: SentencePiece Unigram (lm/tokenizer/unigram.c) on small
 * vocabularies: the segmentation whose scores sum highest wins (not the longest first piece,
 * not the fewest pieces); ties go to the earlier split, as llama.cpp's order gives; user-defined
 * pieces score 0; a character no piece starts with is the unknown token and a run of them one
 * unknown token; spaces are "▁" with the space prefix; decoding gives the text back where no
 * unknown token was needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "lm/tokenizer/tokenizer.h"

#define SP "\xe2\x96\x81"

static const char *const PIECES[] = {"<unk>", "<s>", SP, "a", "b", "c", SP "a", SP "ab",
                                     "ab", "abc", "bc", "<sep>", "d"};
static const float SCORES[] = {0, 0, -1.0f, -1.5f, -2.0f, -2.0f, -1.0f, -2.5f,
                               -2.0f, -5.0f, -1.0f, 0, -9.0f};
static const int32_t TYPES[] = {2, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1};
enum { N = sizeof PIECES / sizeof PIECES[0] };

static int32_t id_of(const char *s) {
    for (int i = 0; i < N; i++)
        if (strcmp(PIECES[i], s) == 0) return i;
    return -1;
}

static fe_tokenizer *make(bool prefix) {
    fe_spm_spec spec = fe_spm_spec_default();
    spec.tokens = PIECES, spec.scores = SCORES, spec.token_types = TYPES, spec.n_tokens = N;
    spec.unigram = true, spec.unk_id = 0, spec.bos_id = 1, spec.add_space_prefix = prefix;
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_create_spm(&spec, &t, &err) != FE_OK) fail_msg("%s", err.message);
    return t;
}

static void expect(fe_tokenizer *t, const char *text, const char *const *want, int n) {
    int32_t *ids;
    size_t got;
    fe_error err;
    assert_int_equal(fe_tokenizer_encode_alloc(t, text, strlen(text), false, false, &ids, &got, &err), FE_OK);
    bool same = (int)got == n;
    for (int i = 0; same && i < n; i++) same = ids[i] == id_of(want[i]);
    if (!same) {
        for (size_t i = 0; i < got; i++) print_message("%s | ", PIECES[ids[i]]);
        fail_msg("\"%s\": not the %d pieces expected", text, n);
    }
    fe_free(ids);
}

#define EXPECT(t, text, ...)                                                                     \
    do {                                                                                         \
        const char *const w_[] = {__VA_ARGS__};                                                  \
        expect(t, text, w_, (int)(sizeof w_ / sizeof w_[0]));                                    \
    } while (0)

static void the_highest_scoring_segmentation_wins(void **s) {
    (void)s;
    fe_tokenizer *t = make(false);
    EXPECT(t, "abc", "a", "bc");    /* -2.5, beating "abc" (-5) and "ab" + "c" (-4) */
    EXPECT(t, "ab", "ab");          /* -2, beating "a" + "b" (-3.5) */
    EXPECT(t, " ab", SP "ab");      /* -2.5, beating "▁a" + "b" (-3) and "▁" + "ab" (-3) */
    EXPECT(t, "a<sep>b", "a", "<sep>", "b"); /* user-defined: matched as an added token */
    fe_tokenizer_destroy(t);
    t = make(true);
    EXPECT(t, "ab", SP "ab");
    fe_tokenizer_destroy(t);
}

static void unknown_characters_are_one_unknown_token_a_run(void **s) {
    (void)s;
    fe_tokenizer *t = make(false);
    EXPECT(t, "a\xe2\x98\x83\xe2\x98\x83" "b", "a", "<unk>", "b");
    EXPECT(t, "zz", "<unk>");
    EXPECT(t, "z a", "<unk>", SP "a");
    fe_tokenizer_destroy(t);
}

static void decoding_gives_the_text_back(void **s) {
    (void)s;
    fe_tokenizer *t = make(false);
    const char *text = "abc a bc dab";
    int32_t *ids;
    size_t n, len;
    char out[64];
    fe_error err;
    assert_int_equal(fe_tokenizer_encode_alloc(t, text, strlen(text), false, false, &ids, &n, &err), FE_OK);
    assert_int_equal(fe_tokenizer_decode(t, ids, n, out, sizeof out, &len, &err), FE_OK);
    assert_int_equal(len, strlen(text));
    assert_memory_equal(out, text, len);
    fe_free(ids);
    fe_tokenizer_destroy(t);
}

static void a_unigram_vocabulary_needs_its_unknown_token(void **s) {
    (void)s;
    fe_spm_spec spec = fe_spm_spec_default();
    spec.tokens = PIECES, spec.scores = SCORES, spec.token_types = TYPES, spec.n_tokens = N;
    spec.unigram = true, spec.unk_id = N;
    fe_tokenizer *t = NULL;
    fe_error err;
    assert_int_equal(fe_tokenizer_create_spm(&spec, &t, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "unknown"));
    assert_null(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_highest_scoring_segmentation_wins),
        cmocka_unit_test(unknown_characters_are_one_unknown_token_a_run),
        cmocka_unit_test(decoding_gives_the_text_back),
        cmocka_unit_test(a_unigram_vocabulary_needs_its_unknown_token),
    };
    return cmocka_run_group_tests_name("tokenizer_unigram", tests, NULL, NULL);
}
