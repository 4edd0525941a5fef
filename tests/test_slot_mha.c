/* tests/test_slot_mha.c: KVWrite and SlotMHA against the steps they replace. One KVWrite step
 * and one SlotMHA step over B rows, each in its own slot at its own position, give, bit for
 * bit, what the per-row steps give (RoPE of the key into the slot's cache, a copy of the
 * value, RoPE of the query, one MHA step of that row), on every ISA the machine has, with
 * grouped-query heads, both RoPE forms, rows sharing a slot and a sliding window; the rows
 * value leaves later rows and their cache rows untouched; rows that share a slot and a
 * position leave the last row's values; a slot or position outside the cache is refused,
 * naming the row and the rule, before any work. The catalog compares both with their
 * references. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/testing.h"

enum { B = 7, N = 4, S = 80, P = 96, HQ = 8, HKV = 2, D = 64 };
enum { CACHE = 2 * N * S * HKV * D };

static fe_device *device(fe_isa isa) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = 3;
    o.max_isa = (int)isa;
    fe_device *dev = NULL;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    return dev;
}

static fe_isa best_isa(void) {
    fe_device *dev = device(FE_ISA_AVX512);
    fe_isa isa = fe_device_get_info(dev)->best_isa;
    fe_device_destroy(dev);
    return isa;
}

static void fill(float *x, int64_t n, uint64_t seed, double lo, double hi) {
    test_rng rng = {.s = seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)test_rng_uniform(&rng, lo, hi);
}

typedef struct rows {
    float q[B * HQ * D], k[B * HKV * D], v[B * HKV * D], table[P * D];
    float kv[CACHE], out[B * HQ * D];
    int32_t slots[B], positions[B];
} rows;

/* Rows 1 and 2 share slot 0 at positions 40 and 41 (row 2 attends row 1's new key), row 5
 * lies at 63 and row 6 at 64 (either side of a 64-key block); row 3 is at position 0. */
static rows *make_rows(uint64_t seed) {
    rows *r = calloc(1, sizeof *r);
    assert_non_null(r);
    fill(r->q, B * HQ * D, seed, -2, 2), fill(r->k, B * HKV * D, seed + 1, -2, 2);
    fill(r->v, B * HKV * D, seed + 2, -2, 2), fill(r->table, P * D, seed + 3, -1, 1);
    fill(r->kv, CACHE, seed + 4, -2, 2);
    const int32_t slots[B] = {2, 0, 0, 1, 3, 1, 2}, positions[B] = {17, 40, 41, 0, 5, 63, 64};
    memcpy(r->slots, slots, sizeof slots);
    memcpy(r->positions, positions, sizeof positions);
    for (int i = 0; i < B * HQ * D; i++) r->out[i] = -7.0f;
    return r;
}

static fe_kernel *make(fe_device *dev, const char *op, fe_tensor *ops, int n, const fe_setting *params,
                       int n_params) {
    fe_op_request req = {.op = op, .operands = ops, .n_operands = n, .params = params,
                         .n_params = n_params};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) fail_msg("%s: %s", op, err.message);
    return k;
}

/* KVWrite then SlotMHA over the first n rows, one step each. */
static void one_step_each(fe_device *dev, rows *r, int64_t n, const fe_setting *form,
                          const fe_setting *window) {
    int64_t qs[3] = {B, HQ, D}, ks[3] = {B, HKV, D}, kvs[4] = {2 * N, S, HKV, D}, ts[2] = {P, D};
    int64_t bs = B;
    fe_tensor slots = fe_tensor_contiguous(r->slots, FE_DTYPE_I32, 1, &bs);
    fe_tensor positions = fe_tensor_contiguous(r->positions, FE_DTYPE_I32, 1, &bs);
    fe_tensor table = fe_tensor_contiguous(r->table, FE_DTYPE_F32, 2, ts);
    fe_tensor kv = fe_tensor_contiguous(r->kv, FE_DTYPE_F32, 4, kvs);
    fe_tensor w[6] = {fe_tensor_contiguous(r->k, FE_DTYPE_F32, 3, ks),
                      fe_tensor_contiguous(r->v, FE_DTYPE_F32, 3, ks), slots, positions, table, kv};
    fe_kernel *kw = make(dev, "KVWrite", w, 6, form, 1);
    assert_int_equal(fe_kernel_run(kw, w, 6, &n, 1), FE_OK);
    fe_setting ps[2] = {*form, window ? *window : (fe_setting){"window", 0}};
    fe_tensor a[6] = {fe_tensor_contiguous(r->q, FE_DTYPE_F32, 3, qs), kv, slots, positions,
                      table, fe_tensor_contiguous(r->out, FE_DTYPE_F32, 3, qs)};
    fe_kernel *ka = make(dev, "SlotMHA", a, 6, ps, 2);
    assert_int_equal(fe_kernel_run(ka, a, 6, &n, 1), FE_OK);
    fe_kernel_destroy(kw);
    fe_kernel_destroy(ka);
}

