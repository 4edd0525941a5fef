/* tests/test_tokenizer.c: the byte-level BPE tokenizer gives the reference ids: llama.cpp's
 * test vectors for GPT-2 and Llama 3 (vocab GGUFs in tests/fixtures) whether loaded from GGUF,
 * from a tokenizer.json or (Llama 3) from a tiktoken file; Hugging Face tokenizers' ids for
 * SmolLM2 (tests/fixtures/smollm2_tokens.json, made by scripts/make-token-fixtures.py, against
 * the checkpoint in the cache: skipped when missing, failed under CI=true); BPE merges by
 * rank; added tokens match longest-first and specials only when allowed; encode/decode
 * round-trips any text; the stream decoder emits only whole characters. Malformed inputs and
 * failed allocations are in test_tokenizer_input.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/alloc.h"
#include "core/json.h"
#include "lm/tokenizer/bytelevel.h"
#include "lm/format/gguf.h"
#include "lm/tokenizer/tokenizer.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"
#include "support/tok_fixtures.h"

/* llama.cpp's test vectors: inputs split by "\n__ggml_vocab_test__\n", one output line each. */
static void check_llama_cpp_vectors(const fe_tokenizer *t, const char *gguf_name) {
    char name[256];
    size_t ni, no;
    snprintf(name, sizeof name, "%s.inp", gguf_name);
    char *inp = tokfix_read_file(tokfix_path(name), &ni);
    snprintf(name, sizeof name, "%s.out", gguf_name);
    char *out = tokfix_read_file(tokfix_path(name), &no);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t sl = sizeof sep - 1, pi = 0, po = 0;
    int cases = 0;
    while (pi < ni) {
        char *next = strstr(inp + pi, sep);
        size_t tl = next ? (size_t)(next - (inp + pi)) : ni - pi;
        char *nl = memchr(out + po, '\n', no - po);
        assert_non_null(nl);
        int32_t want[512];
        size_t nw = 0;
        for (char *p = out + po; p < nl;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            want[nw++] = (int32_t)v;
            p = end;
        }
        char label[320];
        snprintf(label, sizeof label, "%s case %d", gguf_name, cases);
        tokfix_expect_ids(t, inp + pi, tl, false, want, nw, label);
        tokfix_expect_round_trip(t, inp + pi, tl);
        cases++;
        po = (size_t)(nl - out) + 1;
        pi += tl + (next ? sl : 0);
    }
    assert_int_equal(po, no); /* every output line used */
    assert_true(cases > 40);
    free(inp);
    free(out);
}

/* ---- byte-level mapping ---- */

static void bytelevel_mapping_is_gpt2s(void **s) {
    (void)s;
    assert_int_equal(fe_bytelevel_char(' '), 0x120); /* 'Ġ' */
    assert_int_equal(fe_bytelevel_char('\n'), 0x10A); /* 'Ċ' */
    assert_int_equal(fe_bytelevel_char('A'), 'A');
    assert_int_equal(fe_bytelevel_char(0xAD), 0x143);
    int seen[0x144] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = fe_bytelevel_char((unsigned char)b);
        assert_true(cp < 0x144);
        seen[cp]++;
        assert_int_equal(fe_bytelevel_byte(cp), b);
    }
    int distinct = 0;
    for (int i = 0; i < 0x144; i++) distinct += seen[i] == 1;
    assert_int_equal(distinct, 256);
    assert_int_equal(fe_bytelevel_byte(0x144), -1);
    assert_int_equal(fe_bytelevel_byte(' '), -1);
    char raw[16];
    size_t n;
    assert_true(fe_bytelevel_decode("\xc4\xa0hello", 7, raw, &n)); /* "Ġhello" */
    assert_int_equal(n, 6);
    assert_memory_equal(raw, " hello", 6);
    assert_false(fe_bytelevel_decode("\xff", 1, raw, &n));
    char enc[32];
    assert_int_equal(fe_bytelevel_encode(" \n", 2, enc), 4);
    assert_memory_equal(enc, "\xc4\xa0\xc4\x8a", 4);
}

