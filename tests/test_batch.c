/* tests/test_batch.c: the batched causal LM (lm/model/batch.c) against the single-sequence
 * session on SmolLM2: a slot's prompt logits are the session's, byte for byte, whatever the
 * slot and whatever the other slots hold; a batched decode step gives each row the logits
 * the session's decode step gives that sequence, byte for byte, for every row count up to
 * FE_BATCH_MAX_ROWS (GEMVs over the rows, decoding each weight block once for up to 8 of
 * them), with f32 dot products and with int8 activations (the default over quantised
 * matrices);
 * rows left unused touch no slot; a prompt runs chunk by chunk across calls to the same
 * result; the steps of a decode call do not grow with its rows (one KVWrite and one SlotMHA
 * step a layer for all of them); and bad slots, tokens and rows are refused by name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "lm/api/api.h"
#include "lm/model/batch.h"
#include "support/lm_fixtures.h"

enum { SLOTS = 3, CTX = 256, CHUNK = 16 };

typedef struct fixture {
    fe_lm_model *m;
    fe_batch *b;
} fixture;

static int setup(void **state) {
    static fixture f;
    *state = &f;
    const char *path = lmfix_smollm2_path();
    if (!path || fe_lm_model_open(path, NULL, &f.m, NULL) != FE_OK) f.m = NULL;
    if (!f.m) return 0;
    /* the caches in f16, as the sessions' default (fe_lm_session_options_default) */
    fe_batch_options o = {.slots = SLOTS, .max_seq_len = CTX, .chunk = CHUNK,
                          .kv_dtype = FE_DTYPE_F16};
    fe_error err = {0};
    if (fe_batch_create(f.m->dev, &f.m->w, &o, &f.b, &err) != FE_OK) {
        print_error("fe_batch_create: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    fe_batch_destroy(f->b);
    fe_lm_model_close(f->m);
    return 0;
}

static fixture *need(void **state) {
    fixture *f = *state;
    if (!f->m) {
        lmfix_need_smollm2(); /* fails under CI=true */
        skip();
    }
    return f;
}

static fe_lm_session *session(fixture *f) {
    fe_lm_session_options o = fe_lm_session_options_default();
    o.max_seq_len = CTX;
    o.chunk = CHUNK;
    fe_lm_session *s = NULL;
    assert_int_equal(fe_lm_session_create(f->m, &o, &s, NULL), FE_OK);
    return s;
}

static void prompt(fixture *f, const char *text, int32_t **ids, int64_t *n) {
    size_t len = 0;
    assert_int_equal(fe_lm_tokenize(f->m, text, strlen(text), true, false, ids, &len), FE_OK);
    *n = (int64_t)len;
}

static int32_t argmax(const float *x, int64_t n) {
    int32_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = (int32_t)i;
    return best;
}

static void prefill(fixture *f, int slot, const int32_t *ids, int64_t n, const float **logits) {
    bool done = false;
    assert_int_equal(fe_batch_prefill(f->b, slot, ids, n, 0, &done, logits), FE_OK);
    assert_true(done);
}

static void prompt_logits_are_the_sessions_byte_for_byte(void **state) {
    fixture *f = need(state);
    int64_t V = f->m->cfg.vocab;
    const char *texts[SLOTS] = {"The quick brown fox jumps over the lazy dog, and then it",
                                "In the beginning", "def fibonacci(n):\n    if n < 2:\n        return"};
    for (int s = 0; s < SLOTS; s++) {
        int32_t *ids;
        int64_t n;
        prompt(f, texts[s], &ids, &n);
        fe_lm_session *ses = session(f);
        const float *want = NULL, *got = NULL;
        assert_int_equal(fe_lm_session_prefill(ses, ids, n, &want), FE_OK);
        prefill(f, (s + 1) % SLOTS, ids, n, &got); /* another slot than its index */
        assert_memory_equal(got, want, (size_t)V * sizeof(float));
        assert_int_equal(fe_batch_position(f->b, (s + 1) % SLOTS), n);
        fe_lm_session_destroy(ses);
        fe_lm_free(ids);
    }
}

/* Three sequences decoded side by side for 12 steps (default int8 activations), each row's
 * logits byte-equal to its own session's decode step. */
static void decode_rows_follow_their_sessions(void **state) {
    fixture *f = need(state);
    int64_t V = f->m->cfg.vocab;
    const char *texts[SLOTS] = {"Once upon a time", "The capital of France is", "1, 2, 3, 4,"};
    fe_lm_session *ses[SLOTS];
    int32_t next[SLOTS];
    int slots[SLOTS] = {2, 0, 1};
    for (int r = 0; r < SLOTS; r++) {
        int32_t *ids;
        int64_t n;
        prompt(f, texts[r], &ids, &n);
        ses[r] = session(f);
        const float *want, *got;
        assert_int_equal(fe_lm_session_prefill(ses[r], ids, n, &want), FE_OK);
        prefill(f, slots[r], ids, n, &got);
        next[r] = argmax(got, V);
        fe_lm_free(ids);
    }
    for (int step = 0; step < 12; step++) {
        int rows = step % 4 == 3 ? 2 : SLOTS; /* now and then a row sits out */
        const float *got;
        assert_int_equal(fe_batch_decode(f->b, slots, next, rows, &got), FE_OK);
        for (int r = 0; r < rows; r++) {
            const float *want;
            assert_int_equal(fe_lm_session_decode(ses[r], next[r], &want), FE_OK);
            const float *g = got + (int64_t)r * V;
            float lo = want[0], hi = want[0];
            double diff = 0;
            for (int64_t i = 0; i < V; i++) {
                lo = fminf(lo, want[i]);
                hi = fmaxf(hi, want[i]);
                diff = fmax(diff, fabs((double)g[i] - want[i]));
            }
            if (diff != 0) fail_msg("step %d row %d: logits differ by %g, spread %g", step, r, diff, hi - lo);
            assert_true(hi - lo > 5); /* a live model, not zeros */
            assert_int_equal(argmax(g, V), argmax(want, V));
            next[r] = argmax(want, V);
        }
        if (rows < SLOTS) { /* the row that sat out feeds the same token next step */
            const float *want;
            assert_int_equal(fe_lm_session_decode(ses[2], next[2], &want), FE_OK);
            const float *g;
            int one[1] = {slots[2]};
            assert_int_equal(fe_batch_decode(f->b, one, &next[2], 1, &g), FE_OK);
            assert_int_equal(argmax(g, V), argmax(want, V));
            next[2] = argmax(want, V);
        }
    }
    for (int r = 0; r < SLOTS; r++) {
        assert_int_equal(fe_batch_position(f->b, slots[r]), fe_lm_session_position(ses[r]));
        fe_lm_session_destroy(ses[r]);
    }
}

/* FE_BATCH_MAX_ROWS rows at once (batch passes of 8 and 4): each row's logits byte-equal to
 * its session's decode step, with the KV caches in f32 or both in f16 (KVWrite rounds a row's
 * key and value as the session's Convert steps do, SlotMHA widens them as its MHA does). */
static void many_rows_equal(fixture *f, fe_lm_decode_dot dot, fe_lm_cache_type cache) {
    enum { ROWS = FE_BATCH_MAX_ROWS };
    int64_t V = f->m->cfg.vocab;
    fe_batch_options o = {.slots = ROWS, .max_seq_len = CTX, .chunk = CHUNK, .decode_dot = (int)dot,
                          .kv_dtype = cache == FE_LM_CACHE_F16 ? FE_DTYPE_F16 : FE_DTYPE_F32};
    fe_batch *b = NULL;
    assert_int_equal(fe_batch_create(f->m->dev, &f->m->w, &o, &b, NULL), FE_OK);
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = CTX;
    so.chunk = CHUNK;
    so.decode_dot = dot;
    so.cache_type = cache;
    const char *texts[ROWS] = {"Once upon a time", "The capital of France is", "1, 2, 3, 4,",
                               "def add(a, b):", "Dear diary,", "The weather today",
                               "In 1492", "Water boils at", "My favourite colour",
                               "SELECT * FROM", "Hello, my name is", "The quick brown fox"};
    int slots[ROWS];
    for (int r = 0; r < ROWS; r++) slots[r] = ROWS - 1 - r;
    int32_t tok[ROWS];
    fe_lm_session *ses[ROWS];
    for (int r = 0; r < ROWS; r++) {
        int32_t *ids;
        int64_t n;
        prompt(f, texts[r], &ids, &n);
        assert_int_equal(fe_lm_session_create(f->m, &so, &ses[r], NULL), FE_OK);
        const float *want;
        bool done;
        assert_int_equal(fe_lm_session_prefill(ses[r], ids, n, &want), FE_OK);
        tok[r] = argmax(want, V);
        assert_int_equal(fe_batch_prefill(b, slots[r], ids, n, 0, &done, NULL), FE_OK);
        fe_lm_free(ids);
    }
    const float *got;
    assert_int_equal(fe_batch_decode(b, slots, tok, ROWS, &got), FE_OK);
    for (int r = 0; r < ROWS; r++) {
        const float *want;
        assert_int_equal(fe_lm_session_decode(ses[r], tok[r], &want), FE_OK);
        float lo = want[0], hi = want[0];
        double diff = 0;
        for (int64_t i = 0; i < V; i++) {
            lo = fminf(lo, want[i]);
            hi = fmaxf(hi, want[i]);
            diff = fmax(diff, fabs((double)got[r * V + i] - want[i]));
        }
        assert_true(hi - lo > 5);
        if (diff != 0) fail_msg("row %d of %d: logits differ by %g, spread %g", r, ROWS, diff, hi - lo);
        fe_lm_session_destroy(ses[r]);
    }
    fe_batch_destroy(b);
}

static void many_rows_equal_their_sessions_byte_for_byte(void **state) {
    fixture *f = need(state);
    many_rows_equal(f, FE_LM_DECODE_DOT_F32, FE_LM_CACHE_F32);
    many_rows_equal(f, FE_LM_DECODE_DOT_AUTO, FE_LM_CACHE_F32);
    many_rows_equal(f, FE_LM_DECODE_DOT_AUTO, FE_LM_CACHE_F16);
}

static void a_prompt_in_pieces_gives_the_same_logits(void **state) {
    fixture *f = need(state);
    int64_t V = f->m->cfg.vocab;
    int32_t *ids;
    int64_t n;
    prompt(f, "A long prompt that takes several chunks of sixteen rows to run through the model, "
              "one chunk per call, while the other slots decode between them, so that no slot "
              "waits for a whole prompt: it waits for one chunk at most, then its turn comes.", &ids, &n);
    assert_true(n > 2 * CHUNK);
    const float *whole, *piece = NULL;
    prefill(f, 0, ids, n, &whole);
    float *keep = test_malloc((size_t)V * sizeof *keep);
    memcpy(keep, whole, (size_t)V * sizeof *keep);
    int32_t other = 7;
    prefill(f, 1, &other, 1, NULL); /* slot 1 forgets; then its prompt comes a chunk a call */
    bool done = false;
    int calls = 0;
    while (!done) {
        assert_int_equal(fe_batch_prefill(f->b, 1, ids, n, 1, &done, &piece), FE_OK);
        calls++;
        if (!done) assert_int_equal(fe_batch_position(f->b, 1), (int64_t)calls * CHUNK);
    }
    assert_int_equal(calls, (n + CHUNK - 1) / CHUNK);
    assert_memory_equal(piece, keep, (size_t)V * sizeof *keep);
    /* the same prompt again keeps every whole chunk but the last row's */
    assert_int_equal(fe_batch_reusable(f->b, 1, ids, n), (n - 1) / CHUNK * CHUNK);
    test_free(keep);
    fe_lm_free(ids);
}

/* ---- the public fe_lm_batch ---- */

typedef struct collected {
    char text[2048];
    size_t len;
    int tokens, stop_after; /* stop_after > 0: the callback asks to stop at that token */
} collected;

static int collect(void *user, int32_t tok, const char *text, size_t len) {
    collected *c = user;
    if (c->len + len < sizeof c->text) memcpy(c->text + c->len, text, len), c->len += len;
    c->text[c->len] = '\0';
    if (tok >= 0) c->tokens++;
    return c->stop_after > 0 && c->tokens >= c->stop_after;
}

/* Three generations started together (one more later), stepped to the end: each one's text
 * is a session's generate for the same prompt (at every row count the decode
 * logits are the session's, byte for byte), its stop string and max_tokens hold,
 * and a callback that asks to stop ends only its own slot. */
static void batch_generations_match_session_generations(void **state) {
    fixture *f = need(state);
    fe_lm_batch_options o = fe_lm_batch_options_default();
    o.slots = SLOTS;
    o.max_seq_len = CTX;
    o.chunk = CHUNK;
    fe_lm_batch *b = NULL;
    assert_int_equal(fe_lm_batch_create(f->m, &o, &b, NULL), FE_OK);
    const char *texts[SLOTS + 1] = {"Once upon a time", "The capital of France is", "1, 2, 3, 4,",
                                    "def add(a, b):"};
    collected got[SLOTS + 1] = {{.len = 0}}, want[SLOTS + 1] = {{.len = 0}};
    got[2].stop_after = want[2].stop_after = 5;
    fe_lm_stop stop = fe_lm_stop_default();
    stop.max_tokens = 20;
    fe_lm_stop stop1 = stop;
    stop1.strings[0] = ".";
    stop1.n_strings = 1;
    for (int i = 0; i <= SLOTS; i++) {
        int32_t *ids;
        int64_t n;
        prompt(f, texts[i], &ids, &n);
        fe_lm_session *ses = session(f);
        assert_int_equal(fe_lm_session_generate(ses, ids, n, NULL, i == 1 ? &stop1 : &stop, collect, &want[i], NULL), FE_OK);
        fe_lm_session_destroy(ses);
        if (i < SLOTS) assert_int_equal(fe_lm_batch_start(b, i, ids, n, NULL, i == 1 ? &stop1 : &stop, collect, &got[i]), FE_OK);
        fe_lm_free(ids);
    }
    int running = SLOTS, steps = 0, late = -1;
    fe_lm_generate_result r[SLOTS + 1];
    while (running && steps++ < 200) {
        assert_int_equal(fe_lm_batch_step(b, &running), FE_OK);
        for (int i = 0; i < SLOTS; i++)
            if (fe_lm_batch_finished(b, i, &r[late < 0 ? i : SLOTS]) && late < 0) {
                late = i; /* the fourth prompt takes the first slot free */
                int32_t *ids;
                int64_t n;
                prompt(f, texts[SLOTS], &ids, &n);
                assert_int_equal(fe_lm_batch_start(b, i, ids, n, NULL, &stop, collect, &got[SLOTS]), FE_OK);
                assert_int_equal(fe_lm_batch_start(b, i, ids, n, NULL, &stop, collect, &got[SLOTS]), FE_E_STATE);
                fe_lm_free(ids);
                running++;
            }
    }
    assert_int_equal(running, 0);
    for (int i = 0; i <= SLOTS; i++)
        if (strcmp(got[i].text, want[i].text) != 0)
            fail_msg("prompt %d: batch \"%s\" != session \"%s\"", i, got[i].text, want[i].text);
    assert_int_equal(r[late].stop_reason, late == 2 ? FE_LM_STOP_CALLBACK : late == 1 ? FE_LM_STOP_STRING : FE_LM_STOP_LENGTH);
    assert_int_equal(got[2].tokens, 5);
    assert_int_equal(got[0].tokens, 20);
    assert_null(strchr(got[1].text, '.'));
    fe_lm_batch_destroy(b);
}

/* The decode step's KV write and attention are one step each for all rows (KVWrite, SlotMHA):
 * the steps a decode call runs do not grow with its rows. */
static void decode_steps_do_not_grow_with_the_rows(void **state) {
    fixture *f = need(state);
    int32_t *ids;
    int64_t n;
    prompt(f, "Steps for every row", &ids, &n);
    for (int s = 0; s < SLOTS; s++) prefill(f, s, ids, n, NULL);
    fe_lm_free(ids);
    int slots[SLOTS] = {0, 1, 2};
    int32_t toks[SLOTS] = {1, 2, 3};
    assert_int_equal(fe_batch_decode(f->b, slots, toks, 1, NULL), FE_OK);
    int one = fe_graph_get_stats(fe_batch_graph(f->b)).last_steps;
    assert_int_equal(fe_batch_decode(f->b, slots, toks, SLOTS, NULL), FE_OK);
    int all = fe_graph_get_stats(fe_batch_graph(f->b)).last_steps;
    assert_int_equal(all, one);
    /* a layer: the q, k and v GEMVs, KVWrite, SlotMHA, the output, gated and down GEMVs;
     * then the gather, the final norm and the head */
    assert_int_equal(one, 8 * f->m->cfg.n_layers + 3);
}

static void bad_rows_are_refused_by_name(void **state) {
    fixture *f = need(state);
    int slots[2] = {0, 0};
    int32_t toks[2] = {1, 2};
    assert_int_equal(fe_batch_decode(f->b, slots, toks, 2, NULL), FE_E_BOUNDS);
    assert_non_null(strstr(fe_batch_message(f->b), "distinct slots"));
    slots[1] = SLOTS;
    assert_int_equal(fe_batch_decode(f->b, slots, toks, 2, NULL), FE_E_BOUNDS);
    assert_int_equal(fe_batch_decode(f->b, slots, toks, SLOTS + 1, NULL), FE_E_BOUNDS);
    toks[0] = (int32_t)f->m->cfg.vocab;
    assert_int_equal(fe_batch_decode(f->b, slots, toks, 1, NULL), FE_E_BOUNDS);
    assert_non_null(strstr(fe_batch_message(f->b), "vocabulary"));
    bool done;
    assert_int_equal(fe_batch_prefill(f->b, SLOTS, toks, 1, 0, &done, NULL), FE_E_BOUNDS);
    assert_int_equal(fe_batch_prefill(f->b, 0, toks, 0, 0, &done, NULL), FE_E_BOUNDS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prompt_logits_are_the_sessions_byte_for_byte),
        cmocka_unit_test(decode_rows_follow_their_sessions),
        cmocka_unit_test(many_rows_equal_their_sessions_byte_for_byte),
        cmocka_unit_test(a_prompt_in_pieces_gives_the_same_logits),
        cmocka_unit_test(batch_generations_match_session_generations),
        cmocka_unit_test(decode_steps_do_not_grow_with_the_rows),
        cmocka_unit_test(bad_rows_are_refused_by_name),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
