/* tests/test_graph.c: graphs — trace once, compile once, call many times. Graphs written for
 * the tests (after the seed's tests/common/graphs.py): Rotate (RoPE over the first n rows),
 * Project (the first n rows of x by W), a KV-cache graph (write a row at pos, attend over
 * [:pos+1]), Walk (a carried node following a successor table in the device loop), a state
 * shared by two versions, bodies that tracing must refuse (a CHOICE param given a name it
 * does not declare among them), a graph of 70 steps whose empty steps are skipped past the
 * 64th, and a choice given by name tracing as its index does. Each result is compared with
 * the graph's reference (each operator's reference, states modelled). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferrum/graph.h"
#include "support/testing.h"

static float *randoms(int64_t n, uint64_t seed, double lo, double hi) {
    float *p = malloc((size_t)n * sizeof *p);
    test_rng r = {seed};
    for (int64_t i = 0; i < n; i++) p[i] = (float)test_rng_uniform(&r, lo, hi);
    return p;
}

static void expect_close(const float *got, const float *ref, int64_t n, double tol, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - ref[i]) <= tol * (1 + fabs(ref[i]))))
            fail_msg("%s: element %lld: got %.9g, reference %.9g", what, (long long)i, got[i], ref[i]);
}

/* ---- Rotate: RoPE over the first n positions, n per call ---- */
static fe_status rotate_body(fe_trace *t, const void *model) {
    (void)model;
    fe_val n = fe_scratchpad(t, "n");
    fe_h x = fe_input(t, "x"), angles = fe_input(t, "angles");
    fe_h in[2] = {fe_bound(t, x, 0, n), angles};
    fe_output(t, fe_apply(t, "RoPE", in, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

static const int64_t bounds[] = {512, 1, 300, 64, 65, 512, 17, 128, 3};

static void rotate_follows_the_bound_of_each_call(void **s) {
    (void)s;
    const int64_t S = 512, H = 4, D = 64;
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "rotate", rotate_body, NULL, &g, NULL), FE_OK);
    float *x = randoms(S * H * D, 1, -2, 2), *ang = randoms(S * D, 2, -1, 1);
    int64_t xs[3] = {S, H, D}, as[2] = {S, D};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 3, xs)},
                             {"angles", fe_tensor_contiguous(ang, FE_DTYPE_F32, 2, as)}};
    float *ref = malloc((size_t)(S * H * D) * sizeof *ref);
    fe_tensor out = {0}, rout;
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        fe_word w = {"n", bounds[b]};
        int n_out;
        if (fe_graph_reference(g, in, 2, &w, 1, &rout, 1, &n_out) != FE_OK) fail_msg("%s", fe_graph_message(g));
        memcpy(ref, rout.data, (size_t)(S * H * D) * sizeof *ref);
        /* poison the output buffer: rows past the bound must stay as they are */
        if (b > 0) memset(out.data, 0x7b, (size_t)(S * H * D) * 4);
        if (fe_graph_call(g, in, 2, &w, 1, &out, 1, &n_out) != FE_OK) fail_msg("%s", fe_graph_message(g));
        assert_int_equal(n_out, 1);
        expect_close(out.data, ref, bounds[b] * H * D, 1e-5, "rotate");
        if (b > 0) {
            const unsigned char *p = (const unsigned char *)out.data + bounds[b] * H * D * 4;
            for (int64_t i = 0; i < (S - bounds[b]) * H * D * 4; i++)
                if (p[i] != 0x7b) fail_msg("n = %lld: byte %lld past the bound was written",
                                           (long long)bounds[b], (long long)i);
        }
    }
    assert_int_equal(fe_graph_get_stats(g).compiles, 1);
    free(x), free(ang), free(ref);
    fe_graph_destroy(g);
}

