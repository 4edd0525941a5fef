/* fuzz/fuzz_gguf.c: libFuzzer target for the GGUF reader and the config read from its
 * metadata. Whatever opens must be readable end to end: every tensor's data, every string
 * array element, every getter; and a config that reads must validate. */
#include <stdint.h>
#include <stdio.h>

#include "lm/config.h"
#include "lm/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_gguf *g = NULL;
    fe_error err;
    fe_status st = fe_gguf_open_memory(data, size, "fuzz.gguf", &g, &err);
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
    fe_gguf_close(g);
    return 0;
}
