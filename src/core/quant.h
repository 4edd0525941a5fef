/* core/quant.h: the GGUF block formats q8_0, q4_0 and q4_1, as plain C: decoding a row
 * of blocks to f32 (the reference every quantized kernel is checked against, and the
 * convert-at-load path) and encoding f32 into blocks (for tests and conversion).
 *
 * Layouts (32 elements a block, little-endian f16 scales):
 *   q8_0: d, qs[32] (i8)                    x[j] = d * qs[j]
 *   q4_0: d, qs[16] (nibbles)               x[j] = d * ((qs[j] & 15) - 8),  x[j+16] = d * ((qs[j] >> 4) - 8)
 *   q4_1: d, m, qs[16] (nibbles)            x[j] = d * (qs[j] & 15) + m,    x[j+16] = d * (qs[j] >> 4) + m */
#ifndef FE_CORE_QUANT_H
#define FE_CORE_QUANT_H

#include <stdint.h>

#include "ferrum/core.h"

enum { FE_QBLOCK = 32 };

typedef struct { uint16_t d; int8_t qs[32]; } fe_block_q8_0;
typedef struct { uint16_t d; uint8_t qs[16]; } fe_block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } fe_block_q4_1;

/* n elements of src (dtype dt: f32, bf16, f16, q8_0, q4_0 or q4_1; n a multiple of 32 for
 * block types) written to dst as f32. Returns false for a dtype it does not decode. */
bool fe_dequant_row(fe_dtype dt, const void *src, float *dst, int64_t n);
/* n floats (a multiple of 32) encoded into q8_0 / q4_0 / q4_1 blocks, rounding as GGML's
 * reference quantizers do. Returns false for another dtype. */
bool fe_quant_row(fe_dtype dt, const float *src, void *dst, int64_t n);

#endif
