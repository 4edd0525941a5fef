/* fuzz/fuzz_gguf.c: libFuzzer target for the GGUF reader and the config and tokenizer read
 * from its metadata. Whatever opens must be readable end to end: every tensor's data, every
 * string array element, every getter; a config that reads must validate; a tokenizer that
 * builds (byte-level or SentencePiece BPE) must encode a text into ids of its vocabulary. Opened header-only,
 * whatever opens whole opens too, with the same tensor table and no data. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "lm/model/config.h"
#include "lm/format/gguf.h"
#include "lm/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header-only open agrees with the whole one (g NULL when that failed). */
static void check_header_only(const uint8_t *data, size_t size, const fe_gguf *g) {
    fe_gguf *h = NULL;
    fe_error err;
    fe_status st = fe_gguf_open_memory_header(data, size, "fuzz.gguf", &h, &err);
    if (st != FE_OK && st != FE_E_FORMAT) __builtin_trap();
    if (g && st != FE_OK) __builtin_trap(); /* the whole file opened */
    if (st != FE_OK) return;
    if (!fe_gguf_header_only(h)) __builtin_trap();
    for (size_t i = 0; i < fe_gguf_tensor_count(h); i++) {
        const fe_gguf_tensor *t = fe_gguf_tensor_at(h, i);
        if (t->data || fe_gguf_tensor_find(h, t->name) != t) __builtin_trap();
        const fe_gguf_tensor *u = g ? fe_gguf_tensor_at(g, i) : NULL;
        if (g && (!u || strcmp(u->name, t->name) || u->offset != t->offset || u->n_bytes != t->n_bytes))
            __builtin_trap();
    }
    if (g && fe_gguf_tensor_count(g) != fe_gguf_tensor_count(h)) __builtin_trap();
    fe_lm_config c;
    if (fe_lm_config_from_gguf(h, &c, &err) == FE_OK && fe_lm_config_validate(&c, &err) != FE_OK)
        __builtin_trap();
    fe_gguf_close(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_gguf *g = NULL;
    fe_error err;
    fe_status st = fe_gguf_open_memory(data, size, "fuzz.gguf", &g, &err);
    check_header_only(data, size, g);
    if (st != FE_OK) {
        if (st != FE_E_FORMAT) __builtin_trap(); /* memory input: only format errors */
        return 0;
    }
    volatile unsigned sink = 0;
    for (size_t i = 0; i < fe_gguf_tensor_count(g); i++) {
        const fe_gguf_tensor *t = fe_gguf_tensor_at(g, i), *u = NULL;
        if (t->n_bytes)
            sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->n_bytes - 1];
        if (fe_gguf_tensor_find(g, t->name) != t) __builtin_trap();
        st = fe_gguf_tensor_get(g, t->name, &u, &err);
        if (st != (t->readable ? FE_OK : FE_E_UNSUPPORTED)) __builtin_trap();
        if (t->readable && t->n_bytes != fe_dtype_bytes(t->dtype, t->n_elements)) __builtin_trap();
    }
    for (size_t i = 0; i < fe_gguf_kv_count(g); i++) {
        const fe_gguf_kv *kv = fe_gguf_kv_at(g, i);
        if (fe_gguf_find(g, fe_gguf_kv_key(kv)) != kv) __builtin_trap();
        uint32_t u;
        int64_t l;
        float f;
        bool b;
        const char *s;
        size_t n;
        int32_t x;
        fe_gguf_get_u32(kv, &u, &err);
        fe_gguf_get_i64(kv, &l, &err);
        fe_gguf_get_f32(kv, &f, &err);
        fe_gguf_get_bool(kv, &b, &err);
        if (fe_gguf_get_str(kv, &s, &n, &err) == FE_OK && n) sink += (uint8_t)s[n - 1];
        for (size_t j = 0; j < fe_gguf_array_len(kv); j++) {
            s = fe_gguf_array_str(kv, j, &n);
            if (s && n) sink += (uint8_t)s[n - 1];
            fe_gguf_array_i32(kv, j, &x);
            fe_gguf_array_f32(kv, j, &f);
        }
    }
    fe_lm_config c;
    if (fe_lm_config_from_gguf(g, &c, &err) == FE_OK && fe_lm_config_validate(&c, &err) != FE_OK)
        __builtin_trap();
    fe_tokenizer *tok = NULL;
    if (fe_tokenizer_from_gguf(g, &tok, &err) == FE_OK) {
        static const char text[] = "Hello a ab \xc3\xa9\n<start_of_turn>\xe2\x98\x83 \xff";
        int32_t *ids = NULL;
        size_t n = 0;
        if (fe_tokenizer_encode_alloc(tok, text, sizeof text - 1, false, true, &ids, &n, &err) == FE_OK)
            for (size_t i = 0; i < n; i++)
                if (ids[i] < 0 || ids[i] >= fe_tokenizer_n_vocab(tok)) __builtin_trap();
        fe_free(ids);
        fe_tokenizer_destroy(tok);
    }
    fe_gguf_close(g);
    return 0;
}
