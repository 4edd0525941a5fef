/* ops/gemm/gemm.c: the GEMM declaration: C (M, N) = epilogue(A (M, K) . B (N, K)^T) for
 * prompt chunks, B in a checkpoint's dtype (f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q4_k,
 * q6_k). Params, tunables (block sizes resolved from the device's caches; the bf16 dot
 * product where the device has it), infer, the double-precision reference, cost, workspace
 * and test cases. The kernels are in kernels.inc, bf16dot.inc, bf16rows.inc, int8.inc and
 * kquant.inc (see gemm.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "ops/gemm/gemm.h"
#include "ops/kquant/kquant.h"
#include "core/quant.h"
#include "ops/gemv/gemv.h"
#include "ops/gemv/panel.h"

/* tile: AVX2's is the K step of the packing transposes */
FE_KERNELS(gemm, 1, 8, 16);

static const char *const activations[] = {"none", "silu", "gelu", "gelu_erf", NULL};

static const fe_param_decl params[] = {
    [GM_P_ACT] = {"activation", FE_PARAM_CHOICE, GM_ACT_NONE, 1, 0, activations,
                  "applied after the bias: none, silu (x sigmoid(x)), gelu (tanh form, "
                  "0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))), gelu_erf (0.5x(1 + "
                  "erf(x/sqrt2)), BERT's)"},
    [GM_P_CMIN] = {"clamp_min", FE_PARAM_FLOAT, 0, 1, 0, NULL,
                   "lower clamp, last in the epilogue; clamps only when clamp_min < clamp_max"},
    [GM_P_CMAX] = {"clamp_max", FE_PARAM_FLOAT, 0, 1, 0, NULL,
                   "upper clamp; clamp_min = clamp_max (default 0, 0) turns the clamp off"},
    [GM_P_BF16] = {"act_bf16", FE_PARAM_BOOL, 0, 1, 0, NULL,
                   "bf16 or block b (q8_0 .. q6_k): a rounded to bf16 (to nearest even, "
                   "denormals to zero), and a block b's decoded values too, so each product "
                   "is of two bf16 values, exact, summed in f32 (vdpbf16ps where the device "
                   "has AVX512_BF16: twice the multiply-adds of an f32 FMA; AMX-BF16 tiles)"},
    [GM_P_INT8] = {"act_int8", FE_PARAM_BOOL, 0, 1, 0, NULL,
                   "block b only (q8_0, q4_0, q4_1, q5_0, q4_k, q6_k): a quantised per row and "
                   "32-block (256-block for q4_k/q6_k, llama.cpp's q8_K) to int8 as GEMV's "
                   "act_int8 quantises x (dx = max|a| / 127, round half to even), each block's "
                   "dot an exact integer sum (per sub-block, times its scale), scaled by d dx "
                   "(q4_1: plus m dx times the block's int8 sum; q4_k: minus dmin dx times the "
                   "sub-blocks' mins and int8 sums); against the f32 products within sum over "
                   "blocks of dx / 2 sum |b| (each q within half a step of a)"},
};

static const fe_tunable_decl tunables[] = {
    [GM_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [GM_MC] = {"MC", {.kind = FE_DOMAIN_CHOICES, .choices = {64, 128, 192, 256, 384, 512},
                      .n_choices = 6}, 512, true,
               "rows of A per packed block (rounded up to the micro-tile's rows): MC x KC "
               "floats of packed A, packed at once and walked panel by panel (bf16_dot = 1: "
               "MC x KC of A as bf16 k-pairs, swept once per 32 B rows; bf16_dot = 2: MC x "
               "KC of A rounded to bf16, swept once per six B rows)"},
    [GM_NC] = {"NC", {.kind = FE_DOMAIN_CHOICES, .choices = {256, 512, 1024, 2048, 4096, 8192},
                      .n_choices = 6}, 2048, true,
               "columns of C (rows of B) per packed B block: KC x NC floats per worker, "
               "re-read once per A panel; A is repacked once per NC columns (bf16_dot = 2: "
               "B's rows, unpacked, re-read once per MC rows; bf16_dot = 1 packs A once per "
               "K block and reads no NC: resolve pins it)"},
    [GM_KC] = {"KC", {.kind = FE_DOMAIN_CHOICES,
                      .choices = {128, 192, 256, 384, 512, 1024, 2048}, .n_choices = 7}, 512,
               true,
               "depth of a packed block (whole quant blocks; a rest of <= KC/4 joins the last "
               "block): one MR x KC A panel stays in L1 (bf16_dot = 1: a KC x 32 panel of B "
               "in L2, C's partial sums written once per KC; bf16_dot = 2: six B rows of KC)"},
    [GM_DOT] = {"bf16_dot", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1, 2, 3},
                             .n_choices = 4},
                0, true,
                "act_bf16 products: 1 = AVX512_BF16 vdpbf16ps on k-pair panels of 32 rows of B "
                "(a graph's weight repacked once into them: B's bytes again, beside it; else "
                "packed per call) in 14 x 32 register tiles; 2 = vdpbf16ps between A's rows "
                "rounded to bf16 and B's rows as stored, 32 columns a vector, nothing of B "
                "packed; 3 = AMX-BF16 TDPBF16PS on the same k-pair panels as 1, 32 x 32 blocks "
                "of C in four tiles; 0 = A rounded to bf16 values while packing and the f32 "
                "FMA micro-kernel; the same products (resolve sets 3 where the device has "
                "amx_bf16, else 1 where its avx512bf16 outruns the FMAs (AMD's cores), else "
                "0; 1 and 2 are held where they can run; 3 without AMX becomes that "
                "default). A block B: 3 (its panels widened to bf16 "
                "per call) or 0 (its values rounded while packing); 1 and 2 turn to those"},
    [GM_DOT8] = {"int8_dot", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1, 2, 3},
                              .n_choices = 4},
                 0, true,
                 "act_int8 integer sums: 1 = vpdpbusd, AVX512-VNNI's on the avx512 kernels, "
                 "AVX-VNNI's on the avx2 kernels (resolve sets it where the "
                 "device has either); 2 = q8_0 B widened to int16 k-pairs while packing, "
                 "times A's int16 pairs by vpmaddwd (AVX2 only; resolve sets it there for "
                 "q8_0); 3 = AMX-INT8 tiles, TDPBSSD / TDPBSUD per 32-block into 32 x 32 "
                 "blocks of C (q8_0, q4_0, q4_1, q5_0; resolve sets it where the device has "
                 "amx_int8, but for q4_1, where it ties VNNI); 0 = vpmaddubsw + vpmaddwd "
                 "(q8_0: B's sign moved onto A by vpsignb); the same integers (a value that "
                 "cannot run is turned to the default)"},
    [GM_PANELS] = {"b_panels", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1}, .n_choices = 2},
                   1, true,
                   "act_int8 over q8_0, q4_0, q4_1, q5_0, q4_k or q6_k B (AVX2, AVX-512): 1 = B's panels "
                   "packed per call from the weight's GEMV panel layout (ops/gemv/panel.h: "
                   "16 rows' quants transposed per block, made once; the decode's GEMV panel = "
                   "1 reads the same copy), 0 = packed from B's rows as stored; the same "
                   "words either way. bf16 B with bf16_dot = 0 (AVX2, AVX-512 without "
                   "tiles or a fast vdpbf16ps): 1 = B's f32 panels widened per call from the k-pair layout "
                   "of 32 rows that the decode's GEMV panel = 1 reads, 0 = from B's rows; "
                   "the same floats. act_bf16 over block B on the AMX tiles (bf16_dot = 3): 1 = "
                   "B's bf16 panels widened per call from the GEMV's panel layout, 0 = from "
                   "B's rows; the same values (resolve sets 1 for bf16 where it serves, for "
                   "act_int8 and act_bf16 where the decode's GEMV reads panels by default: "
                   "q4_1, q4_0, q5_0, q4_k, q6_k, and q8_0 on AVX-512; off where it does not "
                   "serve)"},
};

static const fe_operand_decl operands[] = {
    [GM_A] = {"a", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .draw_lo = -1, .draw_hi = 1},
    [GM_B] = {"b", FE_IN,
              FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_BF16) | FE_DT(FE_DTYPE_F16) |
                  FE_DT(FE_DTYPE_Q8_0) | FE_DT(FE_DTYPE_Q4_0) | FE_DT(FE_DTYPE_Q4_1) |
                  FE_DT(FE_DTYPE_Q5_0) | FE_DT(FE_DTYPE_Q4_K) | FE_DT(FE_DTYPE_Q6_K),
              2, 2, .draw_lo = -1, .draw_hi = 1},
    [GM_BIAS] = {"bias", FE_IN, FE_DT(FE_DTYPE_F32), 1, 1, .optional = true, .draw_lo = -1,
                 .draw_hi = 1},
    [GM_RES] = {"residual", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .optional = true,
                .draw_lo = -1, .draw_hi = 1},
    [GM_C] = {"c", FE_OUT, FE_DT(FE_DTYPE_F32), 2, 2},
    /* after c, so that callers giving a, b, bias, residual, c keep their positions */
    [GM_MUL] = {"multiplier", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .optional = true,
                .draw_lo = -1, .draw_hi = 1},
};

static const char *const extents[] = {[GM_M] = "M", [GM_N] = "N", [GM_K] = "K"};

