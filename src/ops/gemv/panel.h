/* ops/gemv/panel.h: GEMV's "outputs in lanes" design for act_int8 (tunable panel = 1): what
 * the declaration (gemv.c), the panel format (panel.c) and the per-ISA panel kernels
 * (panel_driver.inc with panel_scalar.inc, panel_avx2.inc, panel_avx512.inc) share.
 *
 * The design: 16 W rows (outputs) in the 16 vector lanes. W (q8_0, q4_0, q4_1 or q5_0) is
 * read as panels: per group of 16 rows and per 32-block j, the rows' quants transposed so
 * that 32-bit lane L of vector v holds row 16 g + L's quant bytes 4v..4v+3 (q4, q5_0: 4
 * vectors of 64 bytes, the 16 nibble bytes of each row; q8_0: 8 vectors, its 32 int8), then
 * (q5_0) the fifth bits as one more vector of 64 bytes, byte 4L + e holding in bit q row L's
 * bit 4 of element 4q + e (so quad q's bits are one shift and one mask away, in the lanes
 * where quad q's nibbles lie), then the 16 rows' d (f16), then (q4_1) the 16 m (f16): as many
 * bytes as the stored blocks (q8_0 544, q4_0 288, q4_1 320, q5_0 352 a block of 16 rows).
 * q4_k's blocks are 256 wide: its 128 qs bytes a row as 32 vectors (vector v holding bytes
 * 4v..4v+3: run v / 8's low nibbles are sub-block 2 (v / 8), its high ones 2 (v / 8) + 1),
 * then its 12 scale bytes as 3 vectors (lane L: row L's scale word w), then the 16 d, then
 * the 16 dmin: 2304 bytes, 16 x 144. q6_k's: its 128 ql bytes a row as 32 vectors, its 64 qh
 * bytes as 16 (ql vector v = 16 h + 8 q + k and qh vector 8 h + k hold, in each byte, the
 * low 4 and the high 2 bits of elements 128 h + 32 q + 4 k + e (the low nibbles; qh's bits
 * 2q, 2q + 1) and 64 further on (the high nibbles; qh's bits 2q + 4, 2q + 5)), then its 16
 * int8 scales as 4 vectors, then the 16 d: 3360 bytes, 16 x 210. A group's blocks lie one
 * after the other, groups one after the other; a last group of fewer than 16 rows is padded with zero rows (d = m = 0), whose
 * lanes are computed and never stored. The panels are either a layout made once per weight
 * (fe_op.layout: a graph's weights, or a caller's constant operand) or, without one, packed
 * per call group by group into the worker's workspace from the stored rows: the same bytes
 * go through the same code, so y is the same bytes either way.
 *
 * Each output's dot is defined, for every ISA, as: acc = 0; for each block j in order,
 *   s = the exact int32 sum over the block (q4_1: sum q xq; q4_0: sum q xq - 8 sx;
 *       q5_0: sum q xq - 16 sx, q the 5-bit 0..31; q8_0: sum w xq; q4_k: sum over its 8
 *       sub-blocks i of sc_i sum q xq), sx = sum xq over the block,
 *   acc = fma((float)s, d * dx_j, acc)            (d * dx_j rounded to f32 first)
 *   q4_1 only: acc = fma(m, xt_j, acc)            (xt_j = dx_j * (float)sx, in f32)
 *   q4_k only: acc = fma(-(float)t, dmin * dx_j, acc), t = sum_i m_i sx_i (sx_i: sub-block
 *       i's sum of xq)
 *   (q6_k: s = sum over its 16 sub-blocks i of sc_i (sum q xq - 32 bs_i), q 0..63, bs_i the
 *       sub-block's sum of xq)
 * (the K types' x quantised per 256-block as their row design's is, fe_kq_quant_x: dx_j per
 * block)
 * then the epilogue in f32 (fe_gemv_epilogue). Nothing crosses lanes, batches or workers, so
 * a given x row's y is the same bytes whatever B, the rows and batches bounds, the worker
 * count and the ISA (scalar, AVX2, AVX-512 with VNNI or without). It is a summation order of
 * its own: not the bytes of the panel = 0 design.
 *
 * At one batch over layouts (the decode), a worker reads rows_per_step runs of its groups
 * side by side, W's and up's panels of a group in the same pass (panel_driver.inc): several
 * memory streams in flight where one group after the other is one. Each lane is computed as
 * above, so the bytes do not change. */
