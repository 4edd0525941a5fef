/* ops/gemv/gemv.c: the GEMV declaration: y = W·x with W (N, K) or (G, N, K) in f32, bf16,
 * f16, q8_0, q4_0, q4_1, q5_0, q4_k or q6_k, x (B, K) f32, y (B, N) f32; optional rmsnorm prologue, silu /
 * swiglu / residual epilogue, grouped matrices (repeat) and int8 activations (act_int8, the
 * block dtypes). Params, tunables, operands, infer (every inconsistent combination refused),
 * resolve, cost, workspace, test cases. Kernels: scalar.c, avx2.c, avx512.c; reference:
 * shared.c. */
#include <stdio.h>
#include <string.h>

#include "ops/gemm/gemm.h"
#include "ops/gemv/gemv.h"
#include "ops/gemv/panel.h"

static const char *const epilogues[] = {"none", "silu", "swiglu", "residual", "geglu", NULL};
static const char *const prologues[] = {"none", "rmsnorm", NULL};

static const fe_param_decl params[] = {
    [GEMV_EPI] = {"epilogue", FE_PARAM_CHOICE, GEMV_EPI_NONE, 1, 0, epilogues,
                  "none: y = W·x; silu: y = silu(W·x); swiglu: y = silu(W·x) * (Up·x), needs "
                  "up (geglu: gelu_tanh(W·x) * (Up·x), Gemma's, likewise); "
                  "up; residual: y = W·x + residual, needs residual"},
    [GEMV_PRO] = {"prologue", FE_PARAM_CHOICE, GEMV_PRO_NONE, 1, 0, prologues,
                  "rmsnorm: x is first normalised, x / sqrt(mean(x^2) + eps) * norm_weight "
                  "(norm_weight optional), by every worker into its workspace"},
    [GEMV_EPS] = {"eps", FE_PARAM_FLOAT, 1e-5, 0, 1, NULL,
                  "the rmsnorm prologue's eps, added to the mean square"},
    [GEMV_REPEAT] = {"repeat", FE_PARAM_INT, 1, 1, 1 << 20, NULL,
                     "with W (G, N, K): B = G * repeat and x row b uses W[b / repeat] (one "
                     "matrix serving consecutive batches, e.g. grouped-query attention)"},
    [GEMV_INT8] = {"act_int8", FE_PARAM_BOOL, 0, 1, 0, NULL,
                   "block dtypes (q8_0, q4_0, q4_1, q5_0; q4_k, q6_k): x quantised per 32-block "
                   "(per 256-block for q4_k/q6_k, llama.cpp's q8_K) to int8 (dx = amax / 127, "
                   "round half even) and dotted in exact integers per block (per sub-block, "
                   "times its scale), scaled by d dx (q4_1: plus m dx times the block's int8 "
                   "sum; q4_k: minus dmin dx times each sub-block's min and int8 sum)"},
};

static const fe_tunable_decl tunables[] = {
    [GEMV_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true,
                    "workers: they split the bounded rows in multiples of 16"},
    [GEMV_RPS] = {"rows_per_step", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 2, 4, 8},
                                    .n_choices = 4}, 4, true,
                  "W rows a worker reads at once: its rows cut into that many contiguous runs "
                  "read side by side (memory streams in flight, each front to back; x loaded "
                  "once per step for all of them); under panel = 1 at one batch from a layout, "
                  "its 16-row groups cut into that many runs, a group of each (and up's) in "
                  "one pass: up to 8 streams"},
    [GEMV_DOT8] = {"int8_dot", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1}, .n_choices = 2}, 0,
                   true,
                   "act_int8 dot products: 1 = vpdpbusd, AVX512-VNNI's on avx512 and "
                   "AVX-VNNI's on avx2 outside the panels (resolve sets it where the device "
                   "has it and turns it off elsewhere), 0 = 16-bit multiply-adds; the same "
                   "integers either way"},
    [GEMV_PF] = {"prefetch", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1024, 2048, 4096, 8192, 16384, 32768, 65536},
                              .n_choices = 8}, GEMV_PF_DEFAULT, true,
                 "software prefetch distance, bytes ahead in each row stream (0: the hardware "
                 "prefetcher's alone, which falls behind on the slower-to-decode block dtypes)"},
    [GEMV_BPP] = {"batches_per_pass", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 2, 4, 8},
                                       .n_choices = 4}, 8, true,
                  "x rows (batches) dotted with each W block while it is in registers: the "
                  "block is loaded and decoded once per pass of up to this many batches (f32, "
                  "bf16, act_int8 q8_0/q4_0/q4_1; scalar: every non-k-quant dtype); 1 = batch "
                  "after batch. Every batch's y is bit-identical whatever the setting"},
    [GEMV_PANEL] = {"panel", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1}, .n_choices = 2}, 0,
                    true,
                    "1 = W read as panels from a layout made once per weight (packed per call "
                    "without one: the same bytes), outputs in the vector lanes, each worker's "
                    "panels one memory stream, each output in a summation order of its own (not "
                    "the bytes of 0), the same bytes whatever B, the bounds, the workers and the "
                    "ISA; the other tunables but WIDTH and rows_per_step then do nothing. "
                    "bf16 W (AVX2, AVX-512): "
                    "k-pair panels of 32 rows, the bf16 GEMM's layout of the same weight (one "
                    "copy for prefill and decode where the GEMM reads it); act_int8 with q8_0, "
                    "q4_0, q4_1, q5_0, q4_k or q6_k W (ops/gemv/panel.h): 16 rows' quants "
                    "transposed per block, then their scales (the act_int8 GEMM's b_panels reads "
                    "the same copy). resolve sets 1 for bf16 and act_int8 q4_1, for act_int8 "
                    "q4_0, q5_0, q4_k and q6_k on AVX2 and AVX-512, "
                    "and for act_int8 q8_0 on AVX-512 (on AVX2 its panel kernel lost to the rows "
                    "on the Zen 3), and turns it off where it does not serve; 0 = the row kernels "
                    "and batch passes above"},
};

