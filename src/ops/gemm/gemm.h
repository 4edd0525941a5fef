/* ops/gemm/gemm.h: what the GEMM operator's files share: operand, param, tunable, extent and
 * value indices, the micro-tile of each ISA, and the plan (block sizes, workspace layout and
 * the work split) that plan.c computes once for the declaration and for every kernel.
 *
 * GEMM: C (M, N) = epilogue(A (M, K) . B (N, K)^T), A f32 rows, B as a checkpoint stores it
 * (f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q4_k, q6_k), one row of B per column of C. The
 * epilogue, in order: acc (+ bias) -> activation (x multiplier) -> (+ residual) -> clamp;
 * the multiplier, an (M, N) operand after c, is what a gated product's ElementwiseMul folds
 * into (SwiGLU's up GEMM times the gate's SiLU: fold.c). Per-call values:
 * rows (the first rows of A and C; later rows of C untouched) and k (the first k columns of
 * A and B contribute).
 * c must not overlap an input (check() refuses it): it holds partial sums between K blocks.
 *
 * act_bf16 (B bf16 only): A is rounded to bf16 (to nearest, ties to even; a denormal, below
 * 2^-126, becomes zero), so every product is a product of two bf16 values, exact in f32, and
 * the products are summed in f32. (A denormal in B may count as zero as well, as vdpbf16ps
 * takes it: < 2^-126 |a| per product.) The float64 reference rounds A the same way.
 *
 * Kernels (kernels.inc, per ISA) are BLIS-style: B is packed into NR-wide panels of KC rows
 * (widened or dequantised while packing), A into MR-tall panels, and an MR x NR register
 * micro-kernel runs over them; see kernels.inc for the loop nest. One f32 micro-kernel per
 * ISA; with act_bf16 on a device with AVX512_BF16 (tunable bf16_dot) the AVX-512 kernel runs
 * vdpbf16ps instead, in one of two designs: bf16_dot = 1 (the default) reads B as k-pairs of
 * bf16 in panels of 32 rows, from B's layout where the caller made one (fe_op.layout: a
 * graph does for its weights, once) and else packed per call into the same words, A packed
 * the same way, 14 x 32 register tiles over K blocks 2048 deep (bf16dot.inc); bf16_dot = 2
 * packs nothing of B: it rounds A's rows to bf16 once per block and dots them with B's rows
 * as stored, 32 columns a vector, reducing each sum across lanes at the end of a K block
 * (bf16rows.inc); bf16_dot = 3, where the device has AMX-BF16, reads the same k-pair panels
 * as 1 into AMX tiles and multiplies 32 x 32 blocks of C by TDPBF16PS (amx.inc). Elsewhere
 * act_bf16 rounds A while packing and takes the f32 path.
 *
 * act_int8 (B q8_0, q4_0, q4_1 or q5_0): A's rows are quantised once per call to int8 per 32-block
 * exactly as GEMV's act_int8 quantises x (fe_gemv_quant_x: dx = max|x| / 127, q =
 * round-half-even(x / dx); columns past the bound k count as zero), and each block's dot
 * with B is an exact integer sum, scaled after: d dx sum(wq xq) (q8_0), d dx sum((q - 8) xq)
 * (q4_0), d dx sum(q xq) + m dx sum(xq) (q4_1), d dx sum((q - 16) xq) (q5_0), the block terms summed in f32 (the double
 * reference: the same integers, scaled and summed in double). Kernels (int8.inc): B is
 * packed per K block into panels of GM_NR_I8 columns as k-quads of u8 (q8_0 w ^ 0x80 under
 * VNNI, raw w for the 16-bit emulation; q4 nibbles 0..15, q5_0 0..31) with each block's d and m beside;
 * a GM_MR_I8 x GM_NR_I8 register tile keeps int32 sums s for the current block and adds
 * them into f32 at the block's end as (dx s + dxc) d, dxc = dx times the offset's
 * correction (-128, -8 or -16 times the block's sum of xq; s and the correction are exact in
 * f32, only the scaling rounds). tunable int8_dot: vpdpbusd (AVX512-VNNI) or vpmaddubsw +
 * vpmaddwd (q8_0 by sign transfer, |w| times sign(w) xq: pairs stay within int16), or AMX-INT8
 * tiles (amx.inc: the same panels with q8_0's w raw, one 32-block a tile product, each
 * block's int32 sums added in f32 as the register tile adds them).
 * q5_0 is int8.inc's as q4_0 is (stored 0..31, offset 16).
 * act_int8 over q4_k and q6_k: A per 256-block with its sums of 16, the
 * integer sums per sub-block times the sub-block's integer scale, the mins or offsets from
 * A's group sums, d dx S - dm dx T per scale block in f32 (kquant.inc, its own panels and
 * register tiles GM_MR_KQ x GM_NR_KQ).
 *
 * Workers split N (each packs only its own B panels, so B is read once in all; N is the
 * long axis of every weight: 576..262144) and split M as well where that costs less, B
 * panels, A panels and tiles counted (gm_split): when N has few micro-panels per worker, or
 * rows far outnumber columns (every worker packs all of A's rows it multiplies). */
