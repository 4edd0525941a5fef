/* tests/test_ops_machinery.c: how a declaration becomes a kernel: tunable precedence (call
 * site > profile > resolve(dev) > default), the most specific profile entry wins, malformed
 * profiles are refused with a message naming the place, unknown operators and wrong operand
 * counts are refused, a CHOICE param given by name resolves to its option's index (and a
 * name it does not declare is refused, listing the ones it does), MHA's resolve cuts a
 * decode step's keys into as many segments as workers (whether or not they divide the kv
 * heads) and leaves a prefill chunk and one worker uncut, and the N-th allocation
 * failing anywhere on one operator's create-run-destroy path returns FE_E_NOMEM without a
 * crash or a leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "ops/kernel.h"
#include "support/testing.h"

static fe_device *dev2(void) {
    fe_device_options o = {.n_workers = 2, .max_isa = -1, .pin = false};
    fe_device *d = NULL;
    assert_int_equal(fe_device_create(&o, &d, NULL), FE_OK);
    return d;
}

static fe_kernel *make_add(fe_device *dev, int64_t n, const fe_setting *tun, int n_tun,
                           const fe_profile *prof) {
    fe_tensor t = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &n);
    fe_tensor ops[3] = {t, t, t};
    fe_op_request req = {.op = "elementwiseadd", .operands = ops, .n_operands = 3,
                         .tunables = tun, .n_tunables = n_tun, .profile = prof};
    fe_kernel *k = NULL;
    fe_error err;
    fe_status st = fe_kernel_create(dev, &req, &k, &err);
    if (st != FE_OK) fail_msg("create: %s", err.message);
    return k;
}

static fe_profile *profile(const char *json) {
    fe_profile *p = NULL;
    fe_error err;
    if (fe_profile_parse(json, strlen(json), &p, &err) != FE_OK) fail_msg("%s", err.message);
    return p;
}

static void tunables_follow_precedence(void **s) {
    (void)s;
    fe_device *dev = dev2();
    /* default: WIDTH = all workers; stream from resolve(dev): off for a small output */
    fe_kernel *k = make_add(dev, 1000, NULL, 0, NULL);
    assert_int_equal(fe_kernel_tunable(k, "WIDTH"), 2);
    assert_int_equal(fe_kernel_tunable(k, "stream"), 0);
    fe_kernel_destroy(k);
    /* the profile beats resolve and the default */
    fe_profile *p = profile("{\"entries\": [{\"op\": \"ElementwiseAdd\", "
                            "\"tunables\": {\"WIDTH\": 1, \"stream\": 1}}]}");
    k = make_add(dev, 1000, NULL, 0, p);
    assert_int_equal(fe_kernel_tunable(k, "WIDTH"), 1);
    assert_int_equal(fe_kernel_tunable(k, "stream"), 1);
    fe_kernel_destroy(k);
    /* the call site beats the profile */
    fe_setting call[1] = {{"WIDTH", 2}};
    k = make_add(dev, 1000, call, 1, p);
    assert_int_equal(fe_kernel_tunable(k, "WIDTH"), 2);
    assert_int_equal(fe_kernel_tunable(k, "stream"), 1);
    fe_kernel_destroy(k);
    fe_profile_destroy(p);
    fe_device_destroy(dev);
}

static void most_specific_profile_entry_wins(void **s) {
    (void)s;
    fe_device *dev = dev2();
    fe_profile *p = profile("{\"entries\": ["
                            "{\"op\": \"ElementwiseAdd\", \"tunables\": {\"WIDTH\": 2}},"
                            "{\"op\": \"ElementwiseAdd\", \"when\": {\"N\": 1000}, \"tunables\": {\"WIDTH\": 1}},"
                            "{\"op\": \"ElementwiseMul\", \"tunables\": {\"WIDTH\": 1}}]}");
    fe_kernel *k = make_add(dev, 1000, NULL, 0, p);
    assert_int_equal(fe_kernel_tunable(k, "WIDTH"), 1);
    fe_kernel_destroy(k);
    k = make_add(dev, 999, NULL, 0, p);
    assert_int_equal(fe_kernel_tunable(k, "WIDTH"), 2);
    fe_kernel_destroy(k);
    fe_profile_destroy(p);
    fe_device_destroy(dev);
}

