/* ops/gemm/gemm.h: what the GEMM operator's files share: operand, param, tunable, extent and
 * value indices, the micro-tile of each ISA, and the plan (block sizes, workspace layout and
 * the work split) that plan.c computes once for the declaration and for every kernel.
 *
 * GEMM: C (M, N) = epilogue(A (M, K) . B (N, K)^T), A f32 rows, B as a checkpoint stores it
 * (f32, bf16, f16, q8_0, q4_0, q4_1), one row of B per column of C. The epilogue, in order:
 * acc (+ bias) -> activation -> (+ residual) -> clamp. Per-call values: rows (the first rows of
 * A and C; later rows of C untouched) and k (the first k columns of A and B contribute).
 * c must not overlap an input (check() refuses it): it holds partial sums between K blocks.
 *
 * Kernels (kernels.inc, per ISA) are BLIS-style: B is packed into NR-wide panels of KC rows
 * (widened or dequantised while packing), A into MR-tall panels, and an MR x NR register
 * micro-kernel runs over them; see kernels.inc for the loop nest. One micro-kernel per ISA
 * (the declaration's four tunables are WIDTH, MC, NC, KC: FE_MAX_TUNABLES).
 *
 * Workers split N (each packs only its own B panels, so B is read once in all; N is the
 * long axis of every weight: 576..262144) and split M as well only where that balances
 * better, i.e. when N has few micro-panels per worker (gm_split). */
#ifndef FE_OPS_GEMM_H
#define FE_OPS_GEMM_H

#include "ops/op.h"

enum { GM_A, GM_B, GM_BIAS, GM_RES, GM_C };          /* operands */
enum { GM_P_ACT, GM_P_CMIN, GM_P_CMAX };              /* params */
enum { GM_ACT_NONE, GM_ACT_SILU, GM_ACT_GELU };       /* activation choices */
enum { GM_WIDTH, GM_MC, GM_NC, GM_KC };               /* tunables */
enum { GM_M, GM_N, GM_K };                            /* extents */
enum { GM_V_ROWS, GM_V_K };                           /* per-call values */

/* Micro-tiles, rows x columns of C a register block holds. AVX-512: 28 zmm accumulators, two
 * B vectors, A broadcast from memory (32 registers); AVX2: 12 + 2 + 1 of 16 ymm. */
#define GM_MR_AVX512 14
#define GM_NR_AVX512 32
#define GM_MR_AVX2 6
#define GM_NR_AVX2 16
#define GM_MR_SCALAR 4
#define GM_NR_SCALAR 4
#define GM_MAX_MR 16

/* KC choices are multiples of this (one quant block), so K blocks start on block bounds. */
#define GM_KSTEP 32

typedef struct gm_plan {
    int mr, nr;            /* the ISA's micro-tile */
    int64_t mc, nc, kb;    /* blocks: mc a multiple of mr, nc of nr, kb (K) of GM_KSTEP */
    int64_t kc;            /* the deepest K block (see gm_kblock) */
    int64_t ap, bp, tmp;   /* floats per worker: packed A, packed B, decoded quant rows */
    int64_t stride;        /* floats per worker in the workspace (64-byte multiple) */
} gm_plan;

/* Depth of the K block at pc of the first k columns: kb, except that a rest of at most
 * kb / 4 joins the block before it (K = 576 or 640 with kb = 512 is one pass over C, not a
 * second pass for 64 or 128 columns). pc is always a multiple of kb. */
static inline int64_t gm_kblock(const gm_plan *p, int64_t pc, int64_t k) {
    return k - pc <= p->kb + p->kb / 4 ? k - pc : p->kb;
}

/* The micro-tile of an ISA. */
void gm_tile(fe_isa isa, int *mr, int *nr);
/* Blocks and the per-worker workspace layout for the kernel's extents (a->ext) and design:
 * the same at create (workspace) and in every run. */
void gm_plan_make(const fe_args *a, const fe_design *d, gm_plan *p);
/* Worker ith's rows [m0, m1) and columns [n0, n1) of the bounded work (rows x N), on a grid
 * of workers over (M tiles x N panels) chosen to balance compute plus B packing; empty when
 * the worker has nothing. */
void gm_split(const gm_plan *p, const fe_design *d, int64_t rows, int64_t n, int ith, int nth,
              int64_t *m0, int64_t *m1, int64_t *n0, int64_t *n1);

void fe_gemm_scalar(const fe_args *, const fe_design *, int, int);
void fe_gemm_avx2(const fe_args *, const fe_design *, int, int);
void fe_gemm_avx512(const fe_args *, const fe_design *, int, int);

#endif
