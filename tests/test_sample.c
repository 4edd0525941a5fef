/* tests/test_sample.c: Sample's claims beyond the catalog's kernel-equals-reference: greedy
 * is the argmax with the lowest index on ties; the same (seed, pos, row) gives the same
 * token on every ISA and kernel; top_k 1 is greedy; over many positions a fixed seed's draws
 * follow the probabilities (a chi-square well inside its bound, deterministic); top_k and
 * top_p never draw outside their cut; NaN and infinite logits follow the stated rule; rows
 * past the bound are untouched; and a top_p outside (0, 1] is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "support/testing.h"

static fe_device *device(int isa) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = 2;
    o.max_isa = isa;
    fe_device *d = NULL;
    assert_int_equal(fe_device_create(&o, &d, NULL), FE_OK);
    return d;
}

typedef struct sampler {
    fe_device *dev;
    fe_kernel *k;
    int64_t B, V;
} sampler;

static sampler make(int isa, int64_t B, int64_t V, double temp, double top_k, double top_p,
                    double seed) {
    sampler s = {.dev = device(isa), .B = B, .V = V};
    int64_t shape[2] = {B, V};
    fe_tensor ops[2] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, shape),
                        fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, shape)};
    fe_setting p[4] = {{"temperature", temp}, {"top_k", top_k}, {"top_p", top_p},
                       {"seed", seed}};
    fe_op_request req = {.op = "Sample", .operands = ops, .n_operands = 2, .params = p,
                         .n_params = 4};
    fe_error err;
    if (fe_kernel_create(s.dev, &req, &s.k, &err) != FE_OK) fail_msg("create: %s", err.message);
    return s;
}

static void done(sampler *s) {
    fe_kernel_destroy(s->k);
    fe_device_destroy(s->dev);
}

/* tokens for the first `rows` rows of logits at pos */
static void draw(sampler *s, const float *logits, int32_t *tok, int64_t rows, int64_t pos) {
    int64_t shape[2] = {s->B, s->V};
    fe_tensor ops[2] = {fe_tensor_contiguous((void *)logits, FE_DTYPE_F32, 2, shape),
                        fe_tensor_contiguous(tok, FE_DTYPE_I32, 1, shape)};
    int64_t values[2] = {rows, pos};
    if (fe_kernel_run(s->k, ops, 2, values, 2) != FE_OK) fail_msg("%s", fe_kernel_message(s->k));
}

static void fill(float *l, int64_t n, uint64_t seed) {
    test_rng r = {.s = seed};
    for (int64_t i = 0; i < n; i++) l[i] = (float)test_rng_uniform(&r, -4, 4);
}

static void greedy_is_the_argmax_lowest_index_on_ties(void **st) {
    (void)st;
    enum { B = 6, V = 1000 };
    static float l[B * V];
    fill(l, B * V, 1);
    l[1 * V + 17] = l[1 * V + 900] = 9.0f; /* row 1: a tie, the lower index wins */
    l[2 * V + 999] = 9.0f;                 /* row 2: the max in the tail */
    for (int isa = 0; isa < 3; isa++) {
        sampler s = make(isa, B, V, 0, 0, 1, 0);
        int32_t tok[B];
        draw(&s, l, tok, B, 5);
        for (int b = 0; b < B; b++) {
            int64_t best = 0;
            for (int64_t i = 1; i < V; i++)
                if (l[b * V + i] > l[b * V + best]) best = i;
            assert_int_equal(tok[b], best);
        }
        assert_int_equal(tok[1], 17);
        assert_int_equal(tok[2], 999);
        done(&s);
    }
}

static void top_k_one_is_greedy(void **st) {
    (void)st;
    enum { B = 8, V = 777 };
    static float l[B * V];
    fill(l, B * V, 2);
    sampler g = make(2, B, V, 0, 0, 1, 0), k1 = make(2, B, V, 1.5, 1, 0.9, 123);
    int32_t a[B], b[B];
    for (int64_t pos = 0; pos < 20; pos++) {
        draw(&g, l, a, B, pos);
        draw(&k1, l, b, B, pos);
        for (int i = 0; i < B; i++) assert_int_equal(a[i], b[i]);
    }
    done(&g);
    done(&k1);
}

/* Same seed, pos and row: the same token, on every ISA, from a fresh kernel too; another
 * seed or position draws differently somewhere. */
static void the_same_seed_and_position_give_the_same_token(void **st) {
    (void)st;
    enum { B = 4, V = 500 };
    static float l[B * V];
    fill(l, B * V, 3);
    for (int i = 0; i < B * V; i++) l[i] *= 0.2f; /* flat enough that draws differ */
    int32_t first[40][B];
    int differs_by_pos = 0, differs_by_seed = 0;
    for (int isa = 0; isa < 3; isa++) {
        sampler s = make(isa, B, V, 1.0, 0, 1, 42), other = make(isa, B, V, 1.0, 0, 1, 43);
        for (int64_t pos = 0; pos < 40; pos++) {
            int32_t t[B], again[B], o[B];
            draw(&s, l, t, B, pos);
            draw(&s, l, again, B, pos);
            draw(&other, l, o, B, pos);
            for (int b = 0; b < B; b++) {
                assert_int_equal(t[b], again[b]);
                if (isa == 0) first[pos][b] = t[b];
                else assert_int_equal(t[b], first[pos][b]);
                differs_by_seed += o[b] != t[b];
                if (pos > 0) differs_by_pos += t[b] != first[pos - 1][b];
            }
        }
        done(&s);
        done(&other);
    }
    assert_true(differs_by_pos > 100);
    assert_true(differs_by_seed > 100);
}

