/* tests/test_gemm_bf16.c: the prefill GEMM over a bf16 weight reads it from a layout the plan
 * makes once, k-pair panels of 32 rows of B: the packed bf16 design (act_bf16, bf16_dot = 1:
 * vdpbf16ps) where the device has AVX512_BF16, else the f32 path widening its B panels from
 * the same layout (b_panels = 1, AVX2 and AVX-512). A graph lays out the weight its GEMM steps
 * read once for all of them and for all its versions, counts it beside the weights
 * (layout_bytes), and its calls write the bytes the same kernel writes packing B per call;
 * nothing of B past the bound k counts, not even a NaN that the layout holds in the k-pair
 * straddling it. The scalar kernel reads B as stored: nothing is laid out. The sessions of
 * one model share its layouts: a second session adds none. The design is the device's
 * fastest: AMX tiles (bf16_dot = 3) where it has AMX-BF16. (The catalog compares every
 * case's run from its layouts with the run without, byte for byte, on every width.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "ferrum/graph.h"
#include "ferrum/lm.h"
#include "lm/model/weights.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"
#include "support/tiny_llama.h"

enum { N = 72, K = 101 }; /* N: two panels of 32 and a part; K: an odd last pair */

static bool has_bf16_dot(void) {
    const fe_device_info *d = fe_device_get_info(test_dev);
    return d->isa >= FE_ISA_AVX512 && d->features.avx512bf16;
}

/* whether the GEMM reads the weight from its layout here: both bf16 designs on AVX2 and up */
static bool has_layout(void) { return fe_device_get_info(test_dev)->isa >= FE_ISA_AVX2; }

/* the layout's bytes for an (N, K) weight: 32-row panels, k-pairs */
static size_t panel_bytes(void) { return (size_t)((N + 31) / 32 * 32) * ((K + 1) / 2) * 4; }

static void draw(void *mem, fe_dtype dt, int64_t n, uint64_t seed) {
    test_rng r = {seed};
    for (int64_t i = 0; i < n; i++) {
        float v = (float)test_rng_uniform(&r, -1, 1);
        if (dt == FE_DTYPE_BF16) ((uint16_t *)mem)[i] = fe_f32_to_bf16(v);
        else ((float *)mem)[i] = v;
    }
}

/* y = x w^T and silu(x w^T) + y over the first n rows: two GEMM steps read the weight */
static fe_status two_products_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_bound(t, fe_input(t, "x"), 0, fe_scratchpad(t, "n")), w = fe_weight(t, "w");
    fe_setting bf16 = {"act_bf16", 1};
    fe_h in1[2] = {x, w};
    fe_h y = fe_apply(t, "GEMM", in1, 2, &bf16, 1, NULL, 0);
    fe_setting silu[2] = {{"act_bf16", 1}, FE_CHOICE("activation", "silu")};
    fe_h in2[4] = {x, w, FE_NO_TENSOR, y};
    fe_output(t, y);
    fe_output(t, fe_apply(t, "GEMM", in2, 4, silu, 2, NULL, 0));
    return fe_trace_status(t);
}

/* the kernel alone (B packed per call) at x's rows: what the graph's first step must write */
static void product_alone(const float *x, int64_t M, int64_t n, const uint16_t *w, float *y) {
    const int64_t xs[2] = {M, K}, ws[2] = {N, K}, ys[2] = {M, N};
    fe_tensor ops[5] = {fe_tensor_contiguous((void *)x, FE_DTYPE_F32, 2, xs),
                        fe_tensor_contiguous((void *)w, FE_DTYPE_BF16, 2, ws), {.rank = 0},
                        {.rank = 0}, fe_tensor_contiguous(y, FE_DTYPE_F32, 2, ys)};
    fe_setting bf16 = {"act_bf16", 1};
    fe_op_request req = {.op = "GEMM", .operands = ops, .n_operands = 5, .params = &bf16,
                         .n_params = 1};
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_kernel_create(test_dev, &req, &k, &err) != FE_OK) fail_msg("%s", err.message);
    const int64_t vals[2] = {n, K};
    assert_int_equal(fe_kernel_run(k, ops, 5, vals, 2), FE_OK);
    fe_kernel_destroy(k);
}