#define GEMV_WEIGHT_DTYPES                                                                 \
    (FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_BF16) | FE_DT(FE_DTYPE_F16) |                   \
     FE_DT(FE_DTYPE_Q8_0) | FE_DT(FE_DTYPE_Q4_0) | FE_DT(FE_DTYPE_Q4_1) |                 \
     FE_DT(FE_DTYPE_Q5_0) | FE_DT(FE_DTYPE_Q4_K) | FE_DT(FE_DTYPE_Q6_K))

#define GEMV_INT8_DTYPES                                                                   \
    (FE_DT(FE_DTYPE_Q8_0) | FE_DT(FE_DTYPE_Q4_0) | FE_DT(FE_DTYPE_Q4_1) |                 \
     FE_DT(FE_DTYPE_Q5_0) | FE_DT(FE_DTYPE_Q4_K) | FE_DT(FE_DTYPE_Q6_K))

static const fe_operand_decl operands[] = {
    [GEMV_W] = {"w", FE_IN, GEMV_WEIGHT_DTYPES, 2, 3},
    [GEMV_X] = {"x", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2},
    [GEMV_UP] = {"up", FE_IN, GEMV_WEIGHT_DTYPES, 2, 3, .optional = true},
    [GEMV_RES] = {"residual", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .optional = true},
    [GEMV_NW] = {"norm_weight", FE_IN, FE_DT(FE_DTYPE_F32), 1, 1, .optional = true,
                 .draw_lo = 0.5, .draw_hi = 1.5},
    [GEMV_Y] = {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 2, 2},
};

static const char *const extents[] = {[GEMV_B] = "B", [GEMV_N] = "N", [GEMV_K] = "K",
                                      [GEMV_G] = "G"};

static const fe_value_decl values[] = {
    [GEMV_V_ROWS] = {"rows", "N", 0, "output rows to compute: the first rows of every matrix "
                     "(y columns past it are untouched)", 0, -2, FE_MAP_BOUND, 2},
    [GEMV_V_BATCHES] = {"batches", "B", 0, "x rows to compute: the first batches (y rows past "
                        "it are untouched)", 1, 0, FE_MAP_BOUND, 1},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *w = &c->operands[GEMV_W], *x = &c->operands[GEMV_X];
    const fe_tensor *y = &c->operands[GEMV_Y];
    const char *dt = fe_dtype_info(w->dtype)->name;
    int epi = (int)c->params[GEMV_EPI], pro = (int)c->params[GEMV_PRO];
    int64_t repeat = (int64_t)c->params[GEMV_REPEAT];
    bool grouped = w->rank == 3;
    int64_t G = grouped ? w->shape[0] : 1, N = w->shape[w->rank - 2], K = w->shape[w->rank - 1];
    int64_t B = x->shape[0];
    const int blk = fe_dtype_info(w->dtype)->block;
    if (blk > 1 && K % blk != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "w is %s with K = %lld columns; %s needs K a "
                            "multiple of its block of %d: quantise rows padded to a multiple of "
                            "%d", dt, (long long)K, dt, blk, blk);
    if (x->shape[1] != K)
        return fe_op_refuse(c, FE_E_SHAPE, "x must be (B, K) with K = %lld, w's last axis; it "
                            "is (%lld, %lld): give x one row of K values per batch",
                            (long long)K, (long long)x->shape[0], (long long)x->shape[1]);
    if (!grouped && repeat != 1)
        return fe_op_refuse(c, FE_E_INVALID, "repeat = %lld needs w of rank 3 (G, N, K); w is "
                            "(N, K): give repeat = 1, or w as (G, N, K)", (long long)repeat);
    if (grouped && B != G * repeat)
        return fe_op_refuse(c, FE_E_SHAPE, "with w (G, N, K) = (%lld, %lld, %lld) and repeat = "
                            "%lld, x needs B = G * repeat = %lld rows (row b uses W[b / repeat]); "
                            "it has %lld: give x %lld rows or set repeat = B / G",
                            (long long)G, (long long)N, (long long)K, (long long)repeat,
                            (long long)(G * repeat), (long long)B, (long long)(G * repeat));
    if (y->shape[0] != B || y->shape[1] != N)
        return fe_op_refuse(c, FE_E_SHAPE, "y must be (B, N) = (%lld, %lld); it is (%lld, "
                            "%lld): give a (B, N) f32 output", (long long)B, (long long)N,
                            (long long)y->shape[0], (long long)y->shape[1]);
    bool has_up = c->present[GEMV_UP], has_res = c->present[GEMV_RES];
    if (has_up && !fe_gemv_epi_gated(epi))
        return fe_op_refuse(c, FE_E_INVALID, "up is given but epilogue is %s: up is read only "
                            "by epilogues swiglu and geglu; set one or leave up absent",
                            epilogues[epi]);
    if (!has_up && fe_gemv_epi_gated(epi))
        return fe_op_refuse(c, FE_E_INVALID, "epilogue %s needs up (the paired up matrix, "
                            "shaped and typed like w): give it", epilogues[epi]);
    if (has_up) {
        fe_status st = fe_op_same_shape(c, GEMV_W, GEMV_UP);
        if (st == FE_OK) st = fe_op_same_dtype(c, GEMV_W, GEMV_UP);
        if (st != FE_OK) return st;
    }
    if (has_res && epi != GEMV_EPI_RESIDUAL)
        return fe_op_refuse(c, FE_E_INVALID, "residual is given but epilogue is %s: it is read "
                            "only by epilogue residual; set epilogue = residual or leave it "
                            "absent", epilogues[epi]);
    if (!has_res && epi == GEMV_EPI_RESIDUAL)
        return fe_op_refuse(c, FE_E_INVALID, "epilogue residual needs residual ((B, N) f32, "
                            "added to W·x): give it");
    if (has_res) {
        fe_status st = fe_op_same_shape(c, GEMV_RES, GEMV_Y);
        if (st != FE_OK) return st;
    }
    if (c->present[GEMV_NW]) {
        if (pro != GEMV_PRO_RMSNORM)
            return fe_op_refuse(c, FE_E_INVALID, "norm_weight is given but prologue is none: "
                                "it is read only by the rmsnorm prologue; set prologue = "
                                "rmsnorm or leave norm_weight absent");
        if (c->operands[GEMV_NW].shape[0] != K)
            return fe_op_refuse(c, FE_E_SHAPE, "norm_weight must be (K) = (%lld), one weight "
                                "per column of x; it has %lld", (long long)K,
                                (long long)c->operands[GEMV_NW].shape[0]);
    }
    if (c->params[GEMV_INT8] != 0 && !(FE_DT(w->dtype) & GEMV_INT8_DTYPES))
        return fe_op_refuse(c, FE_E_INVALID, "act_int8 needs block weights (q8_0, q4_0, "
                            "q4_1, q5_0, q4_k or q6_k: integer dot products per block); w is "
                            "%s: set act_int8 = 0", dt);
    c->ext[GEMV_B] = B;
    c->ext[GEMV_N] = N;
    c->ext[GEMV_K] = K;
    c->ext[GEMV_G] = G;
    return FE_OK;
}