/* 8 tokens with probabilities p_i (logits log p_i), one seed, positions 0..N-1: the counts
 * pass a chi-square test with 7 degrees of freedom at a bound (40) that a fair sampler
 * exceeds with probability ~1e-6; the seed is fixed, so the test is deterministic. With
 * top_k 3 and top_p 0.75 the draws stay inside the cut and follow the renormalised mass. */
static void draws_over_positions_follow_the_probabilities(void **st) {
    (void)st;
    enum { V = 8, N = 20000 };
    const double p[V] = {0.30, 0.20, 0.15, 0.12, 0.10, 0.07, 0.04, 0.02};
    float l[V];
    for (int i = 0; i < V; i++) l[i] = (float)log(p[i]);
    struct {
        double top_k, top_p;
        int kept;
    } cut[3] = {{0, 1, 8}, {3, 1, 3}, {0, 0.6, 3}};
    for (int c = 0; c < 3; c++) {
        sampler s = make(2, 1, V, 1.0, cut[c].top_k, cut[c].top_p, 2024);
        int count[V] = {0};
        for (int64_t pos = 0; pos < N; pos++) {
            int32_t t;
            draw(&s, l, &t, 1, pos);
            assert_true(t >= 0 && t < cut[c].kept);
            count[t]++;
        }
        double mass = 0, chi2 = 0;
        for (int i = 0; i < cut[c].kept; i++) mass += exp((double)l[i]);
        for (int i = 0; i < cut[c].kept; i++) {
            double e = N * exp((double)l[i]) / mass;
            chi2 += (count[i] - e) * (count[i] - e) / e;
        }
        if (chi2 > 40) fail_msg("cut %d: chi-square %.1f over %d tokens", c, chi2, cut[c].kept);
        print_message("top_k %g, top_p %g: chi-square %.2f over %d tokens (%d draws)\n",
                      cut[c].top_k, cut[c].top_p, chi2, cut[c].kept, N);
        done(&s);
    }
}

/* -inf logits are never drawn; NaN counts as -inf; a row with no finite logit, or a +inf
 * one, gives its first maximum (0 when all are NaN) */
static void nan_and_infinite_logits_follow_the_rule(void **st) {
    (void)st;
    enum { B = 4, V = 40 };
    float l[B * V];
    for (int i = 0; i < B * V; i++) l[i] = -INFINITY;
    l[0 * V + 7] = 1.0f;
    l[0 * V + 30] = 1.5f;
    l[0 * V + 3] = NAN;
    for (int i = 0; i < V; i++) l[1 * V + i] = NAN;
    l[2 * V + 12] = INFINITY;
    l[2 * V + 20] = INFINITY;
    /* row 3: all -inf */
    for (int isa = 0; isa < 3; isa++) {
        sampler s = make(isa, B, V, 1.0, 0, 1, 9);
        for (int64_t pos = 0; pos < 50; pos++) {
            int32_t t[B];
            draw(&s, l, t, B, pos);
            assert_true(t[0] == 7 || t[0] == 30);
            assert_int_equal(t[1], 0);
            assert_int_equal(t[2], 12);
            assert_int_equal(t[3], 0);
        }
        done(&s);
    }
}

static void rows_past_the_bound_are_untouched(void **st) {
    (void)st;
    enum { B = 5, V = 64 };
    float l[B * V];
    fill(l, B * V, 4);
    sampler s = make(2, B, V, 0.7, 10, 0.9, 1);
    int32_t t[B] = {-1, -1, -1, -1, -1};
    draw(&s, l, t, 2, 0);
    assert_true(t[0] >= 0 && t[1] >= 0);
    for (int b = 2; b < B; b++) assert_int_equal(t[b], -1);
    done(&s);
}

static void top_p_outside_its_range_is_refused(void **st) {
    (void)st;
    fe_device *dev = device(2);
    int64_t shape[2] = {1, 10};
    fe_tensor ops[2] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, shape),
                        fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, shape)};
    double bad[3] = {0, -0.5, 1.5};
    for (int i = 0; i < 3; i++) {
        fe_setting p = {"top_p", bad[i]};
        fe_op_request req = {.op = "Sample", .operands = ops, .n_operands = 2, .params = &p,
                             .n_params = 1};
        fe_kernel *k = NULL;
        fe_error err;
        assert_int_equal(fe_kernel_create(dev, &req, &k, &err), FE_E_INVALID);
        assert_null(k);
        assert_non_null(strstr(err.message, "top_p"));
    }
    fe_device_destroy(dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_is_the_argmax_lowest_index_on_ties),
        cmocka_unit_test(top_k_one_is_greedy),
        cmocka_unit_test(the_same_seed_and_position_give_the_same_token),
        cmocka_unit_test(draws_over_positions_follow_the_probabilities),
        cmocka_unit_test(nan_and_infinite_logits_follow_the_rule),
        cmocka_unit_test(rows_past_the_bound_are_untouched),
        cmocka_unit_test(top_p_outside_its_range_is_refused),
    };
    return cmocka_run_group_tests_name("sample", tests, NULL, NULL);
}
