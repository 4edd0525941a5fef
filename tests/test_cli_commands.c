/* tests/test_cli_commands.c: `ferrum info`, `ferrum tokenize` and `ferrum chat`, driven
 * in-process (chat's lines through the CLI's input stream): info reads no weight byte and
 * says what the model is (GGUF, safetensors folder, preset), as text or valid JSON; tokenize
 * round-trips through --detokenize and shows the bytes of cut characters; chat keeps the
 * conversation in the KV cache (the second turn carries the first and reuses its rows),
 * answers greedily as `generate --chat` does, forgets on /reset, ends at /exit or the end of
 * input, says /reset when a turn passes the cache, and refuses a model without a chat
 * template it knows. The real SmolLM2 checkpoint where a test needs a real tokenizer; a tiny
 * random safetensors folder elsewhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "../apps/ferrum/cli.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/cli_run.h"
#include "support/lm_fixtures.h"
#include "support/tiny_llama.h"

typedef struct {
    int code;
    char out[1 << 17], err[1 << 14];
} cli_result;

static cli_result res;

#define RUN(...) CLI_RUN_INTO(res.code, res.out, res.err, __VA_ARGS__)
#define RUN_IN(input, ...) CLI_RUN_IN_INTO(res.code, res.out, res.err, input, __VA_ARGS__)

/* A tiny random safetensors folder whose name needs escaping in JSON; `chatml`: its byte
 * tokenizer has <|im_start|> and <|im_end|>, so ferrum chooses ChatML. */
static char tiny[96], tiny_chatml[96];

static bool make_tiny(char *dir, size_t n, const char *tmpl, bool chatml) {
    snprintf(dir, n, "%s", tmpl);
    if (!mkdtemp(dir)) return false;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 4, &w, &err) != FE_OK) return false;
    bool ok = fe_llama_weights_write_safetensors(&w, dir, &err) == FE_OK &&
              lmfix_byte_tokenizer(dir, chatml, chatml ? 62 : 64); /* 320 tokens: the vocabulary */
    fe_llama_weights_free(&w);
    return ok;
}

static int setup(void **state) {
    (void)state;
    return make_tiny(tiny, sizeof tiny, "/tmp/ferrum \"tiny\"\\-XXXXXX", false) &&
                   make_tiny(tiny_chatml, sizeof tiny_chatml, "/tmp/ferrum-chatml-XXXXXX", true)
               ? 0 : 1;
}

static int teardown(void **state) {
    (void)state;
    lmfix_rmtree(tiny);
    lmfix_rmtree(tiny_chatml);
    return 0;
}

static json_t *json_of_out(void) {
    json_error_t e;
    json_t *j = json_loads(res.out, JSON_ALLOW_NUL, &e);
    if (!j) fail_msg("not JSON (%s): %s", e.text, res.out);
    return j;
}

static void expect(int code, const char *needle) {
    if (res.code != code) fail_msg("exit %d, not %d; stderr: %s", res.code, code, res.err);
    if (needle && !strstr(res.out, needle) && !strstr(res.err, needle))
        fail_msg("expected \"%s\" in: %s%s", needle, res.out, res.err);
}

/* ---- info ---- */

