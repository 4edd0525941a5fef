/* tests/test_causal.c: the causal LM against the oracle on random weights that carry signal
 * (std 1/sqrt(fan_in)): teacher-forced KL(oracle || model) far under the seed's bounds,
 * logits close relative to their spread, top-1 agreement; determinism (two prompts
 * alternated, logits compared as bytes); a chat turn that reruns only changed chunks and
 * matches a run from scratch bit for bit; a deep decode against the oracle; and
 * llama_does_not_grow_with_the_context. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lm/model/causal.h"
#include "lm/model/dots.h"
#include "lm/eval/checks.h"
#include "lm/eval/oracle.h"
#include "support/testing.h"
#include "support/tiny_llama.h"

/* the shared tiny model, with an epsilon other than RMSNorm's default: the model must pass
 * the config's */
static fe_lm_config tiny_config(bool tied, bool llama3) {
    fe_lm_config c = tiny_llama_config(tied, llama3);
    c.rms_eps = 1e-3;
    return c;
}

/* KL(oracle || model) per position and the rest: lm/eval/checks.c, as `--check-accuracy` uses it */
static fe_kl_stats compare(const float *oracle, const float *model, int n, int64_t V) {
    fe_kl_stats s;
    assert_int_equal(fe_kl_compare(oracle, model, n, V, &s), FE_OK);
    return s;
}

/* prefill dot products: f32 (exact, the tests' default) unless a test asks for bf16 */
static int prefill_dot = FE_PREFILL_DOT_F32;

static fe_causal *make(const fe_llama_weights *w, int64_t max_seq, int64_t chunk) {
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = max_seq;
    o.chunk = chunk;
    o.prefill_dot = prefill_dot;
    fe_causal *m = NULL;
    fe_error err = {0};
    if (fe_causal_create(test_dev, w, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    return m;
}

static void check_against_oracle(const fe_lm_config *c, fe_dtype dt, int n) {
    fe_llama_weights w;
    fe_error err;
    assert_int_equal(fe_llama_weights_random(c, dt, 7, &w, &err), FE_OK);
    int32_t *toks = tiny_llama_tokens(n, c->vocab, 11);
    float *ref = malloc((size_t)n * (size_t)c->vocab * 4), *got = malloc((size_t)n * (size_t)c->vocab * 4);
    assert_int_equal(fe_oracle_logits(&w, toks, n, ref, &err), FE_OK);
    fe_causal *m = make(&w, 128, 16);
    if (fe_causal_teacher_forced(m, toks, n, got) != FE_OK) fail_msg("%s", fe_causal_message(m));
    fe_kl_stats s = compare(ref, got, n, c->vocab);
    bool bf16_dot = prefill_dot == FE_PREFILL_DOT_BF16;
    print_message("%s %s%s: KL mean %.3g p90 %.3g max %.3g, max |dlogit| %.3g of spread %.3g, top-1 "
                  "mismatches %d/%d\n", c->tied_embeddings ? "tied" : "untied",
                  fe_dtype_info(dt)->name, bf16_dot ? " (bf16 dot products)" : "", s.mean, s.p90,
                  s.max, s.max_abs_diff, s.spread, s.top1_mismatches, n);
    assert_true(s.spread > 1.0); /* the weights carry signal */
    if (bf16_dot) { /* activations rounded to bf16 (8 bits of mantissa): far inside the seed's
                     * mean 0.02 / p90 0.04 / max 0.2, not float32-exact */
        assert_true(s.mean <= 1e-4 && s.p90 <= 2e-4 && s.max <= 1e-3);
        assert_true(s.max_abs_diff <= 2e-2 * s.spread);
        assert_true(s.top1_mismatches <= n / 10);
    } else {
        assert_true(s.mean <= 1e-6);
        assert_true(s.max <= 1e-5);
        assert_true(s.max_abs_diff <= 1e-3 * s.spread);
        assert_int_equal(s.top1_mismatches, 0);
    }
    /* prompting the whole sequence gives the same last-row logits */
    const float *last;
    int32_t next;
    assert_int_equal(fe_causal_prompt(m, toks, n, &last, &next), FE_OK);
    fe_kl_stats s2 = compare(ref + (int64_t)(n - 1) * c->vocab, last, 1, c->vocab);
    assert_true(s2.max_abs_diff <= (bf16_dot ? 2e-2 : 1e-3) * s.spread);
    fe_causal_destroy(m);
    free(toks), free(ref), free(got);
    fe_llama_weights_free(&w);
}

static void causal_matches_the_oracle_teacher_forced(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(false, false);
    check_against_oracle(&c, FE_DTYPE_F32, 40);
    c = tiny_config(true, true);
    check_against_oracle(&c, FE_DTYPE_BF16, 40);
    prefill_dot = FE_PREFILL_DOT_BF16; /* what `ferrum generate` uses on bf16 matrices */
    check_against_oracle(&c, FE_DTYPE_BF16, 40);
    prefill_dot = FE_PREFILL_DOT_F32;
}

/* bf16 dot products over block matrices (their values rounded to bf16 as well: GEMM act_bf16
 * over q8_0 / q4_1 B, AMX-BF16 tiles where the device has them, the f32 path elsewhere) hold
 * the bf16 bounds against the oracle of the same quantised weights */
static void bf16_dot_products_over_block_matrices_match_the_oracle(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(true, true);
    prefill_dot = FE_PREFILL_DOT_BF16;
    check_against_oracle(&c, FE_DTYPE_Q8_0, 40);
    check_against_oracle(&c, FE_DTYPE_Q4_1, 40);
    prefill_dot = FE_PREFILL_DOT_F32;
}

/* Random weights in blocks: refused by name for a dtype the generator does not make, and for
 * rows that are not whole blocks */
static void random_block_weights_are_refused_where_they_cannot_be_made(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(true, true);
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_Q6_K, 7, &w, &err), FE_E_DTYPE);
    assert_non_null(strstr(err.message, "q8_0, q4_0 or q4_1"));
    c.ffn = 176; /* not a multiple of 32 */
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_Q4_0, 7, &w, &err), FE_E_SHAPE);
    assert_non_null(strstr(err.message, "whole 32-element blocks"));
    assert_non_null(strstr(err.message, "176"));
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 7, &w, &err), FE_OK);
    fe_llama_weights_free(&w);
}