static void a_graph_lays_out_a_weight_once_for_every_step_and_version(void **s) {
    (void)s;
    uint16_t *w = malloc((size_t)N * K * 2);
    draw(w, FE_DTYPE_BF16, N * K, 1);
    fe_graph *g;
    assert_int_equal(fe_graph_create(test_dev, "two products", two_products_body, NULL, &g, NULL),
                     FE_OK);
    const int64_t ws[2] = {N, K};
    assert_int_equal(fe_graph_set_weight(g, "w", fe_tensor_contiguous(w, FE_DTYPE_BF16, 2, ws)),
                     FE_OK);
    const int64_t rows[2] = {40, 17}; /* two versions, two signatures */
    for (int v = 0; v < 2; v++) {
        const int64_t M = rows[v], n = M - 3, xs[2] = {M, K};
        float *x = malloc((size_t)(M * K) * 4), *alone = malloc((size_t)(M * N) * 4);
        draw(x, FE_DTYPE_F32, M * K, 2 + (uint64_t)v);
        memset(alone, 0, (size_t)(M * N) * 4);
        fe_named_tensor in = {"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)};
        fe_word words = {"n", n};
        fe_tensor out[2];
        int n_out = 0;
        if (fe_graph_call(g, &in, 1, &words, 1, out, 2, &n_out) != FE_OK)
            fail_msg("%s", fe_graph_message(g));
        assert_int_equal(n_out, 2);
        product_alone(x, M, n, w, alone);
        if (memcmp(out[0].data, alone, (size_t)(n * N) * 4) != 0)
            fail_msg("version %d: the step reading the layout and the kernel packing B per call "
                     "wrote different bytes", v);
        free(x);
        free(alone);
    }
    fe_graph_stats st = fe_graph_get_stats(g);
    assert_int_equal(st.versions, 2);
    /* four steps read w (two a version); one layout serves them */
    assert_int_equal(st.layout_bytes, has_layout() ? panel_bytes() : 0);
    fe_graph_destroy(g);
    free(w);
}

static void nothing_past_k_counts_not_even_a_nan_in_the_layout(void **s) {
    (void)s;
    enum { M = 9, KB = 51 }; /* k odd: the layout's pair (50, 51) holds column 51 */
    const int64_t xs[2] = {M, K}, ws[2] = {N, K}, ys[2] = {M, N};
    float *x = malloc((size_t)M * K * 4), *y[3];
    uint16_t *w = malloc((size_t)N * K * 2);
    draw(x, FE_DTYPE_F32, M * K, 3);
    draw(w, FE_DTYPE_BF16, N * K, 4);
    for (int64_t j = 0; j < N; j++) /* columns past the bound: a NaN, an infinity */
        for (int64_t p = KB; p < K; p++) w[j * K + p] = p == KB ? 0x7fc0 : 0x7f80;
    for (int i = 0; i < 3; i++) y[i] = calloc((size_t)M * N, 4);
    fe_tensor ops[5] = {fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs),
                        fe_tensor_contiguous(w, FE_DTYPE_BF16, 2, ws), {.rank = 0},
                        {.rank = 0}, fe_tensor_contiguous(y[0], FE_DTYPE_F32, 2, ys)};
    fe_setting bf16 = {"act_bf16", 1};
    fe_op_request req = {.op = "GEMM", .operands = ops, .n_operands = 5, .params = &bf16,
                         .n_params = 1};
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_kernel_create(test_dev, &req, &k, &err) != FE_OK) fail_msg("%s", err.message);
    const int64_t vals[2] = {M, KB};
    assert_int_equal(fe_kernel_run_reference(k, ops, 5, vals, 2), FE_OK);
    ops[4].data = y[1];
    assert_int_equal(fe_kernel_run(k, ops, 5, vals, 2), FE_OK);
    size_t bytes = fe_kernel_layout_bytes(k, 1, NULL);
    assert_int_equal(bytes, has_layout() ? panel_bytes() : 0);
    if (bytes) {
        void *lay[5] = {NULL, fe_aligned_alloc(64, bytes)};
        assert_int_equal(fe_kernel_make_layout(k, 1, &ops[1], lay[1]), FE_OK);
        ops[4].data = y[2];
        assert_int_equal(fe_kernel_run_layouts(k, ops, 5, (const void *const *)lay, vals, 2),
                         FE_OK);
        assert_memory_equal(y[2], y[1], (size_t)M * N * 4);
        fe_free(lay[1]);
    }
    for (int64_t i = 0; i < M * N; i++)
        if (!isfinite(y[1][i]) || fabsf(y[1][i] - y[0][i]) > 1e-4f + 1e-4f * fabsf(y[0][i]))
            fail_msg("element %lld: %g against the reference's %g", (long long)i, y[1][i], y[0][i]);
    fe_kernel_destroy(k);
    for (int i = 0; i < 3; i++) free(y[i]);
    free(x);
    free(w);
}