/* MHA over q (sq, hq, 64) and a cache of 1024 rows of hkv heads on `workers`: its kv_split */
static int64_t mha_split(int workers, int64_t sq, int64_t hq, int64_t hkv) {
    fe_device_options o = {.n_workers = workers, .max_isa = -1, .pin = false};
    fe_device *dev = NULL;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    int64_t qs[3] = {sq, hq, 64}, ks[3] = {1024, hkv, 64};
    fe_tensor ops[4] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, ks),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, ks),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs)};
    fe_op_request req = {.op = "MHA", .operands = ops, .n_operands = 4};
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) fail_msg("create: %s", err.message);
    const int64_t split = fe_kernel_tunable(k, "kv_split");
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
    return split;
}

static void a_decode_mha_step_cuts_its_keys_by_the_workers(void **s) {
    (void)s;
    assert_int_equal(mha_split(2, 1, 32, 8), 2); /* the Llama 3.2 1B shape: 8 kv heads on 2 */
    assert_int_equal(mha_split(2, 1, 9, 3), 2);  /* SmolLM2's: 3 on 2 */
    assert_int_equal(mha_split(3, 1, 32, 8), 3);
    assert_int_equal(mha_split(5, 1, 32, 8), 6); /* the next choice up */
    assert_int_equal(mha_split(1, 1, 32, 8), 0); /* one worker: no cut */
    assert_int_equal(mha_split(2, 64, 32, 8), 0); /* a prefill chunk: items enough */
}

static void malformed_profiles_are_refused(void **s) {
    (void)s;
    struct { const char *json, *needle; } bad[] = {
        {"{\"entries\": [", "not valid JSON"},
        {"[]", "\"entries\": an array"},
        {"{\"entries\": [3]}", "must be an object"},
        {"{\"entries\": [{\"tunables\": {}}]}", "needs \"op\""},
        {"{\"entries\": [{\"op\": \"Nope\", \"tunables\": {}}]}", "no operator named \"Nope\""},
        {"{\"entries\": [{\"op\": \"AXPY\"}]}", "needs \"tunables\""},
        {"{\"entries\": [{\"op\": \"AXPY\", \"tunables\": {\"tile\": 4}}]}", "no tunable named \"tile\""},
        {"{\"entries\": [{\"op\": \"AXPY\", \"tunables\": {\"WIDTH\": 1.5}}]}", "must be an integer"},
        {"{\"entries\": [{\"op\": \"AXPY\", \"when\": {\"M\": 1}, \"tunables\": {}}]}", "no param, extent or OPERAND.dtype named \"M\""},
        {"{\"entries\": [{\"op\": \"AXPY\", \"when\": {\"N\": \"x\"}, \"tunables\": {}}]}", "must be a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fe_profile *p = (fe_profile *)1;
        fe_error err;
        assert_int_equal(fe_profile_parse(bad[i].json, strlen(bad[i].json), &p, &err), FE_E_FORMAT);
        assert_null(p);
        if (!strstr(err.message, bad[i].needle))
            fail_msg("profile %zu: \"%s\" does not say \"%s\"", i, err.message, bad[i].needle);
    }
    fe_profile *p;
    fe_error err;
    assert_int_equal(fe_profile_load("/nonexistent/profile.json", &p, &err), FE_E_IO);
}

/* An elementwise op over n_operands f32 vectors of 64, with one param setting; NULL (err
 * filled) when refused. */
static fe_kernel *make_with(fe_device *dev, const char *op, int n_operands, fe_setting p,
                            fe_error *err) {
    int64_t n = 64;
    fe_tensor t = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &n);
    fe_tensor ops[3] = {t, t, t};
    fe_op_request req = {.op = op, .operands = ops, .n_operands = n_operands, .params = &p,
                         .n_params = 1};
    fe_kernel *k = NULL;
    fe_kernel_create(dev, &req, &k, err);
    return k;
}