static void utf8_classifies_maximal_subparts(void **s) {
    (void)s;
    uint32_t cp;
    assert_int_equal(fe_utf8_char((const unsigned char *)"\xf0\x9f\xa6\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x1F980);
    assert_int_equal(fe_utf8_char((const unsigned char *)"\xf0\x9f", 2, NULL), 0);
    assert_int_equal(fe_utf8_char((const unsigned char *)"\xf0\x9f\x41", 3, NULL), -2);
    assert_int_equal(fe_utf8_char((const unsigned char *)"\x80", 1, NULL), -1);
    assert_int_equal(fe_utf8_char((const unsigned char *)"\xc0\x80", 2, NULL), -1); /* overlong */
    assert_int_equal(fe_utf8_char((const unsigned char *)"\xed\xa0\x80", 3, NULL), -1); /* surrogate */
    assert_int_equal(fe_utf8_char((const unsigned char *)"\xf4\x90\x80\x80", 4, NULL), -1);
    assert_true(fe_utf8_valid("h\xc3\xa9llo \xe4\xbd\xa0", 10));
    assert_false(fe_utf8_valid("\xe4\xbd", 2));
}

/* ---- a tiny tokenizer from arrays ---- */

static void bpe_merges_lowest_rank_first(void **s) {
    (void)s;
    /* ids: 256 "bc", 257 "ab", 258 "abc", 259 "aa", 260 "aaaa" */
    const char *extra[] = {"bc", "ab", "abc", "aa", "aaaa"};
    const char *merges[] = {"b c", "a b", "a bc", "aa aa", "a a"};
    fe_tokenizer *t = tokfix_tiny(extra, 5, merges, 5, NULL, 0, "gpt2");
    /* "abc": "b c" (rank 0) beats "a b" (rank 1), then "a bc" */
    tokfix_expect_ids(t, "abc", 3, false, (int32_t[]){258}, 1, "abc");
    /* "ab": only "a b" applies */
    tokfix_expect_ids(t, "ab", 2, false, (int32_t[]){257}, 1, "ab");
    /* "aaaaa": "a a" merges leftmost first: aa aa a -> aaaa a */
    tokfix_expect_ids(t, "aaaaa", 5, false, (int32_t[]){260, 'a'}, 2, "aaaaa");
    /* pieces never merge across the pre-tokenizer's split: "ab bc" is "ab", " bc" */
    tokfix_expect_ids(t, "ab bc", 5, false, (int32_t[]){257, ' ', 256}, 3, "ab bc");
    int32_t id = fe_tokenizer_find(t, "abc", 3);
    assert_int_equal(id, 258);
    size_t len;
    assert_memory_equal(fe_tokenizer_piece(t, 258, &len), "abc", 3);
    assert_int_equal(len, 3);
    assert_null(fe_tokenizer_piece(t, 9999, &len));
    assert_int_equal(fe_tokenizer_n_vocab(t), 261);
    assert_int_equal(fe_tokenizer_max_piece(t), 4);
    fe_tokenizer_destroy(t);
}

static void added_tokens_match_longest_first_and_specials_only_when_allowed(void **s) {
    (void)s;
    const char *extra[] = {"<|a|>", "<|ab|>", "<u>"};
    fe_added_token added[] = {
        {.text = "<|a|>", .id = 256, .special = true},
        {.text = "<|ab|>", .id = 257, .special = true},
        {.text = "<u>", .id = 258, .special = false, .rstrip = true},
    };
    fe_tokenizer *t = tokfix_tiny(extra, 3, NULL, 0, added, 3, "gpt2");
    tokfix_expect_ids(t, "x<|ab|>y", 8, true, (int32_t[]){'x', 257, 'y'}, 3, "longest");
    tokfix_expect_ids(t, "<|a|><|a|>", 10, true, (int32_t[]){256, 256}, 2, "adjacent");
    /* specials not allowed: read as text, but the user-defined <u> still matches */
    int32_t *ids;
    size_t n;
    fe_error err;
    assert_int_equal(fe_tokenizer_encode_alloc(t, "<|a|>", 5, false, false, &ids, &n, &err), FE_OK);
    assert_int_equal(n, 5); /* pieces "<|", "a", "|>"; no merges, so bytes */
    fe_free(ids);
    tokfix_expect_ids(t, "a<u>  b", 7, false, (int32_t[]){'a', 258, 'b'}, 3, "rstrip");
    assert_int_equal(fe_tokenizer_token_type(t, 256), FE_TOKEN_CONTROL);
    assert_int_equal(fe_tokenizer_token_type(t, 258), FE_TOKEN_USER_DEFINED);
    assert_int_equal(fe_tokenizer_token_type(t, 'a'), FE_TOKEN_NORMAL);
    /* BOS: refused until there is one, then first */
    assert_int_equal(fe_tokenizer_encode_alloc(t, "a", 1, true, false, &ids, &n, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "BOS"));
    assert_int_equal(fe_tokenizer_set_bos_eos(t, 256, 257), FE_OK);
    assert_int_equal(fe_tokenizer_set_bos_eos(t, 9999, 257), FE_E_BOUNDS);
    int32_t buf[4];
    assert_int_equal(fe_tokenizer_encode(t, "ab", 2, true, false, buf, 4, &n, &err), FE_OK);
    assert_int_equal(n, 3);
    assert_int_equal(buf[0], 256);
    /* too small a buffer: the count still comes back */
    assert_int_equal(fe_tokenizer_encode(t, "ab", 2, true, false, buf, 1, &n, &err), FE_E_BOUNDS);
    assert_int_equal(n, 3);
    assert_int_equal(buf[0], 256);
    char out[8];
    size_t len;
    assert_int_equal(fe_tokenizer_decode(t, (int32_t[]){256, 'x'}, 2, out, sizeof out, &len, &err),
                     FE_OK);
    assert_string_equal(out, "<|a|>x");
    assert_int_equal(fe_tokenizer_decode(t, (int32_t[]){256, 256}, 2, out, 4, &len, &err), FE_E_BOUNDS);
    assert_int_equal(len, 10);
    assert_int_equal(fe_tokenizer_decode(t, (int32_t[]){-1}, 1, out, 8, &len, &err), FE_E_BOUNDS);
    fe_tokenizer_destroy(t);
}

/* ---- real vocabularies ---- */

static void gpt2_matches_llama_cpp_vectors(void **s) {
    (void)s;
    fe_tokenizer *t = tokfix_from_gguf(tokfix_path("ggml-vocab-gpt-2.gguf"), NULL);
    assert_int_equal(fe_tokenizer_n_vocab(t), 50257);
    assert_int_equal(fe_tokenizer_bos(t), 50256);
    check_llama_cpp_vectors(t, "ggml-vocab-gpt-2.gguf");
    fe_tokenizer_destroy(t);
}

static void llama3_matches_llama_cpp_vectors(void **s) {
    (void)s;
    fe_tokenizer *t = tokfix_from_gguf(tokfix_path("ggml-vocab-llama-bpe.gguf"), NULL);
    assert_int_equal(fe_tokenizer_n_vocab(t), 128256);
    assert_int_equal(fe_tokenizer_bos(t), 128000);
    assert_true(fe_tokenizer_add_bos(t));
    check_llama_cpp_vectors(t, "ggml-vocab-llama-bpe.gguf");
    tokfix_expect_ids(t, "<|begin_of_text|>hi<|eot_id|>", 29, true, (int32_t[]){128000, 6151, 128009}, 3,
               "llama3 specials");
    fe_tokenizer_destroy(t);
}

/* A tokenizer.json with the GGUF's vocabulary and merges (half as "a b", half as pairs). */
static char *json_from_gguf(const fe_gguf *g, const char *pre_tokenizer, bool ignore_merges,
                            size_t *len) {
    const fe_gguf_kv *tokens = fe_gguf_find(g, "tokenizer.ggml.tokens");
    const fe_gguf_kv *types = fe_gguf_find(g, "tokenizer.ggml.token_type");
    const fe_gguf_kv *merges = fe_gguf_find(g, "tokenizer.ggml.merges");
    json_t *vocab = json_object(), *m = json_array(), *added = json_array();
    for (size_t i = 0; i < fe_gguf_array_len(tokens); i++) {
        size_t n;
        const char *tok = fe_gguf_array_str(tokens, i, &n);
        char key[512];
        assert_true(n < sizeof key);
        memcpy(key, tok, n);
        key[n] = 0;
        json_object_set_new(vocab, key, json_integer((json_int_t)i));
        int32_t ty;
        assert_int_equal(fe_gguf_array_i32(types, i, &ty), FE_OK);
        if (ty == 3)
            json_array_append_new(added, json_pack("{s:I,s:s#,s:b,s:b,s:b,s:b,s:b}", "id",
                                                   (json_int_t)i, "content", tok, (int)n, "special",
                                                   1, "lstrip", 0, "rstrip", 0, "normalized", 0,
                                                   "single_word", 0));
    }
    for (size_t i = 0; i < fe_gguf_array_len(merges); i++) {
        size_t n;
        const char *s = fe_gguf_array_str(merges, i, &n);
        const char *sp = memchr(s + 1, ' ', n - 1);
        if (i % 2)
            json_array_append_new(m, json_stringn(s, n));
        else
            json_array_append_new(m, json_pack("[s#,s#]", s, (int)(sp - s), sp + 1,
                                               (int)(n - (size_t)(sp - s) - 1)));
    }
    json_error_t je;
    json_t *pre = json_loads(pre_tokenizer, 0, &je);
    assert_non_null(pre);
    json_t *root = json_pack("{s:s,s:o,s:n,s:o,s:n,s:{s:s,s:o,s:o,s:b,s:b}}", "version", "1.0",
                             "added_tokens", added, "normalizer", "pre_tokenizer", pre,
                             "post_processor", "model", "type", "BPE", "vocab", vocab, "merges", m,
                             "ignore_merges", ignore_merges, "byte_fallback", 0);
    assert_non_null(root);
    char *text = json_dumps(root, JSON_COMPACT);
    assert_non_null(text);
    *len = strlen(text);
    json_decref(root);
    return text;
}

static void tokenizer_json_loads_gpt2_and_llama3(void **s) {
    (void)s;
    struct {
        const char *gguf, *pre;
        bool ignore;
    } cases[] = {
        {"ggml-vocab-gpt-2.gguf",
         "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,"
         "\"use_regex\":true}",
         false},
        {"ggml-vocab-llama-bpe.gguf",
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
         "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "
         "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
         "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_"
         "space\":false,\"trim_offsets\":true,\"use_regex\":false}]}",
         true},
    };
    for (int i = 0; i < 2; i++) {
        fe_gguf *g;
        fe_tokenizer *ref = tokfix_from_gguf(tokfix_path(cases[i].gguf), &g);
        size_t len;
        char *text = json_from_gguf(g, cases[i].pre, cases[i].ignore, &len);
        fe_gguf_close(g);
        fe_tokenizer *t = NULL;
        fe_error err;
        if (fe_tokenizer_from_json(text, len, cases[i].gguf, &t, &err)) fail_msg("%s", err.message);
        free(text);
        assert_int_equal(fe_tokenizer_n_vocab(t), fe_tokenizer_n_vocab(ref));
        check_llama_cpp_vectors(t, cases[i].gguf);
        fe_tokenizer_destroy(ref);
        fe_tokenizer_destroy(t);
    }
}

static char *b64(const unsigned char *p, size_t n, char *out) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t x = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        out[o++] = a[x >> 18];
        out[o++] = a[(x >> 12) & 63];
        out[o++] = i + 1 < n ? a[(x >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? a[x & 63] : '=';
    }
    out[o] = 0;
    return out;
}

static void tiktoken_llama3_matches_llama_cpp_vectors(void **s) {
    (void)s;
    fe_tokenizer *ref = tokfix_from_gguf(tokfix_path("ggml-vocab-llama-bpe.gguf"), NULL);
    /* the ranks file Meta ships is these 128000 tokens' bytes in id order */
    size_t cap = 128000 * 64, n = 0;
    char *file = malloc(cap);
    for (int32_t id = 0; id < 128000; id++) {
        size_t len;
        const char *p = fe_tokenizer_piece(ref, id, &len);
        char enc[256];
        n += (size_t)snprintf(file + n, cap - n, "%s %d\n", b64((const unsigned char *)p, len, enc),
                              (int)id);
    }
    char dir[256];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_write(dir, "tokenizer.model", file, n));
    char path[300];
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_load_tiktoken(path, NULL, 0, NULL, &t, &err)) fail_msg("%s", err.message);
    lmfix_rmtree(dir);
    free(file);
    assert_int_equal(fe_tokenizer_n_vocab(t), 128256);
    assert_int_equal(fe_tokenizer_bos(t), 128000);
    assert_int_equal(fe_tokenizer_eos(t), 128001);
    assert_int_equal(fe_tokenizer_find(t, "<|eot_id|>", 10), 128009);
    assert_int_equal(fe_tokenizer_find(t, "<|python_tag|>", 14), 128010);
    assert_int_equal(fe_tokenizer_find(t, "<|reserved_special_token_247|>", 30), 128255);
    check_llama_cpp_vectors(t, "ggml-vocab-llama-bpe.gguf");
    fe_tokenizer_destroy(t);
    fe_tokenizer_destroy(ref);
}

