/* tests/test_gemv_batches.c: GEMV's batch passes (batches_per_pass > 1: each W block decoded
 * once and dotted with up to 8 x rows in registers) give every batch exactly the bytes the
 * one-row GEMV of the same design gives that x row alone, batch after batch
 * (batches_per_pass = 1, the kernel that existed first): on every ISA the machine has, for f32,
 * bf16 and act_int8 q8_0 / q4_0 / q4_1 (both int8_dot designs where there is VNNI), f16 (no
 * batch kernel: the fallback), B = 1..16 (passes of 8, 4, 2 and 1 and two prepared chunks),
 * every rows_per_step (each an accumulation order of its own), K off the tiles and the block
 * pairs, N odd; with the fused prologue and epilogues. The batched decode's logits equal
 * `ferrum generate`'s because of this (test_batch). The catalog checks each design against the
 * f32 reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "core/quant.h"
#include "ops/gemm/gemm.h"
#include "ops/gemv/gemv.h"
#include "support/testing.h"

enum { MAX_B = 16, N = 37 };

static fe_device *device_at(fe_isa isa) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = 2;
    o.max_isa = (int)isa;
    fe_device *d = NULL;
    assert_int_equal(fe_device_create(&o, &d, NULL), FE_OK);
    return d;
}

static fe_isa best_isa(void) {
    fe_device *probe = device_at(FE_ISA_AVX512);
    const fe_isa best = fe_device_get_info(probe)->best_isa;
    fe_device_destroy(probe);
    return best;
}

/* one GEMV design under test: W's dtype, K, act_int8, int8_dot (-1: resolve's), epilogue,
 * prologue, panel (-1: resolve's: 1 for bf16 on avx2 and avx512; the act_int8 designs pin
 * 0, their batch passes: test_gemv_panel checks their panel design) */
typedef struct design {
    fe_dtype dt;
    int64_t K;
    int i8, dot, epi, pro, panels;
} design;

/* W (and up) (N, K), x (MAX_B, K), residual (MAX_B, N), norm weight (K) */
typedef struct operands {
    fe_tensor w, x, res, nw;
    test_buf wb, ub, xb, rb, nb;
} operands;

static void operands_make(operands *o, const design *g, uint64_t seed) {
    const int64_t nk[2] = {N, g->K}, bk[2] = {MAX_B, g->K}, bn[2] = {MAX_B, N};
    o->w = fe_tensor_contiguous(NULL, g->dt, 2, nk);
    o->x = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, bk);
    o->res = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, bn);
    o->nw = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &g->K);
    assert_true(test_buf_alloc(&o->wb, &o->w) && test_buf_alloc(&o->ub, &o->w));
    assert_true(test_buf_alloc(&o->xb, &o->x) && test_buf_alloc(&o->rb, &o->res));
    assert_true(test_buf_alloc(&o->nb, &o->nw));
    test_rng rng = {.s = seed};
    test_buf_draw(&o->wb, g->dt, -1, 1, &rng);
    test_buf_draw(&o->ub, g->dt, -1, 1, &rng);
    test_buf_draw(&o->xb, FE_DTYPE_F32, -2, 2, &rng);
    test_buf_draw(&o->rb, FE_DTYPE_F32, -1, 1, &rng);
    test_buf_draw(&o->nb, FE_DTYPE_F32, 0.5, 1.5, &rng);
}

static void operands_free(operands *o) {
    test_buf_free(&o->wb);
    test_buf_free(&o->ub);
    test_buf_free(&o->xb);
    test_buf_free(&o->rb);
    test_buf_free(&o->nb);
}

/* GEMV of design g over x rows [b0, b0 + B) into y (B, N), at rows_per_step rps and
 * batches_per_pass bpp */
