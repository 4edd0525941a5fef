/* tests/test_plain_body.c: the model bodies written plainly (RMSNorm, the products, SiLU /
 * GELU, Mul, the residual Add, the Copy into a cache as steps of their own) and folded by the
 * compiler (fold = all, every model's default) are the graphs the bodies traced by hand
 * before the fold pass (FE_BODY_HAND_FUSED, lm/model/blocks.h): version by version the same
 * operators with the same design keys in the same order, and the same logits bit for bit, for
 * the Llama family (f32, bf16 with bf16 prefill dot products, q8_0 with int8 activations),
 * the Llama 3.2 1B shape cut to two layers and a small vocabulary, Gemma 3, the batched LM
 * and both encoders (BERT, EmbeddingGemma). Unfolded (fold = none) the same bodies run each
 * step alone and agree within the operators' tolerance: the greedy tokens are the same. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/quant.h"
#include "graph/inspect.h"
#include "lm/model/batch.h"
#include "lm/model/causal.h"
#include "lm/model/embedgemma.h"
#include "lm/model/encoder.h"
#include "lm/model/gemma3_encoder.h"
#include "support/testing.h"
#include "support/tiny_llama.h"

/* ---- comparing graphs ---- */

/* Every version of a (traced fused by hand) and b (plain, folded): the same number of steps,
 * and step by step the same operator and design key. Returns the steps compared. */
static int expect_same_steps(const char *what, fe_graph *a, fe_graph *b) {
    int compared = 0;
    for (int v = 0;; v++) {
        int na = fe_graph_version_steps(a, v), nb = fe_graph_version_steps(b, v);
        if (na == 0 && nb == 0) break;
        if (na != nb)
            fail_msg("%s, version %d: %d steps traced fused by hand, %d plain and folded", what,
                     v, na, nb);
        for (int s = 0; s < na; s++) {
            fe_step_info ia, ib;
            assert_int_equal(fe_graph_step_info(a, v, s, NULL, 0, &ia, NULL), FE_OK);
            assert_int_equal(fe_graph_step_info(b, v, s, NULL, 0, &ib, NULL), FE_OK);
            uint64_t ka = fe_kernel_design_key(ia.kernel), kb = fe_kernel_design_key(ib.kernel);
            if (ia.op != ib.op || ka != kb)
                fail_msg("%s, version %d, step %d: %s (design %016llx) fused by hand, %s "
                         "(design %016llx) plain and folded", what, v, s, ia.op->name,
                         (unsigned long long)ka, ib.op->name, (unsigned long long)kb);
        }
        compared += na;
    }
    assert_true(compared > 0);
    return compared;
}

/* Steps in all versions of g. */
static int all_steps(const fe_graph *g) {
    int n = 0;
    for (int v = 0; fe_graph_version_steps(g, v) > 0; v++) n += fe_graph_version_steps(g, v);
    return n;
}

static void expect_same_bytes(const char *what, const float *a, const float *b, int64_t n) {
    if (memcmp(a, b, (size_t)n * sizeof *a) != 0) {
        int64_t i = 0;
        while (a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))) i++;
        fail_msg("%s: not bit-identical at %lld (%.9g fused by hand, %.9g folded)", what,
                 (long long)i, a[i], b[i]);
    }
}

/* max |a - b| <= tol * (spread of a), and the spread is not nothing */
static void expect_close(const char *what, const float *a, const float *b, int64_t n, double tol) {
    double d = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        lo = fmin(lo, a[i]), hi = fmax(hi, a[i]);
    }
    if (!(hi - lo > 1e-3) || !(d <= tol * (hi - lo)))
        fail_msg("%s: max |difference| %.3g of spread %.3g (tolerance %.3g of it)", what, d,
                 hi - lo, tol);
}

