/* tests/test_unigram_gguf.c: SentencePiece Unigram loaded from GGUF (tokenizer.ggml.model
 * "t5") against the `sentencepiece` package itself: a small model trained with byte fallback
 * and the nmt_nfkc rule (scripts/make-unigram-fixture.py, tests/fixtures/unigram_tiny.*) gives
 * sentencepiece's ids for every fixture text (NFKC folding, whitespace squeezing, byte
 * fallback, empty and all-space texts), and its normaliser gives sentencepiece's normalised
 * text. The same model as tokenizer.json (Unigram, as the `tokenizers` package writes it)
 * gives `tokenizers`' ids, which differ from sentencepiece's on trailing spaces. Malformed
 * charsmaps, metadata and tokenizer.json steps are refused with messages naming the rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/alloc.h"
#include "lm/tokenizer/spm_normalize.h"
#include "lm/tokenizer/tokenizer_internal.h"
#include "support/tok_fixtures.h"

static json_t *reference(void) {
    json_error_t je;
    json_t *ref = json_load_file(tokfix_path("unigram_tiny.json"), 0, &je);
    if (!ref) fail_msg("unigram_tiny.json: %s (scripts/make-unigram-fixture.py makes it)", je.text);
    return ref;
}

/* each fixture text encodes to its `key` ids; returns how many of those are byte tokens */
static size_t expect_fixture(const fe_tokenizer *t, json_t *ref, const char *key) {
    json_t *texts = json_object_get(ref, "texts");
    assert_true(json_array_size(texts) >= 12);
    size_t i, fallback = 0;
    json_t *c;
    json_array_foreach(texts, i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        json_t *ids = json_object_get(c, key);
        int32_t want[256];
        size_t n = json_array_size(ids);
        assert_true(n < 256);
        for (size_t k = 0; k < n; k++) {
            want[k] = (int32_t)json_integer_value(json_array_get(ids, k));
            fallback += t->type[want[k]] == FE_TOKEN_BYTE;
        }
        tokfix_expect_ids(t, text, strlen(text), false, want, n, text);
    }
    return fallback;
}

static void tokenizer_json_ids_are_hugging_faces(void **st) {
    (void)st;
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_load_json(tokfix_path("unigram_tiny_tokenizer.json"), &t, &err) != FE_OK)
        fail_msg("%s", err.message);
    json_t *ref = reference();
    assert_true(expect_fixture(t, ref, "hf_ids") >= 10);
    size_t i, differ = 0;
    json_t *c;
    json_array_foreach(json_object_get(ref, "texts"), i, c)
        differ += !json_equal(json_object_get(c, "ids"), json_object_get(c, "hf_ids"));
    assert_true(differ >= 1); /* the two pipelines do differ, and each is matched */
    json_decref(ref);
    fe_tokenizer_destroy(t);
}

/* the fixture's tokenizer.json with its text `from` replaced by `to` */
static fe_status json_patched(const char *from, const char *to, char *msg, size_t msg_n) {
    size_t n;
    char *text = tokfix_read_file(tokfix_path("unigram_tiny_tokenizer.json"), &n);
    char *at = strstr(text, from);
    assert_non_null(at);
    size_t fl = strlen(from), tl = strlen(to);
    char *out = malloc(n - fl + tl + 1);
    memcpy(out, text, (size_t)(at - text));
    memcpy(out + (at - text), to, tl);
    memcpy(out + (at - text) + tl, at + fl, n - (size_t)(at - text) - fl + 1);
    fe_tokenizer *t = NULL;
    fe_error err = {0};
    fe_status s = fe_tokenizer_from_json(out, strlen(out), "patched.json", &t, &err);
    snprintf(msg, msg_n, "%s", err.message);
    fe_tokenizer_destroy(t);
    free(out);
    free(text);
    return s;
}