/* The prefill's dot products resolved (lm/model/dots.h): bf16 over bf16 matrices; over block
 * matrices int8, or bf16 where asked, and by default where the device's tiles serve them */
static void prefill_dots_resolve_by_choice_and_device(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(true, true);
    fe_llama_weights w;
    fe_error err;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_Q8_0, 7, &w, &err), FE_OK);
    const uint32_t q8 = 1u << FE_DTYPE_Q8_0;
    fe_prefill_dots d;
    assert_int_equal(fe_prefill_dots_resolve(FE_PREFILL_DOT_BF16, &w, test_dev, &d, &err), FE_OK);
    assert_false(d.act_int8);
    assert_int_equal(d.bf16_dtypes, q8); /* the q8_0 GEMMs alone take act_bf16 */
    assert_int_equal(fe_prefill_dots_resolve(FE_PREFILL_DOT_INT8, &w, test_dev, &d, &err), FE_OK);
    assert_true(d.act_int8);
    assert_int_equal(d.bf16_dtypes, 0);
    assert_int_equal(fe_prefill_dots_resolve(FE_PREFILL_DOT_F32, &w, test_dev, &d, &err), FE_OK);
    assert_false(d.act_int8 || d.bf16_dtypes);
    assert_int_equal(fe_prefill_dots_resolve(FE_PREFILL_DOT_AUTO, &w, test_dev, &d, &err), FE_OK);
    assert_true(d.act_int8);
    assert_int_equal(d.bf16_dtypes, q8 & fe_prefill_bf16_blocks(test_dev));
    const fe_device_info *info = fe_device_get_info(test_dev);
    assert_int_equal(d.bf16_dtypes != 0, info->isa >= FE_ISA_AVX512 &&
                                             info->features.avx512bf16 &&
                                             info->features.amx_bf16);
    fe_llama_weights_free(&w);
    /* bf16 matrices: act_bf16 by default and where asked, on every device */
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 7, &w, &err), FE_OK);
    for (int choice = FE_PREFILL_DOT_AUTO; choice <= FE_PREFILL_DOT_BF16; choice++) {
        if (choice == FE_PREFILL_DOT_F32) continue;
        assert_int_equal(fe_prefill_dots_resolve(choice, &w, test_dev, &d, &err), FE_OK);
        assert_int_equal(d.bf16_dtypes, 1u << FE_DTYPE_BF16); /* every GEMM takes act_bf16 */
    }
    fe_llama_weights_free(&w);
}