#ifndef FE_OPS_GEMV_PANEL_H
#define FE_OPS_GEMV_PANEL_H

#include "core/quant.h"
#include "ops/gemv/gemv.h"

/* PANEL_PF: how many blocks ahead the kernels prefetch a group's panel (one memory stream a
 * worker: it reads its groups front to back, and the prefetch runs on into the next group).
 * The kernels prefetch into L2 (_MM_HINT_T1), not L1: a prefetch to L1 holds one of the
 * core's few L1 miss buffers until its line arrives, so a stream of them capped the loads in
 * flight, and the decode's long streams gained nothing from it; into L2 the same stream
 * keeps more lines coming (2-vCPU Zen 4, decode steps alternated by `--profile`: the Llama
 * 3.2 1B shape's q8_0 gate|up GEMV 0.80-0.92x the time, the whole decode 1.04-1.17x;
 * SmolLM2's q4_1 with the AVX2 kernels 1.17x) */
#ifndef PANEL_PF
#define PANEL_PF 8
#endif
enum { PANEL_ROWS = 16 };
/* PANEL_Q6_K_QH: where q6_k's 16 qh vectors start, past its 32 ql vectors; PANEL_PF_KQ: how
 * many 256-blocks ahead the K types' kernels prefetch (a block is 2304 or 3360 bytes), into
 * L2 as well: Gemma 3's q4_k / q6_k down GEMVs 0.68-0.76x the time of 2 blocks into L1 */
enum { PANEL_Q6_K_QH = 32 * 64, PANEL_PF_KQ = 4 };

/* whether the panel design serves W of dtype dt (act_int8 q8_0, q4_0, q4_1, q5_0, q4_k, q6_k) */
static inline bool fe_gemv_panel_serves(fe_dtype dt) {
    return dt == FE_DTYPE_Q8_0 || dt == FE_DTYPE_Q4_0 || dt == FE_DTYPE_Q4_1 ||
           dt == FE_DTYPE_Q5_0 || dt == FE_DTYPE_Q4_K || dt == FE_DTYPE_Q6_K;
}
/* the K types (256-blocks, x quantised per 256-block), and a panel block's elements */
static inline bool fe_gemv_panel_kq(fe_dtype dt) { return dt == FE_DTYPE_Q4_K || dt == FE_DTYPE_Q6_K; }
static inline int64_t fe_gemv_panel_block_elems(fe_dtype dt) { return fe_gemv_panel_kq(dt) ? 256 : 32; }
/* whether act_int8 W of dtype dt is read as panels by default, by the decode's GEMV and the
 * prefill's GEMM alike (GEMV panel, GEMM b_panels), so that the weight keeps one form: q4_1
 * everywhere (faster at B = 1, 1.6-1.9x at B = 8), q4_0, q5_0, q4_k and q6_k on AVX2 and
 * AVX-512 (Gemma 3 270M's decode 1.2-1.3x with q5_0's; q4_k and q6_k 2048 x 8192 1.2-1.7x
 * faster than their rows, within noise at Gemma's small shapes, and one copy), q8_0 on AVX-512
 * only. q8_0's AVX2 panel kernel transfers the sign of every weight byte (vpsignb) and takes
 * its absolute value a block and 16 rows at a time: on an AVX2-only Zen 3 the Llama 3.2 1B
 * shape's decode ran 7.3-7.8 tok/s with it against 9.0-9.6 with the row kernel (alternated),
 * so there both ops read the rows as stored. (docs/performance.md) */
static inline bool fe_gemv_panel_default(fe_dtype dt, fe_isa isa) {
    if (dt == FE_DTYPE_Q4_1) return true;
    if (dt == FE_DTYPE_Q4_0 || dt == FE_DTYPE_Q5_0 || fe_gemv_panel_kq(dt)) return isa >= FE_ISA_AVX2;
    return dt == FE_DTYPE_Q8_0 && isa >= FE_ISA_AVX512;
}
/* the layout format of W's panels (fe_op.layout): the GEMV's and the act_int8 GEMM's, which
 * reads its B panels from them (one copy of the weight for the prefill and the decode) */