/* rows_per_step: for f32/bf16/f16 W, two memory streams a worker in all (2 rows of one
 * matrix, 1 row each of W and up under swiglu); for block dtypes, whose decoding is the
 * bottleneck on 2 cores, 4 rows (of each matrix). On the 2-core EPYC the read probe peaks at
 * 2 streams a worker (bench_memory); in the Llama 3.2 1B BF16 decode (ferrum generate
 * --profile, runs alternated) swiglu at 4 rows of each matrix took ~12% longer than at 1 or
 * 2 and the plain GEMVs at 4 rows 0-8% longer than at 2, while SmolLM2's Q4_1 decode ran
 * 4-6% slower at 2 rows than at 4 and slower again with fewer swiglu rows; act_int8 keeps 4
 * (bench_gemv, q4_1 / q4_0 2048x8192: 0.225 / 0.205 ms at 4 rows, 0.231 / 0.219 at 2, 0.27 /
 * 0.23 at 8, one run), except under swiglu: 2 rows of each matrix (SmolLM2's int8 decode
 * 1-4 % faster than at 4 in 3 alternated rounds; 2 rows of the plain ones 3-5 % slower).
 * The act_int8 panel design (panel = 1) reads 2 runs of groups at one batch, gated or not
 * (2-vCPU Zen 4, bench_gemv's rows_per_step sweep, cold, medians of 7: Gemma 3's q8_0 head
 * 262144 x 640 at 1 / 2 / 4 / 8 runs 5.7 / 4.7 / 7.6 / 8.1 ms with avx512; with avx2, q5_0 /
 * q4_1 / q4_0 2048 x 8192 at 65 / 70 / 79 % of the read roof at 2 runs, 57-66 % at 4).
 * prefetch keeps its declared default (2048 bytes: within noise of the best at every
 * bench_gemv shape). int8_dot: VNNI exactly where it can run (an act_int8
 * design on an avx512 device with avx512vnni, or on an avx2 device with avxvnni outside the
 * panels); forced off elsewhere, also over a call site.
 * batches_per_pass (bench_gemv_batches --cpu-time, load 11-15 on the 2-core EPYC, medians of
 * 15 alternated runs, noisy): 8 for the int8 q4 dtypes (SmolLM2's q4_1 GEMVs at 8-16 batches
 * 1.4-1.7x batch after batch on avx512, 1.2-1.5x on avx2) and emulated q8_0 (2048x8192:
 * 1.1-1.2x at 8-16 batches on avx2); 4 for f32 / bf16 on avx2 and avx512 (bf16 2048x8192:
 * 0.94-1.11x, within the noise: their x rows, K f32 each, outgrow L1 where the W row is
 * cheap to widen); 1 for q8_0 under AVX512-VNNI, whose bytes need no decoding (2048x8192:
 * 0.83-0.92x at 4-16 batches: the passes read 3 x vectors a block a batch against the row
 * kernel's one per step of 4 rows), but 8 under AVX-VNNI on avx2 (the Xeon, FERRUM_ISA=avxvnni,
 * `bench_gemv_batches --cpu-time llama1b/q8_0`: 1.25-1.30x at 2-4 batches, 1.06x at 8-16);
 * 8 on scalar (a row decoded once for 8 batches). */
