/* tests/test_tokenizer_input.c: what the tokenizer loaders do with bad input: malformed
 * tokenizer.json (bad JSON, bad UTF-8, no model, merges naming unknown tokens, bad ids,
 * unsupported pipeline steps), bad GGUF tokenizer metadata and bad tiktoken files are each
 * refused with FE_E_FORMAT or FE_E_UNSUPPORTED and a message that names the problem, never a
 * crash; and every failed allocation while loading and encoding is FE_E_NOMEM, without leaks
 * (make asan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "lm/tokenizer/bytelevel.h"
#include "lm/format/gguf.h"
#include "lm/tokenizer/tokenizer.h"
#include "support/lm_fixtures.h"
#include "support/tok_fixtures.h"

static const char *BYTELEVEL = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false}";

static void expect_refused(const char *text, fe_status want, const char *needle) {
    fe_tokenizer *t = NULL;
    fe_error err = {0};
    fe_status st = fe_tokenizer_from_json(text, strlen(text), "bad.json", &t, &err);
    if (st != want || !strstr(err.message, needle))
        fail_msg("want %s with \"%s\", got %s: %s\n  input: %.200s", fe_status_str(want), needle,
                 fe_status_str(st), err.message, text);
    assert_null(t);
    assert_non_null(strstr(err.message, "bad.json"));
}

static void malformed_tokenizer_json_is_refused_by_name(void **s) {
    (void)s;
    char *ok = tokfix_tiny_json("[]", ",\"ab\":256", "[\"a b\"]", BYTELEVEL);
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_from_json(ok, strlen(ok), "ok.json", &t, &err)) fail_msg("%s", err.message);
    tokfix_expect_ids(t, "ab", 2, false, (int32_t[]){256}, 1, "tiny json");
    fe_tokenizer_destroy(t);
    free(ok);

    expect_refused("{\"model\": ", FE_E_FORMAT, "not valid JSON");
    expect_refused("{\"model\": {\"vocab\": {\"\xff\": 0}}}", FE_E_FORMAT, "not valid JSON");
    expect_refused("[1, 2]", FE_E_FORMAT, "not a JSON object");
    expect_refused("{\"version\": \"1.0\"}", FE_E_FORMAT, "no \"model\"");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"merges\": []}}", FE_E_FORMAT, "model.vocab");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {}}}", FE_E_FORMAT, "model.merges");
    expect_refused("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", FE_E_UNSUPPORTED,
                   "WordPiece");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}", FE_E_FORMAT,
                   "empty");
    expect_refused("{\"model\": {\"vocab\": {\"a\": \"x\"}, \"merges\": []}}", FE_E_FORMAT,
                   "not an integer");
    expect_refused("{\"model\": {\"vocab\": {\"a\": -3}, \"merges\": []}}", FE_E_FORMAT, "outside");
    expect_refused("{\"model\": {\"vocab\": {\"a\": 99999999999}, \"merges\": []}}", FE_E_FORMAT,
                   "outside");
    expect_refused("{\"model\": {\"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}", FE_E_FORMAT,
                   "given twice");
    expect_refused("{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}", FE_E_UNSUPPORTED,
                   "no pre_tokenizer");
    expect_refused("{\"model\": {\"vocab\": {}, \"merges\": [], \"byte_fallback\": true}}",
                   FE_E_UNSUPPORTED, "byte_fallback");

    struct {
        const char *added, *vocab, *merges, *pre;
        fe_status st;
        const char *needle;
    } bad[] = {
        {"[]", "", "[\"a zz\"]", BYTELEVEL, FE_E_FORMAT, "right token \"zz\" is not in the vocabulary"},
        {"[]", "", "[\"a b\"]", BYTELEVEL, FE_E_FORMAT, "merged token \"ab\""},
        {"[]", "", "[\"ab\"]", BYTELEVEL, FE_E_FORMAT, "model.merges[0]"},
        {"[]", "", "[[\"a\"]]", BYTELEVEL, FE_E_FORMAT, "model.merges[0]"},
        {"[]", "", "[7]", BYTELEVEL, FE_E_FORMAT, "model.merges[0]"},
        {"[]", "", "{}", BYTELEVEL, FE_E_FORMAT, "model.merges"},
        {"[{\"id\": 300}]", "", "[]", BYTELEVEL, FE_E_FORMAT, "added_tokens[0]"},
        {"[{\"id\": \"x\", \"content\": \"<s>\"}]", "", "[]", BYTELEVEL, FE_E_FORMAT,
         "not an integer"},
        {"[{\"id\": 300, \"content\": \"<s>\", \"special\": 1}]", "", "[]", BYTELEVEL, FE_E_FORMAT,
         "not a boolean"},
        {"{}", "", "[]", BYTELEVEL, FE_E_FORMAT, "added_tokens"},
        {"[]", "", "[]", "null", FE_E_UNSUPPORTED, "no pre_tokenizer"},
        {"[]", "", "[]", "{\"type\": \"Whitespace\"}", FE_E_UNSUPPORTED, "Whitespace"},
        {"[]", "", "[]", "{\"type\": \"Digits\", \"individual_digits\": true}", FE_E_UNSUPPORTED,
         "no ByteLevel"},
        {"[]", "", "[]", "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", FE_E_UNSUPPORTED,
         "add_prefix_space"},
        {"[]", "", "[]", "{\"type\": \"Sequence\", \"pretokenizers\": 3}", FE_E_FORMAT,
         "pretokenizers"},
        {"[]", "", "[]",
         "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
         "{\"Regex\": \"(unclosed\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\"}]}",
         FE_E_FORMAT, "does not compile"},
        {"[]", "", "[]",
         "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
         "{\"Regex\": \"a\"}, \"behavior\": \"Removed\"}, {\"type\": \"ByteLevel\"}]}",
         FE_E_UNSUPPORTED, "Removed"},
        {"[]", "", "[]",
         "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": "
         "\"Digits\"}]}",
         FE_E_UNSUPPORTED, "after ByteLevel"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = tokfix_tiny_json(bad[i].added, bad[i].vocab, bad[i].merges, bad[i].pre);
        expect_refused(text, bad[i].st, bad[i].needle);
        free(text);
    }
    /* a normalizer would change the ids: refused, not ignored */
    expect_refused("{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {\"vocab\": {}, \"merges\": []}}",
                   FE_E_UNSUPPORTED, "normalizer");
    assert_int_equal(fe_tokenizer_load_json("/nonexistent/tokenizer.json", &t, &err), FE_E_IO);
    assert_null(t);
}