static inline uint64_t fe_gemv_panel_format(fe_dtype dt) {
    return (uint64_t)FE_LAYOUT_I8_PANELS16 << 8 | (uint64_t)dt;
}
/* bytes of one (group, block) of panel: the quant vectors, the fifth bits (q5_0 only) or the
 * scale words (q4_k) or the scales (q6_k), then d, then m (q4_1) or dmin (q4_k). q4_1's
 * 320 are whole cache lines; q8_0's 544 and q4_0's 288 are not (every other block's vectors
 * straddle lines), which measured no slower than 576 and 320 with zeros for m at the Llama 3.2
 * 1B shape's decode (bench_batch_decode, B = 1: 0.96x against 0.94x of panel = 0, the noise),
 * and keeps the layout at the stored size. */
static inline size_t fe_gemv_panel_qbytes(fe_dtype dt) {
    return dt == FE_DTYPE_Q8_0 ? 512 : dt == FE_DTYPE_Q4_K ? 2048 : dt == FE_DTYPE_Q6_K ? 3072 : 256;
}
/* where the 16 d of a (group, block) start: past the quant vectors and the fifth bits
 * (q5_0), the scale words (q4_k) or the scales (q6_k) */
static inline size_t fe_gemv_panel_doff(fe_dtype dt) {
    return fe_gemv_panel_qbytes(dt) + (dt == FE_DTYPE_Q5_0   ? 64
                                       : dt == FE_DTYPE_Q4_K ? 192
                                       : dt == FE_DTYPE_Q6_K ? 256 : 0);
}
static inline size_t fe_gemv_panel_block_bytes(fe_dtype dt) {
    return fe_gemv_panel_doff(dt) + (dt == FE_DTYPE_Q4_1 || dt == FE_DTYPE_Q4_K ? 64 : 32);
}
/* bytes of one group's panel (K / block blocks), of one matrix's panels (N rows) */
static inline size_t fe_gemv_panel_group_bytes(fe_dtype dt, int64_t K) {
    return (size_t)(K / fe_gemv_panel_block_elems(dt)) * fe_gemv_panel_block_bytes(dt);
}
static inline size_t fe_gemv_panel_matrix_bytes(fe_dtype dt, int64_t N, int64_t K) {
    return (size_t)((N + PANEL_ROWS - 1) / PANEL_ROWS) * fe_gemv_panel_group_bytes(dt, K);
}

/* Writes group g's panel of the (N, K) matrix w (rows rs bytes apart) into dst. */
void fe_gemv_panel_pack(fe_dtype dt, const unsigned char *w, size_t rs, int64_t N, int64_t K,
                        int64_t g, unsigned char *dst);

/* The declaration's fe_op.layout / layout_make for the panel design (operands w and up). */
size_t fe_gemv_panel_layout(const fe_args *a, const fe_design *d, int operand,
                            uint64_t *format);
void fe_gemv_panel_layout_make(const fe_args *a, const fe_design *d, int operand, void *dst,
                               int ith, int nth);

/* One batch's x as the panel kernels read it: q8 (natural order, K bytes), and per 32-block
 * dx, sx (sum of its q8) and xt = dx * (float)sx; for q4_k and q6_k dx per 256-block and bs,
 * the sums of each 16 q8 (in xt's place: fe_kq_quant_x's bsums). */
typedef struct panel_x {
    const int8_t *q8;
    const float *dx, *xt;
    const int32_t *sx;
    const int16_t *bs;
} panel_x;

/* batches prepared at once: GEMV_CHUNK, or B when fewer (whatever repeat: a chunk may span
 * matrices) */
int64_t fe_gemv_panel_chunk(const gemv_shape *s);
/* the worker's workspace: a chunk of batch slots (prologue's f32 x, q8, dx, xt,
 * sx), then two group panels (w and up) for packing without a layout */
size_t fe_gemv_panel_slot_bytes(const gemv_shape *s);
size_t fe_gemv_panel_worker_bytes(const gemv_shape *s);

#endif