static void smollm2_matches_hf_tokenizers(void **s) {
    (void)s;
    const char *path = lmfix_need_smollm2();
    if (!path) skip();
    fe_tokenizer *t = tokfix_from_gguf(path, NULL);
    size_t n;
    char *text = tokfix_read_file(tokfix_path("smollm2_tokens.json"), &n);
    json_t *root;
    fe_error err;
    if (fe_json_parse(text, n, "smollm2_tokens.json", &root, &err)) fail_msg("%s", err.message);
    free(text);
    assert_int_equal(fe_tokenizer_n_vocab(t), json_integer_value(json_object_get(root, "n_vocab")));
    assert_int_equal(fe_tokenizer_bos(t), json_integer_value(json_object_get(root, "bos_id")));
    assert_int_equal(fe_tokenizer_eos(t), json_integer_value(json_object_get(root, "eos_id")));
    assert_false(fe_tokenizer_add_bos(t));
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) > 30);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        json_t *str = json_object_get(c, "text");
        for (int allow = 0; allow < 2; allow++) {
            json_t *ids = json_object_get(c, allow ? "ids" : "ids_no_special");
            int32_t want[512];
            size_t nw = json_array_size(ids);
            assert_true(nw <= 512);
            for (size_t k = 0; k < nw; k++) want[k] = (int32_t)json_integer_value(json_array_get(ids, k));
            char label[64];
            snprintf(label, sizeof label, "smollm2 case %zu (specials %s)", i, allow ? "on" : "off");
            tokfix_expect_ids(t, json_string_value(str), json_string_length(str), allow, want, nw, label);
            /* decode gives the text back, specials included, less the bytes with no token */
            char out[4096], kept[4096];
            size_t len, nk = 0;
            const char *p = json_string_value(str);
            for (size_t k = 0; k < json_string_length(str); k++)
                if (fe_tokenizer_find(t, p + k, 1) >= 0) kept[nk++] = p[k];
            assert_int_equal(fe_tokenizer_decode(t, want, nw, out, sizeof out, &len, &err), FE_OK);
            assert_int_equal(len, nk);
            assert_memory_equal(out, kept, len);
        }
    }
    json_decref(root);
    fe_tokenizer_destroy(t);
}