static const fe_value_decl values[] = {
    [GM_V_ROWS] = {"rows", "M", 0, "rows of A and C to compute: the first rows (the rest of C "
                   "is untouched)", GM_A, 0, FE_MAP_BOUND},
    [GM_V_K] = {"k", "K", 1, "columns of A and B that contribute: the first k", GM_A, 1,
                FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *a = &c->operands[GM_A], *b = &c->operands[GM_B], *o = &c->operands[GM_C];
    const int64_t M = a->shape[0], K = a->shape[1], N = b->shape[0];
    if (b->shape[1] != K)
        return fe_op_refuse(c, FE_E_SHAPE, "b must be (N, K) with K = a's columns (%lld): C = "
                            "A.B^T takes one row of b per column of C; b is (%lld, %lld) (a "
                            "(K, N) matrix must be transposed first)", (long long)K,
                            (long long)b->shape[0], (long long)b->shape[1]);
    const fe_dtype_traits *bt = fe_dtype_info(b->dtype);
    if (bt->block > 1 && K % bt->block != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "b is %s, so its rows must be whole %d-element "
                            "blocks: K = %lld is not a multiple of %d; pad K with zero columns "
                            "in a and b, or store b as f32, bf16 or f16", bt->name, bt->block,
                            (long long)K, bt->block);
    if (o->shape[0] != M || o->shape[1] != N)
        return fe_op_refuse(c, FE_E_SHAPE, "c must be (M, N) = (%lld, %lld): a's rows by b's "
                            "rows; it is (%lld, %lld)", (long long)M, (long long)N,
                            (long long)o->shape[0], (long long)o->shape[1]);
    if (c->present[GM_BIAS] && c->operands[GM_BIAS].shape[0] != N)
        return fe_op_refuse(c, FE_E_SHAPE, "bias must be (N) = (%lld), one value per column "
                            "of c; it is (%lld): give an N-vector or leave it absent (rank 0)",
                            (long long)N, (long long)c->operands[GM_BIAS].shape[0]);
    static const int like_c[] = {GM_RES, GM_MUL}; /* (M, N) operands the epilogue reads */
    for (size_t i = 0; i < sizeof like_c / sizeof like_c[0]; i++) {
        const fe_tensor *x = &c->operands[like_c[i]];
        if (c->present[like_c[i]] && (x->shape[0] != M || x->shape[1] != N))
            return fe_op_refuse(c, FE_E_SHAPE, "%s must be shaped like c, (M, N) = (%lld, "
                                "%lld); it is (%lld, %lld): give one of c's shape or leave it "
                                "absent (rank 0)", operands[like_c[i]].name, (long long)M,
                                (long long)N, (long long)x->shape[0], (long long)x->shape[1]);
    }
    if (c->params[GM_P_BF16] != 0 && b->dtype != FE_DTYPE_BF16 && bt->block <= 1)
        return fe_op_refuse(c, FE_E_INVALID, "act_bf16 needs b in bf16 or in blocks (q8_0 .. "
                            "q6_k, whose values round to bf16: products of two bf16 values); b "
                            "is %s: set act_bf16 = 0, or store b as bf16", bt->name);
    if (c->params[GM_P_INT8] != 0 && bt->block <= 1)
        return fe_op_refuse(c, FE_E_INVALID, "act_int8 needs b in blocks (q8_0, q4_0, q4_1, "
                            "q5_0, q4_k or q6_k: integer dot products per block); b is %s: set "
                            "act_int8 = 0, or quantise b", bt->name);
    if (c->params[GM_P_CMIN] > c->params[GM_P_CMAX])
        return fe_op_refuse(c, FE_E_INVALID, "clamp_min = %g is above clamp_max = %g: give "
                            "clamp_min < clamp_max to clamp, or equal values (default 0, 0) "
                            "for no clamp", c->params[GM_P_CMIN], c->params[GM_P_CMAX]);
    c->ext[GM_M] = M;
    c->ext[GM_N] = N;
    c->ext[GM_K] = K;
    return FE_OK;
}

/* For graphs: c = (M, N) f32, M from a's rows, N from b's rows. */
static void shape_out(fe_op_ctx *c) {
    if (c->operands[GM_A].rank != 2 || c->operands[GM_B].rank != 2) return; /* infer says why */
    const int64_t mn[2] = {c->operands[GM_A].shape[0], c->operands[GM_B].shape[0]};
    c->operands[GM_C] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
}

/* The largest choice of tunable t with choice * unit <= budget (else the smallest). */
static int64_t fit_choice(const fe_tunable_decl *t, double unit, double budget) {
    int64_t best = t->domain.choices[0];
    for (int i = 0; i < t->domain.n_choices; i++)
        if ((double)t->domain.choices[i] * unit <= budget && t->domain.choices[i] > best)
            best = t->domain.choices[i];
    return best;
}

/* bf16_dot: a vdpbf16ps design exactly where it can run (an act_bf16 design on an avx512
 * device with avx512bf16), by default GM_DOT_DEFAULT where it outruns the FMAs
 * (bf16_dot_fast: AMD's cores), else 0; forced off where it cannot run, also over a call
 * site.
 * Block sizes from the device's caches only (never the extents: one design serves all).
 * f32 path: an MR x KC A panel in 2/3 of L1 (it stays there through a sweep of N), an MC x KC
 * A block in L2 (packed, then walked panel by panel), and the KC x NC B block in half of L2
 * or a share of the LLC (f32_path_nc: re-read once per A block; larger NC repacks A less
 * often). bf16_dot = 1: a B
 * panel of KC x 32 bf16 in an eighth of L2 (it stays there through a sweep of A's block),
 * the MC x KC bf16 A block in half of L2 (NC is not read: pinned to its default, also over
 * a call site, so that no two designs differ in it alone). bf16_dot = 2: six B rows of KC
 * bf16 in half of L1 (they stay there through a sweep of A's rows), the MC x KC bf16 A block
 * in half of L2, and NC B rows of KC in a share of the LLC (re-read from there by the next
 * row block). act_int8's panels: resolve_int8_blocks, below. */

/* act_int8 over q8_0 / q4_0 / q4_1 (int8.inc) packs B at 1.25 bytes a weight
 * (GM_I8_BLOCK_WORDS words per column and 32-block) and keeps A as int8, so the f32 path's
 * sizes (an MR x KC f32 A panel in 2/3 of L1: KC 384 on AVX-512; KC x NC floats in the LLC:
 * NC 2048) do not fit it: KC (unless given) puts one NRI-column B panel in 2/3 of L1, and on
 * AVX-512 NC (unless given) the packed NC x KC block in a third of L2, where the row tiles'
 * sweeps read it again. One worker, CPU time, alternated call by call, 20 distinct B a run
 * so that they come from memory as a model's do, against KC 384 / NC 2048: q4_1 512 x 1536 x
 * 576 +4.7 %, 512 x 576 x 1536 +5.6 %, q8_0 512 x 2048 x 2048 +6.1 %, 512 x 2048 x 8192
 * +1.5 %; AVX2's half-rate tile ran 0-6 % slower at NC 512, so it keeps the LLC's share.
 * AVX2's tile under AVX-VNNI runs at the AVX-512 tile's rate a column: NC a third of L2 as
 * there (a Xeon with AMX, FERRUM_ISA=avxvnni, q8_0 512 x 8192 x 2048 with SiLU: NC 8192 ->
 * 1024 51.4 -> 41.8 ms, `ferrum tune GEMM case=q8_0/deep M=512 N=8192 K=2048 act_int8=1
 * activation=1`; NC 256-2048 within 3 % of each other).
 * int8_dot = 2 (pairs16.inc) packs at 2.125 bytes a weight, 16 columns a panel, one panel
 * at a time: KC puts it in an eighth of L2 (2048 on 1 MiB; the panel is read from L2 by every
 * row tile). Each K block walks C's strip again and restarts every tile's sums, and that cost
 * more than the panel's L1: on a Zen 4 running AVX2 code, KC 128 -> 2048 ran every Llama 1B
 * shape faster step by step (`ferrum tune GEMM case=q8_0/i8_512_2048x2048 N=..`: N 8192
 * 60 -> 55 ms, 2048 14.9 -> 14.6, 512 4.44 -> 4.32; the prefill 134 -> 140 tok/s). NC a third
 * of L2 for a 512-deep panel strip, 256 (NC bounds the strip of C each K block walks
 * again). */
static void resolve_int8_blocks(fe_op_ctx *c, bool kc_given, bool nc_given, double l1,
                                double l2) {
    const fe_dtype bdt = c->operands[GM_B].dtype;
    if (c->params[GM_P_INT8] == 0 || gm_kq_nsub(bdt) > 0 || c->dev->isa < FE_ISA_AVX2) return;
    const bool w16 = c->tunables[GM_DOT8] == GM_DOT8_PAIRS16; /* resolved before */
    const double col = (w16 ? GM_W16_BLOCK_WORDS : GM_I8_BLOCK_WORDS) * 4.0 / GM_KSTEP;
    const int nr = c->dev->isa >= FE_ISA_AVX512 ? GM_NR_I8_AVX512
                 : w16                          ? GM_NR_W16_AVX2
                                                : GM_NR_I8_AVX2;
    if (!kc_given) {
        c->tunables[GM_KC] = w16 ? fit_choice(&tunables[GM_KC], col * nr, l2 / 8)
                                 : fit_choice(&tunables[GM_KC], col * nr, l1 * 2 / 3);
        if (!w16 && c->tunables[GM_KC] > 512) c->tunables[GM_KC] = 512;
    }
    const bool vnni = c->tunables[GM_DOT8] == GM_DOT8_VNNI; /* AVX-VNNI on AVX2: full rate */
    if (!nc_given && (c->dev->isa >= FE_ISA_AVX512 || w16 || vnni))
        c->tunables[GM_NC] =
            fit_choice(&tunables[GM_NC], col * (double)(w16 ? 512 : c->tunables[GM_KC]), l2 / 3);
}

/* The f32 path's NC: its KC x NC float B block is re-read once per A block. In half of L2
 * where that holds 512 columns or more (a 2 MiB L2 at KC 512: A is then repacked once per
 * 512 columns, which costs less than reading B from further out); else in a quarter of the
 * worker's share of the LLC, as BLIS sizes it. A VM may report its host's whole L3 (a
 * 2-vCPU Xeon guest says 480 MiB): the LLC rule alone gave NC 8192 there, whose 16 MiB block
 * ran the Llama 1B shape's BF16 gate GEMM with the AVX2 kernels at 141 GFLOP/s against
 * NC 512's 176 (`FERRUM_ISA=avx2 ferrum tune GEMM case=bf16/8192x2048`), and the prefill at
 * 61 tok/s against 72-83. L2s of 1 MiB or less (Zen 3/4/5, Ice Lake) keep the LLC rule. */
static int64_t f32_path_nc(double kc, double l2, double l3, int workers) {
    const int64_t in_l2 = fit_choice(&tunables[GM_NC], 4.0 * kc, l2 / 2); /* 256: none fit */
    if (in_l2 >= 512) return in_l2;
    return fit_choice(&tunables[GM_NC], 4.0 * kc, l3 / (4.0 * workers));
}

static void resolve(fe_op_ctx *c) {
    const bool kc_given = c->tunable_set[GM_KC], nc_given = c->tunable_set[GM_NC];
    const fe_dtype bdt = c->operands[GM_B].dtype;
    const bool blocks = fe_dtype_info(bdt)->block > 1;
    const bool can = c->params[GM_P_BF16] != 0 && c->dev->isa >= FE_ISA_AVX512 &&
                     c->dev->features.avx512bf16;
    const bool amx = can && c->dev->features.amx_bf16 && (!blocks || gm_amx_blocks_serve(bdt));
    /* act_bf16 over blocks: the tiles (amx.inc widens the int8 panels) or the f32 path */
    const bool vec = can && !blocks;
    const int64_t given = c->tunables[GM_DOT];
    if (!c->tunable_set[GM_DOT] || (given == GM_DOT_AMX && !amx) ||
        (given != GM_DOT_AMX && given != GM_DOT_OFF && !vec)) {
        /* vdpbf16ps by default only where it outruns the FMAs (bf16_dot_fast): a Xeon
         * without its tiles (FERRUM_ISA=avx512noamx) ran the Llama 3.2 1B shape's BF16
         * prefill at 87-89 tok/s by vdpbf16ps (bf16_dot 1 or 2) and 127 by the f32 path
         * over the same bf16 values (bf16_dot 0) */
        c->tunables[GM_DOT] = amx                           ? GM_DOT_AMX
                            : vec && c->dev->bf16_dot_fast ? GM_DOT_DEFAULT
                                                           : GM_DOT_OFF;
        c->tunable_set[GM_DOT] = true;
    }
    const bool i8 = c->params[GM_P_INT8] != 0;
    const bool vnni = i8 && c->dev->dpbusd; /* AVX512-VNNI's on zmm, AVX-VNNI's on ymm */
    const bool pairs16 = i8 && c->dev->isa == FE_ISA_AVX2 &&
                         c->operands[GM_B].dtype == FE_DTYPE_Q8_0;
    const bool amx8 = i8 && c->dev->isa >= FE_ISA_AVX512 && c->dev->features.amx_int8 &&
                      gm_amx8_serves(c->operands[GM_B].dtype);
    const int64_t dot8 = c->tunables[GM_DOT8];
    if (!c->tunable_set[GM_DOT8] || (dot8 == GM_DOT8_VNNI && !vnni) ||
        (dot8 == GM_DOT8_PAIRS16 && !pairs16) || (dot8 == GM_DOT8_AMX && !amx8)) {
        /* (q4_1's m term makes the tiles' block update the longer: 0.99-1.01x VNNI's
         * GEMM and 0.95x SmolLM2's prefill, so VNNI stays its default) */
        const bool amx8_first = amx8 && c->operands[GM_B].dtype != FE_DTYPE_Q4_1;
        c->tunables[GM_DOT8] = amx8_first ? GM_DOT8_AMX
                             : vnni     ? GM_DOT8_VNNI
                             : pairs16  ? GM_DOT8_PAIRS16
                                        : GM_DOT8_MADD;
        c->tunable_set[GM_DOT8] = true;
    }
    const bool panels = gm_panels_serve(c->params[GM_P_INT8] != 0, c->operands[GM_B].dtype,
                                        c->dev->isa, (int)c->tunables[GM_DOT]);
    if (!panels || !c->tunable_set[GM_PANELS]) {
        /* act_int8: 1 exactly where the decode's GEMV reads the panels by default, so the
         * weight keeps one form (q8_0 on AVX2: both read the rows as stored) */
        c->tunables[GM_PANELS] =
            panels && (c->operands[GM_B].dtype == FE_DTYPE_BF16 ||
                       fe_gemv_panel_default(c->operands[GM_B].dtype, c->dev->isa));
        c->tunable_set[GM_PANELS] = true;
    }
    const bool rows = c->tunables[GM_DOT] == GM_DOT_ROWS;
    const bool dot = gm_dot_reads_pairs(c->tunables[GM_DOT]);
    int mr, nr;
    gm_tile(c->dev->isa, &mr, &nr);
    double l1 = c->dev->l1d_bytes ? (double)c->dev->l1d_bytes : 32768.0;
    double l2 = c->dev->l2_bytes ? (double)c->dev->l2_bytes : 1048576.0;
    double l3 = c->dev->l3_bytes ? (double)c->dev->l3_bytes : 8388608.0;
    int workers = c->dev->n_workers > 0 ? c->dev->n_workers : 1;
    if (!c->tunable_set[GM_KC]) {
        /* f32 panels no deeper than 512, the depths that path was measured at (the scalar
         * and AVX2 tiles would fit deeper ones in L1) */
        c->tunables[GM_KC] = dot    ? fit_choice(&tunables[GM_KC], 2.0 * GM_NR_AVX512, l2 / 8)
                           : rows ? fit_choice(&tunables[GM_KC], 2.0 * GM_NR_ROWS, l1 / 2)
                                  : fit_choice(&tunables[GM_KC], 4.0 * mr, l1 * 2 / 3);
        if (!rows && !dot && c->tunables[GM_KC] > 512) c->tunables[GM_KC] = 512;
        c->tunable_set[GM_KC] = true;
    }
    double kc = (double)c->tunables[GM_KC];
    if (!c->tunable_set[GM_MC]) {
        c->tunables[GM_MC] = rows || dot ? fit_choice(&tunables[GM_MC], 2.0 * kc, l2 / 2)
                                         : fit_choice(&tunables[GM_MC], 4.0 * kc, l2);
        c->tunable_set[GM_MC] = true;
    }
    if (dot) { /* not read: one design whatever a call site or profile gives */
        c->tunables[GM_NC] = tunables[GM_NC].def;
        c->tunable_set[GM_NC] = true;
    }
    if (!c->tunable_set[GM_NC]) {
        c->tunables[GM_NC] = rows ? fit_choice(&tunables[GM_NC], 2.0 * kc, l3 / (2.0 * workers))
                                  : f32_path_nc(kc, l2, l3, workers);
        c->tunable_set[GM_NC] = true;
    }
    resolve_int8_blocks(c, kc_given, nc_given, l1, l2);
}

static double act_ref(double x, int act) {
    if (act == GM_ACT_SILU) return x / (1.0 + exp(-x));
    if (act == GM_ACT_GELU)
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    if (act == GM_ACT_GELU_ERF) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return x;
}

/* C's element i = m N + n for the dot s under the epilogue */
static float epilogue_ref(const fe_args *args, const fe_design *d, int64_t i, int64_t n,
                          double s) {
    const float *bias = d->present[GM_BIAS] ? args->t[GM_BIAS].data : NULL;
    const float *res = d->present[GM_RES] ? args->t[GM_RES].data : NULL;
    const float *mul = d->present[GM_MUL] ? args->t[GM_MUL].data : NULL;
    const double lo = (float)d->params[GM_P_CMIN], hi = (float)d->params[GM_P_CMAX];
    double v = act_ref(s + (bias ? bias[n] : 0.0), (int)d->params[GM_P_ACT]);
    if (mul) v *= mul[i];
    if (res) v += res[i];
    if (lo < hi) v = v < lo ? lo : v > hi ? hi : v;
    return (float)v;
}

/* act_int8: every row of A quantised as the kernels quantise it (gm_i8_quant_rows), dotted
 * with every row of B block by block in exact integers, scaled and summed in double
 * (fe_gemv_dot_int8, GEMV act_int8's own), then the epilogue. */
static void reference_int8(const fe_args *args, const fe_design *d) {
    const int64_t N = args->ext[GM_N], K = args->ext[GM_K];
    const int64_t rows = args->v[GM_V_ROWS], k = args->v[GM_V_K];
    const fe_dtype dt = d->dtypes[GM_B];
    const size_t row_bytes = fe_dtype_bytes(dt, K);
    const unsigned char *B = args->t[GM_B].data;
    float *C = args->t[GM_C].data;
    const int64_t words = gm_i8_row_words(K), kq = (k + GM_KSTEP - 1) / GM_KSTEP * GM_KSTEP;
    uint32_t *q = fe_malloc((size_t)words * 4);
    if (fe_kq_serves(dt)) { /* q5_0 / q4_k / q6_k: kquant.h's quantisation and reference dot */
        const int xb = fe_kq_xblock(dt);
        const int64_t kx = (k + xb - 1) / xb * xb;
        int8_t *q8 = (int8_t *)q;
        float *dx = q ? (float *)q + K / 4 : NULL;
        int16_t *bs = q ? (int16_t *)(dx + K / 32) : NULL;
        for (int64_t m = 0; m < rows; m++) {
            if (q) fe_kq_quant_x_bounded((const float *)args->t[GM_A].data + m * K, K, k, xb, q8, dx, bs);
            for (int64_t n = 0; n < N; n++)
                C[m * N + n] = q ? epilogue_ref(args, d, m * N + n, n,
                                                (float)fe_kq_dot_int8_ref(dt, B + n * row_bytes,
                                                                          q8, dx, bs, kx))
                                 : NAN;
        }
        fe_free(q);
        return;
    }
    for (int64_t m = 0; m < rows; m++) {
        if (q) gm_i8_quant_rows(args->t[GM_A].data, K, m, m + 1, k, 0, fe_gemv_quant_x, q);
        for (int64_t n = 0; n < N; n++)
            C[m * N + n] = q ? epilogue_ref(args, d, m * N + n, n,
                                            fe_gemv_dot_int8(dt, B + n * row_bytes,
                                                             (const int8_t *)q,
                                                             (const float *)q + K / 4, kq))
                             : NAN;
    }
    fe_free(q);
}

/* Plain double loops: rows of B decoded by fe_dequant_row (GROUP at a time, once each, held
 * in double), then for every row of A (each value rounded to bf16 first under act_bf16) the
 * dot products with them over the first k columns, in double, and the epilogue. If the
 * buffers cannot be had, C's rows are written NaN (a test then fails loudly). */
static void reference(const fe_args *args, const fe_design *d) {
    enum { GROUP = 8 };
    const int64_t N = args->ext[GM_N], K = args->ext[GM_K];
    const int64_t rows = args->v[GM_V_ROWS], k = args->v[GM_V_K];
    const fe_dtype dt = d->dtypes[GM_B];
    const size_t row_bytes = fe_dtype_bytes(dt, K);
    const float *A = args->t[GM_A].data;
    const char *B = args->t[GM_B].data;
    float *C = args->t[GM_C].data;
    const bool bf16 = d->params[GM_P_BF16] != 0; /* A's and B's values rounded to bf16 */
    if (d->params[GM_P_INT8] != 0) {
        reference_int8(args, d);
        return;
    }
    float *row = fe_malloc((size_t)K * sizeof *row);
    double *w = fe_malloc((size_t)K * GROUP * sizeof *w); /* w[p * GROUP + j]: B[n0 + j, p] */
    for (int64_t n0 = 0; n0 < N; n0 += GROUP) {
        const int g = (int)(N - n0 < GROUP ? N - n0 : GROUP);
        for (int j = 0; row && w && j < GROUP; j++) {
            if (j < g) fe_dequant_row(dt, B + (n0 + j) * row_bytes, row, K);
            for (int64_t p = 0; p < k; p++)
                w[p * GROUP + j] = j >= g ? 0.0 : bf16 ? gm_round_bf16(row[p]) : row[p];
        }
        for (int64_t m = 0; m < rows; m++) {
            const float *x = A + m * K;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
            for (int64_t p = 0; row && w && p < k; p++) { /* eight sums kept in registers */
                const double a = bf16 ? gm_round_bf16(x[p]) : x[p], *b = w + p * GROUP;
                s0 += a * b[0], s1 += a * b[1], s2 += a * b[2], s3 += a * b[3];
                s4 += a * b[4], s5 += a * b[5], s6 += a * b[6], s7 += a * b[7];
            }
            const double s[GROUP] = {s0, s1, s2, s3, s4, s5, s6, s7};
            for (int j = 0; j < g; j++)
                C[m * N + n0 + j] =
                    row && w ? epilogue_ref(args, d, m * N + n0 + j, n0 + j, s[j]) : NAN;
        }
    }
    fe_free(row);
    fe_free(w);
}

/* FLOPs of the products (the epilogue is not counted); bytes of A, B (its dtype's bytes
 * over the first k columns, whole blocks), C, and the bias, residual and multiplier when
 * present. The same under act_bf16: A is read as f32 and rounded while packing (or,
 * bf16_dot = 2, into bf16 rows), B is read as bf16 either way (bf16_dot = 1: its layout
 * holds B's bytes, the panels padded to 32 rows); only the roof differs (twice the
 * multiply-adds per instruction with bf16_dot). */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    const double rows = (double)a->v[GM_V_ROWS], N = (double)a->ext[GM_N];
    const int64_t k = a->v[GM_V_K], blk = fe_dtype_info(d->dtypes[GM_B])->block;
    out->flops = 2.0 * rows * N * (double)k;
    out->bytes = rows * (double)k * 4.0 +
                 N * (double)fe_dtype_bytes(d->dtypes[GM_B], (k + blk - 1) / blk * blk) +
                 rows * N * 4.0 * (1.0 + d->present[GM_RES] + d->present[GM_MUL]) +
                 (d->present[GM_BIAS] ? N * 4.0 : 0.0);
}

