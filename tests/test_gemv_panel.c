/* tests/test_gemv_panel.c: GEMV's panel design (panel = 1, ops/gemv/panel.h: 16 outputs in
 * the vector lanes, W read as 16-row panels) gives a given x row's y as the same bytes
 * whatever else the call holds and however it runs: for act_int8 q4_1, q8_0, q4_0, q5_0, q4_k and q6_k with
 * the prologue and epilogues, every batch of B = 1..16 (passes of 8, 4, 2, 1 and a second
 * chunk) equals that x row's GEMV at B = 1, with 1, 2 and 3 workers, from a layout made once
 * (fe_kernel_make_layout) and without one, and on every ISA the machine has (both int8_dot
 * designs where there is VNNI): all of them equal to the scalar kernel at B = 1. This is
 * what makes `ferrum serve`'s batched logits equal `ferrum generate`'s with this design. The
 * catalog checks the design against the f32 reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "ops/gemv/gemv.h"
#include "ops/kernel.h"
#include "support/testing.h"

enum { MAX_B = 16, N = 45 };

static fe_device *device_at(fe_isa isa, int workers) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = workers;
    o.max_isa = (int)isa;
    fe_device *d = NULL;
    assert_int_equal(fe_device_create(&o, &d, NULL), FE_OK);
    return d;
}

typedef struct design {
    fe_dtype dt;
    int64_t K;
    int epi, pro;
} design;

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

/* the panel GEMV of design g over x rows [b0, b0 + B) into y (B, N); int8_dot dot (-1:
 * resolve's); from layouts of w (and up) when laid */
static void gemv(fe_device *dev, const design *g, const operands *o, int64_t b0, int64_t B,
                 int dot, bool laid, float *y) {
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
    const fe_setting params[3] = {{"act_int8", 1}, {"epilogue", g->epi}, {"prologue", g->pro}};
    fe_setting tun[2] = {{"panel", 1}, {"int8_dot", dot}};
    fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6, .params = params,
                         .n_params = 3, .tunables = tun, .n_tunables = dot >= 0 ? 2 : 1};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) fail_msg("GEMV: %s", err.message);
    void *lay[6] = {0};
    for (int i = 0; laid && i < 6; i++) {
        const size_t bytes = ops[i].rank ? fe_kernel_layout_bytes(k, i, NULL) : 0;
        if (!bytes) continue;
        assert_non_null(lay[i] = fe_aligned_alloc(64, bytes));
        assert_int_equal(fe_kernel_make_layout(k, i, &ops[i], lay[i]), FE_OK);
    }
    /* the design reads w from a layout (the test would compare nothing otherwise) */
    if (laid) assert_non_null(lay[0]);
    assert_int_equal(fe_kernel_run_layouts(k, ops, 6, (const void *const *)lay, NULL, 0), FE_OK);
    for (int i = 0; i < 6; i++) fe_free(lay[i]);
    fe_kernel_destroy(k);
}

static const char *epi_name(int epi) {
    static const char *const names[] = {"none", "silu", "swiglu", "residual", "geglu"};
    return names[epi];
}

static void same_or_fail(const float *got, const float *want, const design *g, const char *what,
                         int64_t B, int64_t b) {
    if (memcmp(got, want, N * sizeof *got) == 0) return;
    int64_t n = 0;
    while (n < N - 1 && memcmp(&got[n], &want[n], 4) == 0) n++;
    fail_msg("%s K=%lld %s%s, %s, B=%lld: batch %lld row %lld is %.9g, the scalar kernel's "
             "at B = 1 %.9g", fe_dtype_info(g->dt)->name, (long long)g->K, epi_name(g->epi),
             g->pro ? " rmsnorm" : "", what, (long long)B, (long long)b, (long long)n, got[n],
             want[n]);
}

static void every_x_row_gives_the_same_bytes_at_every_batch_count(void **s) {
    (void)s;
    const design designs[] = {
        {FE_DTYPE_Q4_1, 576, GEMV_EPI_NONE, 0},   {FE_DTYPE_Q4_1, 1536, GEMV_EPI_SWIGLU, 1},
        {FE_DTYPE_Q4_1, 32, GEMV_EPI_RESIDUAL, 0}, {FE_DTYPE_Q8_0, 576, GEMV_EPI_GEGLU, 1},
        {FE_DTYPE_Q8_0, 64, GEMV_EPI_NONE, 0},    {FE_DTYPE_Q4_0, 160, GEMV_EPI_SILU, 0},
        {FE_DTYPE_Q5_0, 640, GEMV_EPI_GEGLU, 1},  {FE_DTYPE_Q5_0, 96, GEMV_EPI_RESIDUAL, 0},
        {FE_DTYPE_Q4_K, 2048, GEMV_EPI_RESIDUAL, 1}, {FE_DTYPE_Q4_K, 256, GEMV_EPI_SWIGLU, 0},
        {FE_DTYPE_Q6_K, 2048, GEMV_EPI_GEGLU, 1},    {FE_DTYPE_Q6_K, 256, GEMV_EPI_NONE, 0},
    };
    fe_device *probe = device_at(FE_ISA_AVX512, 1);
    const fe_isa best = fe_device_get_info(probe)->best_isa;
    const bool vnni = fe_device_get_info(probe)->features.avx512vnni;
    fe_device_destroy(probe);
    int runs = 0;
    for (size_t di = 0; di < sizeof designs / sizeof designs[0]; di++) {
        const design *g = &designs[di];
        operands o;
        operands_make(&o, g, 0x9a4e1 + di);
        static float one[MAX_B][N], got[MAX_B][N];
        fe_device *scalar = device_at(FE_ISA_SCALAR, 1);
        for (int64_t b = 0; b < MAX_B; b++) gemv(scalar, g, &o, b, 1, -1, false, one[b]);
        fe_device_destroy(scalar);
        for (int isa = 0; isa <= (int)best; isa++)
            for (int workers = 1; workers <= 3; workers++) {
                fe_device *dev = device_at((fe_isa)isa, workers);
                for (int dot = 0; dot <= (isa == FE_ISA_AVX512 && vnni ? 1 : 0); dot++)
                    for (int laid = 0; laid < 2; laid++)
                        for (int64_t B = 1; B <= MAX_B; B++) {
                            memset(got, 0xff, sizeof got);
                            gemv(dev, g, &o, 0, B, dot, laid, got[0]);
                            char what[96];
                            snprintf(what, sizeof what, "%s int8_dot %d, %d workers, %s",
                                     fe_isa_name((fe_isa)isa), dot, workers,
                                     laid ? "from the layout" : "packed per call");
                            for (int64_t b = 0; b < B; b++) same_or_fail(got[b], one[b], g, what, B, b);
                            runs++;
                        }
                fe_device_destroy(dev);
            }
        operands_free(&o);
    }
    print_message("every x row's y equal to the scalar kernel's at B = 1 in %d (design, ISA, "
                  "int8_dot, workers, layout, B) runs\n", runs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_x_row_gives_the_same_bytes_at_every_batch_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
