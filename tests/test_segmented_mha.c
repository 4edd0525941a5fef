/* tests/test_segmented_mha.c: SegmentedMHA against MHA. One segmented step over packed
 * sentences gives, bit for bit, what one MHA step per sentence gives (the same items run);
 * the rows value cuts the segments and leaves later rows untouched; a negative length, heads
 * that are not adjacent in a row, and k and v rows of different strides are refused, naming
 * the rule, before any work. The catalog compares it with its reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/testing.h"

enum { R = 48, HQ = 4, HKV = 2, D = 32, SEGS = 6 };

static fe_device *device(void) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = 3;
    fe_device *dev = NULL;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    return dev;
}

static void fill(float *x, int64_t n, uint64_t seed) {
    test_rng rng = {.s = seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)((double)(test_rng_next(&rng) % 2001) / 500.0 - 2.0);
}

typedef struct packed {
    float q[R * HQ * D], k[R * HKV * D], v[R * HKV * D], out[R * HQ * D];
    int32_t lengths[SEGS];
} packed;

static fe_kernel *segmented(fe_device *dev, packed *p, fe_tensor *ops) {
    int64_t qs[3] = {R, HQ, D}, ks[3] = {R, HKV, D}, ns = SEGS;
    ops[0] = fe_tensor_contiguous(p->q, FE_DTYPE_F32, 3, qs);
    ops[1] = fe_tensor_contiguous(p->k, FE_DTYPE_F32, 3, ks);
    ops[2] = fe_tensor_contiguous(p->v, FE_DTYPE_F32, 3, ks);
    ops[3] = fe_tensor_contiguous(p->lengths, FE_DTYPE_I32, 1, &ns);
    ops[4] = fe_tensor_contiguous(p->out, FE_DTYPE_F32, 3, qs);
    fe_setting bidir = {"causal", 0};
    fe_op_request req = {.op = "SegmentedMHA", .operands = ops, .n_operands = 5,
                         .params = &bidir, .n_params = 1};
    fe_kernel *k = NULL;
    fe_error err;
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_OK);
    return k;
}

static void one_step_equals_an_mha_step_per_sentence(void **st) {
    (void)st;
    fe_device *dev = device();
    packed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    fill(p->q, R * HQ * D, 1), fill(p->k, R * HKV * D, 2), fill(p->v, R * HKV * D, 3);
    const int32_t lengths[SEGS] = {5, 1, 0, 17, 9, 16}; /* 48 rows; one empty, one of 1 */
    memcpy(p->lengths, lengths, sizeof lengths);
    fe_tensor ops[5];
    fe_kernel *k = segmented(dev, p, ops);
    int64_t rows = R;
    assert_int_equal(fe_kernel_run(k, ops, 5, &rows, 1), FE_OK);

    /* MHA over each sentence's rows alone, as the encoder ran it before */
    float *want = calloc(R * HQ * D, sizeof *want);
    assert_non_null(want);
    int64_t start = 0;
    for (int s = 0; s < SEGS; s++) {
        const int64_t n = lengths[s];
        if (n == 0) continue;
        int64_t qs[3] = {n, HQ, D}, ks[3] = {n, HKV, D};
        fe_tensor m[4] = {fe_tensor_contiguous(p->q + start * HQ * D, FE_DTYPE_F32, 3, qs),
                          fe_tensor_contiguous(p->k + start * HKV * D, FE_DTYPE_F32, 3, ks),
                          fe_tensor_contiguous(p->v + start * HKV * D, FE_DTYPE_F32, 3, ks),
                          fe_tensor_contiguous(want + start * HQ * D, FE_DTYPE_F32, 3, qs)};
        fe_setting bidir = {"causal", 0};
        fe_op_request req = {.op = "MHA", .operands = m, .n_operands = 4, .params = &bidir,
                             .n_params = 1};
        fe_kernel *mk = NULL;
        fe_error err;
        assert_int_equal(fe_kernel_create(dev, &req, &mk, &err), FE_OK);
        int64_t values[3] = {n, n, 0}; /* kv_valid, q_rows, q_offset */
        assert_int_equal(fe_kernel_run(mk, m, 4, values, 3), FE_OK);
        fe_kernel_destroy(mk);
        start += n;
    }
    assert_memory_equal(p->out, want, sizeof(float) * R * HQ * D);
    free(want);
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
    free(p);
}