/* c must not share memory with an input: partial sums land in c before the last K block
 * reads the residual (and a or b would be overwritten while still read). */
static bool overlaps(const fe_tensor *x, const fe_tensor *y) {
    if (!x->rank || !y->rank) return false;
    uintptr_t x0 = (uintptr_t)x->data, y0 = (uintptr_t)y->data;
    uintptr_t xb = fe_dtype_bytes(x->dtype, fe_tensor_numel(x));
    uintptr_t yb = fe_dtype_bytes(y->dtype, fe_tensor_numel(y));
    return x0 < y0 + yb && y0 < x0 + xb;
}

static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    (void)d;
    static const char *const names[] = {"a", "b", "bias", "residual", "c", "multiplier"};
    for (int i = GM_A; i <= GM_MUL; i++)
        if (i != GM_C && overlaps(&a->t[i], &a->t[GM_C])) {
            snprintf(why, why_n, "c overlaps %s: C = A.B^T is not computed in place (partial "
                     "sums land in c before %s is fully read); give c its own buffer",
                     names[i], names[i]);
            return FE_E_INVALID;
        }
    return FE_OK;
}

/* B's layout, where the design reads one:
 * - bf16_dot = 1 on AVX-512: panels of 32 rows of B as k-pairs over the whole K
 *   (bf16dot.inc), B's own bytes with N rounded up to whole panels and K to whole pairs;
 * - b_panels = 1 (act_int8, q8_0 / q4_0 / q4_1, AVX2 or AVX-512): the GEMV's panel layout of
 *   the same weight (fe_gemv_panel_format), from which int8.inc packs its B panels per call.
 *   The two ops name one format, so a graph keeps one copy for the prefill and the decode;
 * - b_panels = 1 over bf16 B on the f32 path (bf16_dot = 0: AVX2, AVX-512 without
 *   avx512bf16): the same k-pair panels as bf16_dot = 1's, which the decode's GEMV panel = 1
 *   reads too, widened to the f32 panels per call (kernels.inc, gm_pack_b_from_pairs). */
