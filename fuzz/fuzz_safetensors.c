/* fuzz/fuzz_safetensors.c: libFuzzer target for the safetensors reader. Whatever opens
 * must be readable end to end: every tensor's data, and lookups by name. Opened
 * header-only, whatever opens whole opens too, with the same tensors and no data. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lm/format/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header-only open agrees with the whole one (st NULL when that failed). */
static void check_header_only(const uint8_t *data, size_t size, const fe_safetensors *st) {
    fe_safetensors *h = NULL;
    fe_error err;
    fe_status s = fe_safetensors_open_memory_header(data, size, "fuzz.safetensors", &h, &err);
    if (s != FE_OK && s != FE_E_FORMAT && s != FE_E_NOMEM) __builtin_trap();
    if (st && s != FE_OK) __builtin_trap(); /* the whole file opened */
    if (s != FE_OK) return;
    if (!fe_safetensors_header_only(h)) __builtin_trap();
    if (st && fe_safetensors_count(st) != fe_safetensors_count(h)) __builtin_trap();
    for (size_t i = 0; i < fe_safetensors_count(h); i++) {
        const fe_st_tensor *t = fe_safetensors_at(h, i), *u = st ? fe_safetensors_at(st, i) : NULL;
        if (t->data || fe_safetensors_find(h, t->name) != t) __builtin_trap();
        if (u && (strcmp(u->name, t->name) || u->offset != t->offset || u->n_bytes != t->n_bytes))
            __builtin_trap();
    }
    fe_safetensors_close(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_safetensors *st = NULL;
    fe_error err;
    fe_status s = fe_safetensors_open_memory(data, size, "fuzz.safetensors", &st, &err);
    check_header_only(data, size, st);
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