static void info_reads_no_weight_bytes(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    RUN("info", model, "--json");
    expect(0, NULL);
    json_t *j = json_of_out();
    assert_int_equal(json_integer_value(json_object_get(j, "weights_read_bytes")), 0);
    assert_true(json_integer_value(json_object_get(j, "weight_bytes")) > 90 << 20);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "GGUF");
    assert_string_equal(json_string_value(json_object_get(j, "matrix_dtype")), "q4_1");
    assert_int_equal(json_integer_value(json_object_get(j, "n_layers")), 30);
    assert_int_equal(json_integer_value(json_object_get(j, "hidden")), 576);
    assert_int_equal(json_integer_value(json_object_get(j, "n_kv_heads")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "vocab")), 49152);
    assert_string_equal(json_string_value(json_object_get(j, "chat_format")), "ChatML");
    json_t *eos = json_object_get(j, "eos");
    assert_string_equal(json_string_value(json_object_get(eos, "text")), "<|im_end|>");
    json_decref(j);
    RUN("info", "-m", model);
    expect(0, "0 bytes read");
    const char *lines[] = {"architecture    llama", "context         8192", "heads           9",
                           "head dim        64", "rope theta      100000", "bos             1 "
                           "\"<|im_start|>\"", "tokenizer       byte-level BPE, from ",
                           "chat template   ChatML, from "};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(res.out, lines[i])) fail_msg("`ferrum info` lacks \"%s\":\n%s", lines[i], res.out);
}

static void info_of_a_preset_draws_no_weights(void **s) {
    (void)s;
    RUN("info", "llama-3.2-1b", "--random-weights", "1", "--json");
    expect(0, NULL);
    json_t *j = json_of_out();
    assert_string_equal(json_string_value(json_object_get(j, "format")), "random");
    assert_int_equal(json_integer_value(json_object_get(j, "weights_read_bytes")), 0);
    assert_true(json_integer_value(json_object_get(j, "weight_bytes")) > 2000000000LL);
    assert_true(json_is_null(json_object_get(j, "tokenizer")));
    json_decref(j);
    RUN("info", "llama-3.2-1b", "--random-weights=1");
    expect(0, "none drawn");
    expect(0, "give --tokenizer tokenizer.json");
}

static void info_json_escapes_its_strings(void **s) {
    (void)s;
    RUN("info", tiny, "--json"); /* the folder's name has a quote and a backslash */
    expect(0, NULL);
    json_t *j = json_of_out();
    assert_string_equal(json_string_value(json_object_get(j, "path")), tiny);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "safetensors");
    assert_string_equal(json_string_value(json_object_get(j, "chat_format")), "none");
    assert_non_null(strstr(json_string_value(json_object_get(j, "tokenizer_source")), "tokenizer.json"));
    json_decref(j);
}

static void info_refuses_what_it_cannot_open(void **s) {
    (void)s;
    RUN("info");
    expect(2, "give a MODEL");
    RUN("info", "/nonexistent/m.gguf");
    expect(1, "/nonexistent/m.gguf");
    RUN("info", "a.gguf", "b.gguf");
    expect(2, "a second MODEL");
    RUN("info", "m.gguf", "--threads", "2");
    expect(2, "unknown option \"--threads\"");
}

/* ---- tokenize ---- */

static void tokenize_round_trips_through_detokenize(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    const char *text = "Hello world, 你好!\n\ttabs and <|im_end|> too";
    RUN("tokenize", model, "--ids-only", text);
    expect(0, NULL);
    char *ids = strdup(res.out);
    ids[strcspn(ids, "\n")] = '\0';
    assert_non_null(strstr(ids, ",2,")); /* <|im_end|> is its special token */
    RUN("tokenize", model, "--detokenize", ids);
    expect(0, NULL);
    char want[256];
    snprintf(want, sizeof want, "%s\n", text);
    assert_string_equal(res.out, want);
    RUN("tokenize", model, "--detokenize", ids, "--json");
    expect(0, NULL);
    json_t *j = json_of_out();
    assert_string_equal(json_string_value(json_object_get(j, "text")), text);
    json_decref(j);
    free(ids);
}

static void tokenize_shows_the_bytes_of_cut_characters(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    RUN("tokenize", model, "Hello 你");
    expect(0, " 19556  \"Hello\"\n");
    assert_non_null(strstr(res.out, "\"\\xe4")); /* 你 is cut between tokens */
    RUN("tokenize", model, "--json", "a\x01你");
    expect(0, NULL);
    json_t *j = json_of_out();
    json_t *toks = json_object_get(j, "tokens");
    assert_true(json_array_size(toks) >= 3);
    bool saw_bytes = false;
    for (size_t i = 0; i < json_array_size(toks); i++)
        saw_bytes |= json_object_get(json_array_get(toks, i), "bytes") != NULL;
    assert_true(saw_bytes);
    assert_int_equal(json_array_size(json_object_get(j, "ids")), json_array_size(toks));
    json_decref(j);
}

