/* tests/test_gemm_multiplier.c: the GEMM's multiplier operand (what a gated product's
 * ElementwiseMul folds into). The epilogue applies it after the activation and before the
 * residual and the clamp: C = clamp(act(A.B^T + bias) x multiplier + residual), checked
 * element by element against that formula over the kernel's own product; the kernel writes
 * the bytes the product and an ElementwiseMul step write one after the other; a multiplier
 * not shaped like c, or one that shares c's memory, is refused with the rule and the fix.
 * (The catalog checks every design against the reference with the multiplier present.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/testing.h"

enum { M = 9, N = 40, K = 64 };

static float a[M * K], b[N * K], bias[N], res[M * N], mul[M * N];

static void fill(float *p, int n, uint64_t seed) {
    test_rng r = {seed};
    for (int i = 0; i < n; i++) p[i] = (float)test_rng_uniform(&r, -1, 1);
}

/* GEMM over a and b (f32) into c, with the optional operands given (NULL: absent) and its
 * params; FE_OK or the refusal, whose message lands in err */
static fe_status gemm(const float *bi, const float *r, const float *m, const int64_t *mshape,
                      float *c, const fe_setting *params, int n_params, fe_error *err) {
    const int64_t as[2] = {M, K}, bs[2] = {N, K}, cs[2] = {M, N}, ns = N;
    fe_tensor ops[6] = {
        fe_tensor_contiguous(a, FE_DTYPE_F32, 2, as),
        fe_tensor_contiguous(b, FE_DTYPE_F32, 2, bs),
        bi ? fe_tensor_contiguous((void *)bi, FE_DTYPE_F32, 1, &ns) : (fe_tensor){.rank = 0},
        r ? fe_tensor_contiguous((void *)r, FE_DTYPE_F32, 2, cs) : (fe_tensor){.rank = 0},
        fe_tensor_contiguous(c, FE_DTYPE_F32, 2, cs),
        m ? fe_tensor_contiguous((void *)m, FE_DTYPE_F32, 2, mshape ? mshape : cs)
          : (fe_tensor){.rank = 0}};
    fe_op_request req = {.op = "GEMM", .operands = ops, .n_operands = 6, .params = params,
                         .n_params = n_params};
    fe_kernel *k = NULL;
    fe_status st = fe_kernel_create(test_dev, &req, &k, err);
    if (st != FE_OK) return st;
    const int64_t vals[2] = {M, K};
    st = fe_kernel_run(k, ops, 6, vals, 2);
    if (st != FE_OK) snprintf(err->message, sizeof err->message, "%s", fe_kernel_message(k));
    fe_kernel_destroy(k);
    return st;
}

static void the_multiplier_applies_after_the_activation_and_before_the_residual(void **s) {
    (void)s;
    const fe_setting silu[3] = {{"activation", 1}, {"clamp_min", -0.75}, {"clamp_max", 0.5}};
    float *plain = malloc(M * N * 4), *full = malloc(M * N * 4);
    fe_error err;
    if (gemm(NULL, NULL, NULL, NULL, plain, NULL, 0, &err) != FE_OK) fail_msg("%s", err.message);
    if (gemm(bias, res, mul, NULL, full, silu, 3, &err) != FE_OK) fail_msg("%s", err.message);
    int clamped = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const double x = plain[i * N + j] + bias[j], act = x / (1 + exp(-x));
            double want = act * mul[i * N + j] + res[i * N + j];
            clamped += want < -0.75 || want > 0.5;
            want = want < -0.75 ? -0.75 : want > 0.5 ? 0.5 : want;
            const double got = full[i * N + j];
            if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want))))
                fail_msg("C[%d][%d] = %.9g, clamp(silu(AB^T + bias) x multiplier + residual) "
                         "= %.9g", i, j, got, want);
        }
    assert_true(clamped > 0 && clamped < M * N); /* the clamp took part, not everything */
    free(plain);
    free(full);
}

static void it_writes_what_the_product_and_a_mul_step_write(void **s) {
    (void)s;
    float *y = malloc(M * N * 4), *folded = malloc(M * N * 4), *stepped = malloc(M * N * 4);
    fe_error err;
    if (gemm(NULL, NULL, NULL, NULL, y, NULL, 0, &err) != FE_OK) fail_msg("%s", err.message);
    if (gemm(NULL, NULL, mul, NULL, folded, NULL, 0, &err) != FE_OK) fail_msg("%s", err.message);
    const int64_t cs[2] = {M, N};
    fe_tensor ops[3] = {fe_tensor_contiguous(y, FE_DTYPE_F32, 2, cs),
                        fe_tensor_contiguous(mul, FE_DTYPE_F32, 2, cs),
                        fe_tensor_contiguous(stepped, FE_DTYPE_F32, 2, cs)};
    fe_op_request req = {.op = "ElementwiseMul", .operands = ops, .n_operands = 3};
    fe_kernel *k = NULL;
    if (fe_kernel_create(test_dev, &req, &k, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_kernel_run(k, ops, 3, NULL, 0), FE_OK);
    fe_kernel_destroy(k);
    if (memcmp(folded, stepped, M * N * 4) != 0)
        fail_msg("the multiplier in the epilogue and an ElementwiseMul step wrote different bytes");
    free(y);
    free(folded);
    free(stepped);
}

static void a_multiplier_not_shaped_like_c_or_sharing_it_is_refused(void **s) {
    (void)s;
    float *c = malloc(M * N * 4);
    fe_error err;
    const int64_t wrong[2] = {M, N - 1};
    assert_int_equal(gemm(NULL, NULL, mul, wrong, c, NULL, 0, &err), FE_E_SHAPE);
    assert_non_null(strstr(err.message, "multiplier must be shaped like c"));
    assert_non_null(strstr(err.message, "give one of c's shape or leave it absent"));
    memcpy(c, mul, M * N * 4);
    assert_int_equal(gemm(NULL, NULL, c, NULL, c, NULL, 0, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "c overlaps multiplier"));
    assert_non_null(strstr(err.message, "give c its own buffer"));
    free(c);
}

static int setup(void **state) {
    fill(a, M * K, 1), fill(b, N * K, 2), fill(bias, N, 3), fill(res, M * N, 4);
    fill(mul, M * N, 5);
    return test_device_setup(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_multiplier_applies_after_the_activation_and_before_the_residual),
        cmocka_unit_test(it_writes_what_the_product_and_a_mul_step_write),
        cmocka_unit_test(a_multiplier_not_shaped_like_c_or_sharing_it_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, test_device_teardown);
}