/* ---- round trips and streaming ---- */

static uint32_t random_char(test_rng *r) {
    static const uint32_t ranges[][2] = {
        {0x20, 0x7E},     {0x30, 0x39},   {0x09, 0x0D},     {0xA0, 0xFF},     {0x370, 0x3FF},
        {0x400, 0x4FF},   {0x300, 0x36F}, {0x660, 0x669},   {0x2000, 0x206F}, {0x3000, 0x303F},
        {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x10000, 0x10FFFF},
    };
    size_t k = test_rng_next(r) % (sizeof ranges / sizeof ranges[0]);
    uint32_t cp;
    do {
        cp = ranges[k][0] + (uint32_t)(test_rng_next(r) % (ranges[k][1] - ranges[k][0] + 1));
    } while (cp >= 0xD800 && cp <= 0xDFFF);
    return cp;
}

static size_t random_text(test_rng *r, char *buf, size_t max_chars) {
    size_t n = 0, chars = 1 + test_rng_next(r) % max_chars;
    for (size_t i = 0; i < chars; i++) {
        unsigned char u[4];
        int k = fe_utf8_encode(random_char(r), u);
        memcpy(buf + n, u, (size_t)k);
        n += (size_t)k;
    }
    return n;
}

/* Pushes ids one by one: after each, the text out so far is the longest valid prefix of the
 * bytes so far (held back only while a character is incomplete); at the end, all of it. */
