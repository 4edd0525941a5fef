/* lm/format/gguf.h: reading GGUF checkpoints (versions 2 and 3) over a read-only mapping.
 *
 * Opening a file maps it and checks the whole header once: every count, length and
 * dimension against the bytes that are there, every key and tensor name for valid UTF-8
 * and uniqueness, every tensor's data for alignment, range and overlap. After a successful
 * open nothing read through this API can go past the mapping, so callers need no checks of
 * their own. A malformed file is FE_E_FORMAT, never a crash; the message names the file,
 * the field, the byte offset and the fix.
 *
 * Shapes: GGUF lists a tensor's dims innermost first (ne[0] is the contiguous axis); the
 * tensors here are in ferrum order, outermost first, so GGUF [576, 49152] is ferrum
 * (49152, 576) row-major.
 *
 * Tensor types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q4_K and Q6_K map to ferrum dtypes.
 * Any other GGML type (Q5_K, IQ2_XS, ...) still opens, so a file's metadata stays readable, but asking for
 * such a tensor with fe_gguf_tensor_get is refused naming the tensor and its type.
 *
 * Lifetimes: every pointer handed out (kvs, strings, tensors, data) lives until
 * fe_gguf_close. Strings from the metadata are pointer + length into the mapping, not
 * NUL-terminated; keys and tensor names are NUL-terminated copies. A file changed or
 * truncated by someone else while mapped can still fault (SIGBUS): the mapping is shared
 * with the file, by design, so that weights are never copied. */
#ifndef FE_LM_GGUF_H
#define FE_LM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_gguf fe_gguf;
typedef struct fe_gguf_kv fe_gguf_kv;

/* GGUF metadata value types, with the file's numbering. */
typedef enum fe_gguf_type {
    FE_GGUF_U8 = 0,
    FE_GGUF_I8 = 1,
    FE_GGUF_U16 = 2,
    FE_GGUF_I16 = 3,
    FE_GGUF_U32 = 4,
    FE_GGUF_I32 = 5,
    FE_GGUF_F32 = 6,
    FE_GGUF_BOOL = 7,
    FE_GGUF_STRING = 8,
    FE_GGUF_ARRAY = 9,
    FE_GGUF_U64 = 10,
    FE_GGUF_I64 = 11,
    FE_GGUF_F64 = 12,
    FE_GGUF_TYPE_COUNT
} fe_gguf_type;

enum { FE_GGUF_MAX_DIMS = 4, FE_GGUF_DEFAULT_ALIGNMENT = 32 };

/* Largest element count (and dimension) a tensor may have: 2^40. */
#define FE_GGUF_MAX_ELEMENTS ((int64_t)1 << 40)

typedef struct fe_gguf_tensor {
    const char *name;      /* NUL-terminated, valid UTF-8 */
    uint32_t ggml_type;    /* the GGML type id as stored (0 F32, 1 F16, 2 Q4_0, ...) */
    const char *type_name; /* "F32", "Q4_1", "Q6_K", ... (static) */
    bool readable;         /* ferrum reads this type; `dtype` is meaningful only when true */
    fe_dtype dtype;
    int rank; /* 1..FE_GGUF_MAX_DIMS, as stored */
    /* ferrum order: shape[rank-1] is the contiguous axis (GGUF ne[0]); the rest are 0 */
    int64_t shape[FE_GGUF_MAX_DIMS];
    int64_t n_elements;
    uint64_t offset;  /* of the data, in bytes from the start of the file */
    size_t n_bytes;   /* of the data */
    const void *data; /* into the mapping, aligned to the file's alignment from its start;
                       * NULL when the file was opened header-only */
} fe_gguf_tensor;

/* Gives the resident pages of the metadata (everything before the first tensor's data: the
 * tokenizer's strings, the tensor table) back to the system once the config, tokenizer and
 * weights are built: they would otherwise stay resident beside the weights. Pointers into
 * them stay valid (a later read faults them in again from the file). No-op for buffers and
 * header-only readers. */
void fe_gguf_release_metadata(fe_gguf *g);
/* Drops this process's pages of [p, p + n) (the whole pages inside it) when the range lies in
 * g's mapping: clean private file pages, read again from the file if touched later. For a
 * weight read only through a layout made from it (graph.h's fe_layout_store). */
void fe_gguf_drop_pages(fe_gguf *g, const void *p, size_t n);
/* The file's bytes copied into memory at the same addresses (fe_mapped_read_in; the
 * metadata's pages released again after); progress gets the bytes copied so far. */
fe_status fe_gguf_read_in(fe_gguf *g, void (*progress)(void *user, size_t done), void *user,
                          fe_error *err);
bool fe_gguf_in_memory(const fe_gguf *g);
/* fe_mapped_populate of its mapping: the pages still read faulted in. */
void fe_gguf_populate(fe_gguf *g, void (*progress)(void *user, size_t done), void *user);
/* fe_mapped_huge of its mapping: the file's pages map as huge pages already. */
bool fe_gguf_mapped_huge(const fe_gguf *g);

/* Maps and checks the GGUF file at `path`. On success *out is a new reader the caller
 * releases with fe_gguf_close. Returns FE_E_IO when the file cannot be opened or mapped,
 * FE_E_FORMAT when it is not a well-formed GGUF v2/v3 file (message: file, field, fix),
 * FE_E_NOMEM; on error *out is NULL and the message is in err (NULL allowed). */
fe_status fe_gguf_open(const char *path, fe_gguf **out, fe_error *err);

/* The same over a caller's buffer, which must stay alive and unchanged until
 * fe_gguf_close; `name` (copied) stands for the file in messages. Same errors, less IO. */
fe_status fe_gguf_open_memory(const void *data, size_t size, const char *name, fe_gguf **out,
                              fe_error *err);