static void sessions_of_one_model_share_its_layouts(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    char dir[64];
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 5, &w, &err), FE_OK);
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_int_equal(fe_llama_weights_write_safetensors(&w, dir, &err), FE_OK);
    assert_true(lmfix_byte_tokenizer(dir, true, 62));
    fe_lm_open_options o = fe_lm_open_options_default();
    o.device = test_dev;
    fe_lm_model *m = NULL;
    if (fe_lm_model_open(dir, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    /* the layers' matrices, each in 32-row panels of k-pairs, read by the prefill's GEMMs
     * (bf16 dot, or the f32 path widening from them) and the decode's GEMVs (panel, every AVX2
     * and AVX-512 device) in one copy; and the head (the tied embedding), read by the GEMVs
     * alone */
    const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim, h = c.hidden;
    const int64_t nk[7][2] = {{q, h}, {kv, h}, {kv, h}, {h, q}, {c.ffn, h}, {c.ffn, h}, {h, c.ffn}};
    size_t want = 0;
    for (int i = 0; i < 7; i++) want += (size_t)((nk[i][0] + 31) / 32 * 32) * ((nk[i][1] + 1) / 2) * 4;
    const bool panels = fe_device_get_info(test_dev)->isa >= FE_ISA_AVX2;
    want *= has_bf16_dot() || panels ? (size_t)c.n_layers : 0;
    if (panels) want += (size_t)((c.vocab + 31) / 32 * 32) * ((h + 1) / 2) * 4;
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = 64;
    fe_lm_session *a = NULL, *b = NULL;
    if (fe_lm_session_create(m, &so, &a, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_graph_get_stats(fe_lm_session_graph(a)).layout_bytes, want);
    if (fe_lm_session_create(m, &so, &b, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_graph_get_stats(fe_lm_session_graph(b)).layout_bytes, want);
    assert_int_equal(fe_graph_get_stats(fe_lm_session_graph(a)).layout_bytes, want);
    assert_int_equal(fe_lm_model_layout_bytes(m), want); /* once, not once a session */
    /* the laid-out matrices' mapped pages are dropped: what stays resident is the norms and
     * the pages they share with the matrices (the embedding is the head, laid out where
     * panels run); 29 % of this tiny model's bytes, whose matrices are a few pages each */
    fe_lm_model_info info;
    assert_int_equal(fe_lm_model_get_info(m, &info), FE_OK);
    size_t resident = fe_lm_model_resident_bytes(m);
    if (panels) assert_true(resident < info.weight_bytes / 2);
    else assert_true(resident > info.weight_bytes / 2);
    fe_lm_session_destroy(a);
    fe_lm_session_destroy(b);
    fe_lm_model_close(m);
    fe_llama_weights_free(&w);
    lmfix_rmtree(dir);
}

/* bf16_dot of an act_bf16 GEMM made with `given` (-1: none) on the test device */
static int64_t resolved_dot(int given) {
    const int64_t mk[2] = {8, K}, nk[2] = {N, K}, mn[2] = {8, N};
    fe_tensor ops[6] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mk),
                        fe_tensor_contiguous(NULL, FE_DTYPE_BF16, 2, nk), {.rank = 0},
                        {.rank = 0}, fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn),
                        {.rank = 0}};
    fe_setting act = {"act_bf16", 1}, dot = {"bf16_dot", given};
    fe_op_request req = {.op = "GEMM", .operands = ops, .n_operands = 6, .params = &act,
                         .n_params = 1, .tunables = &dot, .n_tunables = given >= 0};
    fe_kernel *k = NULL;
    fe_error err = {0};
    assert_int_equal(fe_kernel_create(test_dev, &req, &k, &err), FE_OK);
    const int64_t d = fe_kernel_tunable(k, "bf16_dot");
    fe_kernel_destroy(k);
    return d;
}

/* The act_bf16 design resolves to the device's fastest: AMX tiles (bf16_dot = 3) where it
 * has AMX-BF16, else vdpbf16ps panels (1) where its AVX512_BF16 outruns the FMAs (AMD's
 * cores: bf16_dot_fast), else the f32 path (0; FERRUM_ISA=avx512noamx on a Xeon shows it);
 * a call site's or profile's 3 without AMX becomes that default, never a fault, and its 1
 * is held wherever vdpbf16ps runs. */
static void the_bf16_design_is_the_devices_fastest(void **s) {
    (void)s;
    const fe_device_info *d = fe_device_get_info(test_dev);
    const int64_t best = !has_bf16_dot()        ? 0
                       : d->features.amx_bf16 ? 3
                       : d->bf16_dot_fast     ? 1
                                              : 0;
    assert_int_equal(resolved_dot(-1), best);
    assert_int_equal(resolved_dot(3), best);
    if (has_bf16_dot()) assert_int_equal(resolved_dot(1), 1); /* held where it can run */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_graph_lays_out_a_weight_once_for_every_step_and_version),
        cmocka_unit_test(nothing_past_k_counts_not_even_a_nan_in_the_layout),
        cmocka_unit_test(sessions_of_one_model_share_its_layouts),
        cmocka_unit_test(the_bf16_design_is_the_devices_fastest),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