static void tokenize_no_special_reads_markers_as_text(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    RUN("tokenize", model, "--ids-only", "<|im_end|>");
    expect(0, NULL);
    assert_string_equal(res.out, "2\n");
    RUN("tokenize", model, "--ids-only", "--no-special", "--no-bos", "--prompt", "<|im_end|>");
    expect(0, NULL);
    assert_true(strchr(res.out, ',') != NULL); /* several tokens, none of them 2 */
    assert_null(strstr(res.out, ",2,"));
    /* -f - reads the input stream */
    RUN("tokenize", model, "--ids-only", "hi there\n");
    char *direct = strdup(res.out);
    RUN_IN("hi there\n", "tokenize", "-m", model, "-f", "-", "--ids-only");
    expect(0, NULL);
    assert_string_equal(res.out, direct);
    free(direct);
}

static void tokenize_without_a_tokenizer_names_the_fix(void **s) {
    (void)s;
    RUN("tokenize", "smollm2-135m", "--random-weights", "1", "hello");
    expect(1, "has no tokenizer; give --tokenizer tokenizer.json");
    RUN("tokenize", tiny, "--detokenize", "1,x");
    expect(2, "\"x\" is not an id");
    RUN("tokenize", tiny, "--detokenize", "1,100000");
    expect(2, "id 100000 is outside the vocabulary");
    RUN("tokenize", tiny);
    expect(2, "give the TEXT");
    RUN("tokenize", tiny, "a", "--prompt", "b");
    expect(2, "give one of TEXT, --prompt, -f/--file");
    RUN("tokenize", tiny, "a", "--detokenize", "1");
    expect(2, "--detokenize takes ids");
    RUN("tokenize", tiny, "a", "--json", "--ids-only");
    expect(2, "give one of --ids-only, --json");
    RUN("tokenize", tiny, "ab");
    expect(0, "\"a\"");
}

/* ---- chat ---- */

/* The "[N tokens, R tok/s; prompt P tokens, U reused from the cache, ..." lines on stderr,
 * in order: each turn's prompt tokens, reused rows and tokens generated. */
typedef struct turn { long prompt, reused, generated; } turn;

static int turns_of(const char *err, turn *t, int cap) {
    int n = 0;
    for (const char *p = err; n < cap && (p = strchr(p, '[')); p++) {
        turn x;
        if (sscanf(p, "[%ld token%*[s,] %*f tok/s; prompt %ld tokens, %ld reused", &x.generated,
                   &x.prompt, &x.reused) == 3)
            t[n++] = x;
    }
    return n;
}

static void chat_second_turn_reuses_the_cache(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    RUN_IN("My name is Ada. Please remember my name.\nWhat is my name?\n", "chat", model,
           "--verbose", "-n", "48");
    expect(0, NULL);
    turn t[4];
    if (turns_of(res.err, t, 4) != 2) fail_msg("two turns expected: %s", res.err);
    /* the second turn's prompt carries the first: its prompt and its answer, and more */
    assert_true(t[1].prompt > t[0].prompt + t[0].generated);
    assert_int_equal(t[0].reused, 0);
    if (t[1].reused <= 0) fail_msg("the second turn reused no cache row: %s", res.err);
    assert_true(t[1].reused <= t[0].prompt + t[0].generated);
    /* two answers, each on its own line, and no "> " prompt on a pipe */
    assert_null(strstr(res.out, "> "));
    int lines = 0;
    for (const char *p = res.out; (p = strchr(p, '\n')); p++) lines++;
    assert_true(lines >= 2);
}