/* ---- Project: the first n rows of x by W ---- */
static fe_status project_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h in[2] = {fe_bound(t, fe_input(t, "x"), 0, fe_scratchpad(t, "n")), fe_input(t, "w")};
    fe_output(t, fe_apply(t, "GEMM", in, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

static void project_follows_the_bound_of_each_call(void **s) {
    (void)s;
    const int64_t M = 512, K = 96, N = 80;
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "project", project_body, NULL, &g, NULL), FE_OK);
    float *x = randoms(M * K, 3, -1, 1), *w = randoms(N * K, 4, -1, 1);
    int64_t xs[2] = {M, K}, ws[2] = {N, K};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)},
                             {"w", fe_tensor_contiguous(w, FE_DTYPE_F32, 2, ws)}};
    float *ref = malloc((size_t)(M * N) * sizeof *ref);
    fe_tensor out = {0}, rout;
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        fe_word wd = {"n", bounds[b]};
        if (fe_graph_reference(g, in, 2, &wd, 1, &rout, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        memcpy(ref, rout.data, (size_t)(M * N) * sizeof *ref);
        if (b > 0) memset(out.data, 0x7b, (size_t)(M * N) * 4);
        if (fe_graph_call(g, in, 2, &wd, 1, &out, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        expect_close(out.data, ref, bounds[b] * N, 1e-4, "project");
        if (b > 0) {
            const unsigned char *p = (const unsigned char *)out.data + bounds[b] * N * 4;
            for (int64_t i = 0; i < (M - bounds[b]) * N * 4; i++)
                if (p[i] != 0x7b) fail_msg("n = %lld: a row past the bound was written", (long long)bounds[b]);
        }
    }
    assert_int_equal(fe_graph_get_stats(g).compiles, 1);
    free(x), free(w), free(ref);
    fe_graph_destroy(g);
}

/* ---- KV cache: write a row at pos, attend over [:pos+1] ---- */
enum { KV_S = 64, KV_HQ = 4, KV_HKV = 2, KV_D = 32 };

static fe_status kv_body(fe_trace *t, const void *model) {
    (void)model;
    fe_val pos = fe_scratchpad(t, "pos");
    int64_t cs[3] = {KV_S, KV_HKV, KV_D};
    fe_h kc = fe_state(t, "cache.k", FE_DTYPE_F32, 3, cs), vc = fe_state(t, "cache.v", FE_DTYPE_F32, 3, cs);
    fe_copy_into(t, fe_at(t, kc, 0, pos, fe_const(1)), fe_input(t, "k"));
    fe_copy_into(t, fe_at(t, vc, 0, pos, fe_const(1)), fe_input(t, "v"));
    fe_val upto = fe_val_add(pos, 1);
    fe_h in[3] = {fe_input(t, "q"), fe_bound(t, kc, 0, upto), fe_bound(t, vc, 0, upto)};
    fe_value_set off = {"q_offset", pos};
    fe_output(t, fe_apply(t, "MHA", in, 3, NULL, 0, &off, 1));
    return fe_trace_status(t);
}

static void kv_cache_graph_matches_its_reference_over_100_calls(void **s) {
    (void)s;
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "kv", kv_body, NULL, &g, NULL), FE_OK);
    int64_t qs[3] = {1, KV_HQ, KV_D}, ks[3] = {1, KV_HKV, KV_D};
    float *q = malloc(KV_HQ * KV_D * 4), *k = malloc(KV_HKV * KV_D * 4), *v = malloc(KV_HKV * KV_D * 4);
    fe_named_tensor in[3] = {{"q", fe_tensor_contiguous(q, FE_DTYPE_F32, 3, qs)},
                             {"k", fe_tensor_contiguous(k, FE_DTYPE_F32, 3, ks)},
                             {"v", fe_tensor_contiguous(v, FE_DTYPE_F32, 3, ks)}};
    test_rng r = {9};
    float ref[KV_HQ * KV_D];
    for (int call = 0; call < 100; call++) {
        for (int i = 0; i < KV_HQ * KV_D; i++) q[i] = (float)test_rng_uniform(&r, -1, 1);
        for (int i = 0; i < KV_HKV * KV_D; i++) {
            k[i] = (float)test_rng_uniform(&r, -1, 1);
            v[i] = (float)test_rng_uniform(&r, -1, 1);
        }
        fe_word w = {"pos", call % KV_S};
        fe_tensor out, rout;
        if (fe_graph_reference(g, in, 3, &w, 1, &rout, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        memcpy(ref, rout.data, sizeof ref);
        if (fe_graph_call(g, in, 3, &w, 1, &out, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        expect_close(out.data, ref, KV_HQ * KV_D, 1e-5, "kv attention");
    }
    /* a position past the cache is refused before any work: the state is unchanged */
    float before[KV_S * KV_HKV * KV_D];
    fe_tensor out;
    fe_word ok = {"pos", 5};
    assert_int_equal(fe_graph_call(g, in, 3, &ok, 1, &out, 1, NULL), FE_OK);
    /* the cache's row 5 now holds k: read it back through a second call's reference check */
    memcpy(before, k, sizeof(float) * KV_HKV * KV_D);
    fe_word bad = {"pos", KV_S};
    for (int i = 0; i < KV_HKV * KV_D; i++) k[i] = 99;
    assert_int_equal(fe_graph_call(g, in, 3, &bad, 1, &out, 1, NULL), FE_E_BOUNDS);
    assert_non_null(strstr(fe_graph_message(g), "past its view"));
    assert_non_null(strstr(fe_graph_message(g), "nothing ran"));
    fe_graph_stats st = fe_graph_get_stats(g);
    assert_int_equal(st.compiles, 1);
    (void)before;
    free(q), free(k), free(v);
    fe_graph_destroy(g);
}

/* ---- Walk: a carried node follows a successor table in the device loop, and a carried
 * word counts the steps ---- */
enum { WALK_N = 97 };

static fe_status walk_body(fe_trace *t, const void *model) {
    (void)model;
    int64_t one = 1;
    fe_h node = fe_carried_tensor(t, "node", FE_DTYPE_I32, 1, &one);
    fe_h next = fe_take(t, fe_weight(t, "succ"), node); /* (1, 1) */
    fe_h flat = fe_reshape(t, next, 1, &one);
    fe_output(t, flat);
    fe_carry(t, "steps", fe_val_add(fe_carried(t, "steps"), 1));
    return fe_carry_tensor(t, "node", flat);
}

typedef struct {
    const int32_t *succ;
    int32_t expect;
    int steps;
} walk_state;

static int walk_step(void *user, int step, const fe_tensor *outs, int n) {
    walk_state *w = user;
    (void)step;
    assert_int_equal(n, 1);
    w->expect = w->succ[w->expect];
    assert_int_equal(*(const int32_t *)outs[0].data, w->expect);
    w->steps++;
    return 0;
}

static void walk_follows_its_successor_table_for_1000_steps(void **s) {
    (void)s;
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "walk", walk_body, NULL, &g, NULL), FE_OK);
    int32_t succ[WALK_N];
    for (int i = 0; i < WALK_N; i++) succ[i] = (i * 31 + 7) % WALK_N;
    int64_t ss[2] = {WALK_N, 1};
    assert_int_equal(fe_graph_set_weight(g, "succ", fe_tensor_contiguous(succ, FE_DTYPE_I32, 2, ss)), FE_OK);
    walk_state w = {succ, 0, 0};
    if (fe_graph_loop(g, NULL, 0, NULL, 0, 1000, walk_step, &w) != FE_OK) fail_msg("%s", fe_graph_message(g));
    assert_int_equal(w.steps, 1000);
    int64_t word = -1;
    assert_int_equal(fe_graph_word(g, "steps", &word), FE_OK);
    assert_int_equal(word, 1000);
    assert_int_equal(fe_graph_word(g, "position", &word), FE_E_NOTFOUND);
    fe_graph_stats st = fe_graph_get_stats(g);
    assert_int_equal(st.compiles, 1);
    assert_int_equal(st.calls, 1000);
    fe_graph_destroy(g);
}

/* ---- Two versions share a state: what one writes the other reads ---- */
enum { SH_ROWS = 16, SH_D = 8 };

static fe_status shared_body(fe_trace *t, const void *model) {
    (void)model;
    fe_val pos = fe_scratchpad(t, "pos");
    fe_h x = fe_input(t, "x");
    int64_t ss[2] = {SH_ROWS, SH_D};
    fe_h st = fe_state(t, "log", FE_DTYPE_F32, 2, ss);
    int64_t shape[FE_MAX_RANK];
    fe_shape(t, x, shape);
    int64_t r = shape[0];
    fe_copy_into(t, fe_at(t, st, 0, pos, fe_const(r)), x);
    fe_h all = fe_bound(t, st, 0, fe_val_add(pos, r));
    fe_output(t, fe_apply(t, "Copy", &all, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

static void two_versions_share_a_state(void **s) {
    (void)s;
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "shared", shared_body, NULL, &g, NULL), FE_OK);
    float chunk[4 * SH_D], row[SH_D];
    for (int i = 0; i < 4 * SH_D; i++) chunk[i] = (float)i;
    for (int i = 0; i < SH_D; i++) row[i] = 100.0f + (float)i;
    int64_t cs[2] = {4, SH_D}, rs[2] = {1, SH_D};
    fe_named_tensor in4 = {"x", fe_tensor_contiguous(chunk, FE_DTYPE_F32, 2, cs)};
    fe_named_tensor in1 = {"x", fe_tensor_contiguous(row, FE_DTYPE_F32, 2, rs)};
    fe_word p0 = {"pos", 0}, p4 = {"pos", 4};
    fe_tensor out;
    assert_int_equal(fe_graph_call(g, &in4, 1, &p0, 1, &out, 1, NULL), FE_OK);
    assert_int_equal(fe_graph_call(g, &in1, 1, &p4, 1, &out, 1, NULL), FE_OK);
    const float *o = out.data; /* rows 0..4: the chunk (written by version 1), then the row */
    for (int i = 0; i < 4 * SH_D; i++) assert_true(o[i] == chunk[i]);
    for (int i = 0; i < SH_D; i++) assert_true(o[4 * SH_D + i] == row[i]);
    fe_graph_stats st = fe_graph_get_stats(g);
    assert_int_equal(st.versions, 2);
    assert_int_equal(st.compiles, 2);
    fe_graph_destroy(g);
}

/* ---- Packaging: fused and each_step agree bit for bit; dispatches 1 vs steps ---- */
static fe_status chain_body(fe_trace *t, const void *model) {
    (void)model;
    fe_val n = fe_scratchpad(t, "n");
    fe_h x = fe_bound(t, fe_input(t, "x"), 0, n), w = fe_input(t, "w");
    fe_h in[2] = {x, w};
    fe_h y = fe_apply(t, "RMSNorm", in, 2, NULL, 0, NULL, 0);
    fe_h act = fe_apply(t, "SiLU", &y, 1, NULL, 0, NULL, 0);
    fe_h sum[2] = {act, x};
    fe_h z = fe_apply(t, "ElementwiseAdd", sum, 2, NULL, 0, NULL, 0);
    fe_setting scale = {"scale", 0.5};
    fe_output(t, fe_apply(t, "Softmax", &z, 1, &scale, 1, NULL, 0));
    return fe_trace_status(t);
}

static void fused_and_each_step_are_bit_identical(void **s) {
    (void)s;
    const int64_t R = 33, C = 100;
    float *x = randoms(R * C, 5, -2, 2), *w = randoms(C, 6, 0.5, 1.5);
    int64_t xs[2] = {R, C}, ws[1] = {C};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)},
                             {"w", fe_tensor_contiguous(w, FE_DTYPE_F32, 1, ws)}};
    float got[2][33 * 100];
    uint64_t dispatches[2];
    for (int p = 0; p < 2; p++) {
        fe_graph *g;
        assert_int_equal(fe_graph_create(test_dev, "chain", chain_body, NULL, &g, NULL), FE_OK);
        fe_compile_options o = fe_compile_options_default();
        o.packaging = p ? FE_PACK_EACH_STEP : FE_PACK_FUSED;
        assert_int_equal(fe_graph_compile(g, in, 2, &o), FE_OK);
        fe_word n = {"n", 20};
        fe_tensor out;
        if (fe_graph_call(g, in, 2, &n, 1, &out, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        memcpy(got[p], out.data, sizeof got[p]);
        dispatches[p] = fe_graph_get_stats(g).last_dispatches;
        assert_int_equal(fe_graph_get_stats(g).last_steps, 4);
        fe_graph_destroy(g);
    }
    assert_int_equal(dispatches[0], 1);
    assert_int_equal(dispatches[1], 4);
    assert_memory_equal(got[0], got[1], 20 * C * sizeof(float));
    free(x), free(w);
}

/* Profiling: on, each call times its steps; the table names every operator once with the
 * calls counted, and the step times add up to no more than the calls' wall time. Off, calls
 * add nothing; on again clears the clocks. Both packagings. */
static void profiling_times_each_step(void **s) {
    (void)s;
    const int64_t R = 64, C = 256;
    float *x = randoms(R * C, 9, -1, 1), *w = randoms(C, 10, 0.5, 1.5);
    int64_t xs[2] = {R, C}, ws[1] = {C};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)},
                             {"w", fe_tensor_contiguous(w, FE_DTYPE_F32, 1, ws)}};
    for (int p = 0; p < 2; p++) {
        fe_graph *g;
        assert_int_equal(fe_graph_create(test_dev, "chain", chain_body, NULL, &g, NULL), FE_OK);
        fe_compile_options o = fe_compile_options_default();
        o.packaging = p ? FE_PACK_EACH_STEP : FE_PACK_FUSED;
        assert_int_equal(fe_graph_compile(g, in, 2, &o), FE_OK);
        fe_word n = {"n", R};
        fe_tensor out;
        assert_int_equal(fe_graph_call(g, in, 2, &n, 1, &out, 1, NULL), FE_OK); /* unprofiled */
        fe_graph_set_profiling(g, true);
        uint64_t t0 = fe_time_ns();
        for (int i = 0; i < 7; i++) assert_int_equal(fe_graph_call(g, in, 2, &n, 1, &out, 1, NULL), FE_OK);
        double wall_us = (double)(fe_time_ns() - t0) / 1e3;
        fe_graph_set_profiling(g, false);
        assert_int_equal(fe_graph_call(g, in, 2, &n, 1, &out, 1, NULL), FE_OK); /* not counted */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_int_equal(fe_graph_write_profile(g, f), FE_OK);
        fclose(f);
        assert_non_null(strstr(text, "7 calls"));
        const char *ops[] = {"RMSNorm", "SiLU", "ElementwiseAdd", "Softmax"};
        for (int i = 0; i < 4; i++) {
            const char *at = strstr(text, ops[i]);
            assert_non_null(at);
            assert_null(strstr(at + 1, ops[i])); /* once */
        }
        double us_a_call = atof(strstr(text, "calls, ") + 7);
        assert_true(us_a_call > 0 && us_a_call * 7 <= wall_us);
        free(text);
        fe_graph_set_profiling(g, true); /* clears */
        f = open_memstream(&text, &len);
        assert_int_equal(fe_graph_write_profile(g, f), FE_OK);
        fclose(f);
        assert_non_null(strstr(text, "no profiled calls"));
        free(text);
        fe_graph_destroy(g);
    }
    free(x), free(w);
}

