/* lm/format/safetensors.h: reading safetensors checkpoints over read-only mappings: one file, or
 * a sharded checkpoint through its model.safetensors.index.json (weight_map).
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {...}}), then the data; offsets count from the end of the header.
 * Opening checks every entry: dtype known, shape sane (each dim and the element count at
 * most 2^40), end - begin equal to the element count times the dtype size, data inside the
 * file, no two tensors overlapping, no name twice (in a file or across shards). A malformed
 * file is FE_E_FORMAT naming the file, the tensor and the rule, never a crash.
 *
 * Dtypes: BF16, F16 and F32 map to ferrum dtypes. The other safetensors dtypes (F64, I64,
 * I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2, ...) open, and asking for such a tensor with
 * fe_safetensors_get is refused by name; a dtype safetensors does not define is
 * FE_E_FORMAT at open.
 *
 * Lifetimes: every pointer handed out (tensors, names, data) lives until
 * fe_safetensors_close. Data pointers are into the mapping and are aligned only as well as
 * the file's layout makes them (the format does not promise alignment). */
#ifndef FE_LM_SAFETENSORS_H
#define FE_LM_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_safetensors fe_safetensors;

enum { FE_ST_MAX_RANK = 8 };

typedef struct fe_st_tensor {
    const char *name;       /* NUL-terminated */
    const char *dtype_name; /* as in the file: "BF16", "I64", ... (static) */
    bool readable;          /* ferrum reads this dtype; `dtype` is meaningful only when true */
    fe_dtype dtype;
    int rank;                       /* 0..FE_ST_MAX_RANK (0: a scalar) */
    int64_t shape[FE_ST_MAX_RANK];  /* row-major, outermost first; unused entries 0 */
    int64_t n_elements;
    size_t n_bytes;
    uint64_t offset;   /* of the data, in bytes from the start of its shard file */
    const void *data;  /* into the mapping of the shard that holds it; NULL when the
                        * checkpoint was opened header-only */
    const char *file;  /* the path of that shard */
} fe_st_tensor;

/* Opens `path`: a .safetensors file; a model.safetensors.index.json (its shards are read
 * from the same folder); or a folder holding model.safetensors.index.json or
 * model.safetensors. On success *out is a new reader the caller releases with
 * fe_safetensors_close. FE_E_IO when a file cannot be opened or mapped, FE_E_NOTFOUND when
 * a folder holds neither file, FE_E_FORMAT when a file or the index is malformed (shard
 * names with '/' or "..", a weight_map entry whose shard lacks the tensor, ...), FE_E_NOMEM.
 * On error *out is NULL and the message is in err (NULL allowed). */
fe_status fe_safetensors_open(const char *path, fe_safetensors **out, fe_error *err);

/* One safetensors file held in a caller's buffer, which must stay alive and unchanged
 * until fe_safetensors_close; `name` (copied) stands for the file in messages. */
fe_status fe_safetensors_open_memory(const void *data, size_t size, const char *name,
                                     fe_safetensors **out, fe_error *err);

/* fe_safetensors_open / fe_safetensors_open_memory reading the headers alone, for tracing
 * a model without its weights: every header (and the index) is checked as above except
 * that data offsets are not checked against the file's end, so a shard whose data is
 * truncated or missing opens; no data byte is read and every tensor's data is NULL. */
fe_status fe_safetensors_open_header(const char *path, fe_safetensors **out, fe_error *err);
fe_status fe_safetensors_open_memory_header(const void *data, size_t size, const char *name,
                                            fe_safetensors **out, fe_error *err);

/* Unmaps and frees. NULL allowed. Every pointer obtained from `st` dies here. */
void fe_safetensors_close(fe_safetensors *st);
/* As fe_gguf_drop_pages, in whichever shard's mapping holds [p, p + n). */
void fe_safetensors_drop_pages(fe_safetensors *st, const void *p, size_t n);
/* As fe_gguf_read_in, shard by shard (progress: bytes of the shard being copied). */
fe_status fe_safetensors_read_in(fe_safetensors *st, void (*progress)(void *user, size_t done),
                                 void *user, fe_error *err);
/* As fe_gguf_populate, shard by shard. */
void fe_safetensors_populate(fe_safetensors *st, void (*progress)(void *user, size_t done),
                             void *user);
/* Whether every shard (at least one) it mapped is in memory. */
bool fe_safetensors_in_memory(const fe_safetensors *st);
/* Whether every shard (at least one) maps as huge pages already (fe_mapped_huge). */
bool fe_safetensors_mapped_huge(const fe_safetensors *st);

/* Tensors, in order of shard, then data offset: count, and the i-th (NULL when i >= count),
 * whatever its dtype. */
size_t fe_safetensors_count(const fe_safetensors *st);
const fe_st_tensor *fe_safetensors_at(const fe_safetensors *st, size_t i);
/* The tensor named `name`, whatever its dtype; NULL when there is none. O(log n). */
const fe_st_tensor *fe_safetensors_find(const fe_safetensors *st, const char *name);
/* Number of files (1, or the shards of an index). */
size_t fe_safetensors_file_count(const fe_safetensors *st);
/* Whether `st` was opened header-only (its tensors' data are NULL). */
bool fe_safetensors_header_only(const fe_safetensors *st);

/* The tensor named `name`, for loading: FE_E_NOTFOUND when there is none, FE_E_UNSUPPORTED
 * naming the tensor and its dtype when ferrum does not read the dtype. */
fe_status fe_safetensors_get(const fe_safetensors *st, const char *name,
                             const fe_st_tensor **out, fe_error *err);

/* fe_safetensors_get, then a strict shape check: FE_E_SHAPE naming the tensor, its shape
 * and the expected one when they differ. */
fe_status fe_safetensors_expect(const fe_safetensors *st, const char *name, int rank,
                                const int64_t *shape, const fe_st_tensor **out,
                                fe_error *err);

#endif