static int64_t argmax(const float *x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* ---- the causal LM ---- */

enum { PROMPT = 21, CHUNK = 8, DECODE = 6 };

typedef struct run {
    float *prompt;              /* (vocab) the prompt's last row */
    float *steps;               /* (DECODE, vocab) each decode step's logits */
    int32_t tokens[DECODE + 1]; /* the prompt's draw, then each step's */
    int64_t V;
} run;

static int keep_step(void *user, int32_t tok, const float *logits) {
    run *r = user;
    static int i;
    if (tok == -1) { /* reset */
        i = 0;
        return 0;
    }
    memcpy(r->steps + i * r->V, logits, (size_t)r->V * sizeof(float));
    r->tokens[++i] = tok;
    return 0;
}

static fe_causal *causal(const fe_llama_weights *w, fe_body_form body, int prefill_dot,
                         fe_dtype kv) {
    fe_causal_options o = fe_causal_options_default();
    o.kv_dtype = kv;
    o.max_seq_len = 64;
    o.chunk = CHUNK;
    o.prefill_dot = prefill_dot;
    o.body = body;
    fe_causal *m = NULL;
    fe_error err = {0};
    if (fe_causal_create(test_dev, w, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    return m;
}

/* A prompt over three chunks, then DECODE steps of the device loop. */
static run run_causal(fe_causal *m, int64_t V) {
    run r = {.prompt = malloc((size_t)V * 4), .steps = malloc((size_t)(DECODE * V) * 4), .V = V};
    assert_non_null(r.prompt);
    assert_non_null(r.steps);
    int32_t *toks = tiny_llama_tokens(PROMPT, V, 17);
    const float *l;
    if (fe_causal_prompt(m, toks, PROMPT, &l, &r.tokens[0]) != FE_OK) fail_msg("%s", fe_causal_message(m));
    memcpy(r.prompt, l, (size_t)V * 4);
    keep_step(&r, -1, NULL);
    if (fe_causal_decode(m, DECODE, keep_step, &r) != FE_OK) fail_msg("%s", fe_causal_message(m));
    free(toks);
    return r;
}

static void free_run(run *r) { free(r->prompt), free(r->steps); }

/* The hand-fused, folded and unfolded graphs of one model (KV cache in kv): the first two
 * equal, the third close with the same greedy tokens. */
static void causal_three_ways_kv(const char *what, const fe_llama_weights *w, int prefill_dot,
                                 double tol, fe_dtype kv) {
    int64_t V = w->cfg.vocab;
    fe_causal *hand = causal(w, FE_BODY_HAND_FUSED, prefill_dot, kv);
    fe_causal *folded = causal(w, FE_BODY_FOLD_ALL, prefill_dot, kv);
    fe_causal *plain = causal(w, FE_BODY_FOLD_NONE, prefill_dot, kv);
    int n = expect_same_steps(what, fe_causal_graph(hand), fe_causal_graph(folded));
    int n_plain = all_steps(fe_causal_graph(plain));
    print_message("%s: %d steps fused by hand = plain and folded (%d unfolded)\n", what, n, n_plain);
    assert_true(n_plain > n);
    run a = run_causal(hand, V), b = run_causal(folded, V), c = run_causal(plain, V);
    expect_same_bytes(what, a.prompt, b.prompt, V);
    expect_same_bytes(what, a.steps, b.steps, DECODE * V);
    assert_memory_equal(a.tokens, b.tokens, sizeof a.tokens);
    expect_close(what, a.prompt, c.prompt, V, tol);
    expect_close(what, a.steps, c.steps, DECODE * V, tol);
    for (int i = 0; i < DECODE; i++) /* greedy: each step's draw is its logits' argmax */
        assert_int_equal(argmax(c.steps + i * V, V), c.tokens[i + 1]);
    assert_memory_equal(a.tokens, c.tokens, sizeof a.tokens);
    free_run(&a), free_run(&b), free_run(&c);
    fe_causal_destroy(hand), fe_causal_destroy(folded), fe_causal_destroy(plain);
}

static void causal_three_ways(const char *what, const fe_llama_weights *w, int prefill_dot,
                              double tol) {
    causal_three_ways_kv(what, w, prefill_dot, tol, FE_DTYPE_F32);
}

/* The layer matrices of f32 weights w encoded as q8_0 blocks into *q (w's other tensors
 * shared); *blocks holds them, for free(). */
static void q8_0_layers(const fe_llama_weights *w, fe_llama_weights *q, void **blocks) {
    const fe_lm_config *c = &w->cfg;
    *q = *w;
    q->layers = calloc((size_t)c->n_layers, sizeof *q->layers);
    size_t bytes = 0;
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < 7; i++) bytes += (size_t)(ms[i]->shape[0] * ms[i]->shape[1] / 32) * 34;
    }
    unsigned char *p = *blocks = malloc(bytes);
    assert_non_null(q->layers);
    assert_non_null(p);
    for (int64_t l = 0; l < c->n_layers; l++) {
        q->layers[l] = w->layers[l];
        fe_llama_layer *L = &q->layers[l];
        fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < 7; i++) {
            int64_t rows = ms[i]->shape[0], cols = ms[i]->shape[1];
            assert_int_equal(ms[i]->dtype, FE_DTYPE_F32);
            for (int64_t r = 0; r < rows; r++)
                assert_true(fe_quant_row(FE_DTYPE_Q8_0, (const float *)ms[i]->data + r * cols,
                                         p + (size_t)(r * cols / 32) * 34, cols));
            *ms[i] = fe_tensor_contiguous(p, FE_DTYPE_Q8_0, 2, ms[i]->shape);
            p += (size_t)(rows * cols / 32) * 34;
        }
    }
}