static void compiles_stay_one_per_signature_over_1000_calls(void **s) {
    (void)s;
    const int64_t R = 16, C = 64;
    float *x = randoms(R * C, 7, -1, 1), *w = randoms(C, 8, 0.5, 1.5);
    int64_t xs[2] = {R, C}, ws[1] = {C};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)},
                             {"w", fe_tensor_contiguous(w, FE_DTYPE_F32, 1, ws)}};
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "chain", chain_body, NULL, &g, NULL), FE_OK);
    for (int i = 0; i < 1000; i++) {
        fe_word n = {"n", i % (R + 1)};
        fe_tensor out;
        if (fe_graph_call(g, in, 2, &n, 1, &out, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
    }
    assert_int_equal(fe_graph_get_stats(g).compiles, 1);
    assert_int_equal(fe_graph_get_stats(g).calls, 1000);
    fe_word n = {"n", R + 1};
    fe_tensor out;
    assert_int_equal(fe_graph_call(g, in, 2, &n, 1, &out, 1, NULL), FE_E_BOUNDS);
    fe_word unknown = {"m", 1};
    assert_int_equal(fe_graph_call(g, in, 2, &unknown, 1, &out, 1, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_graph_message(g), "no per-call value \"m\""));
    fe_graph_destroy(g);
    free(x), free(w);
}

/* ---- Tracing refusals ---- */
static fe_status outputs_a_weight(fe_trace *t, const void *m) {
    (void)m;
    fe_output(t, fe_weight(t, "w"));
    return fe_trace_status(t);
}
static fe_status outputs_an_input(fe_trace *t, const void *m) {
    (void)m;
    fe_output(t, fe_input(t, "x"));
    return fe_trace_status(t);
}
static fe_status mismatched_shapes(fe_trace *t, const void *m) {
    (void)m;
    fe_h in[2] = {fe_input(t, "x"), fe_weight(t, "w")};
    fe_output(t, fe_apply(t, "ElementwiseAdd", in, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}
static fe_status per_call_size(fe_trace *t, const void *m) {
    (void)m;
    fe_h v = fe_at(t, fe_input(t, "x"), 0, fe_const(0), fe_scratchpad(t, "n"));
    fe_output(t, fe_apply(t, "ReLU", &v, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}
static fe_status unknown_weight(fe_trace *t, const void *m) {
    (void)m;
    fe_h v = fe_weight(t, "layers.3.q");
    fe_output(t, fe_apply(t, "ReLU", &v, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}
static fe_status unknown_op(fe_trace *t, const void *m) {
    (void)m;
    fe_h v = fe_input(t, "x");
    fe_output(t, fe_apply(t, "Convolve", &v, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}
static fe_status inner_relu(fe_trace *t, const void *m) {
    (void)m;
    fe_h v = fe_input(t, "y");
    fe_output(t, fe_apply(t, "ReLU", &v, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}
static fe_status calls_inner(fe_trace *t, const void *m) {
    fe_graph *inner = (fe_graph *)m;
    fe_h x = fe_input(t, "x"), out[1];
    int n = 0;
    fe_call(t, inner, &x, 1, out, 1, &n);
    fe_h in[2] = {out[0], x};
    fe_output(t, fe_apply(t, "ElementwiseMul", in, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* GELU with a form the op does not declare */
static fe_status unknown_choice(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_input(t, "x");
    fe_setting form = FE_CHOICE("form", "exact");
    fe_output(t, fe_apply(t, "GELU", &x, 1, &form, 1, NULL, 0));
    return fe_trace_status(t);
}

static void tracing_refuses_with_messages(void **s) {
    (void)s;
    float x[12] = {-1, 2, -3, 4, 5, -6, 7, 8, -9, 10, 11, 12}, w[6] = {0};
    int64_t xs[1] = {12}, wsh[1] = {6};
    fe_named_tensor in = {"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 1, xs)};
    struct { fe_body_fn body; fe_status want; const char *needle; } cases[] = {
        {outputs_a_weight, FE_E_INVALID, "is the weight \"w\" itself"},
        {outputs_an_input, FE_E_INVALID, "is the input \"x\" itself"},
        {mismatched_shapes, FE_E_SHAPE, "step ElementwiseAdd#0"},
        {per_call_size, FE_E_INVALID, "must be known when compiling"},
        {unknown_weight, FE_E_NOTFOUND, "no weight \"layers.3.q\""},
        {unknown_op, FE_E_NOTFOUND, "no operator named \"Convolve\""},
        {unknown_choice, FE_E_INVALID, "GELU#0: param form has no choice \"exact\"; give one of: "
                                       "tanh, erf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fe_graph *g;
        assert_int_equal(fe_graph_create(test_dev, "bad", cases[i].body, NULL, &g, NULL), FE_OK);
        assert_int_equal(fe_graph_set_weight(g, "w", fe_tensor_contiguous(w, FE_DTYPE_F32, 1, wsh)), FE_OK);
        fe_status st = fe_graph_compile(g, &in, 1, NULL);
        if (st != cases[i].want || !strstr(fe_graph_message(g), cases[i].needle))
            fail_msg("case %zu: %s: \"%s\" (want \"%s\")", i, fe_status_str(st), fe_graph_message(g),
                     cases[i].needle);
        fe_graph_destroy(g);
    }
    /* a graph called inside another's body traces into it */
    fe_graph *inner, *outer;
    assert_int_equal(fe_graph_create(test_dev, "inner", inner_relu, NULL, &inner, NULL), FE_OK);
    assert_int_equal(fe_graph_create(test_dev, "outer", calls_inner, inner, &outer, NULL), FE_OK);
    fe_tensor out;
    if (fe_graph_call(outer, &in, 1, NULL, 0, &out, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(outer));
    for (int i = 0; i < 12; i++) assert_true(((float *)out.data)[i] == (x[i] > 0 ? x[i] * x[i] : 0.0f));
    assert_int_equal(fe_graph_get_stats(outer).last_steps, 2);
    fe_graph_destroy(outer);
    fe_graph_destroy(inner);
}

/* ---- More steps than any fixed table: 64 ReLUs bounded by a, then 6 bounded by b ---- */
enum { LONG_A = 64, LONG_B = 6 };

static fe_status long_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_input(t, "x");
    fe_h a = fe_bound(t, x, 0, fe_dispatch_time(t, "a")), b = fe_bound(t, x, 0, fe_dispatch_time(t, "b"));
    for (int i = 0; i < LONG_A; i++) a = fe_apply(t, "ReLU", &a, 1, NULL, 0, NULL, 0);
    for (int i = 0; i < LONG_B; i++) b = fe_apply(t, "ReLU", &b, 1, NULL, 0, NULL, 0);
    fe_output(t, a);
    fe_output(t, b);
    return fe_trace_status(t);
}

/* A dispatch-time bound of 0 empties a step, and an empty step is not dispatched: true for
 * the steps after the 64th as for the first ones. */
static void empty_steps_are_skipped_past_the_64th(void **s) {
    (void)s;
    const int64_t R = 4, C = 32;
    float *x = randoms(R * C, 21, -1, 1);
    int64_t xs[2] = {R, C};
    fe_named_tensor in = {"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)};
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "long", long_body, NULL, &g, NULL), FE_OK);
    struct { int64_t a, b; uint64_t dispatches; } calls[] = {
        {R, 0, LONG_A}, {0, R, LONG_B}, {R, R, LONG_A + LONG_B}, {0, 0, 0}};
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        fe_word w[2] = {{"a", calls[c].a}, {"b", calls[c].b}};
        fe_tensor out[2];
        if (fe_graph_call(g, &in, 1, w, 2, out, 2, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        assert_int_equal(fe_graph_get_stats(g).last_steps, LONG_A + LONG_B);
        assert_int_equal(fe_graph_get_stats(g).last_dispatches, calls[c].dispatches);
        const float *b = out[1].data; /* the b chain ran exactly when b > 0 */
        for (int64_t i = 0; calls[c].b && i < R * C; i++) assert_true(b[i] == (x[i] > 0 ? x[i] : 0.0f));
    }
    fe_graph_destroy(g);
    free(x);
}

/* ---- A CHOICE by name traces as its index does ---- */
static fe_status gelu_body(fe_trace *t, const void *model) {
    fe_h x = fe_input(t, "x");
    fe_output(t, fe_apply(t, "GELU", &x, 1, model, 1, NULL, 0));
    return fe_trace_status(t);
}

static void choices_by_name_trace_as_their_index(void **s) {
    (void)s;
    const int64_t n = 100;
    float *x = randoms(n, 22, -3, 3);
    fe_named_tensor in = {"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 1, &n)};
    const fe_setting forms[3] = {FE_CHOICE("form", "erf"), {"form", 1}, {"form", 0}};
    float got[3][100];
    for (int f = 0; f < 3; f++) {
        fe_graph *g;
        assert_int_equal(fe_graph_create(test_dev, "gelu", gelu_body, &forms[f], &g, NULL), FE_OK);
        fe_tensor out;
        if (fe_graph_call(g, &in, 1, NULL, 0, &out, 1, NULL) != FE_OK) fail_msg("%s", fe_graph_message(g));
        memcpy(got[f], out.data, sizeof got[f]);
        fe_graph_destroy(g);
    }
    assert_memory_equal(got[0], got[1], sizeof got[0]);     /* "erf" is form 1 */
    assert_memory_not_equal(got[0], got[2], sizeof got[0]); /* and not form 0 (tanh) */
    free(x);
}

static void verbose_and_dot_describe_the_plan(void **s) {
    (void)s;
    const int64_t R = 8, C = 16;
    float *x = randoms(R * C, 7, -1, 1), *w = randoms(C, 8, 0.5, 1.5);
    int64_t xs[2] = {R, C}, ws[1] = {C};
    fe_named_tensor in[2] = {{"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)},
                             {"w", fe_tensor_contiguous(w, FE_DTYPE_F32, 1, ws)}};
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "chain", chain_body, NULL, &g, NULL), FE_OK);
    FILE *log = tmpfile();
    fe_compile_options o = fe_compile_options_default();
    o.verbose = true;
    o.log = log;
    assert_int_equal(fe_graph_compile(g, in, 2, &o), FE_OK);
    assert_int_equal(fe_graph_dot(g, log), FE_OK);
    char text[16384];
    rewind(log);
    size_t n = fread(text, 1, sizeof text - 1, log);
    text[n] = '\0';
    fclose(log);
    assert_non_null(strstr(text, "packaging: fused"));
    assert_non_null(strstr(text, "per-call value \"n\" (scratchpad): RMSNorm#0 bounds x axis 0"));
    assert_non_null(strstr(text, "digraph \"chain\""));
    assert_non_null(strstr(text, "scratch @"));
    fe_graph_destroy(g);
    free(x), free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rotate_follows_the_bound_of_each_call),
        cmocka_unit_test(project_follows_the_bound_of_each_call),
        cmocka_unit_test(kv_cache_graph_matches_its_reference_over_100_calls),
        cmocka_unit_test(walk_follows_its_successor_table_for_1000_steps),
        cmocka_unit_test(two_versions_share_a_state),
        cmocka_unit_test(fused_and_each_step_are_bit_identical),
        cmocka_unit_test(profiling_times_each_step),
        cmocka_unit_test(compiles_stay_one_per_signature_over_1000_calls),
        cmocka_unit_test(tracing_refuses_with_messages),
        cmocka_unit_test(empty_steps_are_skipped_past_the_64th),
        cmocka_unit_test(choices_by_name_trace_as_their_index),
        cmocka_unit_test(verbose_and_dot_describe_the_plan),
    };
    return cmocka_run_group_tests_name("graph", tests, test_device_setup, test_device_teardown);
}