#ifndef FE_OPS_GEMM_H
#define FE_OPS_GEMM_H

#include <stdint.h>
#include <string.h>

#include "ops/gemv/panel.h"
#include "ops/op.h"

enum { GM_A, GM_B, GM_BIAS, GM_RES, GM_C, GM_MUL };  /* operands (the multiplier last) */
enum { GM_P_ACT, GM_P_CMIN, GM_P_CMAX, GM_P_BF16, GM_P_INT8 }; /* params */
enum { GM_ACT_NONE, GM_ACT_SILU, GM_ACT_GELU, GM_ACT_GELU_ERF }; /* activation choices */
enum { GM_WIDTH, GM_MC, GM_NC, GM_KC, GM_DOT, GM_DOT8, GM_PANELS }; /* tunables */
enum { GM_DOT_OFF, GM_DOT_PACKED, GM_DOT_ROWS, GM_DOT_AMX }; /* bf16_dot choices */
/* resolved where it can run: GM_DOT_AMX where the device has AMX-BF16, else GM_DOT_PACKED */
#define GM_DOT_DEFAULT GM_DOT_PACKED
/* the bf16_dot designs that read B as k-pair panels of 32 rows (its layout, or packed per
 * run): the same words for the vdpbf16ps tiles and the AMX ones */
static inline bool gm_dot_reads_pairs(int64_t bf16_dot) {
    return bf16_dot == GM_DOT_PACKED || bf16_dot == GM_DOT_AMX;
}
enum { GM_LAYOUT_BF16_PAIRS = FE_LAYOUT_BF16_PAIRS32 }; /* B's layout (fe_op.layout format) */
enum { GM_M, GM_N, GM_K };                            /* extents */
enum { GM_V_ROWS, GM_V_K };                           /* per-call values */

/* Micro-tiles, rows x columns of C a register block holds. AVX-512: 28 zmm accumulators, two
 * B vectors, A broadcast from memory (32 registers); AVX2: 12 + 2 + 1 of 16 ymm. */
#define GM_MR_AVX512 14
#define GM_NR_AVX512 32
/* (AVX2: 5 x 16 and 3 x 32 ran the Llama 1B shape's BF16 prefill 4-8 % slower than 6 x 16) */
#ifndef GM_MR_AVX2 /* (overridable with -D for trying other tiles) */
#define GM_MR_AVX2 6
#define GM_NR_AVX2 16
#endif
#define GM_MR_SCALAR 4
#define GM_NR_SCALAR 4
#define GM_MAX_MR 16
/* bf16_dot = 2 (bf16rows.inc): rows of A x rows of B per register block, each accumulator a
 * zmm of partial sums over k: 24 accumulators, six B vectors and one A vector (31 zmm); ten
 * loads per 24 vdpbf16ps. */
#define GM_MR_ROWS 4
#define GM_NR_ROWS 6
/* bf16_dot = 3 (amx.inc): a 32 x 32 block of C in four AMX tiles, two of A, two of B */
#define GM_MR_AMX 32
#define GM_NR_AMX 32
/* act_int8 (int8.inc): rows of A x columns of C per register block: AVX-512 12 f32 and 12
 * int32 accumulators, two B vectors, one A broadcast; AVX2 4 + 4, one B vector, |B|, the
 * broadcast, ones. The scalar kernel dots B's rows as stored, in the scalar tile. */