static void llama_folded_is_the_hand_fused_graph(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(false, true);
    struct { fe_dtype dt; int dot; const char *what; double tol; } cases[] = {
        {FE_DTYPE_F32, FE_PREFILL_DOT_F32, "tiny llama, f32", 1e-4},
        {FE_DTYPE_BF16, FE_PREFILL_DOT_BF16, "tiny llama, bf16, bf16 prefill dot products", 1e-2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fe_llama_weights w;
        fe_error err = {0};
        if (fe_llama_weights_random(&c, cases[i].dt, 7, &w, &err) != FE_OK) fail_msg("%s", err.message);
        causal_three_ways(cases[i].what, &w, cases[i].dot, cases[i].tol);
        if (i == 0) /* the KV cache in f16: its Convert steps stay steps (no fold takes them) */
            causal_three_ways_kv("tiny llama, f32, f16 KV cache", &w, cases[i].dot, cases[i].tol,
                                 FE_DTYPE_F16);
        fe_llama_weights_free(&w);
    }
    /* q8_0 layer matrices: int8 activations in the decode GEMVs and the prompt's GEMMs */
    fe_llama_weights w, q;
    void *blocks;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 7, &w, NULL), FE_OK);
    q8_0_layers(&w, &q, &blocks);
    causal_three_ways("tiny llama, q8_0, int8 activations", &q, FE_PREFILL_DOT_AUTO, 5e-2);
    free(q.layers);
    free(blocks);
    fe_llama_weights_free(&w);
}

/* The flagship's layer shapes (hidden 2048, 32/8 heads, FFN 8192, Llama 3 rope scaling), two
 * layers and a 2048-token vocabulary, bf16 */
static void llama_1b_shape_folded_is_the_hand_fused_graph(void **s) {
    (void)s;
    fe_lm_config c;
    fe_error err = {0};
    assert_int_equal(fe_lm_config_preset("llama-3.2-1b", &c, &err), FE_OK);
    c.n_layers = 2;
    c.vocab = 2048;
    c.bos_id = 1, c.n_eos = 0;
    fe_llama_weights w;
    if (fe_llama_weights_random(&c, FE_DTYPE_BF16, 3, &w, &err) != FE_OK) fail_msg("%s", err.message);
    causal_three_ways("llama 3.2 1B shape, 2 layers, bf16", &w, FE_PREFILL_DOT_AUTO, 1e-2);
    fe_llama_weights_free(&w);
}

/* A small Gemma 3 (GeGLU, the sandwich norms, q/k norms, a sliding window) */
static void gemma3_folded_is_the_hand_fused_graph(void **s) {
    (void)s;
    fe_lm_config c = {0};
    snprintf(c.architecture, sizeof c.architecture, "gemma3");
    snprintf(c.source, sizeof c.source, "tiny gemma3");
    c.vocab = 300, c.hidden = 64, c.n_layers = 3, c.n_heads = 2, c.n_kv_heads = 1;
    c.head_dim = 32, c.ffn = 96, c.rms_eps = 1e-6, c.rope_theta = 1e6;
    c.tied_embeddings = true, c.max_context = 64, c.bos_id = 2, c.n_eos = 0;
    c.family = FE_LM_FAMILY_GEMMA3, c.sliding_window = 4, c.swa_pattern = 3;
    c.rope_theta_local = 1e4, c.attn_scale = 0.3, c.embed_scale = 8.0;
    assert_int_equal(fe_lm_config_validate(&c, NULL), FE_OK);
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 5, &w, &err) != FE_OK) fail_msg("%s", err.message);
    causal_three_ways("tiny gemma 3, f32", &w, FE_PREFILL_DOT_F32, 1e-4);
    fe_llama_weights_free(&w);
}

/* ---- the batched LM ---- */

enum { SLOTS = 6 };

typedef struct batch_run {
    float *prefill; /* (SLOTS, vocab) each slot's prompt's last row */
    float *decode;  /* (SLOTS + 3, vocab) a step of every slot (GEMMs), then of three (GEMVs) */
} batch_run;

static fe_batch *batch(const fe_llama_weights *w, fe_body_form body) {
    fe_batch_options o = {.slots = SLOTS, .max_seq_len = 64, .chunk = CHUNK, .body = body};
    fe_batch *b = NULL;
    fe_error err = {0};
    if (fe_batch_create(test_dev, w, &o, &b, &err) != FE_OK) fail_msg("%s", err.message);
    return b;
}

