/* tests/test_gather.c: Gather's cross-value check: an id outside [0, V) among the first rows
 * ids is refused before any work with a message naming the id, the rule and the fix; ids
 * past the rows bound are neither checked nor read; the rows it does run are the table rows
 * (the catalog compares every dtype with the reference). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/testing.h"

static void ids_outside_the_table_are_refused_before_any_work(void **st) {
    (void)st;
    enum { V = 49152, D = 32, N = 5 };
    fe_device_options o = fe_device_options_default();
    o.n_workers = 2;
    fe_device *dev = NULL;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    uint16_t *table = malloc(sizeof(uint16_t) * V * D);
    assert_non_null(table);
    for (int64_t i = 0; i < (int64_t)V * D; i++) table[i] = fe_f32_to_bf16((float)(i % 1000));
    int32_t ids[N] = {0, 5, 7, 50000, -1};
    float out[N * D];
    for (int i = 0; i < N * D; i++) out[i] = -3.0f;
    int64_t ts[2] = {V, D}, os[2] = {N, D}, n = N;
    fe_tensor ops[3] = {fe_tensor_contiguous(table, FE_DTYPE_BF16, 2, ts),
                        fe_tensor_contiguous(ids, FE_DTYPE_I32, 1, &n),
                        fe_tensor_contiguous(out, FE_DTYPE_F32, 2, os)};
    fe_op_request req = {.op = "Gather", .operands = ops, .n_operands = 3};
    fe_kernel *k = NULL;
    fe_error err;
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_OK);

    int64_t rows = N;
    assert_int_equal(fe_kernel_run(k, ops, 3, &rows, 1), FE_E_BOUNDS);
    const char *msg = fe_kernel_message(k);
    assert_non_null(strstr(msg, "ids[3] = 50000 is past the table's rows"));
    assert_non_null(strstr(msg, "[0, 49152)"));
    assert_non_null(strstr(msg, "nothing ran"));
    for (int i = 0; i < N * D; i++) assert_true(out[i] == -3.0f);

    ids[3] = 1;
    assert_int_equal(fe_kernel_run(k, ops, 3, &rows, 1), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(k), "ids[4] = -1 is negative"));

    /* the first 4 ids are good: they run, and row 4 (past the bound) is untouched */
    rows = 4;
    assert_int_equal(fe_kernel_run(k, ops, 3, &rows, 1), FE_OK);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < D; c++)
            assert_true(out[r * D + c] == (float)((ids[r] * D + c) % 1000));
    for (int c = 0; c < D; c++) assert_true(out[4 * D + c] == -3.0f);
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
    free(table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_outside_the_table_are_refused_before_any_work),
    };
    return cmocka_run_group_tests_name("gather", tests, NULL, NULL);
}
