/* tests/test_fold.c: the fold pass (graph/fold.c) on small graphs written plainly. Each kind
 * is found: a SiLU and then a residual add into a GEMM's epilogue (a chain), a residual add
 * into a GEMV's epilogue with the RMSNorm before it in its prologue, a Copy into a state into
 * its producer's drain; a gated product (SiLU of one GEMM times another) with a residual add
 * after it into the two GEMMs, the product as the later GEMM's multiplier, and not where the
 * GEMM already adds a residual. The folded graph gives the unfolded graph's results bit for bit (and
 * its reference agrees), fold = none changes nothing, a fold whose intermediate another step
 * reads is not taken, priced keeps only what its price says, and priced without a price is
 * refused naming the fix. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferrum/graph.h"
#include "support/testing.h"

enum { M = 8, K = 32, N = 16, S = 4 };

static float xs[M * K], ws[N * K], rs[M * N], x1[K], nw[K], w1[K * K], wd[N * K];

static void fill(float *p, int n, uint64_t seed) {
    test_rng r = {seed};
    for (int i = 0; i < n; i++) p[i] = (float)test_rng_uniform(&r, -1, 1);
}

/* z = silu(x w^T) + r over a chunk: GEMM, SiLU, ElementwiseAdd */
static fe_status chain_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h mm[2] = {fe_input(t, "x"), fe_weight(t, "w")};
    fe_h y = fe_apply(t, "GEMM", mm, 2, NULL, 0, NULL, 0);
    fe_h s = fe_apply(t, "SiLU", &y, 1, NULL, 0, NULL, 0);
    fe_h add[2] = {s, fe_input(t, "r")};
    fe_output(t, fe_apply(t, "ElementwiseAdd", add, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* z = (rmsnorm(x) * nw) w^T + x for one row: RMSNorm, GEMV, ElementwiseAdd */
static fe_status norm_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_input(t, "x");
    fe_h nin[2] = {x, fe_weight(t, "nw")};
    fe_h h = fe_apply(t, "RMSNorm", nin, 2, NULL, 0, NULL, 0);
    fe_h gin[2] = {fe_weight(t, "w1"), h};
    fe_h y = fe_apply(t, "GEMV", gin, 2, NULL, 0, NULL, 0);
    fe_h add[2] = {y, x};
    fe_output(t, fe_apply(t, "ElementwiseAdd", add, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* the row x wd^T written into a state at pos, then the state's rows read back through SiLU */
static fe_status drain_body(fe_trace *t, const void *model) {
    (void)model;
    int64_t shape[2] = {S, N};
    fe_h cache = fe_state(t, "cache", FE_DTYPE_F32, 2, shape);
    fe_h gin[2] = {fe_weight(t, "wd"), fe_input(t, "x")};
    fe_h y = fe_apply(t, "GEMV", gin, 2, NULL, 0, NULL, 0);
    fe_val pos = fe_scratchpad(t, "pos");
    fe_copy_into(t, fe_at(t, cache, 0, pos, fe_const(1)), y);
    fe_output(t, fe_apply(t, "SiLU", &cache, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* z = silu(x w^T) * (x wd^T) + r over a chunk: GEMM, SiLU, GEMM, ElementwiseMul, ElementwiseAdd
 * (a SwiGLU written plainly, with the residual after it) */
static fe_status gated_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_input(t, "x");
    fe_h gin[2] = {x, fe_weight(t, "w")}, uin[2] = {x, fe_weight(t, "wd")};
    fe_h g = fe_apply(t, "GEMM", gin, 2, NULL, 0, NULL, 0);
    fe_h s = fe_apply(t, "SiLU", &g, 1, NULL, 0, NULL, 0);
    fe_h u = fe_apply(t, "GEMM", uin, 2, NULL, 0, NULL, 0);
    fe_h mul[2] = {s, u};
    fe_h p = fe_apply(t, "ElementwiseMul", mul, 2, NULL, 0, NULL, 0);
    fe_h add[2] = {p, fe_input(t, "r")};
    fe_output(t, fe_apply(t, "ElementwiseAdd", add, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* (x w^T + r) * r: the GEMM adds its residual before a multiplier would apply, so the
 * product stays a step */
static fe_status mul_after_residual_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h r = fe_input(t, "r");
    fe_h in[4] = {fe_input(t, "x"), fe_weight(t, "w"), FE_NO_TENSOR, r};
    fe_h y = fe_apply(t, "GEMM", in, 4, NULL, 0, NULL, 0);
    fe_h mul[2] = {y, r};
    fe_output(t, fe_apply(t, "ElementwiseMul", mul, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* x + y where y is also an output: the add may not take y away */
static fe_status shared_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h mm[2] = {fe_input(t, "x"), fe_weight(t, "w")};
    fe_h y = fe_apply(t, "GEMM", mm, 2, NULL, 0, NULL, 0);
    fe_h add[2] = {y, fe_input(t, "r")};
    fe_output(t, fe_apply(t, "ElementwiseAdd", add, 2, NULL, 0, NULL, 0));
    fe_output(t, y);
    return fe_trace_status(t);
}

static fe_graph *make(const char *name, fe_body_fn body, fe_fold_mode fold, fe_fold_price_fn price) {
    fe_graph *g = NULL;
    assert_int_equal(fe_graph_create(test_dev, name, body, NULL, &g, NULL), FE_OK);
    int64_t w[2] = {N, K}, n1 = K, ww[2] = {K, K};
    fe_graph_set_weight(g, "w", fe_tensor_contiguous(ws, FE_DTYPE_F32, 2, w));
    fe_graph_set_weight(g, "wd", fe_tensor_contiguous(wd, FE_DTYPE_F32, 2, w));
    fe_graph_set_weight(g, "nw", fe_tensor_contiguous(nw, FE_DTYPE_F32, 1, &n1));
    fe_graph_set_weight(g, "w1", fe_tensor_contiguous(w1, FE_DTYPE_F32, 2, ww));
    fe_compile_options o = fe_compile_options_default();
    o.fold = fold;
    o.fold_price = price;
    fe_graph_compile(g, NULL, 0, &o); /* sets the options; the versions compile on first call */
    return g;
}

typedef struct run_out {
    float *data[2];
    size_t bytes[2];
    int steps;
    int folds[FE_FOLD_KINDS];
} run_out;

static void run(fe_graph *g, const fe_named_tensor *in, int n_in, const fe_word *w, int n_w,
                bool reference, run_out *o) {
    fe_tensor outs[2];
    int n = 0;
    fe_status st = reference ? fe_graph_reference(g, in, n_in, w, n_w, outs, 2, &n)
                             : fe_graph_call(g, in, n_in, w, n_w, outs, 2, &n);
    if (st != FE_OK) fail_msg("%s", fe_graph_message(g));
    for (int i = 0; i < n && i < 2; i++) {
        o->bytes[i] = (size_t)fe_tensor_numel(&outs[i]) * sizeof(float);
        o->data[i] = malloc(o->bytes[i]);
        memcpy(o->data[i], outs[i].data, o->bytes[i]);
    }
    fe_graph_stats s = fe_graph_get_stats(g);
    o->steps = s.last_steps;
    memcpy(o->folds, s.folds, sizeof o->folds);
}

static void run_free(run_out *o) {
    free(o->data[0]);
    free(o->data[1]);
}

static void expect_near(const run_out *a, const run_out *b, double tol) {
    for (size_t i = 0; i < a->bytes[0] / sizeof(float); i++)
        if (!(fabs(a->data[0][i] - b->data[0][i]) <= tol * (1 + fabs(b->data[0][i]))))
            fail_msg("element %zu: %.9g vs %.9g", i, a->data[0][i], b->data[0][i]);
}

/* Runs body unfolded and with fold = all: the folded graph has `steps` steps, the folds
 * counted, and the unfolded graph's results bit for bit; the references agree. */
static void check_folds(fe_body_fn body, const fe_named_tensor *in, int n_in, const fe_word *w,
                        int n_w, int steps, int epilogue, int prologue, int drain) {
    fe_graph *plain = make("plain", body, FE_FOLD_NONE, NULL), *folded = make("folded", body, FE_FOLD_ALL, NULL);
    run_out a = {0}, b = {0}, ra = {0}, rb = {0};
    run(plain, in, n_in, w, n_w, false, &a);
    run(folded, in, n_in, w, n_w, false, &b);
    assert_int_equal(b.steps, steps);
    assert_true(a.steps > steps);
    assert_int_equal(a.folds[FE_FOLD_EPILOGUE] + a.folds[FE_FOLD_PROLOGUE] + a.folds[FE_FOLD_DRAIN], 0);
    assert_int_equal(b.folds[FE_FOLD_EPILOGUE], epilogue);
    assert_int_equal(b.folds[FE_FOLD_PROLOGUE], prologue);
    assert_int_equal(b.folds[FE_FOLD_DRAIN], drain);
    assert_int_equal(a.bytes[0], b.bytes[0]);
    if (memcmp(a.data[0], b.data[0], a.bytes[0]) != 0) {
        expect_near(&b, &a, 0); /* names the first element that differs */
        fail_msg("the folded graph's result differs from the unfolded one's");
    }
    run(plain, in, n_in, w, n_w, true, &ra);
    run(folded, in, n_in, w, n_w, true, &rb);
    expect_near(&rb, &ra, 1e-5);
    expect_near(&b, &rb, 1e-4);
    run_free(&a), run_free(&b), run_free(&ra), run_free(&rb);
    fe_graph_destroy(plain);
    fe_graph_destroy(folded);
}

static void a_silu_then_an_add_fold_into_the_gemm_epilogue(void **s) {
    (void)s;
    int64_t x[2] = {M, K}, r[2] = {M, N};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(xs, FE_DTYPE_F32, 2, x)},
                             {"r", fe_tensor_contiguous(rs, FE_DTYPE_F32, 2, r)}};
    check_folds(chain_body, in, 2, NULL, 0, 1, 2, 0, 0);
}

static void an_rmsnorm_folds_into_the_gemv_prologue_and_the_add_into_its_epilogue(void **s) {
    (void)s;
    int64_t x[2] = {1, K};
    fe_named_tensor in = {"x", fe_tensor_contiguous(x1, FE_DTYPE_F32, 2, x)};
    check_folds(norm_body, &in, 1, NULL, 0, 1, 1, 1, 0);
}

static void a_copy_into_a_state_folds_into_its_producers_drain(void **s) {
    (void)s;
    int64_t x[2] = {1, K};
    fe_named_tensor in = {"x", fe_tensor_contiguous(x1, FE_DTYPE_F32, 2, x)};
    fe_word pos = {"pos", 2};
    check_folds(drain_body, &in, 1, &pos, 1, 2, 0, 0, 1);
}

static void a_gated_product_folds_into_the_later_gemm_as_its_multiplier(void **s) {
    (void)s;
    int64_t x[2] = {M, K}, r[2] = {M, N};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(xs, FE_DTYPE_F32, 2, x)},
                             {"r", fe_tensor_contiguous(rs, FE_DTYPE_F32, 2, r)}};
    /* the SiLU into the gate GEMM, the product and then the add into the up GEMM */
    check_folds(gated_body, in, 2, NULL, 0, 2, 3, 0, 0);
}

/* body over x (M, K) and r (M, N) with fold = all keeps both its steps: nothing folds */
static void expect_no_fold(const char *name, fe_body_fn body) {
    int64_t x[2] = {M, K}, r[2] = {M, N};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(xs, FE_DTYPE_F32, 2, x)},
                             {"r", fe_tensor_contiguous(rs, FE_DTYPE_F32, 2, r)}};
    fe_graph *g = make(name, body, FE_FOLD_ALL, NULL);
    run_out o = {0};
    run(g, in, 2, NULL, 0, false, &o);
    assert_int_equal(o.steps, 2);
    assert_int_equal(o.folds[FE_FOLD_EPILOGUE], 0);
    run_free(&o);
    fe_graph_destroy(g);
}

static void a_product_after_a_residual_is_not_folded(void **s) {
    (void)s;
    expect_no_fold("mul_after_residual", mul_after_residual_body);
}

static void an_intermediate_another_step_reads_is_not_folded(void **s) {
    (void)s;
    expect_no_fold("shared", shared_body);
}

/* keeps every fold but prologues; checks the site names the steps it joins */
static bool no_prologues(void *user, const fe_fold_site *site) {
    (void)user;
    assert_non_null(site->step);
    assert_true(site->n_into >= 1);
    if (site->kind == FE_FOLD_PROLOGUE) {
        assert_string_equal(site->step, "RMSNorm#0");
        assert_string_equal(site->into[0], "GEMV#1");
    } else {
        assert_string_equal(site->step, "ElementwiseAdd#2");
        assert_string_equal(site->into[0], "GEMV#1");
    }
    return site->kind != FE_FOLD_PROLOGUE;
}

static void priced_keeps_only_the_folds_its_price_keeps(void **s) {
    (void)s;
    int64_t x[2] = {1, K};
    fe_named_tensor in = {"x", fe_tensor_contiguous(x1, FE_DTYPE_F32, 2, x)};
    fe_graph *g = make("priced", norm_body, FE_FOLD_PRICED, no_prologues);
    run_out o = {0};
    run(g, &in, 1, NULL, 0, false, &o);
    assert_int_equal(o.steps, 2); /* RMSNorm, then the GEMV with the add folded */
    assert_int_equal(o.folds[FE_FOLD_PROLOGUE], 0);
    assert_int_equal(o.folds[FE_FOLD_EPILOGUE], 1);
    run_free(&o);
    fe_graph_destroy(g);
    g = make("unpriced", norm_body, FE_FOLD_PRICED, NULL);
    fe_tensor outs[1];
    int n;
    assert_int_equal(fe_graph_call(g, &in, 1, NULL, 0, outs, 1, &n), FE_E_INVALID);
    assert_non_null(strstr(fe_graph_message(g), "fold = priced needs a price"));
    fe_graph_destroy(g);
}

static int setup(void **state) {
    fill(xs, M * K, 1), fill(ws, N * K, 2), fill(rs, M * N, 3), fill(x1, K, 4);
    fill(nw, K, 5), fill(w1, K * K, 6), fill(wd, N * K, 7);
    return test_device_setup(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_silu_then_an_add_fold_into_the_gemm_epilogue),
        cmocka_unit_test(an_rmsnorm_folds_into_the_gemv_prologue_and_the_add_into_its_epilogue),
        cmocka_unit_test(a_copy_into_a_state_folds_into_its_producers_drain),
        cmocka_unit_test(a_gated_product_folds_into_the_later_gemm_as_its_multiplier),
        cmocka_unit_test(a_product_after_a_residual_is_not_folded),
        cmocka_unit_test(an_intermediate_another_step_reads_is_not_folded),
        cmocka_unit_test(priced_keeps_only_the_folds_its_price_keeps),
    };
    return cmocka_run_group_tests(tests, setup, test_device_teardown);
}