/* fe_gguf_open / fe_gguf_open_memory reading the header alone, for tracing a model
 * without its weights: metadata and the tensor table (names, types, shapes, sizes,
 * offsets) are checked as above, offsets for alignment and overlap within 2^62 bytes, but
 * nothing past the tensor table is read or required — a file whose data section is
 * truncated or missing opens — and every tensor's data is NULL. */
fe_status fe_gguf_open_header(const char *path, fe_gguf **out, fe_error *err);
fe_status fe_gguf_open_memory_header(const void *data, size_t size, const char *name,
                                     fe_gguf **out, fe_error *err);

/* Unmaps and frees. NULL allowed. Every pointer obtained from `g` dies here. */
void fe_gguf_close(fe_gguf *g);

/* The path (or name) given at open; the format version (2 or 3); the data alignment in
 * bytes (general.alignment, default 32); the size of the mapping in bytes. */
const char *fe_gguf_path(const fe_gguf *g);
uint32_t fe_gguf_version(const fe_gguf *g);
size_t fe_gguf_alignment(const fe_gguf *g);
size_t fe_gguf_size(const fe_gguf *g);
/* Whether `g` was opened header-only (its tensors' data are NULL). */
bool fe_gguf_header_only(const fe_gguf *g);

/* ---- metadata ---- */

/* The entry whose key is `key`, or NULL when there is none. */
const fe_gguf_kv *fe_gguf_find(const fe_gguf *g, const char *key);
/* Entries in file order: count, and the i-th (NULL when i >= count). */
size_t fe_gguf_kv_count(const fe_gguf *g);
const fe_gguf_kv *fe_gguf_kv_at(const fe_gguf *g, size_t i);
/* The entry's key (NUL-terminated) and value type. */
const char *fe_gguf_kv_key(const fe_gguf_kv *kv);
fe_gguf_type fe_gguf_kv_type(const fe_gguf_kv *kv);
/* A GGUF type's name ("u32", "string", "array"...); "?" when out of range. */
const char *fe_gguf_type_name(fe_gguf_type t);

/* Typed getters. Each returns FE_OK and writes *out, FE_E_NOTFOUND when kv is NULL, or
 * FE_E_FORMAT (message naming the file, key and the type found) when the value does not
 * have the type or does not fit: u32 and i64 take any integer type whose value fits; f32
 * takes f32 or f64 (f64 rounded); bool takes bool; str takes string and yields a pointer
 * into the mapping and a length (no NUL; may contain any bytes). *out is untouched on error. */
fe_status fe_gguf_get_u32(const fe_gguf_kv *kv, uint32_t *out, fe_error *err);
fe_status fe_gguf_get_i64(const fe_gguf_kv *kv, int64_t *out, fe_error *err);
fe_status fe_gguf_get_f32(const fe_gguf_kv *kv, float *out, fe_error *err);
fe_status fe_gguf_get_bool(const fe_gguf_kv *kv, bool *out, fe_error *err);
fe_status fe_gguf_get_str(const fe_gguf_kv *kv, const char **out, size_t *len, fe_error *err);

/* Arrays (GGUF arrays hold scalars or strings; arrays of arrays are refused at open).
 * Length: the element count, 0 when kv is NULL or not an array. Type: the element type,
 * FE_GGUF_TYPE_COUNT when kv is not an array. */
size_t fe_gguf_array_len(const fe_gguf_kv *kv);
fe_gguf_type fe_gguf_array_type(const fe_gguf_kv *kv);
/* The i-th string of a string array: pointer into the mapping (no NUL) and *len its byte
 * length. NULL (and *len 0) when kv is not a string array or i is past the end. O(1). */
const char *fe_gguf_array_str(const fe_gguf_kv *kv, size_t i, size_t *len);
/* The i-th element of an integer array as i32, or of an f32/f64 array as f32. FE_E_DTYPE
 * when the element type is not one these take, FE_E_BOUNDS when i is past the end or the
 * value does not fit in i32. No message: these are called once per token. */
fe_status fe_gguf_array_i32(const fe_gguf_kv *kv, size_t i, int32_t *out);
fe_status fe_gguf_array_f32(const fe_gguf_kv *kv, size_t i, float *out);
/* The elements of a u8 or i8 array as bytes (a blob such as a precompiled charsmap): a
 * pointer into the mapping and *n its length; NULL (*n 0) for any other kv. */
const unsigned char *fe_gguf_array_bytes(const fe_gguf_kv *kv, size_t *n);

/* ---- tensors ---- */

/* Tensors in file order: count, and the i-th (NULL when i >= count), whatever its type. */
size_t fe_gguf_tensor_count(const fe_gguf *g);
const fe_gguf_tensor *fe_gguf_tensor_at(const fe_gguf *g, size_t i);
/* The tensor named `name`, whatever its type; NULL when there is none. O(log n). */
const fe_gguf_tensor *fe_gguf_tensor_find(const fe_gguf *g, const char *name);

/* The tensor named `name`, for loading: FE_E_NOTFOUND when the file has none, and
 * FE_E_UNSUPPORTED, naming the tensor and its type, when its type is not one ferrum reads
 * ("tensor blk.0.ffn_down.weight has type Q6_K, which ferrum does not read; ..."). */
fe_status fe_gguf_tensor_get(const fe_gguf *g, const char *name, const fe_gguf_tensor **out,
                             fe_error *err);

/* fe_gguf_tensor_get, then a strict check of the shape (ferrum order): FE_E_SHAPE naming
 * the tensor, the file's shape and the expected one when they differ. */
fe_status fe_gguf_tensor_expect(const fe_gguf *g, const char *name, int rank,
                                const int64_t *shape, const fe_gguf_tensor **out,
                                fe_error *err);

#endif