static void gemv(fe_device *dev, const design *g, const operands *o, int64_t b0, int64_t B,
                 int rps, int bpp, float *y) {
    const int64_t bk[2] = {B, g->K}, bn[2] = {B, N};
    fe_tensor x = fe_tensor_contiguous((float *)o->xb.mem + b0 * g->K, FE_DTYPE_F32, 2, bk);
    fe_tensor r = fe_tensor_contiguous((float *)o->rb.mem + b0 * N, FE_DTYPE_F32, 2, bn);
    fe_tensor yt = fe_tensor_contiguous(y, FE_DTYPE_F32, 2, bn);
    fe_tensor w = o->w, u = o->w, nw = o->nw;
    w.data = o->wb.mem;
    u.data = o->ub.mem;
    nw.data = o->nb.mem;
    const bool gated = fe_gemv_epi_gated(g->epi), resid = g->epi == GEMV_EPI_RESIDUAL;
    fe_tensor ops[6] = {w, x, gated ? u : (fe_tensor){.rank = 0}, resid ? r : (fe_tensor){.rank = 0},
                        g->pro ? nw : (fe_tensor){.rank = 0}, yt};
    const fe_setting params[3] = {{"act_int8", g->i8}, {"epilogue", g->epi}, {"prologue", g->pro}};
    fe_setting tun[4] = {{"rows_per_step", rps}, {"batches_per_pass", bpp}};
    int nt = 2;
    if (g->dot >= 0) tun[nt++] = (fe_setting){"int8_dot", g->dot};
    if (g->panels >= 0) tun[nt++] = (fe_setting){"panel", g->panels};
    fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6, .params = params,
                         .n_params = 3, .tunables = tun, .n_tunables = nt};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) fail_msg("GEMV: %s", err.message);
    assert_int_equal(fe_kernel_run(k, ops, 6, NULL, 0), FE_OK);
    fe_kernel_destroy(k);
}

static const char *epi_name(int epi) {
    static const char *const names[] = {"none", "silu", "swiglu", "residual", "geglu"};
    return names[epi];
}

/* every batch of every B and pass against the one-row GEMV of its x row; returns runs */
static int check_design(fe_device *dev, fe_isa isa, const design *g, uint64_t seed) {
    operands o;
    operands_make(&o, g, seed);
    static const int rpss[] = {1, 2, 4, 8}, bpps[] = {2, 4, 8};
    int runs = 0;
    for (size_t ri = 0; ri < sizeof rpss / sizeof rpss[0]; ri++) {
        float one[MAX_B][N], got[MAX_B][N];
        for (int64_t b = 0; b < MAX_B; b++) gemv(dev, g, &o, b, 1, rpss[ri], 1, one[b]);
        for (int64_t B = 1; B <= MAX_B; B++)
            for (size_t pi = 0; pi < sizeof bpps / sizeof bpps[0]; pi++) {
                memset(got, 0xff, sizeof got);
                gemv(dev, g, &o, 0, B, rpss[ri], bpps[pi], got[0]);
                for (int64_t b = 0; b < B; b++)
                    if (memcmp(got[b], one[b], sizeof one[b]) != 0) {
                        int64_t n = 0;
                        while (n < N - 1 && memcmp(&got[b][n], &one[b][n], 4) == 0) n++;
                        fail_msg("%s %s K=%lld act_int8 %d int8_dot %d %s%s, rows_per_step %d, "
                                 "B=%lld batches_per_pass %d: batch %lld row %lld is %.9g, the "
                                 "one-row GEMV gives %.9g",
                                 fe_isa_name(isa), fe_dtype_info(g->dt)->name, (long long)g->K,
                                 g->i8, g->dot, epi_name(g->epi), g->pro ? " rmsnorm" : "",
                                 rpss[ri], (long long)B, bpps[pi], (long long)b, (long long)n,
                                 got[b][n], one[b][n]);
                    }
                runs++;
            }
    }
    operands_free(&o);
    return runs;
}

