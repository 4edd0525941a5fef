/* fuzz/fuzz_encode.c: libFuzzer target for encode/decode/stream over arbitrary bytes, with a
 * small built-in byte-level vocabulary (all 256 bytes, a few merges, special and user-defined
 * added tokens). The first byte picks the pre-tokenizer (GPT-2, Llama 3, SmolLM2) and whether
 * specials are matched; the rest is the text. Claims: encoding never fails; every id is in
 * the vocabulary; decode(encode(x)) == x for any bytes; the stream decoder emits valid UTF-8,
 * and exactly x when x is valid UTF-8; a short buffer reports the same count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "lm/tokenizer/bytelevel.h"
#include "lm/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const MERGES[][2] = {
    {" ", "t"}, {"h", "e"}, {"i", "n"}, {" t", "he"}, {"e", "r"}, {" ", "a"}, {"o", "n"},
    {"r", "e"}, {" ", " "}, {"  ", "  "}, {"\n", "\n"}, {"1", "2"}, {"12", "3"}, {"<", "|"},
    {"|", ">"}, {"\xc3", "\xa9"}, {"\xe4", "\xbd"}, {"\xe4\xbd", "\xa0"}, {"\xf0", "\x9f"},
    {" ", "\xc3\xa9"}, {"in", "g"}, {"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"},
};
enum { N_MERGES = sizeof MERGES / sizeof MERGES[0], N_ADDED = 3 };

static fe_tokenizer *make(const char *pre) {
    static char text[256 + N_MERGES + N_ADDED][64];
    static char mtext[N_MERGES][128];
    const char *tokens[256 + N_MERGES + N_ADDED], *merges[N_MERGES];
    int32_t types[256 + N_MERGES + N_ADDED];
    int n = 0;
    for (int b = 0; b < 256; b++, n++) {
        char c = (char)b;
        text[n][fe_bytelevel_encode(&c, 1, text[n])] = 0;
        tokens[n] = text[n];
        types[n] = FE_TOKEN_NORMAL;
    }
    for (int i = 0; i < N_MERGES; i++, n++) {
        char joined[32];
        snprintf(joined, sizeof joined, "%s%s", MERGES[i][0], MERGES[i][1]);
        text[n][fe_bytelevel_encode(joined, strlen(joined), text[n])] = 0;
        tokens[n] = text[n];
        types[n] = FE_TOKEN_NORMAL;
        size_t k = fe_bytelevel_encode(MERGES[i][0], strlen(MERGES[i][0]), mtext[i]);
        mtext[i][k++] = ' ';
        k += fe_bytelevel_encode(MERGES[i][1], strlen(MERGES[i][1]), mtext[i] + k);
        mtext[i][k] = 0;
        merges[i] = mtext[i];
    }
    const char *added[N_ADDED] = {"<|im_start|>", "<|im_end|>", "<tool>"};
    for (int i = 0; i < N_ADDED; i++, n++) {
        tokens[n] = added[i];
        types[n] = i < 2 ? FE_TOKEN_CONTROL : FE_TOKEN_USER_DEFINED;
    }
    fe_bpe_spec spec = fe_bpe_spec_default();
    spec.tokens = tokens;
    spec.token_types = types;
    spec.n_tokens = n;
    spec.merges = merges;
    spec.n_merges = N_MERGES;
    spec.pre = pre;
    spec.bos_id = n - 3;
    fe_tokenizer *t = NULL;
    if (fe_tokenizer_create_bpe(&spec, &t, NULL) != FE_OK) __builtin_trap();
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fe_tokenizer *toks[3];
    static const char *const pres[3] = {"gpt2", "llama-bpe", "smollm"};
    if (!toks[0])
        for (int i = 0; i < 3; i++) toks[i] = make(pres[i]);
    if (size == 0) return 0;
    const fe_tokenizer *t = toks[data[0] % 3];
    bool allow_special = (data[0] / 3) % 2;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    int32_t *ids = NULL;
    size_t n = 0;
    if (fe_tokenizer_encode_alloc(t, text, len, false, allow_special, &ids, &n, NULL) != FE_OK)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= fe_tokenizer_n_vocab(t)) __builtin_trap();

    char *back = malloc(len + 1);
    size_t blen;
    if (fe_tokenizer_decode(t, ids, n, back, len + 1, &blen, NULL) != FE_OK || blen != len ||
        memcmp(back, text, len) != 0)
        __builtin_trap();

    fe_token_stream st;
    fe_token_stream_init(&st, t);
    size_t cap = fe_token_stream_bound(t), total = 0, k;
    char *chunk = malloc(cap), *all = malloc(3 * len + 8);
    for (size_t i = 0; i < n; i++) {
        if (fe_token_stream_push(&st, ids[i], chunk, cap, &k, NULL) != FE_OK) __builtin_trap();
        memcpy(all + total, chunk, k);
        total += k;
    }
    if (fe_token_stream_flush(&st, chunk, cap, &k, NULL) != FE_OK) __builtin_trap();
    memcpy(all + total, chunk, k);
    total += k;
    if (!fe_utf8_valid(all, total)) __builtin_trap();
    if (fe_utf8_valid(text, len) && (total != len || memcmp(all, text, len) != 0)) __builtin_trap();

    if (n > 1) {
        int32_t small[1];
        size_t need;
        if (fe_tokenizer_encode(t, text, len, false, allow_special, small, 1, &need, NULL) !=
                FE_E_BOUNDS ||
            need != n || small[0] != ids[0])
            __builtin_trap();
    }
    free(chunk);
    free(all);
    free(back);
    fe_free(ids);
    return 0;
}
