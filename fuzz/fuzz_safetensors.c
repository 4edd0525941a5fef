/* fuzz/fuzz_safetensors.c: libFuzzer target for the safetensors reader. Whatever opens
 * must be readable end to end: every tensor's data, and lookups by name. */
#include <stdint.h>
#include <stdio.h>

#include "lm/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_safetensors *st = NULL;
    fe_error err;
    fe_status s = fe_safetensors_open_memory(data, size, "fuzz.safetensors", &st, &err);
    if (s != FE_OK) {
        if (s != FE_E_FORMAT && s != FE_E_NOMEM) __builtin_trap();
        return 0;
    }
    volatile unsigned sink = 0;
    for (size_t i = 0; i < fe_safetensors_count(st); i++) {
        const fe_st_tensor *t = fe_safetensors_at(st, i), *u = NULL;
        if (t->n_bytes)
            sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->n_bytes - 1];
        if (fe_safetensors_find(st, t->name) != t) __builtin_trap();
        s = fe_safetensors_get(st, t->name, &u, &err);
        if (s != (t->readable ? FE_OK : FE_E_UNSUPPORTED)) __builtin_trap();
    }
    fe_safetensors_close(st);
    return 0;
}