static void every_batch_equals_its_one_row_gemv_byte_for_byte(void **s) {
    (void)s;
    /* K: floats off 16, 32 and 64; blocks an odd count (an unpaired last block) and even */
    const design designs[] = {
        {FE_DTYPE_F32, 100, 0, -1, GEMV_EPI_NONE, 0, -1},
        {FE_DTYPE_F32, 211, 0, -1, GEMV_EPI_RESIDUAL, 1, -1},
        {FE_DTYPE_BF16, 100, 0, -1, GEMV_EPI_NONE, 0, 0},
        {FE_DTYPE_BF16, 168, 0, -1, GEMV_EPI_SWIGLU, 1, 0},
        {FE_DTYPE_BF16, 100, 0, -1, GEMV_EPI_NONE, 0, -1},
        {FE_DTYPE_BF16, 167, 0, -1, GEMV_EPI_SWIGLU, 1, -1},
        {FE_DTYPE_BF16, 96, 0, -1, GEMV_EPI_RESIDUAL, 0, -1},
        {FE_DTYPE_F16, 72, 0, -1, GEMV_EPI_NONE, 0, -1},
        {FE_DTYPE_Q8_0, 160, 1, -1, GEMV_EPI_NONE, 0, 0},
        {FE_DTYPE_Q8_0, 128, 1, 0, GEMV_EPI_RESIDUAL, 0, 0},
        {FE_DTYPE_Q4_0, 160, 1, -1, GEMV_EPI_NONE, 0, 0},
        {FE_DTYPE_Q4_0, 96, 1, 0, GEMV_EPI_SWIGLU, 1, 0},
        {FE_DTYPE_Q4_1, 224, 1, -1, GEMV_EPI_NONE, 0, 0},
        {FE_DTYPE_Q4_1, 576, 1, -1, GEMV_EPI_SWIGLU, 1, 0},
        {FE_DTYPE_Q4_1, 96, 1, 0, GEMV_EPI_RESIDUAL, 0, 0},
    };
    const fe_isa best = best_isa();
    int runs = 0;
    for (int isa = 0; isa <= (int)best; isa++) {
        fe_device *dev = device_at((fe_isa)isa);
        for (size_t i = 0; i < sizeof designs / sizeof designs[0]; i++)
            runs += check_design(dev, (fe_isa)isa, &designs[i], 0xb47c + i);
        fe_device_destroy(dev);
    }
    print_message("every batch equal to its one-row GEMV in %d (ISA, design, rows_per_step, B, "
                  "batches_per_pass) runs\n", runs);
}

/* The bf16 panel design (panel = 1) sums each output in one order on every ISA that
 * runs it: AVX2 and AVX-512 give the same bytes, and both equal a plain double-free model of
 * that order (per output, f32 FMAs over the even elements, then the odd ones, then their
 * sum); the AVX2 plain-C layout maker writes the AVX-512 one's words. */
static void panels_are_the_same_bytes_on_every_isa(void **s) {
    (void)s;
    const fe_isa best = best_isa();
    if (best < FE_ISA_AVX2) skip();
    const design g = {FE_DTYPE_BF16, 167, 0, -1, GEMV_EPI_NONE, 0, 1};
    operands o;
    operands_make(&o, &g, 0x9a7e1);
    float want[3][N], got[3][N];
    /* the order, modelled: fmaf is one rounding, as the FMA */
    for (int64_t b = 0; b < 3; b++)
        for (int64_t n = 0; n < N; n++) {
            const uint16_t *w = (const uint16_t *)o.wb.mem + n * g.K;
            const float *x = (const float *)o.xb.mem + b * g.K;
            float e = 0, od = 0;
            for (int64_t k = 0; k + 1 < g.K + 1; k += 2) {
                e = fmaf(fe_bf16_to_f32(w[k]), x[k], e);
                if (k + 1 < g.K) od = fmaf(fe_bf16_to_f32(w[k + 1]), x[k + 1], od);
                else od = fmaf(0.0f, 0.0f, od);
            }
            want[b][n] = e + od;
        }
    for (int isa = FE_ISA_AVX2; isa <= (int)best; isa++) {
        fe_device *dev = device_at((fe_isa)isa);
        gemv(dev, &g, &o, 0, 3, 2, 4, got[0]);
        fe_device_destroy(dev);
        for (int64_t b = 0; b < 3; b++)
            for (int64_t n = 0; n < N; n++)
                if (memcmp(&got[b][n], &want[b][n], 4) != 0)
                    fail_msg("%s bf16 panels: batch %lld row %lld is %.9g, the order gives %.9g",
                             fe_isa_name((fe_isa)isa), (long long)b, (long long)n, got[b][n],
                             want[b][n]);
    }
#ifdef __x86_64__
    if (best >= FE_ISA_AVX512) { /* the two layout makers: the same words */
        enum { PN = 70, PK = 45 };
        uint16_t wsrc[PN * PK];
        for (int i = 0; i < PN * PK; i++) wsrc[i] = (uint16_t)(i * 2654435761u >> 13);
        static float a[3 * 32 * 23], c[3 * 32 * 23];
        memset(a, 0xab, sizeof a);
        memset(c, 0xcd, sizeof c);
        fe_gemm_dot_layout(wsrc, PN, PK, 0, 3, a);
        fe_gemv_bf16_pairs_layout(wsrc, PN, PK, 0, 3, c);
        assert_memory_equal(a, c, sizeof a);
    }
#endif
    operands_free(&o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_batch_equals_its_one_row_gemv_byte_for_byte),
        cmocka_unit_test(panels_are_the_same_bytes_on_every_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