static void resolve(fe_op_ctx *c) {
    /* the panel designs, where they serve (bf16; act_int8 q8_0, q4_0, q4_1), off elsewhere;
     * act_int8 by default as fe_gemv_panel_default says (the act_int8 GEMM of a prefill reads
     * its B from the same layout exactly then, gemm b_panels, so the weight has one copy;
     * q8_0 on AVX-512: at parity at B = 1 on a quiet host, faster from B = 2; on AVX2 the
     * row kernel, 1.2x faster at B = 1 on a Zen 3). docs/performance.md */
    const fe_dtype wdt = c->operands[GEMV_W].dtype;
    /* bf16: rank-2 W on the avx2 and avx512 kernels (panels.inc), 1 by default: the decode
     * step of the Llama 3.2 1B shape 1.3-2.2x faster (docs/performance.md) */
    const bool bf16 = wdt == FE_DTYPE_BF16 && c->operands[GEMV_W].rank == 2 &&
                      c->dev->isa >= FE_ISA_AVX2;
    const bool panel = bf16 || (c->params[GEMV_INT8] != 0 && fe_gemv_panel_serves(wdt));
    if (!c->tunable_set[GEMV_PANEL] || !panel) {
        c->tunables[GEMV_PANEL] =
            c->tunable_set[GEMV_PANEL]
                ? 0
                : bf16 || (panel && fe_gemv_panel_default(wdt, c->dev->isa));
        c->tunable_set[GEMV_PANEL] = true;
    }
    if (!c->tunable_set[GEMV_RPS]) {
        bool swiglu = fe_gemv_epi_gated((int)c->params[GEMV_EPI]);
        bool blocks = fe_dtype_info(c->operands[GEMV_W].dtype)->block > 1;
        bool int8 = c->params[GEMV_INT8] != 0, panels = c->tunables[GEMV_PANEL] != 0;
        c->tunables[GEMV_RPS] = blocks ? (int8 && (swiglu || panels) ? 2 : 4) : swiglu ? 1 : 2;
        c->tunable_set[GEMV_RPS] = true;
    }
    /* AVX512-VNNI on the avx512 kernels; AVX-VNNI on the avx2 row and batch kernels (their
     * panel kernel takes the 16-bit multiply-adds: int8_dot would be a setting without work) */
    bool can = c->params[GEMV_INT8] != 0 && c->dev->dpbusd &&
               !(c->dev->isa == FE_ISA_AVX2 && c->tunables[GEMV_PANEL]);
    if (!c->tunable_set[GEMV_DOT8] || !can) {
        c->tunables[GEMV_DOT8] = can;
        c->tunable_set[GEMV_DOT8] = true;
    }
    const fe_dtype dt = c->operands[GEMV_W].dtype;
    const bool floats = fe_dtype_info(dt)->block == 1;
    const bool vnni512 = c->tunables[GEMV_DOT8] && c->dev->isa >= FE_ISA_AVX512;
    const int64_t bpp = dt == FE_DTYPE_Q8_0 && vnni512        ? 1
                        : floats && c->dev->isa >= FE_ISA_AVX2 ? 4
                                                               : 8;
    if (!c->tunable_set[GEMV_BPP]) {
        c->tunables[GEMV_BPP] = bpp;
        c->tunable_set[GEMV_BPP] = true;
    }
    /* Under panel = 1 the kernels read neither prefetch nor batches_per_pass (panel_driver.inc
     * and panels.inc prefetch at fixed distances, panel.h): both take their defaults, also
     * over a call site, so settings that differ only there are one design, which the tuner
     * times once. A cold tune of the Llama 1B shape timed the Q8_0 head at 17 such settings,
     * one work, at 3.3-4.2 ms, and narrowing chose one of them at 45 % under the default. */
    if (c->tunables[GEMV_PANEL]) {
        c->tunables[GEMV_PF] = GEMV_PF_DEFAULT;
        c->tunables[GEMV_BPP] = bpp;
    }
}

/* FLOPs: 2 per weight read per batch (twice with up), the epilogue per output (silu 4,
 * swiglu 5, residual 1), the prologue 3 per x element. Bytes: the W (and up) rows read, once
 * per matrix whatever the batches, x, y, residual and norm_weight. */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double rows = (double)a->v[GEMV_V_ROWS], bb = (double)a->v[GEMV_V_BATCHES];
    double K = (double)a->ext[GEMV_K];
    int epi = (int)d->params[GEMV_EPI];
    double mats = a->t[GEMV_W].rank == 3
                      ? (double)((a->v[GEMV_V_BATCHES] + (int64_t)d->params[GEMV_REPEAT] - 1) /
                                 (int64_t)d->params[GEMV_REPEAT])
                      : (bb > 0 ? 1.0 : 0.0);
    double nmat = d->present[GEMV_UP] ? 2.0 : 1.0;
    double wbytes = mats * rows * (double)fe_dtype_bytes(d->dtypes[GEMV_W], a->ext[GEMV_K]);
    static const double epi_flops[] = {0, 4, 5, 1, 20};
    out->flops = 2.0 * rows * K * bb * nmat + epi_flops[epi] * rows * bb +
                 (d->params[GEMV_PRO] != 0 ? 3.0 * K * bb : 0.0);
    out->bytes = nmat * wbytes + bb * K * 4.0 + bb * rows * 4.0 +
                 (d->present[GEMV_RES] ? bb * rows * 4.0 : 0.0) +
                 (d->present[GEMV_NW] ? K * 4.0 : 0.0);
}

static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    gemv_shape s;
    fe_gemv_shape(a, d, &s);
    if (s.panel && s.dt == FE_DTYPE_BF16) return (size_t)nth * fe_gemv_bf16_panel_worker_bytes(&s);
    if (s.panel) return (size_t)nth * fe_gemv_panel_worker_bytes(&s);
    return (size_t)nth * fe_gemv_worker_bytes(&s, d->isa);
}

/* panel = 1 reads W and up from a layout: bf16 as k-pair panels of 32 rows
 * (FE_LAYOUT_BF16_PAIRS32, the bf16 GEMM's words for the same weight: N rounded up to 32, K
 * to a pair), act_int8 blocks as panel.h's 16-row panels. */
static size_t layout(const fe_args *a, const fe_design *d, int operand, uint64_t *format) {
    if (d->dtypes[GEMV_W] != FE_DTYPE_BF16) return fe_gemv_panel_layout(a, d, operand, format);
    if (d->tunables[GEMV_PANEL] == 0 || d->isa < FE_ISA_AVX2 ||
        (operand != GEMV_W && operand != GEMV_UP))
        return 0;
    *format = FE_LAYOUT_BF16_PAIRS32;
    const int64_t N = a->ext[GEMV_N], K = a->ext[GEMV_K];
    return (size_t)((N + GEMV_PANEL_ROWS - 1) / GEMV_PANEL_ROWS * GEMV_PANEL_ROWS) *
           (size_t)((K + 1) / 2) * 4;
}

