/* tests/test_lm_api.c: the public language-model API (ferrum/lm.h) on a tiny Llama-shaped
 * checkpoint written to a folder (random f32 weights, config.json, and a tokenizer.json with
 * the 256 byte tokens, ChatML's two special tokens and 62 two-letter tokens, so every model
 * id has text): generation matches fe_causal's greedy loop token for token, on the device and
 * through host sampling; stop strings cut across tokens; a chat turn reuses the cache and
 * matches a run from scratch; host sampling is deterministic and its penalties bite;
 * streaming text is whole characters; bad input is answered, with the path named once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferrum/lm.h"
#include "core/alloc.h"
#include "lm/model/causal.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"
#include "support/tiny_llama.h"

static char dir[64];
static fe_llama_weights weights; /* what the folder holds */
static fe_lm_model *model;

static int setup(void **state) {
    if (test_device_setup(state)) return 1;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 3, &weights, &err) != FE_OK) return 1;
    if (!lmfix_tmpdir(dir, sizeof dir)) return 1;
    if (fe_llama_weights_write_safetensors(&weights, dir, &err) != FE_OK) return 1;
    if (!lmfix_byte_tokenizer(dir, true, 62)) return 1;
    fe_lm_open_options o = fe_lm_open_options_default();
    o.device = test_dev;
    if (fe_lm_model_open(dir, &o, &model, &err) != FE_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    return 0;
}

static int teardown(void **state) {
    fe_lm_model_close(model);
    fe_llama_weights_free(&weights);
    lmfix_rmtree(dir);
    return test_device_teardown(state);
}

static fe_lm_session *session(int64_t max_seq, int64_t chunk) {
    fe_lm_session_options o = fe_lm_session_options_default();
    o.max_seq_len = max_seq;
    o.chunk = chunk;
    o.prefill_dot = FE_LM_PREFILL_DOT_F32;
    fe_lm_session *s = NULL;
    fe_error err = {0};
    if (fe_lm_session_create(model, &o, &s, &err) != FE_OK) fail_msg("%s", err.message);
    return s;
}

/* What a generate handed out: ids and text, piece by piece. */
typedef struct got {
    int32_t ids[256];
    int n;
    char text[4096];
    size_t len;
    char pieces[256][64];
    int stop_after; /* return nonzero after this many tokens (0: never) */
} got;

static int collect(void *user, int32_t tok, const char *text, size_t len) {
    got *g = user;
    if (tok >= 0 && g->n < 256) {
        snprintf(g->pieces[g->n], sizeof g->pieces[0], "%.*s", (int)len, text);
        g->ids[g->n++] = tok;
    }
    assert_true(g->len + len < sizeof g->text);
    memcpy(g->text + g->len, text, len);
    g->len += len;
    g->text[g->len] = 0;
    return g->stop_after && g->n >= g->stop_after;
}

static fe_lm_stop no_stop_tokens(int64_t max) {
    fe_lm_stop st = fe_lm_stop_default();
    st.max_tokens = max;
    st.n_tokens = 0;
    return st;
}

