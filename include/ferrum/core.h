/* ferrum/core.h: status codes, dtypes and their exact conversions, the error record.
 *
 * Every fallible ferrum function returns an fe_status. The human message (what went wrong,
 * where, and how to fix it) is kept on the object that owns the operation, or, for functions
 * that create an object, in a caller-owned fe_error passed as the last argument (may be NULL). */
#ifndef FERRUM_CORE_H
#define FERRUM_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FE_API __attribute__((visibility("default")))
#else
#define FE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define FE_VERSION "0.1.0"

typedef enum fe_status {
    FE_OK = 0,
    FE_E_INVALID,     /* an argument breaks a rule (a missing name, a negative size...) */
    FE_E_SHAPE,       /* shapes disagree */
    FE_E_DTYPE,       /* a dtype the operation does not take */
    FE_E_BOUNDS,      /* a per-call bound or index past its view */
    FE_E_NOMEM,       /* an allocation failed */
    FE_E_IO,          /* a file could not be read or written */
    FE_E_FORMAT,      /* malformed input (JSON, checkpoint, tokenizer) */
    FE_E_UNSUPPORTED, /* valid, but not implemented on this device or build */
    FE_E_NOTFOUND,    /* a name that is not in the registry or file */
    FE_E_STATE,       /* the object is not in a state that allows the call */
    FE_STATUS_COUNT
} fe_status;

/* A short constant name for a status ("FE_E_SHAPE: shapes disagree"). Never NULL. */
FE_API const char *fe_status_str(fe_status s);

/* A status with its message. Caller-owned; pass NULL where the message is not wanted. */
typedef struct fe_error {
    fe_status status;
    char message[512];
} fe_error;

typedef enum fe_dtype {
    FE_DTYPE_F32 = 0,
    FE_DTYPE_BF16,
    FE_DTYPE_F16,
    FE_DTYPE_I32,
    FE_DTYPE_I8,
    FE_DTYPE_U8,
    /* GGUF block-quantized weights: 32 elements a block, a scale (and a min) per block.
     * A tensor of these has its innermost axis contiguous and a multiple of 32 long. */
    FE_DTYPE_Q8_0, /* f16 scale d, 32 x i8 q: x = d * q (34 bytes) */
    FE_DTYPE_Q4_0, /* f16 scale d, 16 bytes of nibbles: x = d * (q - 8) (18 bytes) */
    FE_DTYPE_Q4_1, /* f16 scale d, f16 min m, 16 bytes of nibbles: x = d * q + m (20 bytes) */
    FE_DTYPE_Q5_0, /* f16 scale d, 32 high bits, 16 bytes of nibbles: x = d * (q - 16) (22 bytes) */
    /* GGUF "K" super-blocks: 256 elements a block, in 8 or 16 sub-blocks with their own
     * 6- or 8-bit scales (core/quant.h gives the layouts). Rows a multiple of 256 long. */
    FE_DTYPE_Q4_K, /* f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles (144 bytes) */
    FE_DTYPE_Q6_K, /* 128 bytes low nibbles, 64 bytes high 2 bits, 16 i8 scales, f16 d (210 bytes) */
    FE_DTYPE_COUNT
} fe_dtype;

typedef struct fe_dtype_traits {
    const char *name; /* "f32", "bf16", "q8_0", ... */
    size_t size;      /* bytes per element, or per block for block types */
    int block;        /* elements per block: 1 for plain types, 32 for q8_0/q4_0/q4_1/q5_0,
                       * 256 for q4_k/q6_k */
    bool is_float;
    bool is_signed;
} fe_dtype_traits;

/* Traits of a dtype; NULL when `t` is not a dtype. */
FE_API const fe_dtype_traits *fe_dtype_info(fe_dtype t);
/* Bytes that n elements take (n a multiple of the block for block types). */
FE_API size_t fe_dtype_bytes(fe_dtype t, int64_t n);
/* The dtype named `name` ("f32", "bf16"...). FE_E_NOTFOUND when there is none. */
FE_API fe_status fe_dtype_from_name(const char *name, fe_dtype *out);

/* Exact conversions. f32 -> bf16/f16 round to nearest even; NaN stays NaN (quiet);
 * overflow goes to infinity; f16 subnormals are kept. */
FE_API uint16_t fe_f32_to_bf16(float f);
FE_API float fe_bf16_to_f32(uint16_t h);
FE_API uint16_t fe_f32_to_f16(float f);
FE_API float fe_f16_to_f32(uint16_t h);

/* Monotonic clock in nanoseconds. */
FE_API uint64_t fe_time_ns(void);

#ifdef __cplusplus
}
#endif
#endif
