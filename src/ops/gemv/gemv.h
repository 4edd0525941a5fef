/* ops/gemv/gemv.h: what the GEMV operator's declaration (gemv.c), its shared helpers
 * (shared.c) and its per-ISA kernels (scalar.c, avx2.c, avx512.c over driver.inc) share.
 *
 * GEMV is y = W·x with W as a checkpoint stores it: (N, K) row-major, or (G, N, K) with
 * batch b using W[b / repeat]; dtypes f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q4_k, q6_k
 * (the last three through the kquant family's row kernels, ops/kquant); x (B, K) f32;
 * y (B, N) f32. An rmsnorm prologue normalises x first; an epilogue applies silu, swiglu or
 * geglu (GELU tanh form; Gemma)
 * (with the paired Up matrix) or adds a residual. With act_int8 (block dtypes: q8_0, q4_0,
 * q4_1) x is quantised per 32-block to int8 (x ~ dx * xq) and each block's dot is exact
 * integer sums, then scaled: d dx sum(wq xq) for q8_0; d dx sum((q - 8) xq) for q4_0;
 * d dx sum(q xq) + m dx sum(xq) for q4_1 (q the nibbles 0..15, as llama.cpp's Q4_1 x Q8_1);
 * q5_0 as q4_0 with 5-bit q - 16; q4_k and q6_k take x per 256-block (llama.cpp's Q8_K, with
 * the sums of each 16 int8) and scale each sub-block's integer sum by its own scale
 * (kquant.h).
 *
 * Workers split the bounded rows (never K), so no reduction crosses workers. Each worker
 * prepares x ("x prep": normalised, laid out for the ISA's bf16 widening, quantised) for up
 * to a chunk of batches into its own slice of the workspace, then sweeps its rows as
 * rows_per_step streams (its rows cut into that many contiguous runs, one row of each per
 * step), each step dotting those W rows with every batch of the chunk that reads that
 * matrix (the rows stay in L1/L2 across those batches). With batches_per_pass P > 1 and a
 * dtype the ISA has a batch kernel for (gemv_dot_batches: f32, bf16, and act_int8 q8_0 / q4_0
 * / q4_1 on avx2 and avx512; every dtype but the kquant family's on scalar), each W row's
 * blocks are instead loaded and decoded once per pass of up to P batches and dotted with all
 * of them in registers, so the decoding (nibble unpacking, scales, bf16 widening) is paid
 * once per P batches rather than once per batch. Each batch's dot keeps the exact operation
 * order of the batch-after-batch kernel at the row count the step has (its accumulation
 * class), so every batch's y is bit-identical whatever P and whatever the other batches.
 * See driver.inc.
 *
 * The tunable panel = 1 (act_int8 q8_0, q4_0, q4_1; resolve's default for q4_1) is another
 * design, with an order of its own: 16 outputs in the vector lanes, W read as 16-row panels
 * from a layout made once per weight (panel.h, panel_driver.inc). */
#ifndef FE_OPS_GEMV_H
#define FE_OPS_GEMV_H

#include <math.h>

#include "ops/op.h"

enum { GEMV_W, GEMV_X, GEMV_UP, GEMV_RES, GEMV_NW, GEMV_Y };           /* operands */
enum { GEMV_EPI, GEMV_PRO, GEMV_EPS, GEMV_REPEAT, GEMV_INT8 };          /* params */
enum { GEMV_EPI_NONE, GEMV_EPI_SILU, GEMV_EPI_SWIGLU, GEMV_EPI_RESIDUAL, GEMV_EPI_GEGLU };
/* the epilogues that read up (the paired matrix) */
static inline bool fe_gemv_epi_gated(int epi) { return epi == GEMV_EPI_SWIGLU || epi == GEMV_EPI_GEGLU; }
enum { GEMV_PRO_NONE, GEMV_PRO_RMSNORM };
enum { GEMV_WIDTH, GEMV_RPS, GEMV_DOT8, GEMV_PF, GEMV_BPP, GEMV_PANEL }; /* tunables */
enum { GEMV_PF_DEFAULT = 2048 }; /* prefetch's declared default, bytes */
enum { GEMV_B, GEMV_N, GEMV_K, GEMV_G };                                /* extents */
enum { GEMV_V_ROWS, GEMV_V_BATCHES };                                   /* per-call values */

/* How the int8 dot products run (act_int8 designs): emulated with 16-bit multiply-adds
 * (every ISA), or with AVX512-VNNI vpdpbusd (the avx512 kernel, only where the device has
 * avx512vnni: the tunable int8_dot says which). Both give the same integers. */
