/* tests/test_rope_table.c: RoPE's cos/sin table and the RoPE operator around it: the table
 * equals cos and sin of p * theta^(-2i/D) computed here independently in double; Llama 3
 * scaling (Llama 3.2 1B: theta 500000, factor 32, low 1, high 4, original 8192, D 64) keeps
 * the high frequencies, divides the low ones by the factor and blends the three between,
 * to the values transformers' _compute_llama3_parameters gives; bad arguments are refused
 * and write nothing; RoPE with a built table turns a vector as the rotation written here
 * does, in both pair forms; and RoPE refuses pos + rows past its table before any work. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lm/model/rope_table.h"
#include "support/testing.h"

static const double PI = 3.14159265358979323846;

/* Llama 3.2 1B's rope_scaling */
static const fe_rope_scaling llama32 = {.factor = 32, .low_freq_factor = 1,
                                        .high_freq_factor = 4,
                                        .original_max_position_embeddings = 8192};

/* The frequency of pair i written out from the definition (a second, separate spelling of
 * what table.c computes). */
static double expected_freq(int i, int D, double theta, const fe_rope_scaling *s) {
    double f = pow(theta, -2.0 * i / D);
    if (!s) return f;
    double wavelen = 2 * PI / f, old = (double)s->original_max_position_embeddings;
    if (wavelen < old / s->high_freq_factor) return f;
    if (wavelen > old / s->low_freq_factor) return f / s->factor;
    double smooth = (old / wavelen - s->low_freq_factor) /
                    (s->high_freq_factor - s->low_freq_factor);
    return f * ((1 - smooth) / s->factor + smooth);
}

/* |table - cos/sin(p f_i)| within one f32 ulp of 1, row by row */
static void check_table(const float *t, int64_t P, int D, double theta,
                        const fe_rope_scaling *s) {
    for (int64_t p = 0; p < P; p++)
        for (int i = 0; i < D / 2; i++) {
            double a = (double)p * expected_freq(i, D, theta, s);
            double c = t[p * D + i], sn = t[p * D + D / 2 + i];
            if (fabs(c - cos(a)) > 1.2e-7 || fabs(sn - sin(a)) > 1.2e-7)
                fail_msg("row %lld pair %d: (%.9g, %.9g), want (%.9g, %.9g)", (long long)p, i,
                         c, sn, cos(a), sin(a));
        }
}

static void table_is_cos_then_sin_of_position_times_frequency(void **s) {
    (void)s;
    enum { P = 300, D = 16 };
    float *t = malloc(sizeof(float) * P * D);
    assert_non_null(t);
    assert_int_equal(fe_rope_table(t, P, D, 10000.0, NULL), FE_OK);
    check_table(t, P, D, 10000.0, NULL);
    /* row 0 is cos 0 = 1, sin 0 = 0; pair 0 turns by exactly p */
    for (int i = 0; i < D / 2; i++) {
        assert_true(t[i] == 1.0f);
        assert_true(t[D / 2 + i] == 0.0f);
    }
    assert_true(t[7 * D] == (float)cos(7.0));
    free(t);
}

static void llama3_scaling_keeps_high_divides_low_blends_between(void **s) {
    (void)s;
    enum { D = 64 };
    double f[D / 2], plain[D / 2];
    assert_int_equal(fe_rope_inv_freq(f, D, 500000.0, &llama32), FE_OK);
    assert_int_equal(fe_rope_inv_freq(plain, D, 500000.0, NULL), FE_OK);
    /* with theta 500000 and D 64: wavelengths below 8192/4 for i <= 14, above 8192 for
     * i >= 18 */
    for (int i = 0; i < D / 2; i++) {
        double ratio = f[i] / plain[i];
        if (i <= 14) assert_true(ratio == 1.0);
        else if (i >= 18) assert_true(fabs(ratio - 1.0 / 32) < 1e-15);
        else assert_true(ratio > 1.0 / 32 && ratio < 1.0);
        assert_true(fabs(f[i] - expected_freq(i, D, 500000.0, &llama32)) <= 1e-15 * plain[i]);
    }
    /* values transformers gives for Llama 3.2 1B (in double) */
    assert_true(fabs(f[15] - 0.001290547928209264) < 1e-17);
    assert_true(fabs(f[16] - 0.00042955679655936815) < 1e-17);
    assert_true(fabs(f[17] - 9.70828780262767e-05) < 1e-18);
    assert_true(fabs(f[31] - 9.418306725434909e-08) < 1e-21);
    /* the table follows the scaled frequencies, far into the context too */
    enum { P = 4096 };
    float *t = malloc(sizeof(float) * P * D);
    assert_non_null(t);
    assert_int_equal(fe_rope_table(t, P, D, 500000.0, &llama32), FE_OK);
    check_table(t, P, D, 500000.0, &llama32);
    free(t);
}

