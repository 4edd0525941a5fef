/* tests/test_cli_embed.c: `ferrum embed` driven in-process on the real all-MiniLM-L6-v2
 * (scripts/fetch-model): --text and --file (a file, and - for the input stream) give one unit
 * vector per text, in order, equal to sentence-transformers' (the fixture); --dim cuts and
 * renormalises; --format npy writes a valid .npy; a small --batch streams the same vectors;
 * --prompt-name puts the model's prompt first (and its default prompt applies unasked);
 * --help names every option; bad input is refused with the rule and the fix (no texts, both
 * sources, a --dim past the model, a prompt the model lacks, text that is not UTF-8, a folder
 * that is not an encoder; a causal command given the encoder says to use embed). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "support/cli_run.h"
#include "support/lm_fixtures.h"
#include "support/tok_fixtures.h"

typedef struct {
    int code;
    char out[1 << 20], err[1 << 14];
} cli_result;

static cli_result res;

#define RUN(...) CLI_RUN_INTO(res.code, res.out, res.err, __VA_ARGS__)
#define RUN_IN(input, ...) CLI_RUN_IN_INTO(res.code, res.out, res.err, input, __VA_ARGS__)

/* the embeddings of the last JSON output (a new reference), checked for shape */
static json_t *embeddings(size_t rows, size_t dim) {
    if (res.code != 0) fail_msg("exit %d: %s", res.code, res.err);
    json_error_t je;
    json_t *doc = json_loads(res.out, 0, &je);
    if (!doc) fail_msg("not JSON (%s): %.200s", je.text, res.out);
    json_t *e = json_incref(json_object_get(doc, "embeddings"));
    json_decref(doc);
    assert_int_equal(json_array_size(e), rows);
    for (size_t r = 0; r < rows; r++) assert_int_equal(json_array_size(json_array_get(e, r)), dim);
    return e;
}

static double dot(json_t *a, json_t *b) {
    double s = 0;
    for (size_t i = 0; i < json_array_size(a); i++)
        s += json_number_value(json_array_get(a, i)) * json_number_value(json_array_get(b, i));
    return s;
}

static double cosine(json_t *a, json_t *b) { return dot(a, b) / sqrt(dot(a, a) * dot(b, b)); }

/* the fixture's sentence-transformers embedding of item i */
static json_t *reference(size_t i, json_t **keep) {
    json_error_t je;
    *keep = json_load_file(tokfix_path("minilm_embeddings.json"), 0, &je);
    if (!*keep) fail_msg("minilm_embeddings.json: %s", je.text);
    return json_object_get(json_array_get(json_object_get(*keep, "items"), i), "embedding");
}

static void texts_give_the_sentence_transformers_vectors(void **state) {
    (void)state;
    const char *m = lmfix_need_minilm();
    if (!m) return;
    json_t *keep, *want0 = reference(0, &keep);
    const char *t0 = json_string_value(json_object_get(json_array_get(json_object_get(keep, "items"), 0), "text"));
    RUN("embed", m, "--text", t0, "--text", "Café crème", "--text", "");
    json_t *e = embeddings(3, 384);
    assert_true(dot(json_array_get(e, 0), want0) >= 0.9999); /* both unit vectors */
    for (size_t r = 0; r < 3; r++) assert_true(fabs(dot(json_array_get(e, r), json_array_get(e, r)) - 1) < 1e-5);
    assert_non_null(strstr(res.err, "3 texts"));
    assert_non_null(strstr(res.err, "texts/s"));
    json_decref(e);
    json_decref(keep);
}

static void dim_cuts_then_normalises(void **state) {
    (void)state;
    const char *m = lmfix_need_minilm();
    if (!m) return;
    RUN("embed", m, "--text", "A man is eating food.", "--no-normalize", "-q");
    json_t *full = embeddings(1, 384);
    RUN("embed", m, "--text", "A man is eating food.", "--dim", "64");
    json_t *cut = embeddings(1, 64);
    json_t *a = json_array_get(full, 0), *b = json_array_get(cut, 0);
    double n = 0;
    for (size_t i = 0; i < 64; i++) n += pow(json_number_value(json_array_get(a, i)), 2);
    for (size_t i = 0; i < 64; i++)
        assert_true(fabs(json_number_value(json_array_get(a, i)) / sqrt(n) - json_number_value(json_array_get(b, i))) < 1e-6);
    json_decref(full);
    json_decref(cut);
}