static void generate_through_the_api_matches_fe_causal_greedy(void **st) {
    (void)st;
    int32_t *ids = tiny_llama_tokens(10, 320, 21);
    /* fe_causal's own loop: the prompt's draw, then 11 decode steps */
    fe_causal_options co = fe_causal_options_default();
    co.max_seq_len = 64;
    co.chunk = 8;
    co.prefill_dot = FE_PREFILL_DOT_F32;
    fe_causal *c = NULL;
    fe_error err = {0};
    if (fe_causal_create(test_dev, &weights, &co, &c, &err) != FE_OK) fail_msg("%s", err.message);
    int32_t want[12];
    assert_int_equal(fe_causal_prompt(c, ids, 10, NULL, &want[0]), FE_OK);
    for (int i = 1; i < 12; i++) {
        const float *l;
        assert_int_equal(fe_causal_step(c, want[i - 1], &l, &want[i]), FE_OK);
    }
    fe_causal_destroy(c);
    fe_lm_session *s = session(64, 8);
    fe_lm_stop stop = no_stop_tokens(12);
    got g = {0};
    fe_lm_generate_result r;
    assert_int_equal(fe_lm_session_generate(s, ids, 10, NULL, &stop, collect, &g, &r), FE_OK);
    assert_int_equal(r.prompt_tokens, 10);
    assert_int_equal(r.generated_tokens, 12);
    assert_int_equal(r.stop_reason, FE_LM_STOP_LENGTH);
    assert_false(r.sampled_on_host);
    assert_int_equal(g.n, 12);
    assert_memory_equal(g.ids, want, sizeof want);
    assert_int_equal(fe_lm_session_position(s), 10 + 11); /* the last token is not fed */
    assert_true(r.first_token_seconds >= r.prefill_seconds && r.prefill_seconds > 0);
    /* the host's argmax (min_p forces the host) over the same logits: the same tokens */
    fe_lm_sampling p = fe_lm_sampling_default();
    p.min_p = 0.01;
    got h = {0};
    assert_int_equal(fe_lm_session_generate(s, ids, 10, &p, &stop, collect, &h, &r), FE_OK);
    assert_true(r.sampled_on_host);
    assert_int_equal(h.n, 12);
    assert_memory_equal(h.ids, want, sizeof want);
    /* the text is the tokens' text */
    char *text;
    size_t len;
    assert_int_equal(fe_lm_detokenize(model, want, 12, &text, &len), FE_OK);
    if (len == g.len) assert_memory_equal(text, g.text, len); /* equal unless bytes were repaired */
    fe_lm_free(text);
    /* a callback that says stop, stops */
    got k = {.stop_after = 3};
    assert_int_equal(fe_lm_session_generate(s, ids, 10, NULL, &stop, collect, &k, &r), FE_OK);
    assert_int_equal(r.stop_reason, FE_LM_STOP_CALLBACK);
    assert_int_equal(k.n, 3);
    fe_lm_session_destroy(s);
    free(ids);
}

static void stop_string_split_across_tokens_is_not_emitted(void **st) {
    (void)st;
    int32_t *ids = tiny_llama_tokens(6, 320, 5);
    fe_lm_session *s = session(128, 16);
    fe_lm_stop stop = no_stop_tokens(40);
    got all = {0};
    fe_lm_generate_result r;
    assert_int_equal(fe_lm_session_generate(s, ids, 6, NULL, &stop, collect, &all, &r), FE_OK);
    /* two neighbouring tokens' pieces, after the first few, make the stop string */
    int i = 3;
    while (i + 1 < all.n && (!*all.pieces[i] || !*all.pieces[i + 1])) i++;
    if (i + 1 >= all.n) skip();
    char s2[128];
    snprintf(s2, sizeof s2, "%s%s", all.pieces[i], all.pieces[i + 1]);
    size_t before = (size_t)(strstr(all.text, s2) - all.text);
    stop.strings[0] = "never in the text \x01";
    stop.strings[1] = s2;
    stop.n_strings = 2;
    got cut = {0};
    assert_int_equal(fe_lm_session_generate(s, ids, 6, NULL, &stop, collect, &cut, &r), FE_OK);
    assert_int_equal(r.stop_reason, FE_LM_STOP_STRING);
    assert_int_equal(cut.len, before);
    assert_memory_equal(cut.text, all.text, before);
    assert_null(strstr(cut.text, s2));
    assert_true(cut.n <= i + 2);
    /* a stop string that never completes holds text back only until it cannot: all of it comes out */
    stop.strings[1] = "\x02\x03";
    got none = {0};
    assert_int_equal(fe_lm_session_generate(s, ids, 6, NULL, &stop, collect, &none, &r), FE_OK);
    assert_int_equal(r.stop_reason, FE_LM_STOP_LENGTH);
    assert_int_equal(none.len, all.len);
    assert_memory_equal(none.text, all.text, all.len);
    fe_lm_session_destroy(s);
    free(ids);
}

