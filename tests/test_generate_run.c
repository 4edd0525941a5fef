/* tests/test_generate_run.c: the run behind `ferrum generate` (apps/ferrum/generate.c), driven
 * with its arguments as the parser hands them over, on a tiny checkpoint folder (random f32
 * weights, a byte tokenizer with no special tokens, so nothing stops generation but what a
 * test asks for): stop strings and --json, a drawn seed that repeats, -n -1 to the end of the
 * cache, penalties and min_p reaching the sampler, a warm-up that changes no output, a failed write to stdout, an empty prompt,
 * and a summary that adds up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../apps/ferrum/generate.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/lm_fixtures.h"
#include "support/tiny_llama.h"

static char dir[64];
static int code;
static char out[1 << 15], errs[1 << 15];

static int setup(void **state) {
    (void)state;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 4, &w, &err) != FE_OK) return 1;
    bool ok = lmfix_tmpdir(dir, sizeof dir) && fe_llama_weights_write_safetensors(&w, dir, &err) == FE_OK &&
              lmfix_byte_tokenizer(dir, false, 64);
    fe_llama_weights_free(&w);
    return ok ? 0 : 1;
}

static int teardown(void **state) {
    (void)state;
    lmfix_rmtree(dir);
    return 0;
}

/* gen_args as the parser leaves them without options */
static gen_args args(void) {
    gen_args a = {.open = model_args_default(), .num_tokens = 64,
                  .sampling = fe_lm_sampling_default(), .seed_given = true,
                  .prefill_dot = FE_LM_PREFILL_DOT_F32};
    a.open.model = dir;
    a.open.threads = 1;
    return a;
}

static void slurp(FILE *f, char *buf, size_t n) {
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

/* runs a, stdout into `out` (or into /dev/full) and stderr into `errs` */
static void run_to(const gen_args *a, bool full) {
    FILE *o = full ? fopen("/dev/full", "w") : tmpfile(), *e = tmpfile();
    assert_non_null(o), assert_non_null(e);
    fe_cli_io io = {o, e, NULL};
    code = fe_generate_run(a, &io);
    if (full) fclose(o), out[0] = 0;
    else slurp(o, out, sizeof out);
    slurp(e, errs, sizeof errs);
}
static void run(const gen_args *a) { run_to(a, false); }

static json_t *json_out(void) {
    json_error_t je;
    /* the byte tokenizer may draw byte 0, "\u0000" in the text: valid JSON jansson refuses
     * unless allowed */
    json_t *j = json_loads(out, JSON_ALLOW_NUL, &je);
    if (!j) fail_msg("not JSON (%s): %s", je.text, out);
    return j;
}

static void json_stops_at_a_stop_string_split_across_tokens(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt = "hello";
    a.num_tokens = 24;
    a.json = true;
    run(&a);
    if (code) fail_msg("%s", errs);
    json_t *all = json_out();
    assert_string_equal(json_string_value(json_object_get(all, "stop_reason")), "length");
    assert_int_equal(json_integer_value(json_object_get(all, "generated_tokens")), 24);
    assert_int_equal(json_integer_value(json_object_get(all, "prompt_tokens")), 5);
    assert_int_equal(json_array_size(json_object_get(all, "ids")), 24);
    const char *text = json_string_value(json_object_get(all, "text"));
    size_t len = json_string_length(json_object_get(all, "text"));
    /* two ASCII characters the text holds after its start (each one token or two) */
    size_t at = 2;
    while (at + 1 < len && !(text[at] > ' ' && text[at] < 127 && text[at + 1] > ' ' && text[at + 1] < 127)) at++;
    if (at + 1 >= len) skip();
    char stop[3] = {text[at], text[at + 1], 0};
    size_t before = (size_t)(strstr(text, stop) - text);
    a.stop[a.n_stop++] = stop;
    run(&a);
    if (code) fail_msg("%s", errs);
    json_t *cut = json_out();
    assert_string_equal(json_string_value(json_object_get(cut, "stop_reason")), "stop string");
    assert_int_equal(json_string_length(json_object_get(cut, "text")), before);
    assert_memory_equal(json_string_value(json_object_get(cut, "text")), text, before);
    json_decref(all);
    json_decref(cut);
}

/* The warm-up (one token through the model before the prompt) changes no output: the same ids
 * with and without it, for a prompt longer than one token and for one equal to the warm-up's
 * token, at the default chunk and at chunk 1 (where the warm-up's row is reused). */
static void the_warm_up_changes_no_output(void **st) {
    (void)st;
    const char *prompts[] = {"5,6,7,8,9", "5"};
    const int64_t chunks[] = {0, 1};
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 2; c++) {
            gen_args a = args();
            a.prompt_ids = prompts[i];
            a.num_tokens = 12;
            a.chunk = chunks[c];
            a.json = true;
            run(&a);
            if (code) fail_msg("%s", errs);
            json_t *warm = json_out();
            assert_true(json_real_value(json_object_get(warm, "warmup_seconds")) > 0);
            a.no_warmup = true;
            run(&a);
            if (code) fail_msg("%s", errs);
            json_t *cold = json_out();
            assert_true(json_real_value(json_object_get(cold, "warmup_seconds")) == 0);
            assert_true(json_equal(json_object_get(warm, "ids"), json_object_get(cold, "ids")));
            json_decref(warm);
            json_decref(cold);
        }
}