static batch_run run_batch(fe_batch *b, int64_t V) {
    batch_run r = {malloc((size_t)(SLOTS * V) * 4), malloc((size_t)((SLOTS + 3) * V) * 4)};
    assert_non_null(r.prefill);
    assert_non_null(r.decode);
    int slots[SLOTS];
    int32_t next[SLOTS];
    for (int k = 0; k < SLOTS; k++) {
        int32_t *toks = tiny_llama_tokens(PROMPT - 2 * k, V, 30 + (uint64_t)k);
        bool done = false;
        const float *l;
        if (fe_batch_prefill(b, k, toks, PROMPT - 2 * k, 0, &done, &l) != FE_OK || !done)
            fail_msg("%s", fe_batch_message(b));
        memcpy(r.prefill + k * V, l, (size_t)V * 4);
        slots[k] = k;
        next[k] = (int32_t)argmax(l, V);
        free(toks);
    }
    const float *l;
    if (fe_batch_decode(b, slots, next, SLOTS, &l) != FE_OK) fail_msg("%s", fe_batch_message(b));
    memcpy(r.decode, l, (size_t)(SLOTS * V) * 4);
    for (int k = 0; k < 3; k++) next[k] = (int32_t)argmax(r.decode + k * V, V);
    if (fe_batch_decode(b, slots, next, 3, &l) != FE_OK) fail_msg("%s", fe_batch_message(b));
    memcpy(r.decode + SLOTS * V, l, (size_t)(3 * V) * 4);
    return r;
}

static void batch_folded_is_the_hand_fused_graph(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(false, true);
    fe_llama_weights w;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 7, &w, NULL), FE_OK);
    int64_t V = c.vocab;
    fe_batch *hand = batch(&w, FE_BODY_HAND_FUSED), *folded = batch(&w, FE_BODY_FOLD_ALL);
    fe_batch *plain = batch(&w, FE_BODY_FOLD_NONE);
    int n = expect_same_steps("batch", fe_batch_graph(hand), fe_batch_graph(folded));
    print_message("batch: %d steps fused by hand = plain and folded (%d unfolded)\n", n,
                  all_steps(fe_batch_graph(plain)));
    assert_true(all_steps(fe_batch_graph(plain)) > n);
    batch_run a = run_batch(hand, V), b = run_batch(folded, V), p = run_batch(plain, V);
    expect_same_bytes("batch prefill", a.prefill, b.prefill, SLOTS * V);
    expect_same_bytes("batch decode", a.decode, b.decode, (SLOTS + 3) * V);
    expect_close("batch prefill, unfolded", a.prefill, p.prefill, SLOTS * V, 1e-4);
    expect_close("batch decode, unfolded", a.decode, p.decode, (SLOTS + 3) * V, 1e-4);
    for (int k = 0; k < SLOTS + 3; k++)
        assert_int_equal(argmax(a.decode + k * V, V), argmax(p.decode + k * V, V));
    free(a.prefill), free(a.decode), free(b.prefill), free(b.decode), free(p.prefill), free(p.decode);
    fe_batch_destroy(hand), fe_batch_destroy(folded), fe_batch_destroy(plain);
    fe_llama_weights_free(&w);
}

/* ---- the encoders ---- */

static fe_encoder_options encoder_options(fe_body_form body) {
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = 24;
    o.slots = 3;
    o.body = body;
    return o;
}

/* three sentences of 5, 24 and 1 tokens */
static const int64_t lens[3] = {5, 24, 1};

static void draw_sentences(int32_t ids[3][24], int64_t vocab) {
    for (int s = 0; s < 3; s++) {
        int32_t *t = tiny_llama_tokens((int)lens[s], vocab, 40 + (uint64_t)s);
        memcpy(ids[s], t, (size_t)lens[s] * sizeof *t);
        free(t);
    }
}

