/* lm/format/gguf_internal.h: the reader's layout, shared by gguf.c (open and checks) and
 * gguf_meta.c (metadata getters, tensor lookup). Not for use outside src/lm/gguf*.
 *
 * Invariant kept by gguf.c: after a successful open every kv's value bytes, every string
 * array element and every tensor's data (unless opened header-only: data NULL) lie inside
 * the mapping, keys and tensor names are
 * unique, and the `by_key` / `by_name` indexes are sorted with strcmp. */
#ifndef FE_LM_GGUF_INTERNAL_H
#define FE_LM_GGUF_INTERNAL_H

#include "lm/format/gguf.h"
#include "lm/format/mapped.h"

struct fe_gguf_kv {
    const fe_gguf *g;
    char *key; /* NUL-terminated copy */
    fe_gguf_type type;
    fe_gguf_type elem;        /* arrays: element type */
    size_t count;             /* arrays: element count */
    size_t len;               /* strings: byte length */
    const unsigned char *val; /* value bytes (strings: first byte; arrays: first element) */
    uint64_t *str_off;        /* string arrays: element i's length prefix is at val+str_off[i] */
};

struct fe_gguf {
    char *path;
    fe_mapped map;
    bool header_only; /* opened header-only: tensors' data are NULL, the data section unread */
    uint32_t version;
    size_t alignment;
    size_t n_kv;
    fe_gguf_kv *kv;
    const fe_gguf_kv **by_key;
    size_t n_tensors;
    fe_gguf_tensor *tensors;
    const fe_gguf_tensor **by_name;
};

/* A GGML tensor type: name, elements a block, bytes a block, and the ferrum dtype when
 * ferrum reads it. NULL for ids GGML never defined or has removed. */
typedef struct fe_ggml_type {
    const char *name;
    uint32_t block, size;
    bool readable;
    fe_dtype dtype;
} fe_ggml_type;

const fe_ggml_type *fe_ggml_type_info(uint32_t id);

/* Bytes a scalar of type t takes in the file; 0 for strings, arrays and bad types. */
size_t fe_gguf_scalar_size(fe_gguf_type t);

#endif
