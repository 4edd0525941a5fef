/* tests/test_encoder.c: the BERT encoder graph against the plain oracle (lm/eval/bert_oracle.c)
 * on random weights that carry signal: a packed batch of sentences of different lengths, each
 * with its own bound, matches the oracle sentence by sentence; an empty slot costs nothing and
 * changes nothing; the same sentence gives the same bytes alone and beside others; pooling,
 * Matryoshka truncation and L2 normalisation; refusals of bad lengths, ids and options. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lm/eval/bert_oracle.h"
#include "lm/model/encoder.h"
#include "support/testing.h"

static fe_bert_config tiny(void) {
    fe_bert_config c = {.vocab = 97, .hidden = 48, .n_layers = 2, .n_heads = 4, .head_dim = 12,
                        .ffn = 96, .max_positions = 40, .type_vocab = 2, .ln_eps = 1e-5};
    strcpy(c.source, "tiny");
    return c;
}

static fe_encoder *make(const fe_bert_weights *w, int64_t max_tokens, int slots) {
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = max_tokens;
    o.slots = slots;
    fe_encoder *e = NULL;
    fe_error err = {0};
    if (fe_encoder_create(test_dev, w, &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    return e;
}

static void draw_ids(int32_t *ids, int64_t n, int64_t vocab, uint64_t seed) {
    test_rng r = {seed};
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(test_rng_next(&r) % (uint64_t)vocab);
}

/* max |a - b| over n values, and the spread (max - min) of b */
static double max_diff(const float *a, const float *b, int64_t n, double *spread) {
    double d = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        lo = fmin(lo, b[i]), hi = fmax(hi, b[i]);
    }
    *spread = hi - lo;
    return d;
}

static void packed_batch_matches_the_oracle_sentence_by_sentence(void **state) {
    (void)state;
    fe_bert_config c = tiny();
    fe_bert_weights w;
    fe_error err = {0};
    assert_int_equal(fe_bert_weights_random(&c, 7, &w, &err), FE_OK);
    fe_encoder *e = make(&w, 32, 4);
    int64_t lens[3] = {5, 32, 1}; /* the longest at the bound; slot 4 left empty */
    int32_t a[32], b[32], cc[32];
    draw_ids(a, 5, c.vocab, 1), draw_ids(b, 32, c.vocab, 2), draw_ids(cc, 1, c.vocab, 3);
    const int32_t *ids[3] = {a, b, cc};
    const float *h;
    assert_int_equal(fe_encoder_forward(e, ids, lens, 3, &h), FE_OK);
    float *ref = malloc(32 * 48 * sizeof *ref);
    int64_t row = 0;
    for (int s = 0; s < 3; s++) {
        assert_int_equal(fe_bert_oracle_forward(&w, ids[s], lens[s], ref, &err), FE_OK);
        double spread, d = max_diff(h + row * c.hidden, ref, lens[s] * c.hidden, &spread);
        print_message("sentence %d (%lld tokens): max |graph - oracle| %.3g, spread %.3g\n", s,
                      (long long)lens[s], d, spread);
        assert_true(spread > 1.0); /* LayerNorm output: a dead model would be flat */
        assert_true(d < 2e-5 * spread);
        row += lens[s];
    }
    free(ref);
    fe_encoder_destroy(e);
    fe_bert_weights_free(&w);
}

