/* device/cpu/amx.h: what the AMX kernels share (the GEMM's amx.inc, the attention's
 * amx.inc): the tile configuration and the compiler barrier GCC's tile intrinsics need.
 * Included only by AVX-512 builds; every function here carries its own target attribute,
 * and runs only where the device saw the tiles (device.c: amx_bf16 / amx_int8, after
 * ARCH_REQ_XCOMP_PERM). A run loads a configuration and releases the tiles at its end
 * (_tile_release), so a worker holds no AMX state between steps. */
#ifndef FE_DEVICE_CPU_AMX_H
#define FE_DEVICE_CPU_AMX_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* GCC's tile intrinsics are asm statements that do not tell the compiler what memory they
 * read: LDTILECFG names only the configuration's first 8 bytes, TILELOADD none. So stores
 * that only a tile instruction reads (the configuration's rows and widths, a zero-padded
 * copy) look dead, and at -O1 (make ubsan) were dropped: wrong sums, ubsan's catalog failed
 * on q5_0. This barrier, with p's address given to it, makes every store before it land:
 * put before each tile configuration and each run of tile loads that reads what plain
 * stores wrote (not in a loop of steps that reads only what a tile store wrote). */
#define FE_AMX_STORES_LAND(p) __asm__ volatile("" : : "r"(p) : "memory")

/* LDTILECFG's 64 bytes: palette 1, then bytes per row and rows of each tile */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} fe_amx_config;

/* Loads a configuration of the eight tiles: tile t has rows[t] rows of bytes[t] bytes. */
static __attribute__((target("amx-tile"), unused)) void
fe_amx_configure(const uint8_t rows[8], const uint16_t bytes[8]) {
    _Alignas(64) fe_amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) c.rows[t] = rows[t], c.colsb[t] = bytes[t];
    FE_AMX_STORES_LAND(&c);
    _tile_loadconfig(&c);
}

/* Two rows of 16 f32 (lo, hi) rounded to bf16 (vcvtne2ps2bf16: to nearest even) as 16 k-pair
 * words, word i = lo[i] in its low half and hi[i] in its high: a B tile's row of pairs of
 * TDPBF16PS, for the GEMM's widened block weights and the attention's p alike */
static inline __attribute__((target("avx512f,avx512bw,avx512bf16"), always_inline, unused))
__m512i fe_amx_bf16_pairs(__m512 lo, __m512 hi) {
    /* word i: halves i and 16 + i of vcvtne2ps2bf16's row (lo's 16, then hi's) */
    const __m512i mix = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25,
                                         9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
                                         17, 1, 16, 0);
    return _mm512_permutexvar_epi16(mix, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

#endif