static void chat_answers_greedily_as_generate_chat_does(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    RUN("generate", model, "--chat", "-p", "Write a haiku about the sea.", "-n", "32");
    expect(0, NULL);
    char *gen = strdup(res.out);
    RUN_IN("Write a haiku about the sea.\n", "chat", model, "-n", "32");
    expect(0, NULL);
    assert_string_equal(res.out, gen);
    /* with a system prompt too */
    RUN("generate", model, "--chat", "--system", "You are terse.", "-p", "Name a colour.", "-n", "16");
    expect(0, NULL);
    free(gen);
    gen = strdup(res.out);
    RUN_IN("Name a colour.\n", "chat", model, "--system=You are terse.", "-n", "16");
    expect(0, NULL);
    assert_string_equal(res.out, gen);
    free(gen);
}

static void chat_reset_forgets_the_conversation(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    RUN_IN("Name a fruit.\n/reset\nName a fruit.\n/help\n", "chat", model, "--verbose", "-n", "12");
    expect(0, "a new conversation");
    turn t[4];
    assert_int_equal(turns_of(res.err, t, 4), 2);
    assert_int_equal(t[1].prompt, t[0].prompt); /* the same first turn again */
    /* the same answer twice, then /help's list */
    const char *nl = strchr(res.out, '\n');
    assert_non_null(nl);
    size_t first = (size_t)(nl - res.out) + 1;
    assert_memory_equal(res.out, res.out + first, first);
    assert_non_null(strstr(res.out + 2 * first, "/reset"));
}

static void chat_ends_at_exit_or_the_end_of_input(void **s) {
    (void)s;
    RUN_IN("", "chat", tiny_chatml, "-t", "1");
    expect(0, NULL);
    assert_string_equal(res.out, "");
    RUN_IN("/quit\nhello\n", "chat", tiny_chatml, "-t", "1");
    expect(0, NULL);
    assert_string_equal(res.out, "");
    RUN_IN("/frobnicate\n\n/exit\nhello\n", "chat", tiny_chatml, "-t", "1");
    expect(0, "no command /frobnicate; /help lists them");
    assert_string_equal(res.out, "");
    RUN_IN("hello\n", "chat", tiny_chatml, "-t", "1", "-n", "3"); /* no stop token: -n ends it */
    expect(0, "[3 tokens");
}

/* chat takes generate's tuning options and says which profile it compiles with */
static void chat_names_its_tuning_profile_and_refuses_an_unreadable_one(void **s) {
    (void)s;
    RUN_IN("", "chat", tiny_chatml, "-t", "1", "--no-tuning");
    expect(0, "ferrum: tuning: none (--no-tuning)");
    RUN_IN("", "chat", tiny_chatml, "-t", "1", "--tuning", "/nonexistent/p.json");
    expect(2, "tuning profile /nonexistent/p.json");
    expect(2, "--no-tuning");
    RUN_IN("", "chat", tiny_chatml, "--tuning", "p.json", "--no-tuning");
    expect(2, "disagree");
}

static void chat_past_the_cache_says_reset(void **s) {
    (void)s;
    /* the tiny model's byte tokenizer: a byte a token, so 80 letters pass 64 rows */
    const char *line = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
                       "hi\n";
    RUN_IN(line, "chat", tiny_chatml, "-t", "1", "-c", "64", "-n", "4");
    expect(0, "the cache holds 64; /reset to start a new one");
    /* the refused line left the conversation as it was: "hi" was answered */
    assert_non_null(strstr(res.err, "[4 tokens"));
    /* an answer that fills the cache is cut, and says so */
    RUN_IN("hi\n", "chat", tiny_chatml, "-t", "1", "-c", "40");
    expect(0, "the cache is full (40 rows), so the answer was cut; /reset");
}