static void gguf_tokenizer_metadata_is_checked(void **s) {
    (void)s;
    /* a GGUF with metadata only: built by hand, keys and values in GGUF v3 layout */
    struct kv {
        const char *key;
        int kind; /* 0 string, 1 string array, 2 u32 */
        const char *str;
        const char *const *arr;
        size_t n;
        uint32_t u;
    };
    static const char *toks_ok[258];
    static char bytes[256][8];
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        bytes[b][fe_bytelevel_encode(&c, 1, bytes[b])] = 0;
        toks_ok[b] = bytes[b];
    }
    toks_ok[256] = "ab";
    toks_ok[257] = "<|x|>";
    const char *merges_ok[] = {"a b"}, *merges_bad[] = {"a q"}, *merges_nospace[] = {"ab"};
    struct {
        struct kv kvs[5];
        int n;
        fe_status want;
        const char *needle;
    } cases[] = {
        {{{"general.name", 0, "x", NULL, 0, 0}}, 1, FE_E_NOTFOUND, "no tokenizer.ggml.model"},
        {{{"tokenizer.ggml.model", 0, "bert", NULL, 0, 0}}, 1, FE_E_UNSUPPORTED, "\"bert\""},
        /* SentencePiece ("llama") needs its tokens and one score each */
        {{{"tokenizer.ggml.model", 0, "llama", NULL, 0, 0}}, 1, FE_E_FORMAT, "tokenizer.ggml.tokens"},
        {{{"tokenizer.ggml.model", 0, "llama", NULL, 0, 0},
          {"tokenizer.ggml.tokens", 1, NULL, toks_ok, 258, 0}},
         2, FE_E_FORMAT, "tokenizer.ggml.scores"},
        {{{"tokenizer.ggml.model", 0, "gpt2", NULL, 0, 0}}, 1, FE_E_FORMAT, "tokenizer.ggml.tokens"},
        {{{"tokenizer.ggml.model", 0, "gpt2", NULL, 0, 0},
          {"tokenizer.ggml.tokens", 1, NULL, toks_ok, 258, 0},
          {"tokenizer.ggml.merges", 1, NULL, merges_bad, 1, 0}},
         3, FE_E_FORMAT, "merges[0]"},
        {{{"tokenizer.ggml.model", 0, "gpt2", NULL, 0, 0},
          {"tokenizer.ggml.tokens", 1, NULL, toks_ok, 258, 0},
          {"tokenizer.ggml.merges", 1, NULL, merges_nospace, 1, 0}},
         3, FE_E_FORMAT, "split by a space"},
        {{{"tokenizer.ggml.model", 0, "gpt2", NULL, 0, 0},
          {"tokenizer.ggml.tokens", 1, NULL, toks_ok, 258, 0},
          {"tokenizer.ggml.merges", 1, NULL, merges_ok, 1, 0},
          {"tokenizer.ggml.pre", 0, "mystery", NULL, 0, 0}},
         4, FE_E_UNSUPPORTED, "mystery"},
        {{{"tokenizer.ggml.model", 0, "gpt2", NULL, 0, 0},
          {"tokenizer.ggml.tokens", 1, NULL, toks_ok, 258, 0},
          {"tokenizer.ggml.merges", 1, NULL, merges_ok, 1, 0},
          {"tokenizer.ggml.eos_token_id", 2, NULL, NULL, 0, 9999}},
         4, FE_E_FORMAT, "eos_token_id"},
        {{{"tokenizer.ggml.model", 0, "gpt2", NULL, 0, 0},
          {"tokenizer.ggml.tokens", 1, NULL, toks_ok, 258, 0},
          {"tokenizer.ggml.merges", 1, NULL, merges_ok, 1, 0},
          {"tokenizer.ggml.pre", 0, "smollm", NULL, 0, 0},
          {"tokenizer.ggml.eos_token_id", 2, NULL, NULL, 0, 257}},
         5, FE_OK, ""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lmfix_buf b = {0};
        lmfix_put(&b, "GGUF", 4);
        lmfix_u32(&b, 3);
        lmfix_u64(&b, 0);
        lmfix_u64(&b, (uint64_t)cases[c].n);
        for (int i = 0; i < cases[c].n; i++) {
            const struct kv *kv = &cases[c].kvs[i];
            lmfix_u64(&b, strlen(kv->key));
            lmfix_put(&b, kv->key, strlen(kv->key));
            if (kv->kind == 0) {
                lmfix_u32(&b, 8);
                lmfix_u64(&b, strlen(kv->str));
                lmfix_put(&b, kv->str, strlen(kv->str));
            } else if (kv->kind == 1) {
                lmfix_u32(&b, 9);
                lmfix_u32(&b, 8);
                lmfix_u64(&b, kv->n);
                for (size_t j = 0; j < kv->n; j++) {
                    lmfix_u64(&b, strlen(kv->arr[j]));
                    lmfix_put(&b, kv->arr[j], strlen(kv->arr[j]));
                }
            } else {
                lmfix_u32(&b, 4);
                lmfix_u32(&b, kv->u);
            }
        }
        fe_gguf *g = NULL;
        fe_error err = {0};
        if (fe_gguf_open_memory(b.p, b.n, "meta.gguf", &g, &err)) fail_msg("%s", err.message);
        fe_tokenizer *t = NULL;
        fe_status st = fe_tokenizer_from_gguf(g, &t, &err);
        if (st != cases[c].want || !strstr(err.message, cases[c].needle))
            fail_msg("case %zu: want %s (%s), got %s: %s", c, fe_status_str(cases[c].want),
                     cases[c].needle, fe_status_str(st), err.message);
        if (st == FE_OK) {
            /* no token_type: "<|x|>" is a normal token, never matched whole */
            tokfix_expect_ids(t, "ab1", 3, true, (int32_t[]){256, '1'}, 2, "meta.gguf");
            assert_int_equal(fe_tokenizer_eos(t), 257);
        }
        fe_tokenizer_destroy(t);
        fe_gguf_close(g);
        lmfix_free(&b);
    }
}