static void bad_table_arguments_are_refused_and_write_nothing(void **s) {
    (void)s;
    float t[64];
    for (int i = 0; i < 64; i++) t[i] = 42.0f;
    fe_rope_scaling bad_factor = llama32, bad_bands = llama32, bad_orig = llama32;
    bad_factor.factor = 0;
    bad_bands.high_freq_factor = bad_bands.low_freq_factor;
    bad_orig.original_max_position_embeddings = 0;
    assert_int_equal(fe_rope_table(t, 4, 7, 10000.0, NULL), FE_E_INVALID);   /* odd D */
    assert_int_equal(fe_rope_table(t, 4, 0, 10000.0, NULL), FE_E_INVALID);   /* no pairs */
    assert_int_equal(fe_rope_table(t, 0, 8, 10000.0, NULL), FE_E_INVALID);   /* no rows */
    assert_int_equal(fe_rope_table(t, 4, 8, 0.0, NULL), FE_E_INVALID);       /* theta */
    assert_int_equal(fe_rope_table(t, 4, 8, NAN, NULL), FE_E_INVALID);
    assert_int_equal(fe_rope_table(t, 4, 8, INFINITY, NULL), FE_E_INVALID);
    assert_int_equal(fe_rope_table(t, 4, 8, 10000.0, &bad_factor), FE_E_INVALID);
    assert_int_equal(fe_rope_table(t, 4, 8, 10000.0, &bad_bands), FE_E_INVALID);
    assert_int_equal(fe_rope_table(t, 4, 8, 10000.0, &bad_orig), FE_E_INVALID);
    assert_int_equal(fe_rope_table(NULL, 4, 8, 10000.0, NULL), FE_E_INVALID);
    for (int i = 0; i < 64; i++) assert_true(t[i] == 42.0f);
}

static fe_device *device(int isa) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = 2;
    o.max_isa = isa;
    fe_device *d = NULL;
    assert_int_equal(fe_device_create(&o, &d, NULL), FE_OK);
    return d;
}

static fe_kernel *make_rope(fe_device *dev, int64_t S, int64_t H, int64_t D, int64_t P,
                            const char *form) {
    int64_t xs[3] = {S, H, D}, ts[2] = {P, D};
    fe_tensor ops[3] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, xs),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, ts),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, xs)};
    fe_setting p = FE_CHOICE("form", form);
    fe_op_request req = {.op = "RoPE", .operands = ops, .n_operands = 3, .params = &p,
                         .n_params = 1};
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) fail_msg("create: %s", err.message);
    return k;
}

/* x (3, 2, 64) turned in place at positions 100..102 with the Llama 3.2 table: each pair
 * (rotate_half: i, i + 32; interleaved: 2i, 2i + 1) turns by (100 + r) f_i, as a rotation
 * written here in double says. */