#define GM_MR_I8_AVX512 6
#define GM_NR_I8_AVX512 32
/* (AVX2: 3 x 16 ran bench_gemm's q4_0, q4_1 and q5_0 cases 1-8 % faster than 4 x 8, but
 * SmolLM2's prefill alike and Gemma's 2 % slower; 4 x 16, 2 x 16 and 6 x 8 slower) */
#ifndef GM_MR_I8_AVX2 /* (overridable with -D for trying other tiles) */
#define GM_MR_I8_AVX2 4
#define GM_NR_I8_AVX2 8
#endif
/* AVX2 with AVX-VNNI (int8_dot = 1): 6 x 8, 6 int32 and 6 f32 accumulators, the B vector and
 * the broadcast (no |B|, no ones: 14 ymm); 6 and 8 rows ran bench_gemm's i8_512 cases 8-30 %
 * faster than 4 on a Xeon with AMX (FERRUM_ISA=avxvnni), 6 the most often */
#ifndef GM_MR_I8_AVX2_VNNI
#define GM_MR_I8_AVX2_VNNI 6
#endif
/* 4-byte words per column of a packed int8 B panel per 32-block: 8 k-quads, d and m */
#define GM_I8_BLOCK_WORDS 10
/* int8_dot = 2 (pairs16.inc: q8_0 on AVX2 by int16 k-pairs and vpmaddwd): 4 rows x 16
 * columns, 8 int32 sums, two B vectors, one broadcast of A; per column and 32-block 16
 * words of int16 pairs and d */
#ifndef GM_MR_W16_AVX2 /* (overridable with -D for trying other tiles) */
#define GM_MR_W16_AVX2 4
#define GM_NR_W16_AVX2 16
#endif
#define GM_W16_BLOCK_WORDS 17
enum { GM_DOT8_MADD, GM_DOT8_VNNI, GM_DOT8_PAIRS16, GM_DOT8_AMX }; /* int8_dot choices */
/* int8_dot = 3 (amx.inc): B's dtypes int8.inc packs (the K-quants keep their own design) */
static inline bool gm_amx8_serves(fe_dtype b) {
    return b == FE_DTYPE_Q8_0 || b == FE_DTYPE_Q4_0 || b == FE_DTYPE_Q4_1 || b == FE_DTYPE_Q5_0;
}
/* the block B act_bf16 takes on the AMX-BF16 tiles (widened per run from int8.inc's or
 * kquant.inc's panels) */
static inline bool gm_amx_blocks_serve(fe_dtype b) {
    return gm_amx8_serves(b) || b == FE_DTYPE_Q4_K || b == FE_DTYPE_Q6_K;
}
/* whether b_panels = 1 serves, on AVX2 or AVX-512 (the scalar kernel reads B's rows as
 * stored): act_int8 over q8_0, q4_0, q4_1 or q5_0 (B's int8 panels packed from the GEMV's
 * panel layout) or q4_k, q6_k (kquant.inc's panels from the same layout's blocks), act_bf16
 * over q8_0, q4_0, q4_1, q5_0, q4_k or q6_k on the AMX tiles (the same panels, widened to
 * bf16 k-pairs per call), or bf16 B on the
 * f32 path, bf16_dot = 0 (B's f32 panels widened from the k-pair
 * layout, FE_LAYOUT_BF16_PAIRS32, that the decode's GEMV panel = 1 reads: one copy of the
 * weight where the CPU has no bf16 dot product) */
static inline bool gm_panels_serve(bool act_int8, fe_dtype b, fe_isa isa, int bf16_dot) {
    if (isa < FE_ISA_AVX2) return false;
    if (act_int8) return fe_gemv_panel_serves(b); /* every dtype the GEMV's panels hold */
    if (bf16_dot == GM_DOT_AMX) return gm_amx_blocks_serve(b); /* act_bf16 over blocks */
    return b == FE_DTYPE_BF16 && bf16_dot == GM_DOT_OFF;
}