/* bf16 (int8) dot products are refused by name where the matrices are not bf16 (none is in
 * blocks); AUTO quietly keeps f32 */
static void refused_where_the_matrices_do_not_fit(int choice, const char *name) {
    fe_lm_config c = tiny_config(false, false);
    fe_llama_weights w;
    fe_error err;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 7, &w, &err), FE_OK);
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 32;
    o.prefill_dot = choice;
    fe_causal *m = NULL;
    assert_int_equal(fe_causal_create(test_dev, &w, &o, &m, &err), FE_E_DTYPE);
    assert_null(m);
    assert_non_null(strstr(err.message, name));
    assert_non_null(strstr(err.message, "f32"));
    o.prefill_dot = FE_PREFILL_DOT_AUTO;
    assert_int_equal(fe_causal_create(test_dev, &w, &o, &m, &err), FE_OK);
    fe_causal_destroy(m);
    fe_llama_weights_free(&w);
}

static void prefill_dot_bf16_needs_bf16_matrices(void **s) {
    (void)s;
    refused_where_the_matrices_do_not_fit(FE_PREFILL_DOT_BF16, "bf16");
}

static void prefill_dot_int8_needs_block_matrices(void **s) {
    (void)s;
    refused_where_the_matrices_do_not_fit(FE_PREFILL_DOT_INT8, "int8");
}

/* The flagship's shapes (vocab 128256, hidden 2048, 16 layers, 32/8 heads, FFN 8192, Llama 3
 * rope scaling, tied), BF16 random weights, a short sequence: the same KL bounds. */
static void llama_3_2_1b_shape_matches_the_oracle(void **s) {
    (void)s;
    fe_lm_config c;
    fe_error err;
    assert_int_equal(fe_lm_config_preset("llama-3.2-1b", &c, &err), FE_OK);
    fe_llama_weights w;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 1, &w, &err), FE_OK);
    enum { N = 5 };
    int32_t *toks = tiny_llama_tokens(N, c.vocab, 3);
    float *ref = malloc((size_t)N * (size_t)c.vocab * 4), *got = malloc((size_t)N * (size_t)c.vocab * 4);
    assert_int_equal(fe_oracle_logits(&w, toks, N, ref, &err), FE_OK);
    fe_causal *m = make(&w, 64, 16);
    if (fe_causal_teacher_forced(m, toks, N, got) != FE_OK) fail_msg("%s", fe_causal_message(m));
    fe_kl_stats st = compare(ref, got, N, c.vocab);
    print_message("llama-3.2-1b shape, bf16: KL mean %.3g max %.3g, max |dlogit| %.3g of spread %.3g, "
                  "top-1 mismatches %d/%d\n", st.mean, st.max, st.max_abs_diff, st.spread, st.top1_mismatches, N);
    assert_true(st.spread > 1.0);
    assert_true(st.mean <= 1e-6 && st.max <= 1e-5);
    assert_true(st.max_abs_diff <= 1e-3 * st.spread);
    assert_int_equal(st.top1_mismatches, 0);
    fe_causal_destroy(m);
    /* the same with bf16 dot products in the prompt's GEMMs, as `ferrum generate` runs it */
    prefill_dot = FE_PREFILL_DOT_BF16;
    m = make(&w, 64, 16);
    prefill_dot = FE_PREFILL_DOT_F32;
    if (fe_causal_teacher_forced(m, toks, N, got) != FE_OK) fail_msg("%s", fe_causal_message(m));
    st = compare(ref, got, N, c.vocab);
    print_message("llama-3.2-1b shape, bf16 dot products: KL mean %.3g max %.3g, max |dlogit| %.3g "
                  "of spread %.3g, top-1 mismatches %d/%d\n", st.mean, st.max, st.max_abs_diff,
                  st.spread, st.top1_mismatches, N);
    assert_true(st.mean <= 1e-4 && st.max <= 1e-3);
    assert_true(st.max_abs_diff <= 2e-2 * st.spread);
    fe_causal_destroy(m);
    free(toks), free(ref), free(got);
    fe_llama_weights_free(&w);
}