static void a_file_streams_in_batches_and_npy_is_valid(void **state) {
    (void)state;
    const char *m = lmfix_need_minilm();
    if (!m) return;
    char dir[64], path[128];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    const char lines[] = "first line\nsecond, with accents: élève\n\n中文 text\nlast line without newline";
    assert_true(lmfix_write(dir, "texts.txt", lines, sizeof lines - 1));
    snprintf(path, sizeof path, "%s/texts.txt", dir);
    RUN("embed", m, "--file", path, "--batch", "2");
    json_t *small = embeddings(5, 384);
    RUN_IN(lines, "embed", m, "-f", "-");
    json_t *big = embeddings(5, 384);
    for (size_t r = 0; r < 5; r++) assert_true(dot(json_array_get(small, r), json_array_get(big, r)) > 0.99999);
    assert_true(dot(json_array_get(big, 0), json_array_get(big, 3)) < 0.9); /* different texts */
    RUN("embed", m, "--file", path, "--format", "npy", "--dim", "8");
    assert_int_equal(res.code, 0);
    assert_memory_equal(res.out, "\x93NUMPY\x01\x00", 8);
    size_t hl = (unsigned char)res.out[8] | (size_t)(unsigned char)res.out[9] << 8;
    assert_int_equal((10 + hl) % 64, 0);
    assert_non_null(strstr(res.out + 10, "'shape': (5, 8)"));
    float first[8];
    memcpy(first, res.out + 10 + hl, sizeof first);
    for (int i = 0; i < 8; i++) assert_true(fabsf(first[i]) <= 1.0f);
    RUN_IN(lines, "embed", m, "-f", "-", "--format", "npy", "-q");
    assert_non_null(strstr(res.out + 10, "'shape': (5, 384)"));
    lmfix_rmtree(dir);
    json_decref(small);
    json_decref(big);
}

/* a copy of the model folder (weights linked) whose config_sentence_transformers.json names
 * prompts: --prompt-name query embeds "query: " + text, the default prompt applies unasked */
static void a_prompt_name_puts_the_prompt_first(void **state) {
    (void)state;
    const char *m = lmfix_need_minilm();
    if (!m) return;
    char dir[64], from[1200], to[1200];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    const char *files[] = {"config.json", "model.safetensors", "tokenizer.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(from, sizeof from, "%s/%s", m, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    const char *cfg = "{\"prompts\": {\"query\": \"query: \", \"document\": \"passage: \"}, "
                      "\"default_prompt_name\": \"document\"}";
    assert_true(lmfix_write(dir, "config_sentence_transformers.json", cfg, strlen(cfg)));
    RUN("embed", dir, "--text", "how do magnets work", "--prompt-name", "query", "-q");
    json_t *a = embeddings(1, 384);
    RUN("embed", dir, "--text", "query: how do magnets work", "--prompt-name", "", "-q");
    json_t *b = embeddings(1, 384);
    RUN("embed", dir, "--text", "how do magnets work", "-q");
    json_t *c = embeddings(1, 384);
    RUN("embed", dir, "--text", "passage: how do magnets work", "--prompt-name", "", "-q");
    json_t *d = embeddings(1, 384);
    /* no modules.json here: no Normalize module, so the vectors are not unit */
    assert_true(cosine(json_array_get(a, 0), json_array_get(b, 0)) > 0.999999);
    assert_true(cosine(json_array_get(c, 0), json_array_get(d, 0)) > 0.999999);
    assert_true(cosine(json_array_get(a, 0), json_array_get(c, 0)) < 0.99);
    assert_true(fabs(dot(json_array_get(a, 0), json_array_get(a, 0)) - 1) > 0.1);
    RUN("embed", dir, "--text", "x", "--prompt-name", "passage");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "its prompts are"));
    for (int i = 0; i < 3; i++) {
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        unlink(to);
    }
    lmfix_rmtree(dir);
    json_decref(a), json_decref(b), json_decref(c), json_decref(d);
}

static void help_names_every_option(void **state) {
    (void)state;
    RUN("embed", "--help");
    assert_int_equal(res.code, 0);
    const char *opts[] = {"--text", "--file", "--pooling", "--dim", "--prompt-name", "--format",
                          "--batch", "--max-tokens", "--threads", "--no-normalize"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) assert_non_null(strstr(res.out, opts[i]));
    RUN("--help");
    assert_non_null(strstr(res.out, "embed"));
}

static void bad_input_is_refused_with_the_fix(void **state) {
    (void)state;
    RUN("embed", "/nonexistent");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "--text"));
    RUN("embed", "/nonexistent", "--text", "a", "--file", "x");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "not both"));
    RUN("embed", "/nonexistent", "--text", "a", "--pooling", "max");
    assert_int_equal(res.code, 2);
    RUN("embed", "/tmp", "--text", "a");
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "config.json"));
    const char *m = lmfix_need_minilm();
    if (!m) return;
    RUN("embed", m, "--text", "a", "--dim", "385");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "1..384"));
    RUN("embed", m, "--text", "a", "--prompt-name", "query");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "no prompt named \"query\""));
    RUN("embed", m, "--text", "ok", "--text", "bad \xff byte");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "text 1"));
    assert_non_null(strstr(res.err, "UTF-8"));
    RUN("info", m); /* the causal commands point to embed */
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "ferrum embed"));
    RUN("embed", m, "--file", "/nonexistent/texts");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "cannot open"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(texts_give_the_sentence_transformers_vectors),
        cmocka_unit_test(dim_cuts_then_normalises),
        cmocka_unit_test(a_file_streams_in_batches_and_npy_is_valid),
        cmocka_unit_test(a_prompt_name_puts_the_prompt_first),
        cmocka_unit_test(help_names_every_option),
        cmocka_unit_test(bad_input_is_refused_with_the_fix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