/* act_int8 over q4_k and q6_k (kquant.inc; q5_0 too in the scalar kernel): rows of A x columns of C per register
 * block (AVX-512: 12 int32 sums of the scale block, 12 of the sub-block under VNNI, two B
 * vectors, A's quads broadcast from memory by vpdpbusd; AVX2: 4 int32 sums, one B vector, the
 * scales, the broadcast). 8 x 16 and 4 x 32 ran within noise of 6 x 32 on a Zen 4. */
#ifndef GM_MR_KQ_AVX512 /* (overridable with -D for trying other tiles) */
#define GM_MR_KQ_AVX512 6
#define GM_NR_KQ_AVX512 32
#endif
#ifndef GM_MR_KQ_AVX2
#define GM_MR_KQ_AVX2 4
#define GM_NR_KQ_AVX2 8
#endif
/* ... and the layout of a packed panel per scale block (the block whose f32 scales multiply
 * its integer sums: 256), per column: SB / 4 k-quads of u8 (q4_k 0..15, q6_k 0..63: the
 * stored values without their offset), one integer scale word per sub-block (q4_k 8 of 32
 * elements, q6_k 16 of 16), the words of int16 pairs that multiply A's group sums (q4_k its 8
 * mins, q6_k 32 times its 16 scales), then d and -dm (dmin for q4_k, d for q6_k) as f32. */
static inline int gm_kq_sb(fe_dtype dt) { return (void)dt, 256; }
static inline int gm_kq_nsub(fe_dtype dt) {
    return dt == FE_DTYPE_Q4_K ? 8 : dt == FE_DTYPE_Q6_K ? 16 : 0;
}
static inline int gm_kq_group_words(fe_dtype dt) {
    return dt == FE_DTYPE_Q4_K ? 4 : dt == FE_DTYPE_Q6_K ? 8 : 1;
}
static inline int gm_kq_block_words(fe_dtype dt) {
    return gm_kq_sb(dt) / 4 + gm_kq_nsub(dt) + gm_kq_group_words(dt) + 2;
}

/* KC choices are multiples of this (one quant block), so K blocks start on block bounds. */
#define GM_KSTEP 32
/* ... and for B in 256-element super-blocks (q4_k, q6_k) K blocks are whole super-blocks. */
static inline int64_t gm_kstep(fe_dtype bdt) {
    int blk = fe_dtype_info(bdt)->block;
    return blk > GM_KSTEP ? blk : GM_KSTEP;
}

typedef struct gm_plan {
    int mr, nr;            /* the ISA's micro-tile (GM_MR_ROWS x GM_NR_ROWS for rows) */
    bool dot;              /* bf16 k-pair panels (B's layout or packed per run), the
                            * vdpbf16ps micro-kernel and its own loop nest (bf16dot.inc) */
    bool rows;             /* bf16 A rows dotted with B's rows unpacked (bf16rows.inc) */
    bool amx;              /* bf16 A rows times B's k-pair panels in AMX tiles (amx.inc) */
    bool i8;               /* act_int8: quantised A, int8 k-quad B panels (int8.inc) */
    bool vnni;             /* act_int8 by vpdpbusd (int8_dot = 1) */
    bool amx8;             /* act_int8 in AMX tiles, 32 x 32 blocks (int8_dot = 3, amx.inc) */
    bool w16;              /* act_int8 over q8_0 by int16 k-pairs (int8_dot = 2, AVX2) */
    int64_t mc, nc, kb;    /* blocks: mc a multiple of mr, nc of nr, kb (K) of GM_KSTEP */
    int64_t kc;            /* the deepest K block (see gm_kblock) */
    int64_t ap, bp, tmp;   /* 4-byte words per worker: packed A (rows: mc rows of A as bf16,
                            * kc + padding to 32 columns each; i8: all M rows quantised,
                            * gm_i8_row_words each), packed B, decoded quant rows */
    int64_t stride;        /* words per worker in the workspace (64-byte multiple) */
} gm_plan;

/* Depth of the K block at pc of the first k columns: kb, except that a rest of at most
 * kb / 4 joins the block before it (K = 576 or 640 with kb = 512 is one pass over C, not a
 * second pass for 64 or 128 columns). pc is always a multiple of kb. */
static inline int64_t gm_kblock(const gm_plan *p, int64_t pc, int64_t k) {
    return k - pc <= p->kb + p->kb / 4 ? k - pc : p->kb;
}

