/* tests/test_tokenizer.c: the byte-level BPE tokenizer (src/lm/tokenizer*, bpe, pretokenize,
 * bytelevel): ids equal llama.cpp's test vectors for GPT-2 and Llama 3 (vocab GGUFs in
 * tests/fixtures) whether loaded from GGUF, from a tokenizer.json or (Llama 3) from a tiktoken
 * file; ids equal Hugging Face tokenizers' for SmolLM2 (tests/fixtures/smollm2_tokens.json,
 * from the checkpoint in the cache: skipped when missing, failed under CI=true); encode/decode
 * round-trips any text; the stream decoder emits only whole characters; malformed inputs are
 * clean errors that name the problem; failed allocations are FE_E_NOMEM. */
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
#include "lm/bytelevel.h"
#include "lm/gguf.h"
#include "lm/tokenizer.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"

/* ---- helpers ---- */

static const char *fixture(const char *name) {
    static char path[1024];
    const char *dir = getenv("FERRUM_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "tests/fixtures", name);
    return path;
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s: cannot open (run the tests from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
    p[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return p;
}

static fe_tokenizer *from_gguf_file(const char *path, fe_gguf **keep) {
    fe_gguf *g = NULL;
    fe_error err;
    if (fe_gguf_open(path, &g, &err)) fail_msg("%s", err.message);
    fe_tokenizer *t = NULL;
    if (fe_tokenizer_from_gguf(g, &t, &err)) fail_msg("%s", err.message);
    if (keep) *keep = g;
    else fe_gguf_close(g);
    return t;
}

static void expect_ids(const fe_tokenizer *t, const char *text, size_t len, bool allow_special,
                       const int32_t *want, size_t n_want, const char *label) {
    int32_t *ids = NULL;
    size_t n = 0;
    fe_error err;
    if (fe_tokenizer_encode_alloc(t, text, len, false, allow_special, &ids, &n, &err))
        fail_msg("%s: %s", label, err.message);
    bool same = n == n_want && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!same) {
        print_message("%s: text \"%.*s\"\n  got ", label, (int)len, text);
        for (size_t i = 0; i < n; i++) print_message(" %d", (int)ids[i]);
        print_message("\n want");
        for (size_t i = 0; i < n_want; i++) print_message(" %d", (int)want[i]);
        print_message("\n");
    }
    fe_free(ids);
    assert_true(same);
}

static void expect_round_trip(const fe_tokenizer *t, const char *text, size_t len) {
    int32_t *ids = NULL;
    size_t n = 0;
    fe_error err;
    if (fe_tokenizer_encode_alloc(t, text, len, false, false, &ids, &n, &err))
        fail_msg("%s", err.message);
    char *back = malloc(len + 1);
    size_t blen = 0;
    if (fe_tokenizer_decode(t, ids, n, back, len + 1, &blen, &err)) fail_msg("%s", err.message);
    assert_int_equal(blen, len);
    assert_memory_equal(back, text, len);
    free(back);
    fe_free(ids);
}

/* llama.cpp's test vectors: inputs split by "\n__ggml_vocab_test__\n", one output line each. */
static void check_llama_cpp_vectors(const fe_tokenizer *t, const char *gguf_name) {
    char name[256];
    size_t ni, no;
    snprintf(name, sizeof name, "%s.inp", gguf_name);
    char *inp = read_file(fixture(name), &ni);
    snprintf(name, sizeof name, "%s.out", gguf_name);
    char *out = read_file(fixture(name), &no);
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
        expect_ids(t, inp + pi, tl, false, want, nw, label);
        expect_round_trip(t, inp + pi, tl);
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

/* 256 byte tokens, then `extra` tokens (raw text), merges and added tokens. */
static fe_tokenizer *tiny(const char *const *extra, int n_extra, const char *const *merges,
                          int n_merges, const fe_added_token *added, int n_added,
                          const char *pre) {
    static char text[256 + 64][96];
    const char *tokens[256 + 64];
    int n = 0;
    for (int b = 0; b < 256; b++, n++) {
        char c = (char)b;
        text[n][fe_bytelevel_encode(&c, 1, text[n])] = 0;
        tokens[n] = text[n];
    }
    for (int i = 0; i < n_extra; i++, n++) {
        text[n][fe_bytelevel_encode(extra[i], strlen(extra[i]), text[n])] = 0;
        tokens[n] = text[n];
    }
    static char mtext[64][200];
    const char *m[64];
    for (int i = 0; i < n_merges; i++) {
        const char *sp = strchr(merges[i], ' ');
        size_t k = fe_bytelevel_encode(merges[i], (size_t)(sp - merges[i]), mtext[i]);
        mtext[i][k++] = ' ';
        k += fe_bytelevel_encode(sp + 1, strlen(sp + 1), mtext[i] + k);
        mtext[i][k] = 0;
        m[i] = mtext[i];
    }
    fe_bpe_spec spec = fe_bpe_spec_default();
    spec.tokens = tokens;
    spec.n_tokens = n;
    spec.merges = m;
    spec.n_merges = n_merges;
    spec.added = added;
    spec.n_added = n_added;
    spec.pre = pre;
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_create_bpe(&spec, &t, &err)) fail_msg("%s", err.message);
    return t;
}

static void bpe_merges_lowest_rank_first(void **s) {
    (void)s;
    /* ids: 256 "bc", 257 "ab", 258 "abc", 259 "aa", 260 "aaaa" */
    const char *extra[] = {"bc", "ab", "abc", "aa", "aaaa"};
    const char *merges[] = {"b c", "a b", "a bc", "aa aa", "a a"};
    fe_tokenizer *t = tiny(extra, 5, merges, 5, NULL, 0, "gpt2");
    /* "abc": "b c" (rank 0) beats "a b" (rank 1), then "a bc" */
    expect_ids(t, "abc", 3, false, (int32_t[]){258}, 1, "abc");
    /* "ab": only "a b" applies */
    expect_ids(t, "ab", 2, false, (int32_t[]){257}, 1, "ab");
    /* "aaaaa": "a a" merges leftmost first: aa aa a -> aaaa a */
    expect_ids(t, "aaaaa", 5, false, (int32_t[]){260, 'a'}, 2, "aaaaa");
    /* pieces never merge across the pre-tokenizer's split: "ab bc" is "ab", " bc" */
    expect_ids(t, "ab bc", 5, false, (int32_t[]){257, ' ', 256}, 3, "ab bc");
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
    fe_tokenizer *t = tiny(extra, 3, NULL, 0, added, 3, "gpt2");
    expect_ids(t, "x<|ab|>y", 8, true, (int32_t[]){'x', 257, 'y'}, 3, "longest");
    expect_ids(t, "<|a|><|a|>", 10, true, (int32_t[]){256, 256}, 2, "adjacent");
    /* specials not allowed: read as text, but the user-defined <u> still matches */
    int32_t *ids;
    size_t n;
    fe_error err;
    assert_int_equal(fe_tokenizer_encode_alloc(t, "<|a|>", 5, false, false, &ids, &n, &err), FE_OK);
    assert_int_equal(n, 5); /* pieces "<|", "a", "|>"; no merges, so bytes */
    fe_free(ids);
    expect_ids(t, "a<u>  b", 7, false, (int32_t[]){'a', 258, 'b'}, 3, "rstrip");
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
    fe_tokenizer *t = from_gguf_file(fixture("ggml-vocab-gpt-2.gguf"), NULL);
    assert_int_equal(fe_tokenizer_n_vocab(t), 50257);
    assert_int_equal(fe_tokenizer_bos(t), 50256);
    check_llama_cpp_vectors(t, "ggml-vocab-gpt-2.gguf");
    fe_tokenizer_destroy(t);
}

static void llama3_matches_llama_cpp_vectors(void **s) {
    (void)s;
    fe_tokenizer *t = from_gguf_file(fixture("ggml-vocab-llama-bpe.gguf"), NULL);
    assert_int_equal(fe_tokenizer_n_vocab(t), 128256);
    assert_int_equal(fe_tokenizer_bos(t), 128000);
    assert_true(fe_tokenizer_add_bos(t));
    check_llama_cpp_vectors(t, "ggml-vocab-llama-bpe.gguf");
    expect_ids(t, "<|begin_of_text|>hi<|eot_id|>", 29, true, (int32_t[]){128000, 6151, 128009}, 3,
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
        fe_tokenizer *ref = from_gguf_file(fixture(cases[i].gguf), &g);
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
    fe_tokenizer *ref = from_gguf_file(fixture("ggml-vocab-llama-bpe.gguf"), NULL);
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
    const char *path = lmfix_smollm2_path();
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (lmfix_in_ci()) fail_msg("%s is missing; scripts/setup fetches it (CI=true)", path);
        print_message("SKIP: %s is missing; run scripts/setup to fetch it\n", path);
        skip();
    }
    fclose(f);
    fe_tokenizer *t = from_gguf_file(path, NULL);
    size_t n;
    char *text = read_file(fixture("smollm2_tokens.json"), &n);
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
            expect_ids(t, json_string_value(str), json_string_length(str), allow, want, nw, label);
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
        fe_tokenizer *t = from_gguf_file(fixture(files[f]), NULL);
        for (int i = 0; i < 300; i++) {
            size_t n = random_text(&r, buf, 48);
            assert_true(fe_utf8_valid(buf, n));
            expect_round_trip(t, buf, n);
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
            expect_round_trip(t, buf, n);
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
    fe_tokenizer *t = tiny(NULL, 0, NULL, 0, NULL, 0, "gpt2");
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
    fe_tokenizer *t = from_gguf_file(fixture("ggml-vocab-llama-bpe.gguf"), NULL);
    size_t n = 1 << 20;
    char *text = malloc(n);
    const char fills[] = {' ', 'a', '7', '\n', '!'};
    for (size_t f = 0; f < sizeof fills; f++) {
        memset(text, fills[f], n);
        expect_round_trip(t, text, n);
    }
    for (size_t i = 0; i < n; i++) text[i] = " \n\t"[i % 3 == 0 ? 0 : i % 7 == 0 ? 1 : 2];
    expect_round_trip(t, text, n);
    free(text);
    fe_tokenizer_destroy(t);
}

/* ---- malformed inputs ---- */

/* A small valid tokenizer.json around the given pieces (printf args: added_tokens JSON, extra
 * vocab entries, merges JSON, pre_tokenizer JSON). */
static char *tiny_json(const char *added, const char *extra_vocab, const char *merges,
                       const char *pre) {
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    n += (size_t)snprintf(p + n, cap - n, "{\"added_tokens\":%s,\"normalizer\":null,"
                          "\"pre_tokenizer\":%s,\"model\":{\"type\":\"BPE\",\"vocab\":{", added, pre);
    for (int b = 0; b < 256; b++) {
        char c = (char)b, e[8];
        size_t k = fe_bytelevel_encode(&c, 1, e);
        json_t *str = json_stringn(e, k);
        char *q = json_dumps(str, JSON_ENCODE_ANY);
        n += (size_t)snprintf(p + n, cap - n, "%s%s:%d", b ? "," : "", q, b);
        free(q);
        json_decref(str);
    }
    n += (size_t)snprintf(p + n, cap - n, "%s},\"merges\":%s}}", extra_vocab, merges);
    return p;
}

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
    char *ok = tiny_json("[]", ",\"ab\":256", "[\"a b\"]", BYTELEVEL);
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_from_json(ok, strlen(ok), "ok.json", &t, &err)) fail_msg("%s", err.message);
    expect_ids(t, "ab", 2, false, (int32_t[]){256}, 1, "tiny json");
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
        char *text = tiny_json(bad[i].added, bad[i].vocab, bad[i].merges, bad[i].pre);
        expect_refused(text, bad[i].st, bad[i].needle);
        free(text);
    }
    /* a normalizer would change the ids: refused, not ignored */
    expect_refused("{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {\"vocab\": {}, \"merges\": []}}",
                   FE_E_UNSUPPORTED, "normalizer");
    assert_int_equal(fe_tokenizer_load_json("/nonexistent/tokenizer.json", &t, &err), FE_E_IO);
    assert_null(t);
}

static void tokenizer_json_reads_splits_digits_and_bos(void **s) {
    (void)s;
    /* SmolLM2's chain (Digits then ByteLevel), a String split, a BOS from TemplateProcessing */
    char *text = tiny_json(
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
        {{{"tokenizer.ggml.model", 0, "llama", NULL, 0, 0}}, 1, FE_E_UNSUPPORTED, "\"llama\""},
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
            expect_ids(t, "ab1", 3, true, (int32_t[]){256, '1'}, 2, "meta.gguf");
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
    char *text = tiny_json("[{\"id\": 257, \"content\": \"<|x|>\", \"special\": true}]",
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
        cmocka_unit_test(malformed_tokenizer_json_is_refused_by_name),
        cmocka_unit_test(tokenizer_json_reads_splits_digits_and_bos),
        cmocka_unit_test(gguf_tokenizer_metadata_is_checked),
        cmocka_unit_test(malformed_tiktoken_is_refused_by_name),
        cmocka_unit_test(failed_allocations_are_clean),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, NULL, NULL);
}