static void tokenizer_json_steps_ferrum_does_not_apply_are_refused(void **st) {
    (void)st;
    char msg[512];
    assert_int_equal(json_patched("\"prepend_scheme\": \"always\"", "\"prepend_scheme\": \"first\"",
                                  msg, sizeof msg), FE_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "prepend_scheme \"first\""));
    assert_int_equal(json_patched("\"type\": \"Precompiled\"", "\"type\": \"NFKD\"", msg, sizeof msg),
                     FE_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "normalizer \"NFKD\""));
    assert_int_equal(json_patched("\"precompiled_charsmap\": \"", "\"precompiled_charsmap\": \"!", msg,
                                  sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "base64"));
    assert_int_equal(json_patched("\"unk_id\": 0", "\"unk_id\": 4000", msg, sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "unk_id"));
    assert_int_equal(json_patched("\"<unk>\",\n        0.0", "\"<unk>\"", msg, sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "model.vocab[0] is not a [piece, score] pair"));
}

static void ids_are_sentencepieces(void **st) {
    (void)st;
    fe_tokenizer *t = tokfix_from_gguf(tokfix_path("unigram_tiny.gguf"), NULL);
    json_t *ref = reference();
    assert_true(expect_fixture(t, ref, "ids") >= 10); /* the fixture does exercise byte fallback */
    json_decref(ref);
    fe_tokenizer_destroy(t);
}

static void the_normaliser_gives_sentencepieces_text(void **st) {
    (void)st;
    fe_tokenizer *t = tokfix_from_gguf(tokfix_path("unigram_tiny.gguf"), NULL);
    assert_true(t->sp_normalize && t->spm_norm.units != NULL);
    json_t *ref = reference();
    size_t i, changed = 0;
    json_t *c;
    json_array_foreach(json_object_get(ref, "texts"), i, c) {
        const char *text = json_string_value(json_object_get(c, "text"));
        const char *want = json_string_value(json_object_get(c, "normalized"));
        char *out = NULL;
        size_t n = 0;
        fe_error err;
        assert_int_equal(fe_spm_normalize(&t->spm_norm, text, strlen(text), &out, &n, &err), FE_OK);
        /* sentencepiece's form: "▁" for each space and, when anything is left, one first */
        char got[1024];
        size_t k = 0;
        for (size_t j = 0; j <= n && n > 0; j++) {
            assert_true(k + 3 < sizeof got);
            if (j == 0 || (j < n && out[j] == ' ')) memcpy(got + k, "\xe2\x96\x81", 3), k += 3;
            if (j < n && out[j] != ' ') got[k++] = out[j];
        }
        got[k] = 0;
        if (strcmp(got, want) != 0) fail_msg("\"%s\": normalised to \"%s\", sentencepiece \"%s\"", text, got, want);
        changed += strlen(want) != strlen(text) + 3 * (strlen(text) > 0);
        fe_free(out);
    }
    assert_true(changed >= 5); /* NFKC and the whitespace rules did change texts */
    json_decref(ref);
    fe_tokenizer_destroy(t);
}

/* A charsmap blob: u32 trie size, the trie units, then strings. */
static fe_status init_blob(const unsigned char *b, size_t n, char *msg, size_t msg_n) {
    fe_spm_normalizer nz;
    fe_error err = {0};
    fe_status s = fe_spm_normalizer_init(&nz, b, n, true, "charsmap", &err);
    snprintf(msg, msg_n, "%s", err.message);
    fe_spm_normalizer_deinit(&nz);
    return s;
}