enum { GEMV_I8_NONE = 0, GEMV_I8_EMUL, GEMV_I8_VNNI };

/* GEMV_CHUNK: batches prepared at once, so up to that many read each W row from memory once;
 * GEMV_MAX_PASS: the most batches one pass dots with a weight block in registers */
enum { GEMV_MAX_RPS = 8, GEMV_ROW_ALIGN = 16, GEMV_CHUNK = 16, GEMV_MAX_PASS = 8 };

/* GEMV_CLAIM_UNITS: at one batch of a rank-2 W (the decode) the rows go in units that the
 * workers claim as they come for them (fe_step_claim, device/cpu/step_barrier.h), up to this
 * many a worker, in place of one fixed share each: measured on the 2-vCPU Zen 4, a worker sat
 * idle at the end of a fixed-share decode GEMV for 3-13 % of the call (median; p90 11-30 %).
 * A unit is at least GEMV_CLAIM_BYTES of weights (a claim costs a cache line moved between
 * cores, and a unit's streams ramp up from cold): on SmolLM2-135M, whose matrices are 0.2-1
 * MB, claiming units of every GEMV made the decode 0.88-0.91x. gemv_claim_units: the units
 * over `most` units at most (rows in multiples of 16, 16-row groups or 32-row panels) and
 * `bytes` of W (and up) a call; 0, a fixed share each, under two units a worker or with one worker. */
enum { GEMV_CLAIM_UNITS = 8 };
#define GEMV_CLAIM_BYTES ((size_t)512 << 10)
static inline int64_t gemv_claim_units(int64_t most, size_t bytes, int nth) {
    int64_t u = (int64_t)nth * GEMV_CLAIM_UNITS;
    if (u > most) u = most;
    if (u > (int64_t)(bytes / GEMV_CLAIM_BYTES)) u = (int64_t)(bytes / GEMV_CLAIM_BYTES);
    return nth > 1 && u >= 2 * (int64_t)nth ? u : 0;
}

/* The shape of one run, read from args and design. */
typedef struct gemv_shape {
    fe_dtype dt;
    int64_t B, N, K, G, KP; /* KP: K rounded up to 64 (the padded length of prepared x) */
    int64_t rows, batches;  /* the per-call bounds */
    int64_t repeat;         /* batches per matrix: repeat for rank-3 W, B for rank 2 */
    int64_t chunk;          /* batches prepared at once (a multiple of repeat for rank 3) */
    size_t rs, ms;          /* bytes of one W row, of one (N, K) matrix */
    int epi, pro, i8;       /* epilogue, prologue, GEMV_I8_* */
    int rps;
    int bpp;                /* batches_per_pass: 1 for batch after batch (gemv.h's opening) */
    int64_t pf;             /* software prefetch distance in bytes, 0 for none */
    bool panel;             /* the panel designs: bf16 k-pair panels (panels.inc), act_int8
                             * outputs in lanes (panel.h) */
} gemv_shape;

void fe_gemv_shape(const fe_args *a, const fe_design *d, gemv_shape *s);

/* One batch's x as the dot products read it. xf: f32 x (normalised when the prologue runs;
 * for bf16 W on avx2/avx512, each chunk of 2c elements laid out evens then odds, zero past
 * K up to KP); for act_int8: q8 (x quantised, zero past K; for q4 W on avx512, each full
 * pair of blocks laid out as the nibbles unpack: elements 0..15 of both blocks, then 16..31
 * of both), dx (one scale per 32-block), and by W's dtype:
 *   q8_0  q16 (q8 as int16, emulated dots), ncorr (-128 times each group of 4 q8 summed,
 *         vpdpbusd's offset for w ^ 0x80) and dx16 (per pair of blocks: 8 lanes of each
 *         scale), both for VNNI;
 *   q4_0, q4_1  dxs: per block (dx, dx * sum of its q8), the scales of d's term and of
 *         m's (q4_1); for q4_0 also ncorr: -8 times each group of 4 q8 (as laid out)
 *         summed, the nibbles' offset, preset in the integer sums;
 *   q5_0, q4_k, q6_k  q8 and dx as fe_kq_quant_x makes them (dx per 32-block for q5_0, per
 *         256 for the K types) and bsums (the sums of each 16 q8, in ncorr's space). */