static void logits_are_deterministic_across_alternating_prompts(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(true, false);
    fe_llama_weights w;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 3, &w, NULL), FE_OK);
    fe_causal *m = make(&w, 128, 16);
    int32_t *a = tiny_llama_tokens(37, c.vocab, 1), *b = tiny_llama_tokens(29, c.vocab, 2);
    float first[2][320];
    for (int round = 0; round < 6; round++) {
        const float *l;
        int32_t next;
        int which = round % 2;
        assert_int_equal(fe_causal_prompt(m, which ? b : a, which ? 29 : 37, &l, &next), FE_OK);
        if (round < 2) memcpy(first[which], l, sizeof first[which]);
        else assert_memory_equal(first[which], l, sizeof first[which]);
    }
    fe_causal_destroy(m);
    free(a), free(b);
    fe_llama_weights_free(&w);
}

/* A second chat turn reruns the chunks from the first changed token on, and its logits equal
 * a fresh run's byte for byte: f32 weights and products, bf16 weights with the bf16 dot
 * products `ferrum generate` uses, and block weights with bf16 and with int8 dot products
 * (the rows are grouped into the same chunks either way). */
static void chat_turn_once(fe_dtype dt, int dot) {
    fe_lm_config c = tiny_config(false, false);
    fe_llama_weights w;
    assert_int_equal(fe_llama_weights_random(&c, dt, 5, &w, NULL), FE_OK);
    int32_t *turn1 = tiny_llama_tokens(70, c.vocab, 21), *turn2 = tiny_llama_tokens(100, c.vocab, 22);
    memcpy(turn2, turn1, 70 * sizeof *turn1); /* the second turn extends the first */
    turn2[55] = (turn2[55] + 1) % (int32_t)c.vocab; /* ... after editing one token */
    prefill_dot = dot;
    fe_causal *chat = make(&w, 128, 16), *fresh = make(&w, 128, 16);
    prefill_dot = FE_PREFILL_DOT_F32;
    const float *l1, *l2;
    int32_t n1, n2;
    assert_int_equal(fe_causal_prompt(chat, turn1, 70, &l1, &n1), FE_OK);
    uint64_t calls_before = fe_graph_get_stats(fe_causal_graph(chat)).calls;
    assert_int_equal(fe_causal_prompt(chat, turn2, 100, &l1, &n1), FE_OK);
    uint64_t calls = fe_graph_get_stats(fe_causal_graph(chat)).calls - calls_before;
    assert_int_equal(calls, 4); /* chunks 48..64, 64..80, 80..96, 96..100: not 0..48 */
    assert_int_equal(fe_causal_prompt(fresh, turn2, 100, &l2, &n2), FE_OK);
    assert_memory_equal(l1, l2, (size_t)c.vocab * sizeof(float));
    assert_int_equal(n1, n2);
    fe_causal_destroy(chat);
    fe_causal_destroy(fresh);
    free(turn1), free(turn2);
    fe_llama_weights_free(&w);
}

static void chat_turn_reruns_only_changed_chunks_bit_identically(void **s) {
    (void)s;
    chat_turn_once(FE_DTYPE_F32, FE_PREFILL_DOT_F32);
    chat_turn_once(FE_DTYPE_BF16, FE_PREFILL_DOT_BF16);
    chat_turn_once(FE_DTYPE_Q8_0, FE_PREFILL_DOT_BF16); /* block values rounded on the way */
    chat_turn_once(FE_DTYPE_Q4_1, FE_PREFILL_DOT_INT8);
}

typedef struct collect {
    int32_t tokens[64];
    float logits[64][320];
    int n;
} collect;

static int keep(void *user, int32_t tok, const float *logits) {
    collect *c = user;
    c->tokens[c->n] = tok;
    memcpy(c->logits[c->n], logits, sizeof c->logits[0]);
    c->n++;
    return 0;
}