static void choices_are_given_by_name(void **s) {
    (void)s;
    fe_device *dev = dev2();
    const fe_op *op = fe_op_find("GELU");
    int form = fe_op_param_index(op, "form");
    assert_true(form >= 0);
    /* every declared option by its name lands on its own index, the index a number gives */
    const char *const *names = op->params[form].choices;
    for (int c = 0; names[c]; c++) {
        fe_error err = {0};
        fe_kernel *byname = make_with(dev, "GELU", 2, (fe_setting)FE_CHOICE("form", names[c]), &err);
        if (!byname) fail_msg("%s: %s", names[c], err.message);
        fe_kernel *bynum = make_with(dev, "GELU", 2, (fe_setting){"form", c}, &err);
        if (!bynum) fail_msg("%d: %s", c, err.message);
        assert_int_equal((int)fe_kernel_design(byname)->params[form], c);
        assert_true(fe_kernel_design_key(byname) == fe_kernel_design_key(bynum));
        fe_kernel_destroy(byname);
        fe_kernel_destroy(bynum);
    }
    assert_string_equal(names[1], "erf");
    /* a name not declared is refused naming the op, the param, the name and the choices */
    fe_error err = {0};
    assert_null(make_with(dev, "GELU", 2, (fe_setting)FE_CHOICE("form", "exact"), &err));
    assert_int_equal(err.status, FE_E_INVALID);
    if (!strstr(err.message, "GELU") || !strstr(err.message, "form") ||
        !strstr(err.message, "\"exact\"") || !strstr(err.message, "tanh, erf"))
        fail_msg("message: %s", err.message);
    /* a name for a param that is not a CHOICE is refused too */
    assert_null(make_with(dev, "AXPY", 3, (fe_setting)FE_CHOICE("alpha", "one"), &err));
    if (!strstr(err.message, "not a CHOICE")) fail_msg("message: %s", err.message);
    fe_device_destroy(dev);
}

static void requests_are_checked(void **s) {
    (void)s;
    fe_device *dev = dev2();
    fe_kernel *k = NULL;
    fe_error err;
    fe_op_request req = {.op = "Convolution"};
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "ferrum ops"));
    int64_t n = 8;
    fe_tensor t = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &n);
    fe_tensor ops[3] = {t, t, t};
    req = (fe_op_request){.op = "ElementwiseAdd", .operands = ops, .n_operands = 2};
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "operand y is required"));
    ops[1].shape[0] = 9;
    req.n_operands = 3;
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_E_SHAPE);
    assert_non_null(strstr(err.message, "must be equal"));
    ops[1].shape[0] = 0;
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_E_SHAPE);
    assert_non_null(strstr(err.message, "sizes are 1..2^40"));
    fe_setting alpha = {"alpha", 1.0 / 0.0};
    ops[1].shape[0] = 8;
    req = (fe_op_request){.op = "AXPY", .operands = ops, .n_operands = 3, .params = &alpha,
                          .n_params = 1};
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "finite"));
    /* a run with a different shape than the kernel's, or no data, does nothing */
    req.n_params = 0;
    assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_OK);
    float a[9] = {0}, b[9] = {0}, y[9] = {0};
    fe_tensor run[3] = {fe_tensor_contiguous(a, FE_DTYPE_F32, 1, &n),
                        fe_tensor_contiguous(b, FE_DTYPE_F32, 1, &n),
                        fe_tensor_contiguous(y, FE_DTYPE_F32, 1, &n)};
    run[2].shape[0] = 9;
    assert_int_equal(fe_kernel_run(k, run, 3, NULL, 0), FE_E_SHAPE);
    assert_non_null(strstr(fe_kernel_message(k), "made for 8"));
    run[2].shape[0] = 8;
    run[2].data = NULL;
    assert_int_equal(fe_kernel_run(k, run, 3, NULL, 0), FE_E_INVALID);
    run[2].data = y;
    run[2].stride[0] = 2;
    assert_int_equal(fe_kernel_run(k, run, 3, NULL, 0), FE_E_INVALID);
    assert_non_null(strstr(fe_kernel_message(k), "contiguous"));
    run[2].stride[0] = 1;
    assert_int_equal(fe_kernel_run(k, run, 3, NULL, 0), FE_OK);
    assert_string_equal(fe_kernel_message(k), "");
    double flops, bytes;
    fe_kernel_cost(k, NULL, 0, &flops, &bytes);
    assert_true(flops == 16 && bytes == 96);
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
}