static void bert_folded_is_the_hand_fused_graph(void **s) {
    (void)s;
    fe_bert_config c = {.vocab = 97, .hidden = 48, .n_layers = 2, .n_heads = 4, .head_dim = 12,
                        .ffn = 96, .max_positions = 40, .type_vocab = 2, .ln_eps = 1e-5};
    strcpy(c.source, "tiny");
    fe_bert_weights w;
    assert_int_equal(fe_bert_weights_random(&c, 7, &w, NULL), FE_OK);
    fe_encoder *e[3] = {NULL, NULL, NULL};
    fe_body_form forms[3] = {FE_BODY_HAND_FUSED, FE_BODY_FOLD_ALL, FE_BODY_FOLD_NONE};
    int32_t ids[3][24];
    draw_sentences(ids, c.vocab);
    const int32_t *const in[3] = {ids[0], ids[1], ids[2]};
    int64_t rows = lens[0] + lens[1] + lens[2];
    float *h[3];
    for (int k = 0; k < 3; k++) {
        fe_encoder_options o = encoder_options(forms[k]);
        fe_error err = {0};
        if (fe_encoder_create(test_dev, &w, &o, &e[k], &err) != FE_OK) fail_msg("%s", err.message);
        const float *out;
        if (fe_encoder_forward(e[k], in, lens, 3, &out) != FE_OK) fail_msg("%s", fe_encoder_message(e[k]));
        h[k] = malloc((size_t)(rows * c.hidden) * 4);
        assert_non_null(h[k]);
        memcpy(h[k], out, (size_t)(rows * c.hidden) * 4);
    }
    int n = expect_same_steps("bert encoder", fe_encoder_graph(e[0]), fe_encoder_graph(e[1]));
    print_message("bert encoder: %d steps fused by hand = plain and folded (%d unfolded)\n", n,
                  all_steps(fe_encoder_graph(e[2])));
    assert_true(all_steps(fe_encoder_graph(e[2])) > n);
    expect_same_bytes("bert encoder", h[0], h[1], rows * c.hidden);
    expect_close("bert encoder, unfolded", h[0], h[2], rows * c.hidden, 1e-4);
    for (int k = 0; k < 3; k++) fe_encoder_destroy(e[k]), free(h[k]);
    fe_bert_weights_free(&w);
}

static void embeddinggemma_folded_is_the_hand_fused_graph(void **s) {
    (void)s;
    fe_lm_config c;
    int64_t window, mid;
    fe_embedgemma m;
    fe_error err = {0};
    assert_int_equal(fe_embedgemma_preset("embeddinggemma-tiny", &c, &window, &mid, &err), FE_OK);
    if (fe_embedgemma_random(&c, window, mid, 3, &m, &err) != FE_OK) fail_msg("%s", err.message);
    fe_gemma3_encoder *e[3] = {NULL, NULL, NULL};
    fe_body_form forms[3] = {FE_BODY_HAND_FUSED, FE_BODY_FOLD_ALL, FE_BODY_FOLD_NONE};
    int32_t ids[3][24];
    draw_sentences(ids, c.vocab);
    const int32_t *const in[3] = {ids[0], ids[1], ids[2]};
    int64_t rows = lens[0] + lens[1] + lens[2];
    float *h[3];
    for (int k = 0; k < 3; k++) {
        fe_encoder_options o = encoder_options(forms[k]);
        if (fe_gemma3_encoder_create(test_dev, &m, &o, &e[k], &err) != FE_OK) fail_msg("%s", err.message);
        const float *out;
        if (fe_gemma3_encoder_forward(e[k], in, lens, 3, &out) != FE_OK)
            fail_msg("%s", fe_gemma3_encoder_message(e[k]));
        h[k] = malloc((size_t)(rows * c.hidden) * 4);
        assert_non_null(h[k]);
        memcpy(h[k], out, (size_t)(rows * c.hidden) * 4);
    }
    int n = expect_same_steps("embeddinggemma encoder", fe_gemma3_encoder_graph(e[0]),
                              fe_gemma3_encoder_graph(e[1]));
    print_message("embeddinggemma encoder: %d steps fused by hand = plain and folded (%d "
                  "unfolded)\n", n, all_steps(fe_gemma3_encoder_graph(e[2])));
    assert_true(all_steps(fe_gemma3_encoder_graph(e[2])) > n);
    expect_same_bytes("embeddinggemma encoder", h[0], h[1], rows * c.hidden);
    expect_close("embeddinggemma encoder, unfolded", h[0], h[2], rows * c.hidden, 1e-4);
    for (int k = 0; k < 3; k++) fe_gemma3_encoder_destroy(e[k]), free(h[k]);
    fe_embedgemma_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_folded_is_the_hand_fused_graph),
        cmocka_unit_test(llama_1b_shape_folded_is_the_hand_fused_graph),
        cmocka_unit_test(gemma3_folded_is_the_hand_fused_graph),
        cmocka_unit_test(batch_folded_is_the_hand_fused_graph),
        cmocka_unit_test(bert_folded_is_the_hand_fused_graph),
        cmocka_unit_test(embeddinggemma_folded_is_the_hand_fused_graph),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