static void deep_decode_matches_the_oracle(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(true, true);
    fe_llama_weights w;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 9, &w, NULL), FE_OK);
    fe_causal *m = make(&w, 128, 16);
    int32_t seq[100];
    int32_t *prompt = tiny_llama_tokens(20, c.vocab, 5);
    memcpy(seq, prompt, 20 * sizeof *seq);
    const float *l;
    int32_t next;
    assert_int_equal(fe_causal_prompt(m, prompt, 20, &l, &next), FE_OK);
    static collect got;
    got.n = 0;
    if (fe_causal_decode(m, 40, keep, &got) != FE_OK) fail_msg("%s", fe_causal_message(m));
    assert_int_equal(got.n, 40);
    assert_int_equal(fe_causal_position(m), 60);
    /* the sequence the model saw: the prompt, the first draw, then each decoded token */
    seq[20] = next;
    for (int i = 0; i < 39; i++) seq[21 + i] = got.tokens[i];
    float *ref = malloc((size_t)60 * (size_t)c.vocab * 4);
    assert_int_equal(fe_oracle_logits(&w, seq, 60, ref, NULL), FE_OK);
    /* decode step i scored the token after seq[20 + i] */
    float model[40 * 320];
    for (int i = 0; i < 40; i++) memcpy(model + i * c.vocab, got.logits[i], (size_t)c.vocab * 4);
    fe_kl_stats st = compare(ref + 20 * c.vocab, model, 40, c.vocab);
    print_message("deep decode (positions 20..59): KL mean %.3g max %.3g, top-1 mismatches %d\n",
                  st.mean, st.max, st.top1_mismatches);
    assert_true(st.mean <= 1e-6 && st.max <= 1e-5);
    assert_int_equal(st.top1_mismatches, 0);
    /* greedy: every drawn token is the oracle's argmax */
    for (int i = 0; i < 40; i++) {
        int64_t best = 0;
        for (int64_t v = 1; v < c.vocab; v++)
            if (ref[(20 + i) * c.vocab + v] > ref[(20 + i) * c.vocab + best]) best = v;
        assert_int_equal(got.tokens[i], best);
    }
    free(ref), free(prompt);
    fe_causal_destroy(m);
    fe_llama_weights_free(&w);
}

static void llama_does_not_grow_with_the_context(void **s) {
    (void)s;
    fe_lm_config c = tiny_config(true, false);
    fe_llama_weights w;
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 1, &w, NULL), FE_OK);
    size_t plan[2], arena[2];
    int64_t lens[2] = {256, 2048};
    for (int i = 0; i < 2; i++) {
        fe_causal *m = make(&w, lens[i], 32);
        fe_graph_stats st = fe_graph_get_stats(fe_causal_graph(m));
        arena[i] = st.arena_bytes;
        plan[i] = st.arena_bytes - (size_t)(2 * c.n_layers * lens[i] * c.n_kv_heads * c.head_dim * 4) - 4;
        assert_int_equal(st.versions, 2);
        fe_causal_destroy(m);
    }
    /* everything but the KV caches is the same size at either max_seq_len */
    assert_int_equal(plan[0], plan[1]);
    assert_true(arena[1] > arena[0]);
    fe_llama_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(causal_matches_the_oracle_teacher_forced),
        cmocka_unit_test(bf16_dot_products_over_block_matrices_match_the_oracle),
        cmocka_unit_test(prefill_dots_resolve_by_choice_and_device),
        cmocka_unit_test(random_block_weights_are_refused_where_they_cannot_be_made),
        cmocka_unit_test(prefill_dot_bf16_needs_bf16_matrices),
        cmocka_unit_test(prefill_dot_int8_needs_block_matrices),
        cmocka_unit_test(llama_3_2_1b_shape_matches_the_oracle),
        cmocka_unit_test(logits_are_deterministic_across_alternating_prompts),
        cmocka_unit_test(chat_turn_reruns_only_changed_chunks_bit_identically),
        cmocka_unit_test(deep_decode_matches_the_oracle),
        cmocka_unit_test(llama_does_not_grow_with_the_context),
    };
    return cmocka_run_group_tests_name("causal", tests, test_device_setup, test_device_teardown);
}