static size_t layout(const fe_args *a, const fe_design *d, int operand, uint64_t *format) {
    if (operand != GM_B) return 0;
    const int64_t N = a->ext[GM_N], K = a->ext[GM_K];
    const bool panels = d->tunables[GM_PANELS] &&
                        gm_panels_serve(d->params[GM_P_INT8] != 0, d->dtypes[GM_B], d->isa,
                                        (int)d->tunables[GM_DOT]);
    if (panels && d->dtypes[GM_B] != FE_DTYPE_BF16) {
        *format = fe_gemv_panel_format(d->dtypes[GM_B]);
        return fe_gemv_panel_matrix_bytes(d->dtypes[GM_B], N, K);
    }
    const bool dot = d->isa == FE_ISA_AVX512 && d->params[GM_P_BF16] != 0 &&
                     d->dtypes[GM_B] == FE_DTYPE_BF16 && gm_dot_reads_pairs(d->tunables[GM_DOT]);
    if (!panels && !dot) return 0; /* bf16 k-pairs for either, else none */
    *format = GM_LAYOUT_BF16_PAIRS;
    return (size_t)((N + GM_NR_AVX512 - 1) / GM_NR_AVX512 * GM_NR_AVX512) *
           (size_t)((K + 1) / 2) * 4;
}

static void layout_make(const fe_args *a, const fe_design *d, int operand, void *dst, int ith,
                        int nth) {
    (void)operand;
    const int64_t N = a->ext[GM_N], K = a->ext[GM_K];
    int64_t p0, p1;
    const fe_dtype dt = d->dtypes[GM_B];
    if (d->tunables[GM_PANELS] && dt != FE_DTYPE_BF16 &&
        gm_panels_serve(d->params[GM_P_INT8] != 0, dt, d->isa, (int)d->tunables[GM_DOT])) {
        const size_t gb = fe_gemv_panel_group_bytes(dt, K);
        fe_split((N + PANEL_ROWS - 1) / PANEL_ROWS, ith, nth, 1, &p0, &p1);
        for (int64_t g = p0; g < p1; g++)
            fe_gemv_panel_pack(dt, a->t[GM_B].data, fe_dtype_bytes(dt, K), N, K, g,
                               (unsigned char *)dst + (size_t)g * gb);
        return;
    }
    /* bf16 k-pairs: the GEMV's maker on AVX2 (no AVX-512 build there), the same words */
    fe_split((N + GM_NR_AVX512 - 1) / GM_NR_AVX512, ith, nth, 1, &p0, &p1);
    if (d->isa >= FE_ISA_AVX512) fe_gemm_dot_layout(a->t[GM_B].data, N, K, p0, p1, dst);
    else fe_gemv_bf16_pairs_layout(a->t[GM_B].data, N, K, p0, p1, dst);
}