static void chat_refuses_a_model_without_a_known_template(void **s) {
    (void)s;
    RUN_IN("hello\n", "chat", tiny, "-t", "1");
    expect(1, "`ferrum generate`, which takes the prompt as it is");
    RUN_IN("hello\n", "chat", "smollm2-135m", "--random-weights", "1");
    expect(2, "random weights come without a tokenizer; give --tokenizer");
    RUN("chat", tiny, "--top-p", "2");
    expect(2, "--top-p \"2\" is not valid; give a number in (0, 1]");
    RUN("chat", tiny, "-n", "-2");
    expect(2, "-n (--num-tokens) \"-2\" is not valid; give an integer in -1..1048576");
}

/* ---- all three ---- */

static void every_command_has_help_and_a_failed_write_is_an_error(void **s) {
    (void)s;
    RUN("--help");
    expect(0, "chat ");
    expect(0, "info ");
    expect(0, "tokenize ");
    const char *want[][6] = {
        {"chat", "-c, --max-seq-len N", "-n, --num-tokens N", "--temperature T", "-s, --seed S",
         "--system TEXT"},
        {"info", "-m, --model MODEL", "--json", "--random-weights SEED", "--tokenizer FILE",
         "usage: ferrum info"},
        {"tokenize", "--ids-only", "--no-bos", "--no-special", "--detokenize 1,2,3",
         "-f, --file FILE"},
    };
    for (int c = 0; c < 3; c++) {
        RUN(want[c][0], "--help");
        expect(0, NULL);
        for (int i = 1; i < 6; i++)
            if (!strstr(res.out, want[c][i])) fail_msg("`%s --help` lacks \"%s\"", want[c][0], want[c][i]);
    }
    FILE *full = fopen("/dev/full", "w"), *e = tmpfile();
    assert_non_null(full), assert_non_null(e);
    fe_cli_io io = {full, e, NULL};
    char *info[] = {"ferrum", "info", tiny, NULL};
    assert_int_equal(fe_cli_main(3, info, &io), 1);
    char *tok[] = {"ferrum", "tokenize", tiny, "hello", NULL};
    assert_int_equal(fe_cli_main(4, tok, &io), 1);
    char *help[] = {"ferrum", "chat", "--help", NULL};
    assert_int_equal(fe_cli_main(3, help, &io), 1);
    fclose(full);
    char err[4096];
    rewind(e);
    err[fread(err, 1, sizeof err - 1, e)] = '\0';
    fclose(e);
    assert_non_null(strstr(err, "ferrum info: writing the output"));
    assert_non_null(strstr(err, "ferrum tokenize: writing the output"));
    assert_non_null(strstr(err, "ferrum chat: writing the output"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(info_reads_no_weight_bytes),
        cmocka_unit_test(info_of_a_preset_draws_no_weights),
        cmocka_unit_test(info_json_escapes_its_strings),
        cmocka_unit_test(info_refuses_what_it_cannot_open),
        cmocka_unit_test(tokenize_round_trips_through_detokenize),
        cmocka_unit_test(tokenize_shows_the_bytes_of_cut_characters),
        cmocka_unit_test(tokenize_no_special_reads_markers_as_text),
        cmocka_unit_test(tokenize_without_a_tokenizer_names_the_fix),
        cmocka_unit_test(chat_second_turn_reuses_the_cache),
        cmocka_unit_test(chat_answers_greedily_as_generate_chat_does),
        cmocka_unit_test(chat_reset_forgets_the_conversation),
        cmocka_unit_test(chat_ends_at_exit_or_the_end_of_input),
        cmocka_unit_test(chat_names_its_tuning_profile_and_refuses_an_unreadable_one),
        cmocka_unit_test(chat_past_the_cache_says_reset),
        cmocka_unit_test(chat_refuses_a_model_without_a_known_template),
        cmocka_unit_test(every_command_has_help_and_a_failed_write_is_an_error),
    };
    return cmocka_run_group_tests_name("cli_commands", tests, setup, teardown);
}
