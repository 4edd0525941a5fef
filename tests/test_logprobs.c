/* tests/test_logprobs.c: fe_lm_logprobs (ferrum/lm.h) against a long-double log-softmax: the
 * chosen token's value and the top list (largest first, ties by smaller id) on random logits
 * the size of a real vocabulary, logits far apart (no overflow, the least likely not -inf),
 * a top list longer than the vocabulary, and bad calls (NaN or infinite logits) refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ferrum/lm.h"

static long double reference_lse(const float *l, int64_t n) {
    long double max = l[0], sum = 0;
    for (int64_t i = 1; i < n; i++) max = l[i] > max ? l[i] : max;
    for (int64_t i = 0; i < n; i++) sum += expl((long double)l[i] - max);
    return max + logl(sum);
}

static void values_match_a_long_double_log_softmax(void **state) {
    (void)state;
    enum { V = 49152, TOP = FE_LM_MAX_TOP_LOGPROBS };
    float *l = malloc(V * sizeof *l);
    assert_non_null(l);
    uint64_t x = 7;
    for (int64_t i = 0; i < V; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        l[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 30.0 - 15.0);
    }
    l[123] = l[4567] = 40; /* a tie at the top: the smaller id first */
    const long double lse = reference_lse(l, V);
    for (int32_t tok = 0; tok < V; tok += 997) {
        float lp, top[TOP];
        int32_t ids[TOP];
        assert_int_equal(fe_lm_logprobs(l, V, tok, TOP, &lp, ids, top), FE_OK);
        assert_true(fabsl((long double)lp - ((long double)l[tok] - lse)) < 1e-5L);
        assert_int_equal(ids[0], 123);
        assert_int_equal(ids[1], 4567);
        for (int k = 0; k < TOP; k++) {
            assert_true(fabsl((long double)top[k] - ((long double)l[ids[k]] - lse)) < 1e-5L);
            if (k) assert_true(l[ids[k]] <= l[ids[k - 1]]);
        }
        /* nothing outside the list is more likely than its last */
        int64_t above = 0;
        for (int64_t i = 0; i < V; i++) above += l[i] > l[ids[TOP - 1]];
        assert_true(above <= TOP - 1);
    }
    free(l);
}

static void far_apart_logits_neither_overflow_nor_vanish(void **state) {
    (void)state;
    const float l[4] = {1e4f, -1e4f, 0, 1e4f - 2};
    float lp, top[3];
    int32_t ids[3];
    assert_int_equal(fe_lm_logprobs(l, 4, 1, 3, &lp, ids, top), FE_OK);
    assert_true(isfinite(lp) && lp < -19999 && lp > -20001);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 2);
    assert_true(fabsf(top[0] - -(float)log1p(exp(-2.0))) < 1e-5f);
}

static void a_top_list_past_the_vocabulary_ends_in_minus_one_and_minus_infinity(void **state) {
    (void)state;
    const float l[2] = {0, 1};
    float lp, top[4];
    int32_t ids[4];
    assert_int_equal(fe_lm_logprobs(l, 2, 0, 4, &lp, ids, top), FE_OK);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 0);
    assert_int_equal(ids[2], -1);
    assert_true(isinf(top[3]) && top[3] < 0);
    assert_true(fabsf(expf(top[0]) + expf(top[1]) - 1) < 1e-6f);
    assert_int_equal(fe_lm_logprobs(l, 2, 1, 0, &lp, NULL, NULL), FE_OK);
}

static void bad_calls_are_refused(void **state) {
    (void)state;
    const float l[2] = {0, 1}, inf[2] = {0, INFINITY}, nan[2] = {NAN, 0};
    float lp, top[2];
    int32_t ids[2];
    assert_int_equal(fe_lm_logprobs(l, 2, 2, 1, &lp, ids, top), FE_E_INVALID);
    assert_int_equal(fe_lm_logprobs(l, 2, -1, 1, &lp, ids, top), FE_E_INVALID);
    assert_int_equal(fe_lm_logprobs(l, 2, 0, FE_LM_MAX_TOP_LOGPROBS + 1, &lp, ids, top), FE_E_INVALID);
    assert_int_equal(fe_lm_logprobs(l, 2, 0, 1, &lp, NULL, top), FE_E_INVALID);
    assert_int_equal(fe_lm_logprobs(NULL, 2, 0, 0, &lp, NULL, NULL), FE_E_INVALID);
    assert_int_equal(fe_lm_logprobs(inf, 2, 0, 0, &lp, NULL, NULL), FE_E_INVALID);
    assert_int_equal(fe_lm_logprobs(nan, 2, 1, 0, &lp, NULL, NULL), FE_E_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_match_a_long_double_log_softmax),
        cmocka_unit_test(far_apart_logits_neither_overflow_nor_vanish),
        cmocka_unit_test(a_top_list_past_the_vocabulary_ends_in_minus_one_and_minus_infinity),
        cmocka_unit_test(bad_calls_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