/* Packed A, packed B (and decoded quant rows) per worker, at the kernel's extents, in 4-byte
 * words. */
static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    gm_plan p;
    gm_plan_make(a, d, nth, &p);
    return (size_t)p.stride * 4 * (size_t)(nth > 0 ? nth : 1);
}

/* Case names are "<b dtype>/<what>"; dims are {M, N, K}. */
static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_dtype bdt = FE_DTYPE_F32;
    const char *slash = strchr(c->name, '/');
    char name[16];
    if (slash && (size_t)(slash - c->name) < sizeof name) {
        memcpy(name, c->name, (size_t)(slash - c->name));
        name[slash - c->name] = '\0';
        if (fe_dtype_from_name(name, &bdt) != FE_OK) bdt = FE_DTYPE_F32;
    }
    const int64_t M = c->dims[0], N = c->dims[1], K = c->dims[2];
    const int64_t mk[2] = {M, K}, nk[2] = {N, K}, mn[2] = {M, N};
    out[GM_A] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mk);
    out[GM_B] = fe_tensor_contiguous(NULL, bdt, 2, nk);
    out[GM_BIAS] = c->absent & (1u << GM_BIAS) ? (fe_tensor){.rank = 0}
                                               : fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &N);
    out[GM_RES] = c->absent & (1u << GM_RES) ? (fe_tensor){.rank = 0}
                                             : fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
    out[GM_C] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
    out[GM_MUL] = c->absent & (1u << GM_MUL) ? (fe_tensor){.rank = 0}
                                             : fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
}

/* absent operands; a case that names none has them all, the multiplier too */
#define NO_MUL (1u << GM_MUL)
#define NO_BIAS ((1u << GM_BIAS) | NO_MUL)
#define NO_RES ((1u << GM_RES) | NO_MUL)
#define PLAIN (NO_BIAS | NO_RES)
#define GATED ((1u << GM_BIAS) | (1u << GM_RES)) /* the multiplier alone: a SwiGLU's up */
#define SHAPE(m, n, k) .dims = {m, n, k}, .n_dims = 3
#define BF16 .params = {{"act_bf16", 1}}, .n_params = 1
#define I8 .params = {{"act_int8", 1}}, .n_params = 1

/* The catalog also runs every case at the middle bound (rows = M/2 + 1, k = K/2 + 1) and the
 * minimum (rows 0, k 1): M = 1, 4, 32, 126, 128 put the middle rows at 1, 3, 17, 64, 65. */