/* One pass of device + profile + kernel create, run, destroy; FE_E_NOMEM allowed anywhere. */
static fe_status one_pass(void) {
    fe_device_options o = {.n_workers = 2, .max_isa = -1, .pin = false};
    fe_device *dev = NULL;
    fe_profile *prof = NULL;
    fe_kernel *k = NULL;
    fe_error err;
    fe_status st = fe_device_create(&o, &dev, &err);
    if (st != FE_OK) return st;
    const char *pj = "{\"entries\": [{\"op\": \"AXPY\", \"when\": {\"N\": 64}, \"tunables\": {\"WIDTH\": 1}}]}";
    st = fe_profile_parse(pj, strlen(pj), &prof, &err);
    if (st == FE_OK) {
        int64_t n = 64;
        float x[64], b[64], y[64];
        for (int i = 0; i < 64; i++) x[i] = b[i] = (float)i;
        fe_tensor ops[3] = {fe_tensor_contiguous(x, FE_DTYPE_F32, 1, &n),
                            fe_tensor_contiguous(b, FE_DTYPE_F32, 1, &n),
                            fe_tensor_contiguous(y, FE_DTYPE_F32, 1, &n)};
        fe_setting alpha = {"alpha", 2};
        fe_op_request req = {.op = "AXPY", .operands = ops, .n_operands = 3, .params = &alpha,
                             .n_params = 1, .profile = prof};
        st = fe_kernel_create(dev, &req, &k, &err);
        if (st == FE_OK) {
            st = fe_kernel_run(k, ops, 3, NULL, 0);
            if (st == FE_OK && (y[63] != 189 || fe_kernel_tunable(k, "WIDTH") != 1)) st = FE_E_STATE;
        }
    }
    fe_kernel_destroy(k);
    fe_profile_destroy(prof);
    fe_device_destroy(dev);
    return st;
}

static void every_failed_allocation_is_survived(void **s) {
    (void)s;
    int failures_seen = 0;
    for (long n = 1; n < 10000; n++) {
        fe_alloc_fail_at(n);
        fe_status st = one_pass();
        long made = fe_alloc_fail_at(0);
        if (st == FE_OK) {
            assert_true(made < n); /* the pass finished before the n-th allocation */
            assert_true(failures_seen > 3);
            return;
        }
        if (st != FE_E_NOMEM) fail_msg("allocation %ld failing gave %s", n, fe_status_str(st));
        failures_seen++;
    }
    fail_msg("the path never completed");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tunables_follow_precedence),
        cmocka_unit_test(most_specific_profile_entry_wins),
        cmocka_unit_test(a_decode_mha_step_cuts_its_keys_by_the_workers),
        cmocka_unit_test(malformed_profiles_are_refused),
        cmocka_unit_test(requests_are_checked),
        cmocka_unit_test(choices_are_given_by_name),
        cmocka_unit_test(every_failed_allocation_is_survived),
    };
    return cmocka_run_group_tests_name("ops machinery", tests, NULL, NULL);
}