/* As the decode step ran it before: per row, RoPE of k into the slot's cache at the row's
 * position, a copy of v, RoPE of q, and an MHA step of that row over the slot's cache. All
 * writes first (a row attends the keys of earlier rows in its slot), then the attention. */
static void step_per_row(fe_device *dev, rows *r, const fe_setting *form, const fe_setting *window) {
    int64_t one_k[3] = {1, HKV, D}, one_q[3] = {1, HQ, D}, cs[3] = {S, HKV, D}, ts[2] = {P, D};
    const int64_t slot_floats = (int64_t)S * HKV * D;
    fe_tensor table = fe_tensor_contiguous(r->table, FE_DTYPE_F32, 2, ts);
    for (int i = 0; i < B; i++) {
        const int64_t p = r->positions[i];
        float *kd = r->kv + r->slots[i] * slot_floats + p * HKV * D;
        fe_tensor x[3] = {fe_tensor_contiguous(r->k + i * HKV * D, FE_DTYPE_F32, 3, one_k), table,
                          fe_tensor_contiguous(kd, FE_DTYPE_F32, 3, one_k)};
        fe_kernel *rk = make(dev, "RoPE", x, 3, form, 1);
        int64_t at[2] = {1, p}; /* rows, pos */
        assert_int_equal(fe_kernel_run(rk, x, 3, at, 2), FE_OK);
        fe_kernel_destroy(rk);
        memcpy(r->kv + (N + r->slots[i]) * slot_floats + p * HKV * D, r->v + i * HKV * D,
               sizeof(float) * HKV * D);
    }
    float turned[HQ * D];
    for (int i = 0; i < B; i++) {
        const int64_t p = r->positions[i];
        fe_tensor x[3] = {fe_tensor_contiguous(r->q + i * HQ * D, FE_DTYPE_F32, 3, one_q), table,
                          fe_tensor_contiguous(turned, FE_DTYPE_F32, 3, one_q)};
        fe_kernel *rk = make(dev, "RoPE", x, 3, form, 1);
        int64_t at[2] = {1, p};
        assert_int_equal(fe_kernel_run(rk, x, 3, at, 2), FE_OK);
        fe_kernel_destroy(rk);
        fe_tensor m[4] = {x[2], fe_tensor_contiguous(r->kv + r->slots[i] * slot_floats, FE_DTYPE_F32, 3, cs),
                          fe_tensor_contiguous(r->kv + (N + r->slots[i]) * slot_floats, FE_DTYPE_F32, 3, cs),
                          fe_tensor_contiguous(r->out + i * HQ * D, FE_DTYPE_F32, 3, one_q)};
        fe_setting none = {"window", 0};
        fe_kernel *mk = make(dev, "MHA", m, 4, window ? window : &none, 1);
        int64_t values[3] = {p + 1, 1, p}; /* kv_valid, q_rows, q_offset */
        assert_int_equal(fe_kernel_run(mk, m, 4, values, 3), FE_OK);
        fe_kernel_destroy(mk);
    }
}

static void check_equal(const fe_setting *form, const fe_setting *window) {
    for (int isa = 0; isa <= (int)best_isa(); isa++) {
        fe_device *dev = device((fe_isa)isa);
        rows *one = make_rows(11), *each = make_rows(11);
        one_step_each(dev, one, B, form, window);
        step_per_row(dev, each, form, window);
        if (memcmp(one->kv, each->kv, sizeof one->kv) != 0)
            fail_msg("KVWrite differs from RoPE and Copy per row on %s", fe_isa_name((fe_isa)isa));
        if (memcmp(one->out, each->out, sizeof one->out) != 0)
            fail_msg("SlotMHA differs from RoPE and MHA per row on %s", fe_isa_name((fe_isa)isa));
        free(one);
        free(each);
        fe_device_destroy(dev);
    }
}

static void one_step_each_equals_the_steps_per_row_bit_for_bit(void **st) {
    (void)st;
    fe_setting half = FE_CHOICE("form", "rotate_half"), inter = FE_CHOICE("form", "interleaved");
    check_equal(&half, NULL);
    check_equal(&inter, NULL);
    fe_setting window = {"window", 9};
    check_equal(&half, &window);
}