static void expect_stream(const fe_tokenizer *t, const int32_t *ids, size_t n, const char *text,
                          size_t len) {
    fe_token_stream st;
    fe_token_stream_init(&st, t);
    size_t cap = fe_token_stream_bound(t), total = 0, bytes = 0;
    char *out = malloc(cap), *all = malloc(len + 16);
    fe_error err;
    for (size_t i = 0; i < n; i++) {
        size_t k, plen;
        if (fe_token_stream_push(&st, ids[i], out, cap, &k, &err)) fail_msg("%s", err.message);
        assert_true(fe_utf8_valid(out, k));
        assert_int_equal(strlen(out), k);
        memcpy(all + total, out, k);
        total += k;
        fe_tokenizer_piece(t, ids[i], &plen);
        bytes += plen;
        assert_true(bytes - total <= 3);
        assert_memory_equal(all, text, total);
    }
    size_t k;
    assert_int_equal(fe_token_stream_flush(&st, out, cap, &k, &err), FE_OK);
    assert_int_equal(k, 0);
    assert_int_equal(total, len);
    free(out);
    free(all);
}

static void encode_decode_round_trips_and_streams(void **s) {
    (void)s;
    const char *files[] = {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-bpe.gguf"};
    test_rng r = {42};
    char buf[1024];
    for (int f = 0; f < 2; f++) {
        fe_tokenizer *t = tokfix_from_gguf(tokfix_path(files[f]), NULL);
        for (int i = 0; i < 300; i++) {
            size_t n = random_text(&r, buf, 48);
            assert_true(fe_utf8_valid(buf, n));
            tokfix_expect_round_trip(t, buf, n);
            int32_t *ids;
            size_t k;
            fe_error err;
            assert_int_equal(fe_tokenizer_encode_alloc(t, buf, n, false, false, &ids, &k, &err), FE_OK);
            expect_stream(t, ids, k, buf, n);
            fe_free(ids);
        }
        /* any bytes at all, valid UTF-8 or not, come back */
        for (int i = 0; i < 300; i++) {
            size_t n = 1 + test_rng_next(&r) % 64;
            for (size_t j = 0; j < n; j++) buf[j] = (char)test_rng_next(&r);
            tokfix_expect_round_trip(t, buf, n);
        }
        /* a crab is one character over several tokens: nothing comes out before its last */
        int32_t *ids;
        size_t k;
        fe_error err;
        assert_int_equal(fe_tokenizer_encode_alloc(t, "\xf0\x9f\xa6\x80", 4, false, false, &ids, &k, &err),
                         FE_OK);
        assert_true(k >= 2);
        expect_stream(t, ids, k, "\xf0\x9f\xa6\x80", 4);
        fe_free(ids);
        fe_tokenizer_destroy(t);
    }
}

static void stream_replaces_what_can_never_be_valid(void **s) {
    (void)s;
    fe_tokenizer *t = tokfix_tiny(NULL, 0, NULL, 0, NULL, 0, "gpt2");
    fe_token_stream st;
    fe_token_stream_init(&st, t);
    char out[64];
    size_t k;
    fe_error err;
    assert_int_equal(fe_token_stream_push(&st, 0xE2, out, sizeof out, &k, &err), FE_OK);
    assert_int_equal(k, 0);
    assert_int_equal(fe_token_stream_push(&st, 0x82, out, sizeof out, &k, &err), FE_OK);
    assert_int_equal(k, 0);
    assert_int_equal(fe_token_stream_push(&st, 'A', out, sizeof out, &k, &err), FE_OK);
    assert_string_equal(out, "\xef\xbf\xbd" "A"); /* E2 82 is one maximal subpart */
    assert_int_equal(fe_token_stream_push(&st, 0xFF, out, sizeof out, &k, &err), FE_OK);
    assert_string_equal(out, "\xef\xbf\xbd");
    assert_int_equal(fe_token_stream_push(&st, 0xF0, out, sizeof out, &k, &err), FE_OK);
    assert_int_equal(k, 0);
    assert_int_equal(fe_token_stream_push(&st, 0xF0, out, 2, &k, &err), FE_E_BOUNDS);
    assert_int_equal(fe_token_stream_push(&st, 999, out, sizeof out, &k, &err), FE_E_BOUNDS);
    assert_int_equal(fe_token_stream_flush(&st, out, sizeof out, &k, &err), FE_OK);
    assert_string_equal(out, "\xef\xbf\xbd");
    assert_int_equal(fe_token_stream_flush(&st, out, sizeof out, &k, &err), FE_OK);
    assert_int_equal(k, 0);
    fe_tokenizer_destroy(t);
}

static void long_runs_encode_and_round_trip(void **s) {
    (void)s;
    fe_tokenizer *t = tokfix_from_gguf(tokfix_path("ggml-vocab-llama-bpe.gguf"), NULL);
    size_t n = 1 << 20;
    char *text = malloc(n);
    const char fills[] = {' ', 'a', '7', '\n', '!'};
    for (size_t f = 0; f < sizeof fills; f++) {
        memset(text, fills[f], n);
        tokfix_expect_round_trip(t, text, n);
    }
    for (size_t i = 0; i < n; i++) text[i] = " \n\t"[i % 3 == 0 ? 0 : i % 7 == 0 ? 1 : 2];
    tokfix_expect_round_trip(t, text, n);
    free(text);
    fe_tokenizer_destroy(t);
}

/* ---- malformed inputs ---- */

static void tokenizer_json_reads_splits_digits_and_bos(void **s) {
    (void)s;
    /* SmolLM2's chain (Digits then ByteLevel), a String split, a BOS from TemplateProcessing */
    char *text = tokfix_tiny_json(
        "[{\"id\": 256, \"content\": \"<s>\", \"special\": true}]", "",
        "[]",
        "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
        "{\"String\": \"::\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": "
        "\"Digits\", \"individual_digits\": true}, {\"type\": \"ByteLevel\", \"use_regex\": true}]}");
    /* graft a post_processor in front of the model */
    char *full = malloc(strlen(text) + 512);
    sprintf(full, "{\"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": "
                  "\"ByteLevel\"}, {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                  "{\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": "
                  "0}}], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [256], \"tokens\": "
                  "[\"<s>\"]}}}]}, %s",
            text + 1);
    free(text);
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_from_json(full, strlen(full), "smol.json", &t, &err)) fail_msg("%s", err.message);
    free(full);
    assert_int_equal(fe_tokenizer_bos(t), 256);
    assert_true(fe_tokenizer_add_bos(t));
    assert_int_equal(fe_tokenizer_eos(t), -1);
    /* no merges: every byte is a token, so the ids show the bytes; check splits by stream */
    int32_t *ids;
    size_t n;
    assert_int_equal(fe_tokenizer_encode_alloc(t, "<s>a::12", 8, true, true, &ids, &n, &err), FE_OK);
    assert_int_equal(n, 1 + 1 + 1 + 2 + 2);
    assert_int_equal(ids[0], 256);
    assert_int_equal(ids[1], 256);
    fe_free(ids);
    fe_tokenizer_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytelevel_mapping_is_gpt2s),
        cmocka_unit_test(utf8_classifies_maximal_subparts),
        cmocka_unit_test(bpe_merges_lowest_rank_first),
        cmocka_unit_test(added_tokens_match_longest_first_and_specials_only_when_allowed),
        cmocka_unit_test(gpt2_matches_llama_cpp_vectors),
        cmocka_unit_test(llama3_matches_llama_cpp_vectors),
        cmocka_unit_test(tokenizer_json_loads_gpt2_and_llama3),
        cmocka_unit_test(tiktoken_llama3_matches_llama_cpp_vectors),
        cmocka_unit_test(smollm2_matches_hf_tokenizers),
        cmocka_unit_test(encode_decode_round_trips_and_streams),
        cmocka_unit_test(stream_replaces_what_can_never_be_valid),
        cmocka_unit_test(long_runs_encode_and_round_trip),
        cmocka_unit_test(tokenizer_json_reads_splits_digits_and_bos),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, NULL, NULL);
}