static void rows_cut_the_segments_and_later_rows_stay_untouched(void **st) {
    (void)st;
    fe_device *dev = device();
    packed *p = calloc(1, sizeof *p);
    packed *whole = calloc(1, sizeof *whole);
    assert_non_null(p);
    assert_non_null(whole);
    fill(p->q, R * HQ * D, 4), fill(p->k, R * HKV * D, 5), fill(p->v, R * HKV * D, 6);
    const int32_t lengths[SEGS] = {10, 30, 8, 0, 0, 0};
    memcpy(p->lengths, lengths, sizeof lengths);
    memcpy(whole, p, sizeof *p);
    whole->lengths[1] = 12; /* what rows = 22 leaves of the second sentence */
    for (int i = 0; i < R * HQ * D; i++) p->out[i] = whole->out[i] = -7.0f;
    fe_tensor ops[5], wops[5];
    fe_kernel *k = segmented(dev, p, ops), *wk = segmented(dev, whole, wops);
    int64_t rows = 22, all = R;
    assert_int_equal(fe_kernel_run(k, ops, 5, &rows, 1), FE_OK);
    assert_int_equal(fe_kernel_run(wk, wops, 5, &all, 1), FE_OK);
    assert_memory_equal(p->out, whole->out, sizeof(float) * 22 * HQ * D);
    for (int i = 22 * HQ * D; i < R * HQ * D; i++) assert_true(p->out[i] == -7.0f);
    fe_kernel_destroy(k);
    fe_kernel_destroy(wk);
    fe_device_destroy(dev);
    free(p);
    free(whole);
}

static void a_negative_length_is_refused_naming_the_segment(void **st) {
    (void)st;
    fe_device *dev = device();
    packed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    const int32_t lengths[SEGS] = {4, 4, -2, 4, 0, 0};
    memcpy(p->lengths, lengths, sizeof lengths);
    for (int i = 0; i < R * HQ * D; i++) p->out[i] = -7.0f;
    fe_tensor ops[5];
    fe_kernel *k = segmented(dev, p, ops);
    int64_t rows = 12;
    assert_int_equal(fe_kernel_run(k, ops, 5, &rows, 1), FE_E_BOUNDS);
    const char *msg = fe_kernel_message(k);
    assert_non_null(strstr(msg, "segment 2 has length -2"));
    assert_non_null(strstr(msg, ">= 0"));
    for (int i = 0; i < R * HQ * D; i++) assert_true(p->out[i] == -7.0f);
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
    free(p);
}

static void views_the_kernel_cannot_walk_are_refused(void **st) {
    (void)st;
    fe_device *dev = device();
    packed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->lengths[0] = 8;
    fe_tensor ops[5];
    fe_kernel *k = segmented(dev, p, ops);
    int64_t rows = 8;
    fe_tensor bad[5];
    memcpy(bad, ops, sizeof bad);
    bad[0].stride[1] = 2 * D; /* q's heads 2 D apart */
    bad[0].shape[0] = R / 2;
    assert_int_equal(fe_kernel_run(k, bad, 5, &rows, 1), FE_E_SHAPE); /* the shape is checked first */
    bad[0].shape[0] = R;
    bad[0].stride[0] = 2 * HQ * D;
    bad[0].stride[1] = 2 * D;
    rows = 4; /* the first 4 rows of such a view still lie in the buffer */
    p->lengths[0] = 4;
    assert_int_equal(fe_kernel_run(k, bad, 5, &rows, 1), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(k), "each row must hold its heads one after another"));
    memcpy(bad, ops, sizeof bad);
    bad[1].stride[0] = 2 * HKV * D; /* k rows twice as far apart as v rows */
    assert_int_equal(fe_kernel_run(k, bad, 5, &rows, 1), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(k), "the same row stride"));
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_step_equals_an_mha_step_per_sentence),
        cmocka_unit_test(rows_cut_the_segments_and_later_rows_stay_untouched),
        cmocka_unit_test(a_negative_length_is_refused_naming_the_segment),
        cmocka_unit_test(views_the_kernel_cannot_walk_are_refused),
    };
    return cmocka_run_group_tests_name("segmented_mha", tests, NULL, NULL);
}