static void a_sentence_gives_the_same_bytes_alone_and_in_a_batch(void **state) {
    (void)state;
    fe_bert_config c = tiny();
    fe_bert_weights w;
    assert_int_equal(fe_bert_weights_random(&c, 11, &w, NULL), FE_OK);
    fe_encoder *e = make(&w, 24, 3);
    int32_t a[24], b[24];
    draw_ids(a, 9, c.vocab, 5), draw_ids(b, 24, c.vocab, 6);
    const int32_t *alone[1] = {a}, *pair[2] = {b, a};
    int64_t la[1] = {9}, lp[2] = {24, 9};
    const float *h;
    float first[9 * 48];
    assert_int_equal(fe_encoder_forward(e, alone, la, 1, &h), FE_OK);
    memcpy(first, h, sizeof first);
    assert_int_equal(fe_encoder_forward(e, pair, lp, 2, &h), FE_OK);
    /* row order inside a GEMM block may change sums' association: compare closely, then
     * the repeat alone as bytes */
    double spread;
    assert_true(max_diff(h + 24 * c.hidden, first, 9 * c.hidden, &spread) < 1e-5 * spread);
    assert_int_equal(fe_encoder_forward(e, alone, la, 1, &h), FE_OK);
    assert_memory_equal(h, first, sizeof first);
    fe_encoder_destroy(e);
    fe_bert_weights_free(&w);
}

static void pooling_truncates_then_normalises(void **state) {
    (void)state;
    const float h[3 * 4] = {1, 2, 3, 4, 3, 2, 1, 0, 2, 2, 2, 8};
    float out[4];
    fe_encoder_pool(h, 3, 4, FE_POOLING_MEAN, 0, false, out);
    assert_true(fabsf(out[0] - 2) < 1e-6f && fabsf(out[3] - 4) < 1e-6f);
    fe_encoder_pool(h, 3, 4, FE_POOLING_CLS, 0, false, out);
    assert_true(out[1] == 2 && out[3] == 4);
    fe_encoder_pool(h, 3, 4, FE_POOLING_LAST, 0, false, out);
    assert_true(out[0] == 2 && out[3] == 8);
    fe_encoder_pool(h, 3, 4, FE_POOLING_CLS, 2, true, out); /* (1, 2) / sqrt(5) */
    assert_true(fabsf(out[0] - 1 / sqrtf(5)) < 1e-6f && fabsf(out[1] - 2 / sqrtf(5)) < 1e-6f);
}

static void bad_calls_are_refused_by_name(void **state) {
    (void)state;
    fe_bert_config c = tiny();
    fe_bert_weights w;
    assert_int_equal(fe_bert_weights_random(&c, 3, &w, NULL), FE_OK);
    fe_encoder_options o = fe_encoder_options_default();
    fe_encoder *e = NULL;
    fe_error err = {0};
    o.max_tokens = 41;
    assert_int_equal(fe_encoder_create(test_dev, &w, &o, &e, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "max_position_embeddings"));
    o.max_tokens = 8, o.slots = 33;
    assert_int_equal(fe_encoder_create(test_dev, &w, &o, &e, &err), FE_E_INVALID);
    e = make(&w, 8, 2);
    int32_t ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, bad[2] = {1, 97};
    const int32_t *one[1] = {ids}, *three[3] = {ids, ids, ids}, *b[1] = {bad};
    int64_t l9[1] = {9}, l0[1] = {0}, l2[3] = {2, 2, 2};
    const float *h;
    assert_int_equal(fe_encoder_forward(e, one, l9, 1, &h), FE_E_BOUNDS);
    assert_non_null(strstr(fe_encoder_message(e), "max_tokens"));
    assert_int_equal(fe_encoder_forward(e, one, l0, 1, &h), FE_E_BOUNDS);
    assert_int_equal(fe_encoder_forward(e, three, l2, 3, &h), FE_E_BOUNDS);
    assert_int_equal(fe_encoder_forward(e, b, l2, 1, &h), FE_E_BOUNDS);
    assert_non_null(strstr(fe_encoder_message(e), "vocabulary"));
    fe_encoder_destroy(e);
    fe_bert_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(packed_batch_matches_the_oracle_sentence_by_sentence),
        cmocka_unit_test(a_sentence_gives_the_same_bytes_alone_and_in_a_batch),
        cmocka_unit_test(pooling_truncates_then_normalises),
        cmocka_unit_test(bad_calls_are_refused_by_name),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