static void rows_bound_the_work_and_later_rows_stay_untouched(void **st) {
    (void)st;
    fe_device *dev = device(FE_ISA_AVX512);
    fe_setting form = FE_CHOICE("form", "rotate_half");
    rows *r = make_rows(21), *before = make_rows(21);
    one_step_each(dev, r, 3, &form, NULL);
    /* rows 3.. wrote nothing: their cache rows keep what they held */
    const int64_t slot_floats = (int64_t)S * HKV * D;
    for (int i = 3; i < B; i++) {
        int64_t at = r->slots[i] * slot_floats + r->positions[i] * HKV * D;
        int64_t vat = (N + r->slots[i]) * slot_floats + r->positions[i] * HKV * D;
        assert_memory_equal(r->kv + at, before->kv + at, sizeof(float) * HKV * D);
        assert_memory_equal(r->kv + vat, before->kv + vat, sizeof(float) * HKV * D);
    }
    for (int i = 3 * HQ * D; i < B * HQ * D; i++) assert_true(r->out[i] == -7.0f);
    for (int i = 0; i < 3 * HQ * D; i++) assert_true(r->out[i] != -7.0f);
    free(r);
    free(before);
    fe_device_destroy(dev);
}

static void rows_at_one_slot_and_position_leave_the_last_rows_values(void **st) {
    (void)st;
    fe_device *dev = device(FE_ISA_AVX512);
    fe_setting form = FE_CHOICE("form", "rotate_half");
    rows *r = make_rows(31);
    for (int i = 0; i < B; i++) r->slots[i] = 3, r->positions[i] = 0; /* the sink's use */
    one_step_each(dev, r, B, &form, NULL);
    const int64_t slot_floats = (int64_t)S * HKV * D;
    assert_memory_equal(r->kv + (N + 3) * slot_floats, r->v + (B - 1) * HKV * D,
                        sizeof(float) * HKV * D);
    free(r);
    fe_device_destroy(dev);
}

static void a_slot_or_position_outside_the_cache_is_refused_naming_the_row(void **st) {
    (void)st;
    fe_device *dev = device(FE_ISA_AVX512);
    fe_setting form = FE_CHOICE("form", "rotate_half");
    rows *r = make_rows(41), *before = make_rows(41);
    int64_t qs[3] = {B, HQ, D}, ks[3] = {B, HKV, D}, kvs[4] = {2 * N, S, HKV, D}, ts[2] = {P, D};
    int64_t bs = B, n = B;
    fe_tensor slots = fe_tensor_contiguous(r->slots, FE_DTYPE_I32, 1, &bs);
    fe_tensor positions = fe_tensor_contiguous(r->positions, FE_DTYPE_I32, 1, &bs);
    fe_tensor table = fe_tensor_contiguous(r->table, FE_DTYPE_F32, 2, ts);
    fe_tensor kv = fe_tensor_contiguous(r->kv, FE_DTYPE_F32, 4, kvs);
    fe_tensor w[6] = {fe_tensor_contiguous(r->k, FE_DTYPE_F32, 3, ks),
                      fe_tensor_contiguous(r->v, FE_DTYPE_F32, 3, ks), slots, positions, table, kv};
    fe_tensor a[6] = {fe_tensor_contiguous(r->q, FE_DTYPE_F32, 3, qs), kv, slots, positions,
                      table, fe_tensor_contiguous(r->out, FE_DTYPE_F32, 3, qs)};
    fe_kernel *kw = make(dev, "KVWrite", w, 6, &form, 1), *ka = make(dev, "SlotMHA", a, 6, &form, 1);
    r->slots[4] = N;
    assert_int_equal(fe_kernel_run(kw, w, 6, &n, 1), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(kw), "row 4: slot 4 is outside the cache's 4 slots"));
    assert_int_equal(fe_kernel_run(ka, a, 6, &n, 1), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(ka), "give slots in 0..3"));
    r->slots[4] = 3;
    r->positions[2] = S; /* the cache holds S positions, the table more */
    assert_int_equal(fe_kernel_run(kw, w, 6, &n, 1), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(kw), "row 2: position 80 is outside the 80 positions"));
    assert_int_equal(fe_kernel_run(ka, a, 6, &n, 1), FE_E_BOUNDS);
    r->positions[2] = -1;
    assert_int_equal(fe_kernel_run(ka, a, 6, &n, 1), FE_E_BOUNDS);
    assert_memory_equal(r->kv, before->kv, sizeof r->kv);
    for (int i = 0; i < B * HQ * D; i++) assert_true(r->out[i] == -7.0f);
    fe_kernel_destroy(kw);
    fe_kernel_destroy(ka);
    free(r);
    free(before);
    fe_device_destroy(dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_step_each_equals_the_steps_per_row_bit_for_bit),
        cmocka_unit_test(rows_bound_the_work_and_later_rows_stay_untouched),
        cmocka_unit_test(rows_at_one_slot_and_position_leave_the_last_rows_values),
        cmocka_unit_test(a_slot_or_position_outside_the_cache_is_refused_naming_the_row),
    };
    return cmocka_run_group_tests_name("slot_mha", tests, NULL, NULL);
}