static void rope_turns_pairs_by_position_times_frequency(void **s) {
    (void)s;
    enum { S = 3, H = 2, D = 64, P = 200 };
    float *t = malloc(sizeof(float) * P * D);
    assert_non_null(t);
    assert_int_equal(fe_rope_table(t, P, D, 500000.0, &llama32), FE_OK);
    for (int isa = 0; isa < 3; isa++)
        for (int form = 0; form < 2; form++) {
            fe_device *dev = device(isa);
            fe_kernel *k = make_rope(dev, S, H, D, P, form ? "interleaved" : "rotate_half");
            float x[S * H * D], x0[S * H * D];
            for (int i = 0; i < S * H * D; i++) x0[i] = x[i] = (float)sin(0.37 * i + 1.0);
            int64_t xs[3] = {S, H, D}, ts[2] = {P, D};
            fe_tensor ops[3] = {fe_tensor_contiguous(x, FE_DTYPE_F32, 3, xs),
                                fe_tensor_contiguous(t, FE_DTYPE_F32, 2, ts),
                                fe_tensor_contiguous(x, FE_DTYPE_F32, 3, xs)}; /* y is x */
            int64_t values[2] = {S, 100};
            assert_int_equal(fe_kernel_run(k, ops, 3, values, 2), FE_OK);
            for (int r = 0; r < S; r++)
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < D / 2; i++) {
                        int a = form ? 2 * i : i, b = form ? 2 * i + 1 : i + D / 2;
                        const float *v0 = x0 + (r * H + h) * D;
                        const float *v = x + (r * H + h) * D;
                        double ang = (100.0 + r) * expected_freq(i, D, 500000.0, &llama32);
                        double ya = v0[a] * cos(ang) - v0[b] * sin(ang);
                        double yb = v0[b] * cos(ang) + v0[a] * sin(ang);
                        if (fabs(v[a] - ya) > 1e-6 || fabs(v[b] - yb) > 1e-6)
                            fail_msg("isa %d form %d row %d head %d pair %d: (%g, %g), want "
                                     "(%g, %g)", isa, form, r, h, i, v[a], v[b], ya, yb);
                    }
            fe_kernel_destroy(k);
            fe_device_destroy(dev);
        }
    free(t);
}

/* A kernel made for 8 rows with a 5-row table (so pos lies in [0, last_pos = 0]): 6 rows
 * pass the table and are refused with the rule before anything is written; 3 rows run and
 * touch only their rows. */
static void rope_refuses_rows_past_its_table(void **s) {
    (void)s;
    enum { S = 8, H = 2, D = 8, P = 5 };
    fe_device *dev = device(2);
    fe_kernel *k = make_rope(dev, S, H, D, P, "rotate_half");
    float x[S * H * D], y[S * H * D], t[P * D];
    for (int i = 0; i < S * H * D; i++) x[i] = 1.0f;
    for (int i = 0; i < P * D; i++) t[i] = 0.5f;
    for (int i = 0; i < S * H * D; i++) y[i] = -7.0f;
    int64_t xs[3] = {S, H, D}, ts[2] = {P, D};
    fe_tensor ops[3] = {fe_tensor_contiguous(x, FE_DTYPE_F32, 3, xs),
                        fe_tensor_contiguous(t, FE_DTYPE_F32, 2, ts),
                        fe_tensor_contiguous(y, FE_DTYPE_F32, 3, xs)};
    int64_t bad[2] = {6, 0};
    assert_int_equal(fe_kernel_run(k, ops, 3, bad, 2), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(k), "pos + rows"));
    assert_non_null(strstr(fe_kernel_message(k), "nothing ran"));
    for (int i = 0; i < S * H * D; i++) assert_true(y[i] == -7.0f);
    /* pos past last_pos = P - 1 is refused by the value's own range */
    int64_t far[2] = {1, P};
    assert_int_equal(fe_kernel_run(k, ops, 3, far, 2), FE_E_BOUNDS);
    assert_non_null(strstr(fe_kernel_message(k), "past its view"));
    int64_t ok[2] = {3, 0};
    assert_int_equal(fe_kernel_run(k, ops, 3, ok, 2), FE_OK);
    /* (1, 1) turned with cos = sin = 0.5 is (0, 1) */
    for (int i = 0; i < S * H * D; i++)
        assert_true(y[i] == (i >= 3 * H * D ? -7.0f : i % D < D / 2 ? 0.0f : 1.0f));
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_cos_then_sin_of_position_times_frequency),
        cmocka_unit_test(llama3_scaling_keeps_high_divides_low_blends_between),
        cmocka_unit_test(bad_table_arguments_are_refused_and_write_nothing),
        cmocka_unit_test(rope_turns_pairs_by_position_times_frequency),
        cmocka_unit_test(rope_refuses_rows_past_its_table),
    };
    return cmocka_run_group_tests_name("rope_table", tests, NULL, NULL);
}