static void a_chat_turn_reuses_the_cache_and_matches_from_scratch(void **st) {
    (void)st;
    int32_t *base = tiny_llama_tokens(9, 320, 8), *more = tiny_llama_tokens(6, 320, 9);
    fe_lm_session *a = session(96, 4), *b = session(96, 4);
    fe_lm_stop stop = no_stop_tokens(5);
    got t1 = {0}, t2 = {0}, fresh = {0};
    fe_lm_generate_result r1, r2, rf;
    assert_int_equal(fe_lm_session_generate(a, base, 9, NULL, &stop, collect, &t1, &r1), FE_OK);
    assert_int_equal(t1.n, 5);
    int32_t turn2[20];
    memcpy(turn2, base, 9 * sizeof *base);
    memcpy(turn2 + 9, t1.ids, 5 * sizeof *base);
    memcpy(turn2 + 14, more, 6 * sizeof *base);
    stop.max_tokens = 6;
    /* what a prefill would reuse, asked before: the same count generate then reports; the
     * whole cached sequence again keeps all but its last chunk's rows (the last row runs) */
    assert_int_equal(fe_lm_session_reusable(a, turn2, 20), 12);
    assert_int_equal(fe_lm_session_reusable(a, turn2, 13), 12);
    assert_int_equal(fe_lm_session_reusable(a, turn2, 12), 8);
    assert_int_equal(fe_lm_session_reusable(a, more, 6), 0);
    assert_int_equal(fe_lm_session_reusable(b, turn2, 20), 0);
    assert_int_equal(fe_lm_session_reusable(NULL, turn2, 20), 0);
    assert_int_equal(fe_lm_session_generate(a, turn2, 20, NULL, &stop, collect, &t2, &r2), FE_OK);
    assert_int_equal(fe_lm_session_generate(b, turn2, 20, NULL, &stop, collect, &fresh, &rf), FE_OK);
    /* the cache held base and the first four tokens drawn (13 rows): the chunks before row 12 stay */
    assert_int_equal(r2.prompt_reused, 12);
    assert_int_equal(rf.prompt_reused, 0);
    assert_int_equal(t2.n, 6);
    assert_memory_equal(t2.ids, fresh.ids, 6 * sizeof *t2.ids);
    const float *la = fe_lm_session_logits(a), *lb = fe_lm_session_logits(b);
    assert_non_null(la), assert_non_null(lb);
    fe_lm_session_destroy(a);
    fe_lm_session_destroy(b);
    free(base), free(more);
}

static void min_p_and_penalties_sample_on_the_host_deterministically(void **st) {
    (void)st;
    int32_t *ids = tiny_llama_tokens(8, 320, 4);
    fe_lm_session *s = session(128, 16);
    fe_lm_stop stop = no_stop_tokens(30);
    fe_lm_sampling p = fe_lm_sampling_default();
    p.temperature = 0.9;
    p.min_p = 0.02;
    p.repeat_penalty = 1.3;
    p.seed = 5;
    got a = {0}, b = {0}, c = {0};
    fe_lm_generate_result r;
    assert_int_equal(fe_lm_session_generate(s, ids, 8, &p, &stop, collect, &a, &r), FE_OK);
    assert_true(r.sampled_on_host);
    assert_int_equal(a.n, 30);
    assert_int_equal(fe_lm_session_generate(s, ids, 8, &p, &stop, collect, &b, &r), FE_OK);
    assert_memory_equal(a.ids, b.ids, 30 * sizeof *a.ids);
    p.seed = 6;
    assert_int_equal(fe_lm_session_generate(s, ids, 8, &p, &stop, collect, &c, &r), FE_OK);
    assert_true(memcmp(a.ids, c.ids, 30 * sizeof *a.ids) != 0);
    /* greedy, but a presence penalty over everything: no token comes twice, none from the prompt */
    fe_lm_sampling q = fe_lm_sampling_default();
    q.presence_penalty = 1e4;
    q.repeat_last_n = -1;
    got d = {0}, greedy = {0};
    assert_int_equal(fe_lm_session_generate(s, ids, 8, &q, &stop, collect, &d, &r), FE_OK);
    assert_int_equal(d.n, 30);
    for (int i = 0; i < d.n; i++) {
        for (int j = 0; j < i; j++) assert_int_not_equal(d.ids[i], d.ids[j]);
        for (int j = 0; j < 8; j++) assert_int_not_equal(d.ids[i], ids[j]);
    }
    /* while plain greedy repeats itself on these weights (so the penalty did something) */
    assert_int_equal(fe_lm_session_generate(s, ids, 8, NULL, &stop, collect, &greedy, &r), FE_OK);
    bool repeats = false;
    for (int i = 0; i < greedy.n; i++)
        for (int j = 0; j < i; j++) repeats |= greedy.ids[i] == greedy.ids[j];
    assert_true(repeats);
    fe_lm_session_destroy(s);
    free(ids);
}

