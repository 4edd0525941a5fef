/* core/quant.h: the GGUF block formats q8_0, q4_0, q4_1, q5_0 and the K super-blocks q4_k
 * and q6_k (quant_k.c), as plain C: decoding a row of blocks to f32 (the reference every
 * quantized kernel is checked against, and the convert-at-load path) and encoding f32 into
 * blocks (for tests and conversion); plus q8_k, the int8 activations K-block dot products
 * take (llama.cpp's Q8_K).
 *
 * Layouts (32 elements a block, little-endian f16 scales):
 *   q8_0: d, qs[32] (i8)                    x[j] = d * qs[j]
 *   q4_0: d, qs[16] (nibbles)               x[j] = d * ((qs[j] & 15) - 8),  x[j+16] = d * ((qs[j] >> 4) - 8)
 *   q4_1: d, m, qs[16] (nibbles)            x[j] = d * (qs[j] & 15) + m,    x[j+16] = d * (qs[j] >> 4) + m
 *   q5_0: d, qh (u32), qs[16]               q = nibble | bit of qh << 4 (bit j for element j, bit
 *                                           j + 16 for element j + 16); x = d * (q - 16)
 * K super-blocks (256 elements):
 *   q4_k: d, dmin, scales[12], qs[128]      8 sub-blocks of 32, each a 6-bit scale sc and min m
 *                                           (packed: fe_q4_k_scale_min); 64 elements a run of
 *                                           32 bytes, low nibbles the first sub-block, high the
 *                                           second; x = (d * sc) * q - (dmin * m)
 *   q6_k: ql[128], qh[64], scales[16] (i8), d
 *                                           16 sub-blocks of 16, q = 4 low bits | 2 high bits
 *                                           << 4 (ggml's interleave: fe_q6_k_q), x = (d * sc) * (q - 32)
 *   q8_k: d (f32), qs[256] (i8), bsums[16]  x = d * q; bsums: the sums of each 16 q */
#ifndef FE_CORE_QUANT_H
#define FE_CORE_QUANT_H

#include <stdint.h>

#include "ferrum/core.h"

enum { FE_QBLOCK = 32 };

typedef struct { uint16_t d; int8_t qs[32]; } fe_block_q8_0;
typedef struct { uint16_t d; uint8_t qs[16]; } fe_block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } fe_block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } fe_block_q5_0;

enum { FE_QK = 256 };
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } fe_block_q4_k;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } fe_block_q6_k;
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } fe_block_q8_k;

/* q4_k's 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes. */
static inline void fe_q4_k_scale_min(const uint8_t *sc, int j, int *scale, int *min) {
    if (j < 4) {
        *scale = sc[j] & 63;
        *min = sc[j + 4] & 63;
    } else {
        *scale = (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
        *min = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    }
}
/* q4_k's nibble of element e (0..255) of block b. */
static inline int fe_q4_k_q(const fe_block_q4_k *b, int e) {
    int run = e / 64, i = e % 64;
    uint8_t v = b->qs[32 * run + i % 32];
    return i < 32 ? v & 15 : v >> 4;
}
/* q6_k's unsigned 6-bit q (0..63) of element e (0..255) of block b: halves of 128, each
 * four runs of 32 sharing ql (low then high nibbles of 64 bytes) and qh (2 bits each). */
static inline int fe_q6_k_q(const fe_block_q6_k *b, int e) {
    int h = e / 128, r = (e % 128) / 32, l = e % 32;
    const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
    int lo = r & 1 ? ql[l + 32] : ql[l];
    lo = r < 2 ? lo & 15 : lo >> 4;
    return lo | ((qh[l] >> (2 * r)) & 3) << 4;
}

/* n elements of src (dtype dt: f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q4_k or q6_k; n a
 * multiple of the block for block types) written to dst as f32. Returns false for a dtype it
 * does not decode. */
bool fe_dequant_row(fe_dtype dt, const void *src, float *dst, int64_t n);
/* n floats (a multiple of the block) encoded into q8_0 / q4_0 / q4_1 / q5_0 blocks, rounding
 * as GGML's reference quantizers do, or q4_k / q6_k super-blocks (quant_k.c: one pass of
 * min/max scales, simpler than GGML's search; the round trip is within half a step of each
 * sub-block's grid plus its 6/8-bit scale's rounding). Returns false for another dtype. */
bool fe_quant_row(fe_dtype dt, const float *src, void *dst, int64_t n);

/* The K super-blocks (quant_k.c), n a multiple of 256. */
void fe_dequant_q4_k(const fe_block_q4_k *b, float *dst, int64_t n);
void fe_dequant_q6_k(const fe_block_q6_k *b, float *dst, int64_t n);
void fe_quant_q4_k(const float *src, fe_block_q4_k *b, int64_t n);
void fe_quant_q6_k(const float *src, fe_block_q6_k *b, int64_t n);

#endif