static void malformed_tiktoken_is_refused_by_name(void **s) {
    (void)s;
    struct {
        const char *text;
        const char *needle;
    } bad[] = {
        {"", "no tokens"},
        {"QQ== 0\nQg== x\n", "line 2"},
        {"QQ== 0\n!!!! 1\n", "line 2"},
        {"QQ 0\n", "line 1"},
        {"QQ== 0\nQg== 0\n", "given twice"},
        {"QQ==\n", "line 1"},
        {"QQ== 99999999999\n", "line 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fe_tokenizer *t = NULL;
        fe_error err = {0};
        fe_status st = fe_tokenizer_from_tiktoken(bad[i].text, strlen(bad[i].text), "x.model", NULL,
                                                  0, NULL, &t, &err);
        if (st != FE_E_FORMAT || !strstr(err.message, bad[i].needle))
            fail_msg("case %zu: got %s: %s", i, fe_status_str(st), err.message);
        assert_null(t);
    }
}

static void failed_allocations_are_clean(void **s) {
    (void)s;
    char *text = tokfix_tiny_json("[{\"id\": 257, \"content\": \"<|x|>\", \"special\": true}]",
                           ",\"ab\":256", "[[\"a\", \"b\"]]",
                           "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", "
                           "\"individual_digits\": true}, {\"type\": \"ByteLevel\"}]}");
    const char *input = "ab 12 <|x|> hello \xf0\x9f\xa6\x80 world, ab ab";
    bool done = false;
    for (long n = 1; !done && n < 100000; n++) {
        fe_tokenizer *t = NULL;
        fe_error err;
        fe_alloc_fail_at(n);
        fe_status st = fe_tokenizer_from_json(text, strlen(text), "tiny.json", &t, &err);
        int32_t *ids = NULL;
        size_t k = 0;
        if (st == FE_OK)
            st = fe_tokenizer_encode_alloc(t, input, strlen(input), false, true, &ids, &k, &err);
        long made = fe_alloc_fail_at(0);
        if (st == FE_OK) {
            if (made < n) done = true; /* nothing failed: every allocation was tried */
            fe_free(ids);
        } else {
            if (st != FE_E_NOMEM) fail_msg("allocation %ld failed: got %s: %s", n, fe_status_str(st),
                                           err.message);
            assert_null(ids);
        }
        fe_tokenizer_destroy(t);
    }
    assert_true(done);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(malformed_tokenizer_json_is_refused_by_name),
        cmocka_unit_test(gguf_tokenizer_metadata_is_checked),
        cmocka_unit_test(malformed_tiktoken_is_refused_by_name),
        cmocka_unit_test(failed_allocations_are_clean),
    };
    return cmocka_run_group_tests_name("tokenizer_input", tests, NULL, NULL);
}
