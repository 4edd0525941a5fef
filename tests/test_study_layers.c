/* tests/test_study_layers.c: the study's layers (apps/study): each layer kind in each
 * execution mode equals the plain float32 reference on small shapes (two sequence lengths,
 * one not a multiple of any tile), on 1 and 2 workers; the output is checked to be a layer's
 * (not the input passed through, not constant), and the FLOP formula is the issue's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../apps/study/layer.h"
#include "ferrum/device.h"

static const study_family tiny = {"tiny", 32, 64, 4};

static fe_device *device(int workers) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = workers;
    fe_device *dev = NULL;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    return dev;
}

/* max |a - b| / (1 + max |b|) */
static double rel_err(const float *a, const float *b, int64_t n) {
    double err = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return err / (1.0 + scale);
}

static void check_case(fe_device *dev, study_kind kind, int64_t seq) {
    study_shape s;
    char msg[512];
    assert_true(study_shape_make(&tiny, kind, seq, &s, msg, sizeof msg));
    study_weights w;
    assert_true(study_weights_init(&w, &s, 7));
    const int64_t n = seq * s.hidden;
    float *x = malloc((size_t)n * 4), *ref = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    study_input_fill(x, &s, 11);
    assert_true(study_reference(&w, x, ref));
    /* a layer's output: it differs from its input and is not flat */
    assert_true(rel_err(ref, x, n) > 0.05);
    double lo = ref[0], hi = ref[0];
    for (int64_t i = 0; i < n; i++) lo = fmin(lo, ref[i]), hi = fmax(hi, ref[i]);
    assert_true(hi - lo > 0.5);
    for (int m = 0; m < STUDY_MODE_COUNT; m++) {
        study_exec *e = study_exec_create(dev, &w, (study_mode)m, msg, sizeof msg);
        if (!e) fail_msg("%s %s seq %lld: %s", study_kind_name(kind), study_mode_name(m),
                         (long long)seq, msg);
        for (int rep = 0; rep < 2; rep++) { /* a second call gives the same answer */
            memset(y, 0, (size_t)n * 4);
            if (!study_exec_run(e, x, y, msg, sizeof msg)) fail_msg("%s", msg);
            double err = rel_err(y, ref, n);
            if (!(err < 2e-5))
                fail_msg("%s %s seq %lld: max error %.3g against the reference",
                         study_kind_name(kind), study_mode_name(m), (long long)seq, err);
        }
        study_exec_stats st = study_exec_get_stats(e);
        assert_true(st.dispatches >= 1);
        if (m == STUDY_RUNLIST || m == STUDY_HYBRID) assert_int_equal(st.dispatches, 1);
        if (m == STUDY_RUNLIST_EACH_STEP) assert_int_equal(st.dispatches, st.steps);
        if (m == STUDY_OFFLOAD) /* 512 query rows a scores / P.V dispatch */
            assert_int_equal(st.dispatches, 6 + 2 * s.heads * ((seq + 511) / 512));
        study_exec_destroy(e);
    }
    free(x), free(ref), free(y);
    study_weights_deinit(&w);
}

static void every_mode_equals_the_reference(void **state) {
    (void)state;
    for (int workers = 1; workers <= 2; workers++) {
        fe_device *dev = device(workers);
        for (int kind = 0; kind < STUDY_KIND_COUNT; kind++) {
            check_case(dev, (study_kind)kind, 16);
            check_case(dev, (study_kind)kind, 13);
            if (workers == 2) check_case(dev, (study_kind)kind, 600); /* two offload row blocks */
        }
        fe_device_destroy(dev);
    }
}

/* BERT and GPT-2 differ (bidirectional vs causal, post- vs pre-LN): the same weights give
 * different outputs, and GPT-2's first row does not depend on the later rows */
static void gpt2_is_causal_and_bert_is_not(void **state) {
    (void)state;
    study_shape sb, sg;
    char msg[256];
    assert_true(study_shape_make(&tiny, STUDY_BERT, 8, &sb, msg, sizeof msg));
    assert_true(study_shape_make(&tiny, STUDY_GPT2, 8, &sg, msg, sizeof msg));
    study_weights wb, wg;
    assert_true(study_weights_init(&wb, &sb, 3));
    assert_true(study_weights_init(&wg, &sg, 3));
    const int64_t n = 8 * 32;
    float x[8 * 32], x2[8 * 32], a[8 * 32], b[8 * 32];
    study_input_fill(x, &sb, 5);
    memcpy(x2, x, sizeof x);
    x2[n - 1] += 1.0f; /* change the last token only */
    assert_true(study_reference(&wg, x, a));
    assert_true(study_reference(&wg, x2, b));
    assert_memory_equal(a, b, 32 * sizeof(float)); /* row 0 sees only itself */
    assert_true(study_reference(&wb, x, a));
    assert_true(study_reference(&wb, x2, b));
    assert_memory_not_equal(a, b, 32 * sizeof(float));
    study_weights_deinit(&wb);
    study_weights_deinit(&wg);
}

/* the spot-row reference (the check above 512 tokens) gives the full reference's rows */
static void spot_rows_equal_the_reference(void **state) {
    (void)state;
    for (int kind = 0; kind < STUDY_KIND_COUNT; kind++) {
        study_shape s;
        char msg[256];
        assert_true(study_shape_make(&tiny, (study_kind)kind, 19, &s, msg, sizeof msg));
        study_weights w;
        assert_true(study_weights_init(&w, &s, 9));
        float x[19 * 32], ref[19 * 32], spot[3 * 32];
        study_input_fill(x, &s, 4);
        assert_true(study_reference(&w, x, ref));
        const int64_t rows[3] = {0, 7, 18};
        assert_true(study_reference_rows(&w, x, rows, 3, spot));
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 32; c++)
                if (fabsf(spot[r * 32 + c] - ref[rows[r] * 32 + c]) > 1e-6f)
                    fail_msg("%s row %lld col %d: %g against %g", study_kind_name((study_kind)kind),
                             (long long)rows[r], c, spot[r * 32 + c], ref[rows[r] * 32 + c]);
        study_weights_deinit(&w);
    }
}

static void flops_follow_the_formula(void **state) {
    (void)state;
    study_shape s;
    char msg[256];
    assert_true(study_shape_make(study_family_find("baseline_768"), STUDY_BERT, 512, &s, msg,
                                 sizeof msg));
    const double S = 512, h = 768, i = 3072;
    assert_true(study_layer_flops(&s) == 6 * S * h * h + 4 * S * S * h + 2 * S * h * h + 4 * S * h * i);
    assert_int_equal(study_family_count(), 6);
    assert_null(study_family_find("nope"));
    const study_family odd = {"odd", 30, 64, 4};
    assert_false(study_shape_make(&odd, STUDY_BERT, 8, &s, msg, sizeof msg));
    assert_non_null(strstr(msg, "multiple of"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_mode_equals_the_reference),
        cmocka_unit_test(gpt2_is_causal_and_bert_is_not),
        cmocka_unit_test(spot_rows_equal_the_reference),
        cmocka_unit_test(flops_follow_the_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