static void a_seed_is_drawn_and_said_and_repeats(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt_ids = "5,6,7";
    a.num_tokens = 12;
    a.sampling.temperature = 1.0;
    a.seed_given = false;
    a.json = true;
    run(&a);
    if (code) fail_msg("%s", errs);
    unsigned long long seed, again;
    const char *said = strstr(errs, "ferrum: seed ");
    assert_non_null(said);
    assert_int_equal(sscanf(said, "ferrum: seed %llu (give --seed %llu to repeat)", &seed, &again), 2);
    assert_true(seed == again);
    json_t *first = json_out();
    assert_int_equal(json_integer_value(json_object_get(first, "seed")), (json_int_t)seed);
    a.sampling.seed = seed;
    a.seed_given = true;
    run(&a);
    if (code) fail_msg("%s", errs);
    assert_null(strstr(errs, "ferrum: seed "));
    json_t *second = json_out();
    assert_true(json_equal(json_object_get(first, "ids"), json_object_get(second, "ids")));
    json_decref(first);
    json_decref(second);
    /* greedy needs no seed, and says none */
    a.sampling.temperature = 0;
    a.seed_given = false;
    run(&a);
    assert_null(strstr(errs, "ferrum: seed "));
}

static void minus_one_generates_until_the_cache_is_full(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt_ids = "1,2,3,4";
    a.num_tokens = -1;
    a.max_seq_len = 24;
    a.json = true;
    run(&a);
    if (code) fail_msg("%s", errs);
    json_t *j = json_out();
    assert_string_equal(json_string_value(json_object_get(j, "stop_reason")), "cache full");
    assert_int_equal(json_integer_value(json_object_get(j, "generated_tokens")), 24 - 4 + 1);
    json_decref(j);
    /* a prompt that fills the cache leaves no room: said, with the fix */
    a.max_seq_len = 4;
    run(&a);
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "--max-seq-len"));
}

static void penalties_and_min_p_reach_the_sampler(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt_ids = "10,11,12,13,14,15";
    a.num_tokens = 40;
    a.json = true;
    a.sampling.presence_penalty = 1e4;
    a.sampling.repeat_last_n = -1;
    a.sampling.min_p = 0.05;
    run(&a);
    if (code) fail_msg("%s", errs);
    json_t *j = json_out(), *ids = json_object_get(j, "ids");
    assert_int_equal(json_array_size(ids), 40);
    for (size_t i = 0; i < 40; i++) {
        json_int_t t = json_integer_value(json_array_get(ids, i));
        assert_true(t < 10 || t > 15);
        for (size_t k = 0; k < i; k++) assert_int_not_equal(t, json_integer_value(json_array_get(ids, k)));
    }
    json_decref(j);
}