/* Whether s[0..n) is valid UTF-8 with no character cut at either end. */
static bool whole_utf8(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int k = p[i] < 0x80 ? 1 : (p[i] & 0xE0) == 0xC0 ? 2 : (p[i] & 0xF0) == 0xE0 ? 3 : (p[i] & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + (size_t)k > n) return false;
        for (int j = 1; j < k; j++)
            if ((p[i + j] & 0xC0) != 0x80) return false;
        i += (size_t)k;
    }
    return true;
}

static int check_whole(void *user, int32_t tok, const char *text, size_t len) {
    (void)tok;
    if (!whole_utf8(text, len)) fail_msg("a piece of %zu bytes is not whole UTF-8", len);
    (*(int *)user)++;
    return 0;
}

static void streaming_never_emits_half_a_utf8_character(void **st) {
    (void)st;
    const char *text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z"; /* a é € 😀 z: one token a byte */
    int32_t *ids;
    size_t n;
    assert_int_equal(fe_lm_tokenize(model, text, strlen(text), false, false, &ids, &n), FE_OK);
    assert_int_equal(n, strlen(text));
    fe_lm_detokenizer *d;
    assert_int_equal(fe_lm_detokenizer_create(model, &d), FE_OK);
    char all[64] = {0};
    size_t total = 0;
    int empty = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t;
        size_t len;
        assert_int_equal(fe_lm_detokenizer_push(d, ids[i], &t, &len), FE_OK);
        assert_true(whole_utf8(t, len));
        empty += len == 0;
        memcpy(all + total, t, len);
        total += len;
    }
    assert_int_equal(empty, 1 + 2 + 3); /* the bytes held for é, € and 😀 */
    assert_string_equal(all, text);
    /* a character cut off: held back, then U+FFFD at the flush, never its first bytes */
    const char *t;
    size_t len;
    assert_int_equal(fe_lm_detokenizer_push(d, ids[6], &t, &len), FE_OK); /* 😀's first byte */
    assert_int_equal(len, 0);
    assert_int_equal(fe_lm_detokenizer_flush(d, &t, &len), FE_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(t, "\xEF\xBF\xBD", 3);
    assert_int_equal(fe_lm_detokenizer_push(d, 999, &t, &len), FE_E_BOUNDS);
    fe_lm_detokenizer_destroy(d);
    fe_lm_free(ids);
    /* sampled text from random weights (bytes >= 0x80 among them) comes out whole too */
    int32_t *prompt = tiny_llama_tokens(4, 320, 2);
    fe_lm_session *s = session(128, 16);
    fe_lm_stop stop = no_stop_tokens(60);
    fe_lm_sampling p = fe_lm_sampling_default();
    p.temperature = 1.5;
    p.min_p = 0.001;
    int calls = 0;
    fe_lm_generate_result r;
    assert_int_equal(fe_lm_session_generate(s, prompt, 4, &p, &stop, check_whole, &calls, &r), FE_OK);
    assert_true(calls >= 60);
    fe_lm_session_destroy(s);
    free(prompt);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void open_reports_a_missing_file_with_its_path_once(void **st) {
    (void)st;
    fe_lm_model *m = (fe_lm_model *)1;
    fe_error err = {0};
    const char *path = "/nonexistent/ferrum-test/model.gguf";
    assert_int_not_equal(fe_lm_model_open(path, NULL, &m, &err), FE_OK);
    assert_null(m);
    assert_int_equal(count(err.message, path), 1);
    assert_non_null(strstr(err.message, "cannot open"));
    char cfg[128];
    snprintf(cfg, sizeof cfg, "%s/nothing", dir);
    fe_lm_open_options o = fe_lm_open_options_default();
    o.device = test_dev;
    assert_int_not_equal(fe_lm_model_open(cfg, &o, &m, &err), FE_OK);
    assert_int_equal(count(err.message, cfg), 1);
    o.random_weights = true;
    assert_int_not_equal(fe_lm_model_open("no-such-preset", &o, &m, &err), FE_OK);
    assert_int_equal(count(err.message, "no-such-preset"), 1);
    o.random_weights = false;
    o.tokenizer = "/nonexistent/tokenizer.json";
    assert_int_not_equal(fe_lm_model_open(dir, &o, &m, &err), FE_OK);
    assert_int_equal(count(err.message, o.tokenizer), 1);
    assert_null(m);
}

static void info_tokenize_and_chat_say_what_the_model_is(void **st) {
    (void)st;
    fe_lm_model_info in;
    assert_int_equal(fe_lm_model_get_info(model, &in), FE_OK);
    assert_int_equal(in.format, FE_LM_FORMAT_SAFETENSORS);
    assert_int_equal(in.vocab, 320), assert_int_equal(in.n_layers, 2), assert_int_equal(in.hidden, 64);
    assert_int_equal(in.n_heads, 4), assert_int_equal(in.n_kv_heads, 2), assert_int_equal(in.head_dim, 16);
    assert_int_equal(in.ffn, 160);
    assert_int_equal(in.matrix_dtype, FE_DTYPE_F32);
    /* read in at open (prefault): a small file is copied into memory */
    assert_false(in.weights_mapped);
    assert_non_null(strstr(in.weights_note, "in memory"));
    assert_int_equal(in.weight_bytes, fe_llama_weights_bytes(&weights));
    assert_string_equal(in.tokenizer, "byte-level BPE");
    assert_int_equal(in.chat_format, FE_LM_CHAT_CHATML);
    assert_non_null(strstr(in.chat_note, "so using ChatML"));
    int32_t stops[4];
    assert_int_equal(fe_lm_model_stop_tokens(model, stops, 4), 1);
    assert_int_equal(stops[0], 257); /* <|im_end|> ends a turn */
    assert_int_equal(fe_lm_model_stop_tokens(model, NULL, 4), 1);
    fe_lm_message msgs[] = {{"system", "S"}, {"user", "hi"}, {"assistant", "yo"}, {"user", "q"}};
    char *text;
    assert_int_equal(fe_lm_chat_apply(model, msgs, 4, true, &text), FE_OK);
    assert_string_equal(text, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                              "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
                              "<|im_start|>assistant\n");
    int32_t *ids;
    size_t n;
    assert_int_equal(fe_lm_tokenize(model, text, strlen(text), true, true, &ids, &n), FE_OK);
    assert_int_equal(ids[0], 256);
    fe_lm_free(ids);
    assert_int_equal(fe_lm_tokenize(model, "<|im_end|>", 10, true, false, &ids, &n), FE_OK);
    assert_int_equal(n, 10); /* read as text: one token a byte */
    fe_lm_free(ids);
    fe_lm_free(text);
    size_t len;
    assert_memory_equal(fe_lm_token_piece(model, 258, &len), "a0", 2);
    assert_int_equal(fe_lm_token_find(model, "<|im_start|>"), 256);
    /* the session's graph and the accuracy check */
    fe_lm_session *s = session(32, 8);
    assert_non_null(fe_lm_session_graph(s));
    int32_t *p = tiny_llama_tokens(12, 320, 3);
    fe_lm_accuracy acc;
    assert_int_equal(fe_lm_session_check_accuracy(s, p, 12, &acc), FE_OK);
    assert_int_equal(acc.positions, 12);
    assert_int_equal(acc.top1_mismatches, 0);
    assert_true(acc.spread > 1.0 && acc.kl_max < 1e-5);
    int differing = -1;
    assert_int_equal(fe_lm_session_check_determinism(s, p, 12, 3, &differing), FE_OK);
    assert_int_equal(differing, 0);
    fe_lm_session_destroy(s);
    free(p);
}

static void header_only_compiles_and_draws_but_refuses_to_run(void **st) {
    (void)st;
    fe_lm_open_options o = fe_lm_open_options_default();
    o.device = test_dev;
    o.header_only = true;
    fe_lm_model *m = NULL;
    fe_error err = {0};
    if (fe_lm_model_open(dir, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    fe_lm_model_info in;
    assert_int_equal(fe_lm_model_get_info(m, &in), FE_OK);
    assert_true(in.weights_unread);
    assert_int_equal(in.weight_bytes, fe_llama_weights_bytes(&weights));
    fe_lm_session *s = NULL;
    if (fe_lm_session_create(m, NULL, &s, &err) != FE_OK) fail_msg("%s", err.message);
    assert_true(fe_graph_get_stats(fe_lm_session_graph(s)).versions >= 2);
    int32_t ids[2] = {1, 2};
    assert_int_not_equal(fe_lm_session_generate(s, ids, 2, NULL, NULL, NULL, NULL, NULL), FE_OK);
    assert_non_null(strstr(fe_lm_session_message(s), "no data"));
    fe_lm_session_destroy(s);
    fe_lm_model_close(m);
}

/* open, a session and a short generation with the k-th allocation failing: an error, never a
 * crash (and, under make asan, never a leak) */
static fe_status open_and_generate(void) {
    fe_lm_open_options o = fe_lm_open_options_default();
    o.device = test_dev;
    fe_lm_model *m = NULL;
    fe_lm_session *s = NULL;
    fe_status st = fe_lm_model_open(dir, &o, &m, NULL);
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = 16;
    so.chunk = 4;
    if (st == FE_OK) st = fe_lm_session_create(m, &so, &s, NULL);
    int32_t *ids = NULL;
    size_t n = 0;
    if (st == FE_OK) st = fe_lm_tokenize(m, "hi there", 8, true, false, &ids, &n);
    fe_lm_stop stop = fe_lm_stop_default();
    stop.max_tokens = 3;
    stop.strings[0] = "zz";
    stop.n_strings = 1;
    fe_lm_sampling p = fe_lm_sampling_default();
    p.min_p = 0.1; /* the host path too */
    fe_lm_generate_result r;
    if (st == FE_OK) st = fe_lm_session_generate(s, ids, (int64_t)n, &p, &stop, NULL, NULL, &r);
    fe_lm_free(ids);
    fe_lm_session_destroy(s);
    fe_lm_model_close(m);
    return st;
}

static void every_failed_allocation_is_survived(void **st) {
    (void)st;
    fe_alloc_fail_at(0);
    assert_int_equal(open_and_generate(), FE_OK);
    long total = fe_alloc_fail_at(0), stride = total / 400 + 1;
    for (long k = 1; k <= total; k += stride) {
        fe_alloc_fail_at(k);
        fe_status s = open_and_generate();
        fe_alloc_fail_at(0);
        assert_int_not_equal(s, FE_OK);
    }
}

static void bad_input_is_answered_not_crashed(void **st) {
    (void)st;
    fe_lm_session *s = session(16, 8);
    int32_t ids[20] = {1, 2, 3};
    fe_lm_generate_result r;
    assert_int_equal(fe_lm_session_generate(NULL, ids, 3, NULL, NULL, NULL, NULL, &r), FE_E_INVALID);
    assert_int_equal(fe_lm_session_generate(s, NULL, 3, NULL, NULL, NULL, NULL, &r), FE_E_INVALID);
    assert_int_equal(fe_lm_session_generate(s, ids, 0, NULL, NULL, NULL, NULL, &r), FE_E_INVALID);
    ids[1] = 320;
    assert_int_equal(fe_lm_session_generate(s, ids, 3, NULL, NULL, NULL, NULL, &r), FE_E_BOUNDS);
    assert_non_null(strstr(fe_lm_session_message(s), "320 at 1 is outside the vocabulary"));
    ids[1] = -1;
    assert_int_equal(fe_lm_session_prefill(s, ids, 3, NULL), FE_E_BOUNDS);
    ids[1] = 2;
    assert_int_equal(fe_lm_session_generate(s, ids, 20, NULL, NULL, NULL, NULL, &r), FE_E_BOUNDS);
    assert_non_null(strstr(fe_lm_session_message(s), "20 tokens does not fit the KV cache of 16 rows"));
    assert_non_null(strstr(fe_lm_session_message(s), "larger max_seq_len"));
    fe_lm_sampling p = fe_lm_sampling_default();
    p.top_p = 0;
    assert_int_equal(fe_lm_session_generate(s, ids, 3, &p, NULL, NULL, NULL, &r), FE_E_INVALID);
    fe_lm_stop stop = fe_lm_stop_default();
    stop.n_strings = 1; /* strings[0] NULL */
    assert_int_equal(fe_lm_session_generate(s, ids, 3, NULL, &stop, NULL, NULL, &r), FE_E_INVALID);
    assert_int_equal(fe_lm_session_decode(s, 5, NULL), FE_E_STATE); /* no prompt yet */
    assert_non_null(strstr(fe_lm_session_message(s), "prompt first"));
    assert_int_equal(fe_lm_session_prefill(s, ids, 3, NULL), FE_OK);
    assert_int_equal(fe_lm_session_decode(s, 5000, NULL), FE_E_BOUNDS);
    /* until the cache is full: 16 rows, 3 of prompt: 14 tokens, the last never fed */
    stop = no_stop_tokens(-1);
    assert_int_equal(fe_lm_session_generate(s, ids, 3, NULL, &stop, NULL, NULL, &r), FE_OK);
    assert_int_equal(r.stop_reason, FE_LM_STOP_CACHE_FULL);
    assert_int_equal(r.generated_tokens, 14);
    assert_int_equal(fe_lm_session_decode(s, 5, NULL), FE_E_BOUNDS); /* full */
    fe_lm_session_destroy(s);
    /* a session longer than the model's context */
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = 1 << 20;
    fe_error err = {0};
    fe_lm_session *big = (fe_lm_session *)1;
    assert_int_not_equal(fe_lm_session_create(model, &so, &big, &err), FE_OK);
    assert_null(big);
    assert_non_null(strstr(err.message, "exceeds the model's context"));
    assert_int_equal(fe_lm_session_create(NULL, NULL, &big, &err), FE_E_INVALID);
    /* a cache type that is neither f32 nor f16; then f16 runs, in half the bytes */
    so = fe_lm_session_options_default();
    so.cache_type = (fe_lm_cache_type)7;
    assert_int_equal(fe_lm_session_create(model, &so, &big, &err), FE_E_INVALID);
    assert_null(big);
    assert_non_null(strstr(err.message, "cache_type 7"));
    so.cache_type = FE_LM_CACHE_F32;
    so.max_seq_len = 64;
    fe_lm_session *s32 = NULL;
    if (fe_lm_session_create(model, &so, &s32, &err) != FE_OK) fail_msg("%s", err.message);
    so.cache_type = FE_LM_CACHE_F16;
    so.prefill_dot = FE_LM_PREFILL_DOT_F32;
    if (fe_lm_session_create(model, &so, &big, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_lm_session_kv_bytes(big) * 2, fe_lm_session_kv_bytes(s32));
    stop = no_stop_tokens(4);
    fe_lm_generate_result r16;
    assert_int_equal(fe_lm_session_generate(big, ids, 3, NULL, &stop, NULL, NULL, &r16), FE_OK);
    assert_int_equal(r16.generated_tokens, 4);
    fe_lm_session_destroy(big);
    fe_lm_session_destroy(s32);
    /* text calls */
    int32_t *out;
    size_t n;
    char *text;
    assert_int_equal(fe_lm_tokenize(model, NULL, 3, false, false, &out, &n), FE_E_INVALID);
    int32_t bad = 400;
    assert_int_equal(fe_lm_detokenize(model, &bad, 1, &text, &n), FE_E_BOUNDS);
    assert_non_null(strstr(fe_lm_model_message(model), "400"));
    fe_lm_message m = {"robot", "x"};
    assert_int_equal(fe_lm_chat_apply(model, &m, 1, true, &text), FE_E_INVALID);
    assert_null(text);
    assert_int_equal(fe_lm_model_get_info(NULL, NULL), FE_E_INVALID);
    assert_int_equal(fe_lm_tokenize(NULL, "x", 1, false, false, &out, &n), FE_E_INVALID);
    assert_null(fe_lm_token_piece(model, -3, &n));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generate_through_the_api_matches_fe_causal_greedy),
        cmocka_unit_test(stop_string_split_across_tokens_is_not_emitted),
        cmocka_unit_test(a_chat_turn_reuses_the_cache_and_matches_from_scratch),
        cmocka_unit_test(min_p_and_penalties_sample_on_the_host_deterministically),
        cmocka_unit_test(streaming_never_emits_half_a_utf8_character),
        cmocka_unit_test(open_reports_a_missing_file_with_its_path_once),
        cmocka_unit_test(info_tokenize_and_chat_say_what_the_model_is),
        cmocka_unit_test(header_only_compiles_and_draws_but_refuses_to_run),
        cmocka_unit_test(bad_input_is_answered_not_crashed),
        cmocka_unit_test(every_failed_allocation_is_survived),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