static void layout_make(const fe_args *a, const fe_design *d, int operand, void *dst, int ith,
                        int nth) {
    if (d->dtypes[GEMV_W] != FE_DTYPE_BF16) {
        fe_gemv_panel_layout_make(a, d, operand, dst, ith, nth);
        return;
    }
    const int64_t N = a->ext[GEMV_N], K = a->ext[GEMV_K];
    int64_t p0, p1;
    fe_split((N + GEMV_PANEL_ROWS - 1) / GEMV_PANEL_ROWS, ith, nth, 1, &p0, &p1);
    if (d->isa >= FE_ISA_AVX512) fe_gemm_dot_layout(a->t[operand].data, N, K, p0, p1, dst);
    else fe_gemv_bf16_pairs_layout(a->t[operand].data, N, K, p0, p1, dst);
}

static double case_param(const fe_case *c, const char *name, double def, bool *given) {
    for (int i = 0; i < c->n_params; i++)
        if (strcmp(c->params[i].name, name) == 0) {
            if (given) *given = true;
            return c->params[i].value;
        }
    return def;
}

/* dims = {B, N, K}; W's dtype is the case name's prefix before '/' ("q8_0/int8"); W is
 * (B / repeat, N, K) when the case gives repeat (even 1), else (N, K). up, residual and
 * norm_weight are present as the case's epilogue and prologue need them (norm_weight absent
 * with absent bit 4). The params argument is not read: the case's own settings are. */
static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_dtype dt = FE_DTYPE_F32;
    char name[16] = "";
    size_t n = strcspn(c->name, "/");
    if (n < sizeof name) {
        memcpy(name, c->name, n);
        name[n] = 0;
        if (fe_dtype_from_name(name, &dt) != FE_OK) dt = FE_DTYPE_F32;
    }
    bool grouped = false;
    int64_t repeat = (int64_t)case_param(c, "repeat", 1, &grouped);
    int epi = (int)case_param(c, "epilogue", 0, NULL);
    int pro = (int)case_param(c, "prologue", 0, NULL);
    int64_t B = c->dims[0], N = c->dims[1], K = c->dims[2];
    int64_t w3[3] = {B / (repeat > 0 ? repeat : 1), N, K}, x2[2] = {B, K}, y2[2] = {B, N};
    memset(out, 0, sizeof(fe_tensor) * (size_t)FE_COUNT(operands));
    out[GEMV_W] = grouped ? fe_tensor_contiguous(NULL, dt, 3, w3)
                          : fe_tensor_contiguous(NULL, dt, 2, w3 + 1);
    out[GEMV_X] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, x2);
    if (fe_gemv_epi_gated(epi)) out[GEMV_UP] = out[GEMV_W];
    if (epi == GEMV_EPI_RESIDUAL) out[GEMV_RES] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, y2);
    if (pro == GEMV_PRO_RMSNORM && !(c->absent & (1u << GEMV_NW)))
        out[GEMV_NW] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &K);
    out[GEMV_Y] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, y2);
}

#define P1(a, x) .params = {{a, x}}, .n_params = 1
#define P2(a, x, b, y) .params = {{a, x}, {b, y}}, .n_params = 2
#define P3(a, x, b, y, c, z) .params = {{a, x}, {b, y}, {c, z}}, .n_params = 3
#define BIG(n, k) .dims = {1, n, k}, .n_dims = 3, .lo = -1, .hi = 1, .extensive = true, .bench = true