/* bf16_dot = 2: 4-byte words from one row of A rounded to bf16 to the next in the workspace,
 * for a K block of kc columns: kc padded with zeros to a multiple of 32 (whole vectors), and
 * 64 bytes more, so that rows 4 KiB long do not all fall on the same L1 sets. */
static inline int64_t gm_rows_ldw(int64_t kc) { return (kc + 31) / 32 * 16 + 16; }

/* act_int8: 4-byte words of one quantised row of A in the workspace: the K columns' int8
 * (K a multiple of 32), then per 32-block dx (f32), dxc (f32: dx times the offset's
 * correction, -offset times the block's sum of q) and dxt (f32: dx times the sum of q, q4_1's
 * m term), each an array of K / 32; rounded to 64 bytes. */
static inline int64_t gm_i8_row_words(int64_t K) { return (K / 4 + 3 * (K / 32) + 15) / 16 * 16; }
/* int8_dot = 2: one row of A as int16 pairs (K / 2 words), then dx per 32-block; 64 bytes */
static inline int64_t gm_w16_row_words(int64_t K) { return (K / 2 + K / 32 + 15) / 16 * 16; }

/* x rounded to bf16 as VCVTNEPS2BF16 rounds it (act_bf16), kept as f32: to nearest, ties to
 * even; a denormal becomes a signed zero; a NaN stays NaN (quiet); past bf16's largest
 * finite value, infinity. */
static inline float gm_round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    else if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
    else u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* The micro-tile of an ISA. */
void gm_tile(fe_isa isa, int *mr, int *nr);
/* Blocks and the per-worker workspace layout for the kernel's extents (a->ext), design and
 * nth workers (the step's width): the same at create (workspace) and in every run. */
void gm_plan_make(const fe_args *a, const fe_design *d, int nth, gm_plan *p);
/* Worker ith's rows [m0, m1) and columns [n0, n1) of the bounded work (rows x N), on a grid
 * of workers over (M tiles x N panels) chosen to balance compute plus B packing; empty when
 * the worker has nothing. The grid itself in *wm row groups x *wn column groups (0 x 0 when
 * there is no work), the same for every worker: wn > 1 means workers share rows (each would
 * quantise or round A's rows of its share itself), wm = 1 that every worker has every row. */
void gm_split(const gm_plan *p, const fe_design *d, int64_t rows, int64_t n, int ith, int nth,
              int64_t *m0, int64_t *m1, int64_t *n0, int64_t *n1, int64_t *wm, int64_t *wn);

/* act_int8: rows [r0, r1) of A (K columns a row) quantised into dst, gm_i8_row_words(K)
 * words a row from dst (the first row r0): the first k columns by `quant` (fe_gemv_quant_x,
 * or a kernel's vector copy of its operations: the same bytes and scales; a block that
 * straddles k padded with zeros; blocks past k zero), with dxc = dx times -off times each
 * block's sum of q. The reference's and every kernel's. */
typedef void (*gm_i8_quant_fn)(const float *x, int64_t n, int8_t *q, float *dx);
/* One row x of it, without the block sums (int8_dot = 2 reads none): K int8 into q, K / 32
 * dx into dx. */
void gm_i8_quant_row(const float *x, int64_t K, int64_t k, gm_i8_quant_fn quant, int8_t *q,
                     float *dx);
void gm_i8_quant_rows(const float *A, int64_t K, int64_t r0, int64_t r1, int64_t k, int off,
                      gm_i8_quant_fn quant, uint32_t *dst);

/* B's layout for bf16_dot = 1 (bf16dot.inc; the AVX-512 build only): panels [p0, p1) of
 * GM_NR_AVX512 rows of b (N x K bf16) as k-pairs over the whole K, ceil(K / 2) pair rows of
 * GM_NR_AVX512 words each, rows past N zero, panel q at dst + q * ceil(K / 2) *
 * GM_NR_AVX512 words. */
void fe_gemm_dot_layout(const void *b, int64_t N, int64_t K, int64_t p0, int64_t p1, float *dst);

void fe_gemm_scalar(const fe_args *, const fe_design *, int, int);
void fe_gemm_avx2(const fe_args *, const fe_design *, int, int);
void fe_gemm_avx512(const fe_args *, const fe_design *, int, int);

#endif