typedef struct gemv_x {
    const float *xf;
    const int8_t *q8;
    const int16_t *q16;
    const float *dx;
    const int32_t *ncorr;
    const float *dx16;
    const float *dxs;
    const int16_t *bsums;
} gemv_x;

/* Workspace: per worker, `chunk` batch slots of prepared x, then (scalar kernel) dequantised
 * rows. Both the declaration (sizing) and the kernels (splitting) use these. */
size_t fe_gemv_slot_bytes(const gemv_shape *s, fe_isa isa);
size_t fe_gemv_worker_bytes(const gemv_shape *s, fe_isa isa);
/* Points x at slot bytes p laid out for shape s (no data written). */
void fe_gemv_slot_layout(const gemv_shape *s, fe_isa isa, unsigned char *p, gemv_x *x);

/* The prologue, in f32 in a fixed order (kernels and the act_int8 reference share it, so
 * the int8 quantisation sees identical inputs): out = x / sqrt(mean(x^2) + eps) * nw
 * (nw may be NULL). */
void fe_gemv_rmsnorm_x(const float *x, const float *nw, int64_t K, double eps, float *out);
/* act_int8's quantisation of x, per 32-block: d = amax / 127, q = round-half-even(x / d)
 * computed as x * (1 / d) in f32. K a multiple of 32. */
void fe_gemv_quant_x(const float *x, int64_t K, int8_t *q, float *dx);

/* act_int8's dot of one W row (K / 32 blocks of q8_0, q4_0 or q4_1 at row) with x as q
 * (natural order) and dx, exactly as the design defines it: per block exact integer sums,
 * scaled in double (gemv.h's opening). The reference's and the scalar kernel's. */
double fe_gemv_dot_int8(fe_dtype dt, const unsigned char *row, const int8_t *q, const float *dx,
                        int64_t K);

/* y for a computed dot a (and up dot u, residual r) under the epilogue */
static inline float fe_gemv_epilogue(int epi, float a, float u, float r) {
    switch (epi) {
    case GEMV_EPI_SILU: return a / (1.0f + expf(-a));
    case GEMV_EPI_SWIGLU: return a / (1.0f + expf(-a)) * u;
    case GEMV_EPI_GEGLU: /* GELU, tanh form, of a, times u */
        return 0.5f * a * (1.0f + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a))) * u;
    case GEMV_EPI_RESIDUAL: return a + r;
    default: return a;
    }
}

/* the reference (plain double over fe_dequant_row rows; act_int8 by fe_gemv_dot_int8) */
void fe_gemv_reference(const fe_args *a, const fe_design *d);

/* The panel design (panel = 1, bf16 W; panels.inc): W as k-pair panels of GEMV_PANEL_ROWS
 * rows (FE_LAYOUT_BF16_PAIRS32). Its workspace per worker (x per batch of a chunk, one packed
 * panel, the sums of a panel for W and up); and the layout's words made in plain C (the
 * AVX2 kernel's maker; the same words as the AVX-512 fe_gemm_dot_layout): panels [p0, p1)
 * of b (N x K bf16, rows K * 2 bytes apart), word o of pair row p of panel q holding row
 * 32 q + o's elements 2p (low half) and 2p + 1 (high half; zero past K), rows past N zero. */
enum { GEMV_PANEL_ROWS = 32 };
/* The AVX2 panel kernel asks for the lines GEMV_PANEL_AHEAD pair rows ahead (2 KiB, the row
 * kernels' default prefetch distance): a worker's panels are one stream, and the bf16 decode
 * of the Llama 3.2 1B shape with the AVX2 kernels on a Xeon ran 10.9-11.2 tok/s without it,
 * 12.2-12.5 with it (8 ahead 11.6-12.2, 32 10.9-11.2, 64 7.6-7.8; into L2 alone,
 * _MM_HINT_T1, 12.0-12.7 against 13.1-13.2 into L1 in another round). The AVX-512 kernel, at
 * the read roof there already, ran 12.7 with it against 12.9-13.2 without, and has none. */
enum { GEMV_PANEL_AHEAD = 16 };
size_t fe_gemv_bf16_panel_worker_bytes(const gemv_shape *s);
void fe_gemv_bf16_pairs_layout(const void *b, int64_t N, int64_t K, int64_t p0, int64_t p1, float *dst);

void fe_gemv_scalar(const fe_args *, const fe_design *, int, int);
void fe_gemv_avx2(const fe_args *, const fe_design *, int, int);
void fe_gemv_avx512(const fe_args *, const fe_design *, int, int);

#endif
