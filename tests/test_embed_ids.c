/* tests/test_embed_ids.c: fe_lm_embed_ids (ferrum/lm.h) on all-MiniLM-L6-v2's real weights
 * (scripts/fetch-model): ids as fe_lm_encoder_tokenize gives them embed to fe_lm_embed's
 * vectors for the same texts, bit for bit, in one call of several lengths and across batches;
 * the stats count the ids; ids outside the vocabulary, an empty list and one past max_tokens
 * are refused naming the input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferrum/lm.h"
#include "support/lm_fixtures.h"

static int setup(void **state) {
    const char *dir = lmfix_need_minilm();
    *state = NULL;
    if (!dir) return 0;
    fe_lm_encoder_options o = fe_lm_encoder_options_default();
    o.batch = 4;
    o.threads = 1;
    fe_lm_encoder *e = NULL;
    fe_error err = {0};
    if (fe_lm_encoder_open(dir, &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    fe_lm_encoder_close(*state);
    return 0;
}

enum { N = 6 };

static void ids_embed_as_their_text_does_bit_for_bit(void **state) {
    fe_lm_encoder *e = *state;
    if (!e) skip();
    const char *texts[N] = {"a cat", "The new movie is awesome.", "ünïcödé tëxt",
                            "A man is eating a piece of bread while reading the news.", "x", "a cat"};
    fe_lm_encoder_info info;
    assert_int_equal(fe_lm_encoder_get_info(e, &info), FE_OK);
    const size_t H = (size_t)info.hidden;
    int32_t *ids[N];
    size_t n_ids[N], total = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(fe_lm_encoder_tokenize(e, texts[i], NULL, &ids[i], &n_ids[i]), FE_OK);
        total += n_ids[i];
    }
    assert_int_equal(n_ids[0], 4); /* [CLS] a cat [SEP] */
    float *by_text = malloc(N * H * sizeof *by_text), *by_ids = malloc(N * H * sizeof *by_ids);
    fe_lm_embed_stats st_text = {0}, st_ids = {0};
    int64_t dim = 0;
    assert_int_equal(fe_lm_embed(e, texts, N, NULL, by_text, &dim, &st_text), FE_OK);
    assert_int_equal(fe_lm_embed_ids(e, (const int32_t *const *)ids, n_ids, N, NULL, by_ids, &dim, &st_ids), FE_OK);
    assert_int_equal(dim, (int64_t)H);
    assert_memory_equal(by_ids, by_text, N * H * sizeof *by_ids);
    assert_int_equal(st_ids.tokens, (int64_t)total);
    assert_int_equal(st_text.tokens, (int64_t)total);
    assert_memory_equal(by_ids, by_ids + 5 * H, H * sizeof *by_ids); /* the same text twice */
    for (int i = 0; i < N; i++) fe_lm_free(ids[i]);
    free(by_text);
    free(by_ids);
}

static void bad_ids_are_refused_naming_the_input(void **state) {
    fe_lm_encoder *e = *state;
    if (!e) skip();
    fe_lm_encoder_info info;
    assert_int_equal(fe_lm_encoder_get_info(e, &info), FE_OK);
    float *out = malloc((size_t)info.hidden * 2 * sizeof *out);
    const int32_t good[] = {101, 1037, 102}, outside[] = {101, 30522, 102}, negative[] = {101, -1};
    const int32_t *lists[2] = {good, outside};
    size_t lens[2] = {3, 3};
    assert_int_equal(fe_lm_embed_ids(e, lists, lens, 2, NULL, out, NULL, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_lm_encoder_message(e), "input 1, id 1 is 30522, outside the vocabulary of 30522"));
    lists[1] = negative, lens[1] = 2;
    assert_int_equal(fe_lm_embed_ids(e, lists, lens, 2, NULL, out, NULL, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_lm_encoder_message(e), "input 1, id 1 is -1"));
    lens[1] = 0;
    assert_int_equal(fe_lm_embed_ids(e, lists, lens, 2, NULL, out, NULL, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_lm_encoder_message(e), "input 1 has 0 token ids"));
    int32_t *many = calloc((size_t)info.max_tokens + 1, sizeof *many);
    lists[1] = many, lens[1] = (size_t)info.max_tokens + 1;
    assert_int_equal(fe_lm_embed_ids(e, lists, lens, 2, NULL, out, NULL, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_lm_encoder_message(e), "max_tokens"));
    assert_int_equal(fe_lm_embed_ids(e, NULL, lens, 2, NULL, out, NULL, NULL), FE_E_INVALID);
    free(many);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_embed_as_their_text_does_bit_for_bit),
        cmocka_unit_test(bad_ids_are_refused_naming_the_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