static const fe_case cases[] = {
    /* the first case is bf16: the catalog varies its K around each kernel's tile */
    {.name = "bf16/small", .dims = {2, 37, 100}, .n_dims = 3},
    {.name = "f32/k100", .dims = {1, 40, 100}, .n_dims = 3},
    {.name = "f16/k100", .dims = {2, 33, 100}, .n_dims = 3},
    {.name = "f32/k17", .dims = {3, 9, 17}, .n_dims = 3},
    {.name = "f16/k47", .dims = {1, 19, 47}, .n_dims = 3},
    {.name = "q8_0/small", .dims = {1, 64, 256}, .n_dims = 3},
    {.name = "q4_0/small", .dims = {1, 50, 224}, .n_dims = 3},
    {.name = "q5_0/small", .dims = {2, 45, 160}, .n_dims = 3},
    {.name = "q4_k/small", .dims = {3, 37, 512}, .n_dims = 3},
    {.name = "q6_k/small", .dims = {2, 33, 768}, .n_dims = 3},
    {.name = "q4_k/swiglu", .dims = {2, 21, 256}, .n_dims = 3, .lo = -1, .hi = 1,
     P1("epilogue", GEMV_EPI_SWIGLU)},
    {.name = "f32/geglu", .dims = {2, 37, 64}, .n_dims = 3, .lo = -2, .hi = 2,
     P1("epilogue", GEMV_EPI_GEGLU)},
    {.name = "q5_0/geglu_rmsnorm", .dims = {1, 40, 640}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("epilogue", GEMV_EPI_GEGLU, "prologue", GEMV_PRO_RMSNORM)},
    {.name = "q5_0/int8_geglu", .dims = {1, 33, 640}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("act_int8", 1, "epilogue", GEMV_EPI_GEGLU)},
    {.name = "q6_k/residual_rmsnorm", .dims = {1, 40, 512}, .n_dims = 3,
     P2("epilogue", GEMV_EPI_RESIDUAL, "prologue", GEMV_PRO_RMSNORM)},
    {.name = "q5_0/int8", .dims = {3, 33, 640}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_k/int8", .dims = {2, 45, 1024}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q6_k/int8", .dims = {3, 37, 2048}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_k/int8_swiglu", .dims = {1, 21, 512}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("act_int8", 1, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q6_k/int8_rmsnorm", .dims = {2, 19, 256}, .n_dims = 3,
     P2("act_int8", 1, "prologue", GEMV_PRO_RMSNORM)},
    {.name = "q6_k/int8_grouped", .dims = {4, 17, 256}, .n_dims = 3,
     P2("act_int8", 1, "repeat", 2)},
    {.name = "q4_1/small", .dims = {3, 45, 160}, .n_dims = 3},
    {.name = "f32/silu", .dims = {1, 30, 64}, .n_dims = 3, P1("epilogue", GEMV_EPI_SILU)},
    {.name = "bf16/swiglu", .dims = {1, 48, 128}, .n_dims = 3, .lo = -1, .hi = 1,
     P1("epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q4_1/swiglu", .dims = {2, 21, 96}, .n_dims = 3, .lo = -1, .hi = 1,
     P1("epilogue", GEMV_EPI_SWIGLU)},
    {.name = "f16/residual", .dims = {2, 40, 96}, .n_dims = 3,
     P1("epilogue", GEMV_EPI_RESIDUAL)},
    {.name = "bf16/rmsnorm", .dims = {1, 64, 256}, .n_dims = 3,
     P1("prologue", GEMV_PRO_RMSNORM)},
    {.name = "q4_0/rmsnorm", .dims = {2, 24, 128}, .n_dims = 3, .absent = 1u << GEMV_NW,
     P2("prologue", GEMV_PRO_RMSNORM, "eps", 0.01)},
    {.name = "bf16/repeat", .dims = {8, 24, 64}, .n_dims = 3, P1("repeat", 4)},
    {.name = "q8_0/repeat", .dims = {8, 20, 64}, .n_dims = 3, P1("repeat", 4)},
    {.name = "f32/groups", .dims = {3, 17, 40}, .n_dims = 3, P1("repeat", 1)},
    {.name = "f32/batches", .dims = {11, 20, 48}, .n_dims = 3},
    {.name = "q8_0/int8", .dims = {2, 64, 256}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q8_0/int8_fused", .dims = {1, 40, 160}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q8_0/int8_repeat", .dims = {6, 18, 96}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 2, "epilogue", GEMV_EPI_RESIDUAL)},
    /* act_int8 with q4 W: K = 32 (one block, alone), 64 (one pair), 96 and 160 (pairs and an
     * odd block), 576 and 1536 (SmolLM2's); N off 16 and off the workers' split; batches past
     * a chunk; grouped; the epilogues and the prologue */
    {.name = "q4_0/int8_k32", .dims = {1, 37, 32}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_1/int8_k32", .dims = {2, 45, 32}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_0/int8_k64", .dims = {1, 50, 64}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_1/int8_k64", .dims = {3, 33, 64}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_0/int8_k576", .dims = {1, 45, 576}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_RESIDUAL)},
    {.name = "q4_1/int8_k576", .dims = {11, 21, 576}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_0/int8_k1536", .dims = {2, 19, 1536}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q4_1/int8_k1536", .dims = {1, 40, 1536}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q4_1/int8_swiglu", .dims = {3, 21, 96}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("act_int8", 1, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q4_0/int8_repeat", .dims = {6, 18, 96}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 2, "epilogue", GEMV_EPI_RESIDUAL)},
    {.name = "q4_1/int8_repeat", .dims = {9, 23, 160}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 3, "epilogue", GEMV_EPI_RESIDUAL)},
    /* act_int8 with 16-bit multiply-adds instead of VNNI (int8_dot = 0, pinned: the design
     * AVX-512 devices without avx512vnni run); the same integers */
    {.name = "q8_0/int8_madd", .dims = {2, 37, 96}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"int8_dot", 0}, {"panel", 0}}, .n_tunables = 2},
    {.name = "q4_0/int8_madd", .dims = {3, 33, 160}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_RESIDUAL), .tunables = {{"int8_dot", 0}, {"panel", 0}}, .n_tunables = 2},
    {.name = "q4_1/int8_madd", .dims = {1, 45, 576}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU),
     .tunables = {{"int8_dot", 0}, {"panel", 0}}, .n_tunables = 2},
    /* the other rows_per_step choices than resolve's (2 / 1 for floats, 4 for blocks) */
    {.name = "bf16/rps8", .dims = {1, 70, 64}, .n_dims = 3, .tunables = {{"rows_per_step", 8}}, .n_tunables = 1},
    {.name = "q4_1/rps1", .dims = {1, 50, 96}, .n_dims = 3, .tunables = {{"rows_per_step", 1}}, .n_tunables = 1},
    /* batch passes (batches_per_pass, resolve's 8 for blocks and 4 for floats, or pinned):
     * B from 2 to 16 (two prepared chunks past 16 batches' worth of passes), passes of 8, 4,
     * 2 and 1, K an odd count of blocks (an unpaired last block) or off the float tiles, N
     * odd; the fused prologue and epilogues; batch after batch (1) beside them */
    {.name = "q4_1/int8_b16", .dims = {16, 37, 160}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q4_1/int8_b11_fused", .dims = {11, 21, 576}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q8_0/int8_rows", .dims = {3, 37, 96}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q4_0/int8_rows", .dims = {2, 45, 160}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_SWIGLU), .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q4_0/int8_b13", .dims = {13, 33, 96}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_RESIDUAL), .tunables = {{"batches_per_pass", 4}, {"panel", 0}},
     .n_tunables = 2},
    {.name = "q8_0/int8_b9", .dims = {9, 45, 224}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"batches_per_pass", 8}, {"panel", 0}}, .n_tunables = 2},
    {.name = "q8_0/int8_b6_madd", .dims = {6, 19, 160}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"int8_dot", 0}, {"batches_per_pass", 2}, {"panel", 0}}, .n_tunables = 3},
    {.name = "f32/b16", .dims = {16, 19, 100}, .n_dims = 3},
    {.name = "f32/b5_rps8", .dims = {5, 41, 211}, .n_dims = 3,
     .tunables = {{"rows_per_step", 8}, {"batches_per_pass", 8}}, .n_tunables = 2},
    {.name = "bf16/b7", .dims = {7, 37, 100}, .n_dims = 3, .tunables = {{"batches_per_pass", 2}},
     .n_tunables = 1},
    {.name = "bf16/b12_swiglu", .dims = {12, 23, 168}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("epilogue", GEMV_EPI_SWIGLU, "prologue", GEMV_PRO_RMSNORM)},
    {.name = "q4_1/int8_b4_bpp1", .dims = {4, 35, 160}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"batches_per_pass", 1}, {"panel", 0}}, .n_tunables = 2},
    /* the panel design (panel = 1: resolve's for act_int8 q4_1, so the q4_1 int8 cases above
     * without a pinned panel run it too; pinned for q8_0 and q4_0): N off 16 (a padded last group) and at 16,
     * K = 32, 64, 576, 1536, B = 1 to 12 (passes of 8, 4, 2, 1 and a second chunk at 17),
     * grouped W, the prologue and every epilogue, emulated dots beside VNNI; the catalog
     * runs each from the layout and without it, and at bounded rows and batches */
    {.name = "q4_1/panel_k32", .dims = {1, 45, 32}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_1/panel_k64", .dims = {12, 16, 64}, .n_dims = 3, P1("act_int8", 1)},
    {.name = "q4_1/panel_k576", .dims = {7, 50, 576}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_RESIDUAL)},
    {.name = "q4_1/panel_k1536", .dims = {5, 19, 1536}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "q4_1/panel_b17_geglu", .dims = {17, 33, 96}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("act_int8", 1, "epilogue", GEMV_EPI_GEGLU)},
    {.name = "q4_1/panel_silu", .dims = {3, 40, 128}, .n_dims = 3, .lo = -1, .hi = 1,
     P2("act_int8", 1, "epilogue", GEMV_EPI_SILU)},
    {.name = "q4_1/panel_repeat", .dims = {10, 23, 160}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 5, "epilogue", GEMV_EPI_RESIDUAL)},
    {.name = "q4_1/panel_madd", .dims = {9, 37, 576}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU),
     .tunables = {{"int8_dot", 0}}, .n_tunables = 1},
    {.name = "q8_0/panel_k32", .dims = {2, 21, 32}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q8_0/panel_k576", .dims = {8, 50, 576}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q8_0/panel_repeat", .dims = {6, 35, 224}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 2, "epilogue", GEMV_EPI_RESIDUAL),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q8_0/panel_madd", .dims = {11, 37, 1536}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"int8_dot", 0}, {"panel", 1}}, .n_tunables = 2},
    {.name = "q4_0/panel_k64", .dims = {4, 29, 64}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q4_0/panel_k1536", .dims = {12, 19, 1536}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_GEGLU),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q4_0/panel_madd", .dims = {6, 48, 576}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 3, "epilogue", GEMV_EPI_RESIDUAL),
     .tunables = {{"int8_dot", 0}, {"panel", 1}}, .n_tunables = 2},
    /* q5_0 (panel = 1 by default on AVX2 and AVX-512, pinned so the scalar kernel checks it
     * too): the fifth bits of every quad, K = 32 and Gemma's 640, the offset 16 under VNNI
     * and emulated; the row kernel pinned, as the default no longer runs it there */
    {.name = "q5_0/panel_k32", .dims = {3, 21, 32}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q5_0/panel_k640", .dims = {9, 50, 640}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_GEGLU),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q5_0/panel_madd", .dims = {5, 37, 1536}, .n_dims = 3,
     P3("act_int8", 1, "repeat", 5, "epilogue", GEMV_EPI_RESIDUAL),
     .tunables = {{"int8_dot", 0}, {"panel", 1}}, .n_tunables = 2},
    {.name = "q5_0/rows_int8", .dims = {3, 33, 640}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    /* q4_k (256-blocks, panel = 1 by default on AVX2 and AVX-512): one block and 8, the
     * prologue and epilogues, emulated beside VNNI; the row kernel pinned */
    {.name = "q4_k/panel_k256", .dims = {3, 21, 256}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q4_k/panel_k2048", .dims = {9, 50, 2048}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_RESIDUAL),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q4_k/panel_madd", .dims = {4, 37, 768}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "repeat", 2, "epilogue", GEMV_EPI_SWIGLU),
     .tunables = {{"int8_dot", 0}, {"panel", 1}}, .n_tunables = 2},
    {.name = "q4_k/rows_int8", .dims = {2, 45, 1024}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q6_k/panel_k256", .dims = {3, 21, 256}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q6_k/panel_k2048", .dims = {7, 50, 2048}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_RESIDUAL),
     .tunables = {{"panel", 1}}, .n_tunables = 1},
    {.name = "q6_k/panel_madd", .dims = {4, 37, 768}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "repeat", 2, "epilogue", GEMV_EPI_GEGLU),
     .tunables = {{"int8_dot", 0}, {"panel", 1}}, .n_tunables = 2},
    {.name = "q6_k/rows_int8", .dims = {2, 45, 768}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    /* one batch from the layout: the worker's groups in rows_per_step runs read side by
     * side (runs of unequal length, more runs than groups; W's and up's panels in one pass),
     * the same bytes as the run without the layout, which packs group after group */
    {.name = "q8_0/panel_runs8", .dims = {1, 200, 96}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_RESIDUAL),
     .tunables = {{"panel", 1}, {"rows_per_step", 8}}, .n_tunables = 2},
    {.name = "q4_1/panel_runs4_swiglu", .dims = {1, 100, 576}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU),
     .tunables = {{"rows_per_step", 4}}, .n_tunables = 1},
    {.name = "q4_0/panel_runs2", .dims = {1, 33, 64}, .n_dims = 3, P1("act_int8", 1),
     .tunables = {{"panel", 1}, {"rows_per_step", 2}, {"int8_dot", 0}}, .n_tunables = 3},
    /* one batch over weights past GEMV_CLAIM_BYTES a unit: rows (and panel groups) in units
     * claimed by the workers as they come, uneven at the end */
    {.name = "q8_0/claimed_rows", .dims = {1, 1999, 2048}, .n_dims = 3,
     P2("act_int8", 1, "epilogue", GEMV_EPI_RESIDUAL), .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q4_1/claimed_panels_swiglu", .dims = {1, 1400, 1536}, .n_dims = 3, .lo = -1, .hi = 1,
     P3("act_int8", 1, "prologue", GEMV_PRO_RMSNORM, "epilogue", GEMV_EPI_SWIGLU)},
    {.name = "bf16/claimed_rows", .dims = {1, 1100, 1024}, .n_dims = 3,
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "bf16/claimed_panels_swiglu", .dims = {1, 620, 1024}, .n_dims = 3, .lo = -1, .hi = 1,
     P1("epilogue", GEMV_EPI_SWIGLU)},
    /* Llama 3.2 1B shapes (N x K), one batch */
    {.name = "bf16/2048x2048", BIG(2048, 2048)},
    {.name = "bf16/512x2048", BIG(512, 2048)},
    {.name = "bf16/8192x2048", BIG(8192, 2048)},
    {.name = "bf16/2048x8192", BIG(2048, 8192)},
    {.name = "bf16/128256x2048", BIG(128256, 2048)},
    {.name = "q8_0/2048x8192", BIG(2048, 8192)},
    {.name = "q4_1/2048x8192", BIG(2048, 8192)},
    {.name = "q4_0/2048x8192", BIG(2048, 8192)},
    {.name = "q8_0/2048x8192i8", BIG(2048, 8192), P1("act_int8", 1)},
    {.name = "q4_1/2048x8192i8", BIG(2048, 8192), P1("act_int8", 1)},
    {.name = "q4_1/2048x8192i8_rows", BIG(2048, 8192), P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q8_0/2048x8192i8_rows", BIG(2048, 8192), P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q4_0/2048x8192i8", BIG(2048, 8192), P1("act_int8", 1)},
    {.name = "q4_k/2048x8192", BIG(2048, 8192)},
    {.name = "q6_k/2048x8192", BIG(2048, 8192)},
    {.name = "q4_k/2048x8192i8", BIG(2048, 8192), P1("act_int8", 1)},
    {.name = "q4_k/2048x8192i8_rows", BIG(2048, 8192), P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q6_k/2048x8192i8", BIG(2048, 8192), P1("act_int8", 1)},
    {.name = "q6_k/2048x8192i8_rows", BIG(2048, 8192), P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q5_0/2048x8192i8", BIG(2048, 8192), P1("act_int8", 1)},
    /* Gemma 3 270M Q4_K_M's decode: the q8_0 head (tied embedding), the q5_0 gate (and up),
     * the K-quant down */
    {.name = "q8_0/262144x640i8", BIG(262144, 640), P1("act_int8", 1)},
    {.name = "q5_0/2048x640i8", BIG(2048, 640), P1("act_int8", 1)},
    {.name = "q4_k/640x2048i8", BIG(640, 2048), P1("act_int8", 1)},
    {.name = "q4_k/640x2048i8_rows", BIG(640, 2048), P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
    {.name = "q6_k/640x2048i8", BIG(640, 2048), P1("act_int8", 1)},
    {.name = "q6_k/640x2048i8_rows", BIG(640, 2048), P1("act_int8", 1),
     .tunables = {{"panel", 0}}, .n_tunables = 1},
};

FE_KERNELS(gemv, 4, 16, 32);

/* y is (B, N): one row per row of x, one column per row of (each) W */
static void shape_out(fe_op_ctx *c) {
    const fe_tensor *w = &c->operands[GEMV_W], *x = &c->operands[GEMV_X];
    if (w->rank < 2 || x->rank != 2) return; /* infer names the rule */
    int64_t shape[2] = {x->shape[0], w->shape[w->rank - 2]};
    c->operands[GEMV_Y] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, shape);
}

FE_OP_DEFINE(gemv) {
    .name = "GEMV",
    .summary = "y = W·x, W (N, K) or (G, N, K) in f32/bf16/f16/q8_0/q4_0/q4_1/q5_0/q4_k/q6_k, x (B, K) f32; "
               "rmsnorm prologue, silu/swiglu/geglu/residual epilogue",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .shape_out = shape_out,
    .resolve = resolve,
    .reference = fe_gemv_reference,
    .kernels = gemv_kernels, .n_kernels = FE_COUNT(gemv_kernels),
    .cost = cost,
    .workspace = workspace,
    .layout = layout,
    .layout_make = layout_make,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    /* f32 accumulation over K (scalar: blocks of 512 into double); measured at most 6e-5
     * absolute on the K = 8192 cases (|y| ~ 30), 1.5e-5 on the small ones (|y| ~ 50) */
    .rtol = 1e-5, .atol = 2e-4,
    .roof = FE_ROOF_READ,
};