static void a_failed_write_to_stdout_is_an_error(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt = "hi";
    a.num_tokens = 4;
    run_to(&a, true);
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "writing the output"));
    a.json = true;
    run_to(&a, true);
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "writing the output"));
}

static void an_empty_prompt_is_an_error_not_a_random_one(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt = "";
    run(&a);
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "the prompt is empty"));
    a.prompt = NULL;
    run(&a);
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "no prompt"));
    assert_non_null(strstr(errs, "--prompt-len"));
    a.prompt_len = 5; /* random ids only where asked */
    a.num_tokens = 1;
    run(&a);
    if (code) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "prompt 5 tokens"));
}

static void the_summary_adds_up_and_counts_in_words(void **st) {
    (void)st;
    gen_args a = args();
    a.prompt_ids = "1,2,3";
    a.num_tokens = 1;
    run(&a);
    if (code) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "| 1 token generated (stop: length)"));
    assert_null(strstr(errs, "1 tokens"));
    const char *p = strstr(errs, "prompt 3 tokens in ");
    assert_non_null(p);
    assert_null(strstr(p, "tok/s) |")); /* no rate for 3 prompt tokens */
    const char *summary = strstr(errs, "ferrum: load ");
    assert_non_null(summary);
    assert_null(strstr(summary, "%")); /* no unexplained percentage */
    /* peak = weights resident + weights repacked + KV rows written + scratch + the rest */
    double peak, w, w_all, laid, kv, kv_res, scratch, rest;
    long long rows, all;
    const char *m = strstr(errs, "peak RSS ");
    assert_non_null(m);
    assert_int_equal(sscanf(m, "peak RSS %lf MiB = weights %lf MiB resident (of %lf MiB in memory) + "
                               "weights repacked into layouts %lf MiB + KV cache %lf MiB "
                               "written (%lld of %lld rows; %lf MiB reserved) + graph scratch "
                               "%lf MiB + the rest %lf MiB", &peak, &w, &w_all, &laid, &kv, &rows,
                            &all, &kv_res, &scratch, &rest), 10);
    assert_true(rest > 0);
    double sum = w + laid + kv + scratch + rest;
    assert_true(sum > peak - 0.25 && sum < peak + 0.25);
    assert_int_equal(rows, 3); /* the prompt; the one token drawn is never fed */
    assert_true(w <= w_all + 0.05);
    /* a rate once the prompt is long enough to have one */
    a.prompt_ids = "1,2,3,4,5,6,7,8,9";
    a.num_tokens = 3;
    run(&a);
    if (code) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "prompt 9 tokens in "));
    assert_non_null(strstr(errs, "tok/s) | 3 tokens generated"));
    assert_non_null(strstr(errs, "2 more in "));
}

static void a_missing_model_is_named_once(void **st) {
    (void)st;
    gen_args a = args();
    a.open.model = "/nonexistent/m.gguf";
    a.prompt = "x";
    run(&a);
    assert_int_equal(code, 1);
    const char *first = strstr(errs, "ferrum generate: /nonexistent/m.gguf");
    assert_non_null(first);
    const char *second = strstr(first + strlen("ferrum generate: /nonexistent/m.gguf"), "/nonexistent/m.gguf"), *eol = strchr(first, '\n');
    assert_true(!second || (eol && second > eol)); /* once in the message */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_stops_at_a_stop_string_split_across_tokens),
        cmocka_unit_test(the_warm_up_changes_no_output),
        cmocka_unit_test(a_seed_is_drawn_and_said_and_repeats),
        cmocka_unit_test(minus_one_generates_until_the_cache_is_full),
        cmocka_unit_test(penalties_and_min_p_reach_the_sampler),
        cmocka_unit_test(a_failed_write_to_stdout_is_an_error),
        cmocka_unit_test(an_empty_prompt_is_an_error_not_a_random_one),
        cmocka_unit_test(the_summary_adds_up_and_counts_in_words),
        cmocka_unit_test(a_missing_model_is_named_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