static const fe_case cases[] = {
    {.name = "f32/small", SHAPE(5, 40, 64), .absent = PLAIN},
    {.name = "f32/odd", SHAPE(7, 33, 100), .absent = PLAIN},
    {.name = "bf16/odd", SHAPE(7, 33, 100), .absent = PLAIN},
    {.name = "f16/odd", SHAPE(7, 33, 100), .absent = PLAIN},
    {.name = "q8_0/odd", SHAPE(7, 33, 96), .absent = PLAIN},
    {.name = "q4_0/odd", SHAPE(7, 33, 128), .absent = PLAIN},
    {.name = "q4_1/odd", SHAPE(7, 33, 64), .absent = PLAIN},
    {.name = "q5_0/odd", SHAPE(7, 33, 160), .absent = PLAIN},
    {.name = "q4_k/odd", SHAPE(7, 33, 512), .absent = PLAIN},
    {.name = "q6_k/odd", SHAPE(9, 21, 768), .absent = PLAIN},
    {.name = "q4_k/kc_256", SHAPE(5, 40, 1024), .absent = PLAIN,
     .tunables = {{"KC", 192}}, .n_tunables = 1}, /* KC rounds up to one super-block */
    {.name = "q6_k/all", SHAPE(6, 24, 512)},
    {.name = "q5_0/int8", SHAPE(7, 33, 640), I8, .absent = PLAIN},
    {.name = "q4_k/int8", SHAPE(9, 37, 1024), I8, .absent = PLAIN},
    {.name = "q6_k/int8", SHAPE(5, 21, 512), I8},
    {.name = "q4_k/int8_rows_1", SHAPE(1, 50, 256), I8, .absent = PLAIN},
    {.name = "f32/bias", SHAPE(6, 50, 70), .absent = NO_RES},
    {.name = "f32/residual", SHAPE(6, 50, 70), .absent = NO_BIAS},
    {.name = "f32/silu", SHAPE(6, 50, 70), .params = {{"activation", GM_ACT_SILU}},
     .n_params = 1, .absent = PLAIN},
    {.name = "f32/gelu", SHAPE(6, 50, 70), .params = {{"activation", GM_ACT_GELU}},
     .n_params = 1, .absent = PLAIN},
    {.name = "f32/clamp", SHAPE(6, 50, 70), .params = {{"clamp_min", -1}, {"clamp_max", 1}},
     .n_params = 2, .absent = PLAIN},
    {.name = "bf16/all", SHAPE(9, 48, 96),
     .params = {{"activation", GM_ACT_SILU}, {"clamp_min", -2}, {"clamp_max", 2}}, .n_params = 3},
    {.name = "q4_1/all", SHAPE(9, 48, 96),
     .params = {{"activation", GM_ACT_GELU}, {"clamp_min", -1.5}, {"clamp_max", 3}},
     .n_params = 3},
    {.name = "f32/bias_gelu_erf", SHAPE(9, 40, 384), .params = {{"activation", GM_ACT_GELU_ERF}},
     .n_params = 1, .absent = NO_RES},
    {.name = "f16/bias_gelu", SHAPE(17, 40, 48), .params = {{"activation", GM_ACT_GELU}},
     .n_params = 1, .absent = NO_RES},
    {.name = "f32/rows_1", SHAPE(1, 33, 64), .absent = PLAIN},
    {.name = "f32/rows_3", SHAPE(4, 40, 48), .absent = PLAIN},
    {.name = "f32/rows_17", SHAPE(32, 33, 50), .absent = PLAIN},
    {.name = "bf16/rows_64", SHAPE(126, 40, 40), .absent = NO_BIAS},
    {.name = "f32/rows_65", SHAPE(128, 33, 40), .absent = PLAIN},
    {.name = "q8_0/rows_65", SHAPE(128, 20, 64), .absent = PLAIN},
    {.name = "f32/n_edges", SHAPE(15, 97, 33), .absent = PLAIN},
    {.name = "f32/n31", SHAPE(6, 31, 70), .absent = NO_RES},
    {.name = "f16/n63", SHAPE(3, 63, 20), .absent = PLAIN},
    /* past the default blocks: several K blocks, N blocks, M blocks */
    {.name = "f32/deep", SHAPE(5, 40, 700), .absent = PLAIN},
    {.name = "q8_0/deep", SHAPE(3, 20, 704), .absent = NO_BIAS},
    {.name = "bf16/k576", SHAPE(4, 40, 576), .absent = PLAIN}, /* one K block with its tail */
    {.name = "bf16/wide", SHAPE(3, 2100, 24), .absent = NO_RES},
    {.name = "f32/tall", SHAPE(600, 20, 24), .absent = PLAIN},
    /* act_bf16: the resolved design is bf16_dot = 1 where vdpbf16ps outruns the FMAs
     * (AMD's AVX512_BF16 cores; elsewhere 3 with AMX tiles, else 0; the dot1_ cases below
     * pin 1 wherever it runs), 14 x 32 tiles over k-pair panels of 32 rows of B (from B's
     * layout, or packed per call: the catalog runs each case both ways and compares the
     * bytes). Edges: M 1..a chunk (tiles of 14 rows,
     * blocks of MC = 128 rows), N off the 32-row panel, an odd k (the last pair's high
     * half; the middle bound k = K/2 + 1 is odd for even K), K past KC = 2048 with a rest
     * that joins the last block (2560) and one that does not (2599) */
    {.name = "bf16/dot_odd", SHAPE(7, 33, 101), BF16, .absent = PLAIN},
    {.name = "bf16/dot_tiles", SHAPE(29, 65, 63), BF16, .absent = NO_RES},
    {.name = "bf16/dot_all", SHAPE(15, 48, 95),
     .params = {{"act_bf16", 1}, {"activation", GM_ACT_SILU}, {"clamp_min", -2},
                {"clamp_max", 2}}, .n_params = 4},
    {.name = "bf16/dot_rows_1", SHAPE(1, 31, 64), BF16, .absent = PLAIN},
    {.name = "bf16/dot_rows_14", SHAPE(14, 32, 66), BF16, .absent = NO_BIAS},
    {.name = "bf16/dot_rows_15", SHAPE(15, 47, 33), BF16, .absent = PLAIN},
    {.name = "bf16/dot_rows_64", SHAPE(126, 40, 41), BF16, .absent = NO_BIAS},
    {.name = "bf16/dot_rows_129", SHAPE(129, 97, 40), BF16, .absent = NO_RES},
    {.name = "bf16/dot_chunk", SHAPE(256, 80, 130), BF16, .absent = PLAIN},
    {.name = "bf16/dot_deep", SHAPE(5, 40, 701), BF16, .absent = PLAIN}, /* K: 512 + 189 */
    {.name = "bf16/dot_k2560", SHAPE(3, 40, 2560), BF16, .absent = NO_BIAS}, /* 2048 + 512 */
    {.name = "bf16/dot_k2599", SHAPE(9, 20, 2599), BF16, .absent = NO_BIAS}, /* 2048 + 551 */
    {.name = "bf16/dot_k577", SHAPE(4, 40, 577), BF16, .absent = PLAIN}, /* one odd block */
    {.name = "bf16/dot_wide", SHAPE(3, 2100, 25), BF16, .absent = NO_RES},
    {.name = "bf16/dot_tall", SHAPE(600, 20, 23), BF16, .absent = PLAIN},
    /* the other act_bf16 designs pinned: bf16_dot = 2 (A's rows dotted with B's rows as
     * stored, 4 x 6 blocks, the last 1..31 columns of a K block under a mask) and
     * bf16_dot = 0 (A rounded while packing, f32 FMAs) */
    {.name = "bf16/dot2_odd", SHAPE(7, 33, 101), BF16, .absent = PLAIN,
     .tunables = {{"bf16_dot", 2}}, .n_tunables = 1},
    {.name = "bf16/dot2_tiles", SHAPE(29, 65, 63), BF16, .absent = NO_RES,
     .tunables = {{"bf16_dot", 2}}, .n_tunables = 1},
    {.name = "bf16/dot2_deep", SHAPE(5, 40, 701), BF16, .absent = PLAIN,
     .tunables = {{"bf16_dot", 2}}, .n_tunables = 1},
    {.name = "bf16/dot2_k2599", SHAPE(9, 20, 2599), BF16, .absent = NO_BIAS,
     .tunables = {{"bf16_dot", 2}}, .n_tunables = 1},
    {.name = "bf16/dot2_tall", SHAPE(600, 20, 23), BF16, .absent = NO_BIAS,
     .tunables = {{"bf16_dot", 2}}, .n_tunables = 1},
    {.name = "bf16/dot_fma_tiles", SHAPE(29, 65, 63), BF16, .absent = NO_RES,
     .tunables = {{"bf16_dot", 0}}, .n_tunables = 1},
    /* bf16_dot = 3 (amx.inc: 32 x 32 blocks of C in AMX tiles; where the device has no
     * AMX-BF16 resolve turns it to the default, which these cases then run) and bf16_dot = 1
     * pinned (it is the default only without AMX): M 1..a chunk, across the 16-row halves
     * and the 32-row block; N off the 32-column panel; k not a multiple of 32 (the rest
     * through the zero-padded copy) and odd (the last pair's high half); K past KC = 2048 */
#define AMX .tunables = {{"bf16_dot", 3}}, .n_tunables = 1
    {.name = "bf16/amx_odd", SHAPE(7, 33, 101), BF16, .absent = PLAIN, AMX},
    {.name = "bf16/amx_tiles", SHAPE(29, 65, 63), BF16, .absent = NO_RES, AMX},
    {.name = "bf16/amx_all", SHAPE(15, 48, 95),
     .params = {{"act_bf16", 1}, {"activation", GM_ACT_SILU}, {"clamp_min", -2},
                {"clamp_max", 2}}, .n_params = 4, AMX},
    {.name = "bf16/amx_rows_1", SHAPE(1, 31, 64), BF16, .absent = PLAIN, AMX},
    {.name = "bf16/amx_rows_17", SHAPE(17, 32, 66), BF16, .absent = NO_BIAS, AMX},
    {.name = "bf16/amx_rows_129", SHAPE(129, 97, 40), BF16, .absent = NO_RES, AMX},
    {.name = "bf16/amx_chunk", SHAPE(256, 80, 130), BF16, .absent = PLAIN, AMX},
    {.name = "bf16/amx_k2560", SHAPE(33, 40, 2560), BF16, .absent = NO_BIAS, AMX},
    {.name = "bf16/amx_k2599", SHAPE(9, 20, 2599), BF16, .absent = NO_BIAS, AMX},
    {.name = "bf16/amx_tall", SHAPE(600, 20, 23), BF16, .absent = PLAIN, AMX},
    {.name = "bf16/amx_gated", SHAPE(29, 65, 63), BF16, .absent = GATED, AMX},
    /* act_bf16 over block B (B's values rounded to bf16 too): on the tiles from the
     * GEMV's panels (b_panels = 1, the default where they serve) and from B's rows, every
     * dtype they take (the K types' 256-blocks too), M 1..a chunk, N off the panel, K over
     * KC = 2048 with a rest, the bound k straddling a block (the catalog's middle bound),
     * the epilogues; the f32 path (bf16_dot = 0, the design where the device has no
     * AMX-BF16) and a K type there */
    {.name = "q8_0/amx_bf16_odd", SHAPE(7, 33, 96), BF16, .absent = PLAIN, AMX},
    {.name = "q4_0/amx_bf16_tiles", SHAPE(33, 65, 160), BF16, .absent = NO_RES, AMX},
    {.name = "q4_1/amx_bf16_all", SHAPE(13, 48, 96),
     .params = {{"act_bf16", 1}, {"activation", GM_ACT_SILU}, {"clamp_min", -2},
                {"clamp_max", 2}}, .n_params = 4, AMX},
    {.name = "q5_0/amx_bf16_gated", SHAPE(29, 65, 224), BF16, .absent = GATED, AMX},
    {.name = "q8_0/amx_bf16_rows_1", SHAPE(1, 45, 32), BF16, .absent = NO_RES, AMX},
    {.name = "q8_0/amx_bf16_k2592", SHAPE(40, 40, 2592), BF16, .absent = NO_BIAS, AMX},
    {.name = "q4_1/amx_bf16_tall", SHAPE(600, 20, 64), BF16, .absent = PLAIN, AMX},
    {.name = "q8_0/amx_bf16_from_rows", SHAPE(29, 65, 736), BF16, .absent = NO_RES,
     .tunables = {{"bf16_dot", 3}, {"b_panels", 0}}, .n_tunables = 2},
    {.name = "q5_0/amx_bf16_from_rows", SHAPE(17, 40, 640), BF16, .absent = PLAIN,
     .tunables = {{"bf16_dot", 3}, {"b_panels", 0}}, .n_tunables = 2},
    {.name = "q4_k/amx_bf16_odd", SHAPE(7, 33, 512), BF16, .absent = PLAIN, AMX},
    {.name = "q6_k/amx_bf16_tiles", SHAPE(33, 65, 768), BF16, .absent = NO_RES, AMX},
    {.name = "q4_k/amx_bf16_k2560", SHAPE(17, 40, 2560), BF16, .absent = NO_BIAS, AMX},
    {.name = "q6_k/amx_bf16_gated", SHAPE(29, 65, 512), BF16, .absent = GATED, AMX},
    {.name = "q4_k/amx_bf16_from_rows", SHAPE(13, 40, 1024), BF16, .absent = NO_BIAS,
     .tunables = {{"bf16_dot", 3}, {"b_panels", 0}}, .n_tunables = 2},
    {.name = "q6_k/amx_bf16_from_rows", SHAPE(9, 37, 512), BF16, .absent = PLAIN,
     .tunables = {{"bf16_dot", 3}, {"b_panels", 0}}, .n_tunables = 2},
    {.name = "q8_0/bf16_fma", SHAPE(29, 65, 224), BF16, .absent = NO_RES,
     .tunables = {{"bf16_dot", 0}}, .n_tunables = 1},
    {.name = "q4_1/bf16_fma", SHAPE(13, 48, 96), BF16, .absent = GATED,
     .tunables = {{"bf16_dot", 0}}, .n_tunables = 1},
    {.name = "q4_k/bf16_fma", SHAPE(9, 37, 1024), BF16, .absent = PLAIN},
#undef AMX
    {.name = "bf16/dot1_tiles", SHAPE(29, 65, 63), BF16, .absent = NO_RES,
     .tunables = {{"bf16_dot", 1}}, .n_tunables = 1},
    {.name = "bf16/dot1_k2599", SHAPE(9, 20, 2599), BF16, .absent = NO_BIAS,
     .tunables = {{"bf16_dot", 1}}, .n_tunables = 1},
    {.name = "bf16/dot1_gated", SHAPE(29, 65, 63), BF16, .absent = GATED,
     .tunables = {{"bf16_dot", 1}}, .n_tunables = 1},
    /* act_int8 (B in blocks; AVX-512 6 x 32 tiles, AVX2 4 x 8, int8_dot as resolved: VNNI
     * where the device has it): M 1..chunk-ish, K whole blocks but not whole K blocks
     * (KC + tail, an odd number of blocks), N off the tile; bounded rows and k (k = K/2 + 1
     * straddles a block) are the catalog's */
    {.name = "q8_0/int8_odd", SHAPE(7, 33, 96), I8, .absent = PLAIN},
    {.name = "q4_0/int8_odd", SHAPE(7, 33, 160), I8, .absent = PLAIN},
    {.name = "q4_1/int8_odd", SHAPE(7, 33, 64), I8, .absent = PLAIN},
    {.name = "q8_0/int8_rows_1", SHAPE(1, 45, 32), I8, .absent = NO_RES},
    {.name = "q4_1/int8_rows_1", SHAPE(1, 70, 32), I8, .absent = PLAIN},
    {.name = "q4_0/int8_tiles", SHAPE(29, 65, 224), I8, .absent = NO_RES},
    {.name = "q4_1/int8_all", SHAPE(13, 48, 96),
     .params = {{"act_int8", 1}, {"activation", GM_ACT_SILU}, {"clamp_min", -2},
                {"clamp_max", 2}}, .n_params = 4},
    {.name = "q8_0/int8_deep", SHAPE(5, 40, 736), I8, .absent = PLAIN}, /* K: 512 + 224 */
    {.name = "q4_0/int8_k2592", SHAPE(9, 20, 2592), I8, .absent = NO_BIAS}, /* 2048 + 544 */
    {.name = "q4_1/int8_k576", SHAPE(4, 40, 576), I8, .absent = PLAIN}, /* one K block */
    {.name = "q8_0/int8_wide", SHAPE(3, 2100, 64), I8, .absent = NO_RES},
    {.name = "q4_1/int8_tall", SHAPE(600, 20, 32), I8, .absent = PLAIN},
    {.name = "q4_0/int8_rows_65", SHAPE(128, 37, 96), I8, .absent = NO_BIAS},
    /* the 16-bit path (int8_dot = 0) pinned, so a VNNI machine checks it as well */
    {.name = "q8_0/int8_madd", SHAPE(29, 65, 224), I8, .absent = NO_RES,
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    {.name = "q4_0/int8_madd", SHAPE(7, 33, 160), I8, .absent = PLAIN,
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    {.name = "q4_1/int8_madd", SHAPE(13, 48, 608), I8, .absent = NO_BIAS,
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    /* AMX-INT8 pinned (int8_dot = 3; elsewhere resolve turns it to the device's own) and
     * VNNI pinned (the default only without AMX): 32 x 32 blocks, M 1..a chunk across the
     * 16-row tile halves, N off the 32-column panel, every dtype, K over KC with a rest and a
     * block straddling the bound k (the catalog's middle bound), the epilogues */
#define AMX8 .tunables = {{"int8_dot", 3}}, .n_tunables = 1
    {.name = "q8_0/int8_amx_odd", SHAPE(7, 33, 96), I8, .absent = PLAIN, AMX8},
    {.name = "q4_0/int8_amx_odd", SHAPE(17, 33, 160), I8, .absent = PLAIN, AMX8},
    {.name = "q4_1/int8_amx_all", SHAPE(13, 48, 96),
     .params = {{"act_int8", 1}, {"activation", GM_ACT_SILU}, {"clamp_min", -2},
                {"clamp_max", 2}}, .n_params = 4, AMX8},
    {.name = "q5_0/int8_amx_tiles", SHAPE(33, 65, 224), I8, .absent = NO_RES, AMX8},
    {.name = "q8_0/int8_amx_rows_1", SHAPE(1, 45, 32), I8, .absent = NO_RES, AMX8},
    {.name = "q8_0/int8_amx_deep", SHAPE(40, 40, 736), I8, .absent = PLAIN, AMX8},
    {.name = "q4_0/int8_amx_k2592", SHAPE(9, 20, 2592), I8, .absent = NO_BIAS, AMX8},
    {.name = "q4_1/int8_amx_tall", SHAPE(600, 20, 32), I8, .absent = PLAIN, AMX8},
    {.name = "q8_0/int8_amx_gated", SHAPE(29, 65, 224), I8, .absent = GATED, AMX8},
#undef AMX8
    {.name = "q8_0/int8_vnni", SHAPE(29, 65, 224), I8, .absent = NO_RES,
     .tunables = {{"int8_dot", 1}}, .n_tunables = 1},
    {.name = "q4_1/int8_vnni", SHAPE(13, 48, 608), I8, .absent = NO_BIAS,
     .tunables = {{"int8_dot", 1}}, .n_tunables = 1},
    {.name = "q5_0/int8_vnni", SHAPE(7, 33, 160), I8, .absent = PLAIN,
     .tunables = {{"int8_dot", 1}}, .n_tunables = 1},
    /* the int16 k-pairs pinned (AVX2's q8_0 default; elsewhere resolve turns it to the
     * device's own): M past the last 4-row tile by 3 (rows one at a time), N past a
     * 16-column panel, K in one block (its default KC) or over 2 K blocks of 512 and a
     * 64-column rest; with the residual too, which the rows past the last tile must take
     * from their own row */
    {.name = "q8_0/int8_pairs16", SHAPE(31, 97, 1088), I8, .absent = NO_RES,
     .tunables = {{"int8_dot", 2}}, .n_tunables = 1},
    {.name = "q8_0/int8_pairs16_kc512", SHAPE(31, 97, 1088), I8, .absent = NO_RES,
     .tunables = {{"int8_dot", 2}, {"KC", 512}}, .n_tunables = 2},
    {.name = "q8_0/int8_pairs16_res", SHAPE(31, 37, 1088), I8, .absent = NO_BIAS,
     .tunables = {{"int8_dot", 2}, {"KC", 512}}, .n_tunables = 2},
    /* the multiplier alone (a gated product's up GEMM, fold.c), through every design: the
     * f32 path, bf16_dot 1 and 2, act_int8 by VNNI / vpmaddubsw / int16 pairs, the K types;
     * edge tiles (M, N off the tiles) go through gm_store, whole ones through the registers */
    {.name = "f32/gated", SHAPE(7, 33, 100), .absent = GATED},
    {.name = "bf16/dot_gated", SHAPE(29, 65, 63), BF16, .absent = GATED},
    {.name = "bf16/dot2_gated", SHAPE(29, 65, 63), BF16, .absent = GATED,
     .tunables = {{"bf16_dot", 2}}, .n_tunables = 1},
    {.name = "q8_0/int8_gated", SHAPE(29, 65, 224), I8, .absent = GATED},
    {.name = "q8_0/int8_silu_gated", SHAPE(13, 48, 96), .absent = GATED,
     .params = {{"act_int8", 1}, {"activation", GM_ACT_SILU}}, .n_params = 2},
    {.name = "q4_1/int8_gated", SHAPE(13, 48, 96), I8, .absent = GATED},
    {.name = "q8_0/int8_pairs16_gated", SHAPE(31, 37, 1088), I8, .absent = GATED,
     .tunables = {{"int8_dot", 2}}, .n_tunables = 1},
    {.name = "q5_0/int8_gated", SHAPE(29, 65, 736), I8, .absent = GATED},
    {.name = "q4_k/int8_gated", SHAPE(29, 65, 768), I8, .absent = GATED},
    /* q8_0 from the GEMV's panels pinned, so an AVX2 machine (rows by default) checks it */
    {.name = "q8_0/int8_panels", SHAPE(29, 65, 736), I8, .absent = NO_RES,
     .tunables = {{"b_panels", 1}}, .n_tunables = 1},
    {.name = "q8_0/int8_panels_madd", SHAPE(7, 33, 96), I8, .absent = PLAIN,
     .tunables = {{"b_panels", 1}, {"int8_dot", 0}}, .n_tunables = 2},
    /* q5_0 from the GEMV's panels (the default on AVX2 and AVX-512) and from its rows */
    {.name = "q5_0/int8_panels", SHAPE(29, 65, 736), I8, .absent = NO_RES,
     .tunables = {{"b_panels", 1}}, .n_tunables = 1},
    {.name = "q5_0/int8_panels_madd", SHAPE(7, 33, 96), I8, .absent = PLAIN,
     .tunables = {{"b_panels", 1}, {"int8_dot", 0}}, .n_tunables = 2},
    {.name = "q5_0/int8_from_rows", SHAPE(13, 40, 640), I8, .absent = NO_BIAS,
     .tunables = {{"b_panels", 0}}, .n_tunables = 1},
    /* q4_k's and q6_k's blocks from the GEMV's panels (the default on AVX2 and AVX-512) and
     * from their rows */
    {.name = "q4_k/int8_panels", SHAPE(29, 65, 768), I8, .absent = NO_RES,
     .tunables = {{"b_panels", 1}}, .n_tunables = 1},
    {.name = "q4_k/int8_panels_madd", SHAPE(7, 33, 512), I8, .absent = PLAIN,
     .tunables = {{"b_panels", 1}, {"int8_dot", 0}}, .n_tunables = 2},
    {.name = "q4_k/int8_from_rows", SHAPE(13, 40, 1024), I8, .absent = NO_BIAS,
     .tunables = {{"b_panels", 0}}, .n_tunables = 1},
    {.name = "q6_k/int8_panels", SHAPE(29, 65, 768), I8, .absent = NO_RES,
     .tunables = {{"b_panels", 1}}, .n_tunables = 1},
    {.name = "q6_k/int8_panels_madd", SHAPE(7, 33, 512), I8, .absent = PLAIN,
     .tunables = {{"b_panels", 1}, {"int8_dot", 0}}, .n_tunables = 2},
    {.name = "q6_k/int8_from_rows", SHAPE(13, 40, 1024), I8, .absent = NO_BIAS,
     .tunables = {{"b_panels", 0}}, .n_tunables = 1},
    /* act_int8 over q5_0 / q4_k / q6_k (kquant.inc: AVX-512 6 x 32 tiles, AVX2 4 x 8, the
     * sums by VNNI where the device has it): M 1..a chunk, K whole scale blocks (256 for the
     * K types) over one K block, a K block and its tail, and three K blocks (KC 512: 1280 is
     * 512 + 768), N off the tile; the 16-bit path pinned, so a VNNI machine checks it too */
    {.name = "q4_k/int8_odd", SHAPE(7, 33, 256), I8, .absent = PLAIN},
    {.name = "q6_k/int8_odd", SHAPE(7, 33, 256), I8, .absent = PLAIN},
    {.name = "q4_k/int8_tiles", SHAPE(29, 65, 768), I8, .absent = NO_RES},
    {.name = "q6_k/int8_tiles", SHAPE(29, 65, 768), I8, .absent = NO_BIAS},
    {.name = "q4_k/int8_deep", SHAPE(13, 37, 1792), I8, .absent = PLAIN},
    {.name = "q6_k/int8_deep", SHAPE(5, 40, 1792), I8, .absent = PLAIN},
    {.name = "q5_0/int8_tiles", SHAPE(29, 65, 640), I8, .absent = NO_RES},
    {.name = "q5_0/int8_deep", SHAPE(5, 40, 736), I8, .absent = PLAIN}, /* K: 512 + 224 */
    {.name = "q6_k/int8_rows_1", SHAPE(1, 45, 512), I8, .absent = NO_RES},
    {.name = "q5_0/int8_rows_1", SHAPE(1, 70, 64), I8, .absent = PLAIN},
    {.name = "q4_k/int8_all", SHAPE(13, 48, 512),
     .params = {{"act_int8", 1}, {"activation", GM_ACT_GELU}, {"clamp_min", -2},
                {"clamp_max", 2}}, .n_params = 4},
    {.name = "q4_k/int8_rows_65", SHAPE(128, 37, 256), I8, .absent = NO_BIAS},
    {.name = "q6_k/int8_tall", SHAPE(300, 20, 256), I8, .absent = PLAIN},
    {.name = "q4_k/int8_madd", SHAPE(29, 65, 768), I8, .absent = NO_RES,
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    {.name = "q6_k/int8_madd", SHAPE(13, 33, 1280), I8, .absent = PLAIN,
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    {.name = "q5_0/int8_madd", SHAPE(7, 33, 160), I8, .absent = NO_BIAS,
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    /* extensive: model shapes (SmolLM2 576/1536/49152, Gemma 640/262144) */
    {.name = "f32/rows_300", SHAPE(598, 576, 576), .absent = PLAIN, .extensive = true},
    {.name = "bf16/rows_512", SHAPE(512, 576, 576), .params = {{"activation", GM_ACT_SILU}},
     .n_params = 1, .extensive = true},
    {.name = "bf16/mlp_1536", SHAPE(512, 1536, 576), .absent = PLAIN, .extensive = true},
    {.name = "q8_0/down_576", SHAPE(256, 576, 1536), .absent = NO_BIAS, .extensive = true},
    {.name = "bf16/vocab_49152", SHAPE(64, 49152, 576), .absent = PLAIN, .extensive = true},
    {.name = "q4_0/vocab_262144", SHAPE(16, 262144, 640), .absent = PLAIN, .extensive = true},
    {.name = "q4_1/int8_mlp_1536", SHAPE(512, 1536, 576), I8, .absent = PLAIN, .extensive = true},
    {.name = "q8_0/int8_down_576", SHAPE(256, 576, 1536), I8, .absent = NO_BIAS,
     .extensive = true},
    {.name = "q4_0/int8_vocab_49152", SHAPE(64, 49152, 576), I8, .absent = PLAIN,
     .extensive = true},
    /* Gemma 3 270M's chunk of 256 rows: q5_0 gate/up (2048 x 640), q4_k / q6_k down (640 x
     * 2048) */
    {.name = "q5_0/int8_gate_2048", SHAPE(256, 2048, 640), I8, .absent = PLAIN,
     .extensive = true},
    {.name = "q4_k/int8_down_640", SHAPE(256, 640, 2048), I8, .absent = NO_BIAS,
     .extensive = true},
    {.name = "q6_k/int8_down_640", SHAPE(256, 640, 2048), I8, .absent = NO_BIAS,
     .extensive = true},
    /* benchmarks (M x N x K) */
    {.name = "f32/2048x2048", SHAPE(512, 2048, 2048), .absent = PLAIN, .extensive = true,
     .bench = true},
    {.name = "bf16/2048x2048", SHAPE(512, 2048, 2048), .absent = PLAIN, .extensive = true,
     .bench = true},
    {.name = "f32/8192x2048", SHAPE(512, 8192, 2048), .absent = PLAIN, .extensive = true,
     .bench = true},
    {.name = "bf16/8192x2048", SHAPE(512, 8192, 2048), .absent = PLAIN, .extensive = true,
     .bench = true},
    {.name = "f32/2048x8192", SHAPE(512, 2048, 8192), .absent = PLAIN, .extensive = true,
     .bench = true},
    {.name = "bf16/2048x8192", SHAPE(512, 2048, 8192), .absent = PLAIN, .extensive = true,
     .bench = true},
    {.name = "bf16/dot_2048x2048", SHAPE(512, 2048, 2048), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    {.name = "bf16/dot_8192x2048", SHAPE(512, 8192, 2048), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    {.name = "bf16/dot_2048x8192", SHAPE(512, 2048, 8192), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    /* Llama 3.2 1B's k and v (512 x 2048) and its head (128256 x 2048) */
    {.name = "bf16/dot_512x2048", SHAPE(512, 512, 2048), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    {.name = "bf16/dot_128256x2048", SHAPE(512, 128256, 2048), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    /* a prompt chunk's rows (prefill runs 128..256 at a time) */
    {.name = "bf16/dot128_2048x2048", SHAPE(128, 2048, 2048), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    {.name = "bf16/dot128_8192x2048", SHAPE(128, 8192, 2048), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    {.name = "bf16/dot128_2048x8192", SHAPE(128, 2048, 8192), BF16, .absent = PLAIN,
     .extensive = true, .bench = true},
    /* all-MiniLM-L6-v2 (hidden 384, FFN 1536) at one sentence and at 32 of 128 tokens: the
     * stacked q|k|v product with its bias, the FFN's first product (bias, GELU erf) and its
     * second (bias, residual); f32 as the checkpoint stores it, and act_bf16 on bf16 */
#define MINILM_BENCH(m)                                                                    \
    {.name = "f32/minilm" #m "_qkv", SHAPE(m, 1152, 384), .absent = NO_RES,                \
     .extensive = true, .bench = true},                                                    \
    {.name = "f32/minilm" #m "_ffn_in", SHAPE(m, 1536, 384), .absent = NO_RES,             \
     .params = {{"activation", GM_ACT_GELU_ERF}}, .n_params = 1, .extensive = true,        \
     .bench = true},                                                                       \
    {.name = "f32/minilm" #m "_ffn_out", SHAPE(m, 384, 1536), .extensive = true,           \
     .bench = true},                                                                       \
    {.name = "bf16/dot_minilm" #m "_qkv", SHAPE(m, 1152, 384), BF16, .absent = NO_RES,     \
     .extensive = true, .bench = true},                                                    \
    {.name = "bf16/dot_minilm" #m "_ffn_in", SHAPE(m, 1536, 384), .absent = NO_RES,        \
     .params = {{"act_bf16", 1}, {"activation", GM_ACT_GELU_ERF}}, .n_params = 2,          \
     .extensive = true, .bench = true},                                                    \
    {.name = "bf16/dot_minilm" #m "_ffn_out", SHAPE(m, 384, 1536), BF16, .extensive = true, \
     .bench = true}
    MINILM_BENCH(128), MINILM_BENCH(4096),
    /* block B: f32 widening vs act_int8, SmolLM2 (576, 1536) and Llama-1B (2048, 8192) */
#define I8_BENCH(dt, m, n, k)                                                              \
    {.name = dt "/" #m "_" #n "x" #k, SHAPE(m, n, k), .absent = PLAIN, .extensive = true,   \
     .bench = true},                                                                       \
    {.name = dt "/i8_" #m "_" #n "x" #k, SHAPE(m, n, k), I8, .absent = PLAIN,              \
     .extensive = true, .bench = true}
    I8_BENCH("q4_1", 512, 1536, 576), I8_BENCH("q4_1", 512, 576, 1536),
    I8_BENCH("q4_1", 128, 1536, 576), I8_BENCH("q8_0", 512, 1536, 576),
    I8_BENCH("q4_0", 512, 8192, 2048), I8_BENCH("q4_0", 512, 2048, 8192),
    I8_BENCH("q8_0", 512, 2048, 2048), I8_BENCH("q4_1", 128, 2048, 2048),
    /* Gemma 3 270M Q4_K_M: q5_0 (640, 2048) and (2048, 640), q6_k / q4_k (640, 2048)
     * and the Llama-1B shapes */
    I8_BENCH("q5_0", 512, 2048, 640), I8_BENCH("q4_k", 512, 640, 2048),
    I8_BENCH("q6_k", 512, 640, 2048), I8_BENCH("q4_k", 512, 2048, 2048),
    I8_BENCH("q6_k", 512, 2048, 2048), I8_BENCH("q4_k", 128, 2048, 2048),
#undef I8_BENCH
    /* block B under act_bf16 (its values rounded to bf16: AMX-BF16 tiles where the device
     * has them), beside the act_int8 cases above of the same shapes */
#define BF16_BENCH(dt, m, n, k)                                                            \
    {.name = dt "/bf16_" #m "_" #n "x" #k, SHAPE(m, n, k), BF16, .absent = PLAIN,          \
     .extensive = true, .bench = true}
    BF16_BENCH("q4_1", 512, 1536, 576), BF16_BENCH("q4_1", 512, 576, 1536),
    BF16_BENCH("q8_0", 512, 1536, 576), BF16_BENCH("q4_0", 512, 8192, 2048),
    BF16_BENCH("q4_0", 512, 2048, 8192), BF16_BENCH("q8_0", 512, 2048, 2048),
    BF16_BENCH("q5_0", 512, 2048, 640),
#undef BF16_BENCH
};

FE_OP_DEFINE(gemm) {
    .name = "GEMM",
    .summary = "C = A.B^T (+ bias) -> activation (x multiplier) (+ residual) -> clamp; B "
               "f32/bf16/f16/q8_0/q4_0/q4_1/q5_0/q4_k/q6_k; act_bf16: A (and a block B's values) rounded to "
               "bf16 (bf16 dot products); "
               "act_int8: A in int8 per 32-block (256 for q4_k/q6_k; integer dot products with "
               "block B)",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .shape_out = shape_out,
    .resolve = resolve,
    .reference = reference,
    .kernels = gemm_kernels, .n_kernels = FE_COUNT(gemm_kernels),
    .cost = cost,
    .workspace = workspace,
    .check = check,
    .layout = layout,
    .layout_make = layout_make,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-4, .atol = 1e-4,
    .roof = FE_ROOF_COMPUTE,
};