static void malformed_charsmaps_are_refused_by_rule(void **st) {
    (void)st;
    char msg[512];
    const unsigned char short_blob[3] = {1, 0, 0};
    assert_int_equal(init_blob(short_blob, 3, msg, sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "4-byte trie size"));
    /* a trie of 6 bytes: not whole units */
    const unsigned char ragged[12] = {6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a', 0};
    assert_int_equal(init_blob(ragged, 12, msg, sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "whole 4-byte units"));
    /* a trie running past the blob */
    const unsigned char past[8] = {0, 1, 0, 0, 0, 0, 0, 0};
    assert_int_equal(init_blob(past, 8, msg, sizeof msg), FE_E_FORMAT);
    /* strings without their final NUL */
    const unsigned char open_end[10] = {4, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'};
    assert_int_equal(init_blob(open_end, 10, msg, sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "NUL"));
    /* a value unit (bit 31) pointing past the 2 bytes of strings */
    const unsigned char far[14] = {8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0x80, 'a', 0};
    assert_int_equal(init_blob(far, 14, msg, sizeof msg), FE_E_FORMAT);
    assert_non_null(strstr(msg, "past the 2 bytes of strings"));
    /* and a sound one-unit trie with no keys: copies text, squeezing spaces */
    const unsigned char empty[10] = {4, 0, 0, 0, 0, 0, 0, 0, 'a', 0};
    fe_spm_normalizer nz;
    fe_error err;
    assert_int_equal(fe_spm_normalizer_init(&nz, empty, 10, true, "charsmap", &err), FE_OK);
    char *out;
    size_t n;
    assert_int_equal(fe_spm_normalize(&nz, "  a  b \xff ", 9, &out, &n, &err), FE_OK);
    assert_int_equal(n, 7);
    assert_memory_equal(out, "a b \xef\xbf\xbd", 7); /* a stray byte is U+FFFD */
    fe_free(out);
    fe_spm_normalizer_deinit(&nz);
}

/* The fixture's bytes with the charsmap's array header changed by `patch`. */
static fe_status open_patched(void (*patch)(unsigned char *at), char *msg, size_t msg_n) {
    size_t n;
    char *file = tokfix_read_file(tokfix_path("unigram_tiny.gguf"), &n);
    const char key[] = "tokenizer.ggml.precompiled_charsmap";
    char *at = memmem(file, n, key, sizeof key - 1);
    assert_non_null(at);
    patch((unsigned char *)at + sizeof key - 1); /* u32 ARRAY, u32 element type, u64 count */
    fe_gguf *g = NULL;
    fe_error err = {0};
    fe_tokenizer *t = NULL;
    fe_status s = fe_gguf_open_memory(file, n, "patched.gguf", &g, &err);
    if (s == FE_OK) s = fe_tokenizer_from_gguf(g, &t, &err);
    snprintf(msg, msg_n, "%s", err.message);
    fe_tokenizer_destroy(t);
    fe_gguf_close(g);
    free(file);
    return s;
}

static void as_bool(unsigned char *at) { at[4] = 7; } /* u8 -> bool: same size, not bytes */

static void trie_too_big(unsigned char *at) { at[16 + 3] = 0x7f; } /* the blob's first u32 */

static void malformed_metadata_is_refused_by_rule(void **st) {
    (void)st;
    char msg[512];
    fe_status s = open_patched(as_bool, msg, sizeof msg);
    if (s != FE_E_FORMAT) fail_msg("a bool charsmap: status %d: %s", (int)s, msg);
    assert_non_null(strstr(msg, "not an array of bytes"));
    s = open_patched(trie_too_big, msg, sizeof msg);
    if (s != FE_E_FORMAT) fail_msg("a trie past the blob: status %d: %s", (int)s, msg);
    assert_non_null(strstr(msg, "trie"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_are_sentencepieces),
        cmocka_unit_test(the_normaliser_gives_sentencepieces_text),
        cmocka_unit_test(malformed_charsmaps_are_refused_by_rule),
        cmocka_unit_test(malformed_metadata_is_refused_by_rule),
        cmocka_unit_test(tokenizer_json_ids_are_hugging_faces),
        cmocka_unit_test(tokenizer_json_steps_ferrum_does_not_apply_are_refused),
    };
    return cmocka_run_group_tests_name("unigram_gguf", tests, NULL, NULL);
}
