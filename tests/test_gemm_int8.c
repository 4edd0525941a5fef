/* tests/test_gemm_int8.c: the prefill GEMM's int8 activations are the decode GEMV's: for
 * q8_0, q4_0, q4_1 and q5_0 weights, on every ISA the machine has (and every int8_dot design
 * it runs: VNNI, AVX2's int16 pairs, AMX-INT8 tiles), GEMM act_int8 over M rows gives what GEMV act_int8 gives for each row as a
 * batch, up to the order of f32 additions (the same quantised bytes and scales, the same
 * exact integer block sums). The catalog checks each against its own reference; this checks
 * the two designs against each other, so a convention drifting in one fails here; and it
 * bounds the design's distance from the f32 products: each quantised value is within half a
 * step (dx / 2) of a's, so |C_int8 - C_f32| <= sum over blocks of dx / 2 sum |w|; and the
 * kernels' two ways of writing C (whole tiles from the registers, the rest through a tile
 * buffer) agree exactly; and q5_0's largest products stay exact (no int16 lane saturates);
 * and A's rows quantised once for all workers (where they split N) give the bytes each
 * worker's own quantisation gave, at any worker count and row bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/quant.h"
#include "support/testing.h"

enum { M = 5, N = 37, K = 160 };

static fe_device *device_at(fe_isa isa) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = 2;
    o.max_isa = (int)isa;
    fe_device *d = NULL;
    assert_int_equal(fe_device_create(&o, &d, NULL), FE_OK);
    return d;
}

/* runs op (n operands, settings, per-call values) into its output operand */
static void run_values(fe_device *dev, const char *op, fe_tensor *ops, int n,
                       const fe_setting *params, int n_params, const fe_setting *tun, int n_tun,
                       const int64_t *vals, int n_vals) {
    fe_op_request req = {.op = op, .operands = ops, .n_operands = n, .params = params,
                         .n_params = n_params, .tunables = tun, .n_tunables = n_tun};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) fail_msg("%s: %s", op, err.message);
    assert_int_equal(fe_kernel_run(k, ops, n, vals, n_vals), FE_OK);
    fe_kernel_destroy(k);
}

/* the same at the per-call values' defaults */
static void run(fe_device *dev, const char *op, fe_tensor *ops, int n, const fe_setting *params,
                int n_params, const fe_setting *tun, int n_tun) {
    run_values(dev, op, ops, n, params, n_params, tun, n_tun, NULL, 0);
}

/* a (M, K) f32 drawn in [-2, 2], w (N, K) of dtype dt drawn in [-1, 1], two (M, N) outputs */
typedef struct operands {
    fe_tensor a, w, c;
    test_buf ab, wb, c1, c2;
} operands;

static void operands_make(operands *o, fe_dtype dt, uint64_t seed) {
    const int64_t mk[2] = {M, K}, nk[2] = {N, K}, mn[2] = {M, N};
    o->a = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mk);
    o->w = fe_tensor_contiguous(NULL, dt, 2, nk);
    o->c = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
    assert_true(test_buf_alloc(&o->ab, &o->a) && test_buf_alloc(&o->wb, &o->w));
    assert_true(test_buf_alloc(&o->c1, &o->c) && test_buf_alloc(&o->c2, &o->c));
    test_rng rng = {.s = seed};
    test_buf_draw(&o->ab, FE_DTYPE_F32, -2, 2, &rng);
    test_buf_draw(&o->wb, dt, -1, 1, &rng);
    o->a.data = o->ab.mem, o->w.data = o->wb.mem;
}

static void operands_free(operands *o) {
    test_buf_free(&o->ab);
    test_buf_free(&o->wb);
    test_buf_free(&o->c1);
    test_buf_free(&o->c2);
}

static void gemm_int8_rows_are_gemv_int8_batches(void **s) {
    (void)s;
    const fe_dtype dts[] = {FE_DTYPE_Q8_0, FE_DTYPE_Q4_0, FE_DTYPE_Q4_1, FE_DTYPE_Q5_0};
    fe_device *probe = device_at(FE_ISA_AVX512);
    const fe_isa best = fe_device_get_info(probe)->best_isa;
    fe_device_destroy(probe);
    int checked = 0;
    for (int isa = 0; isa <= (int)best; isa++) {
        fe_device *dev = device_at((fe_isa)isa);
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            operands o;
            operands_make(&o, dts[di], 0x1e8 + di);
            fe_tensor c = o.c;
            /* int8_dot: resolve keeps 1 only on VNNI, 2 on AVX2's q8_0, 3 with AMX-INT8 */
            for (int dot = 0; dot <= 3; dot++) {
                c.data = o.c1.mem;
                fe_tensor g[5] = {o.a, o.w, {.rank = 0}, {.rank = 0}, c};
                const fe_setting gp[1] = {{"act_int8", 1}}, gt[1] = {{"int8_dot", dot}};
                const fe_setting vt[1] = {{"int8_dot", dot > 1 ? 1 : dot}}; /* GEMV's own */
                run(dev, "GEMM", g, 5, gp, 1, gt, 1);
                c.data = o.c2.mem;
                fe_tensor v[6] = {o.w, o.a, {.rank = 0}, {.rank = 0}, {.rank = 0}, c};
                run(dev, "GEMV", v, 6, gp, 1, vt, 1);
                char why[256];
                if (!test_close(&o.c1, &o.c2, FE_DTYPE_F32, 2e-6, 2e-6, why, sizeof why, NULL))
                    fail_msg("%s, %s, int8_dot %d: GEMM against GEMV: %s",
                             fe_isa_name((fe_isa)isa), fe_dtype_info(dts[di])->name, dot, why);
                checked++;
            }
            operands_free(&o);
        }
        fe_device_destroy(dev);
    }
    print_message("GEMM act_int8 = GEMV act_int8 in %d (ISA, dtype, int8_dot) runs\n", checked);
}

/* against the f32 design (B widened, f32 products) on the best ISA: within the rounding bound */
static void gemm_int8_is_within_half_a_step_of_f32(void **s) {
    (void)s;
    const fe_dtype dts[] = {FE_DTYPE_Q8_0, FE_DTYPE_Q4_0, FE_DTYPE_Q4_1, FE_DTYPE_Q5_0};
    fe_device *dev = device_at(FE_ISA_AVX512);
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        operands o;
        operands_make(&o, dts[di], 0x5f32 + di);
        const fe_setting i8[1] = {{"act_int8", 1}};
        fe_tensor g[5] = {o.a, o.w, {.rank = 0}, {.rank = 0}, o.c};
        g[4].data = o.c1.mem;
        run(dev, "GEMM", g, 5, i8, 1, NULL, 0);
        g[4].data = o.c2.mem;
        run(dev, "GEMM", g, 5, NULL, 0, NULL, 0);
        const float *A = (const float *)o.ab.mem, *ci = (const float *)o.c1.mem;
        const float *cf = (const float *)o.c2.mem;
        const size_t rb = fe_dtype_bytes(dts[di], K);
        float row[K];
        double worst = 0;
        for (int64_t n = 0; n < N; n++) {
            fe_dequant_row(dts[di], o.wb.mem + n * rb, row, K);
            for (int64_t m = 0; m < M; m++) {
                double bound = 0;
                for (int64_t b = 0; b < K / 32; b++) {
                    double amax = 0, wsum = 0;
                    for (int j = 0; j < 32; j++) {
                        amax = fmax(amax, fabs(A[m * K + b * 32 + j]));
                        wsum += fabs(row[b * 32 + j]);
                    }
                    bound += amax / 127.0 / 2.0 * wsum;
                }
                const double diff = fabs((double)ci[m * N + n] - cf[m * N + n]);
                if (diff > bound * (1 + 1e-4) + 1e-5)
                    fail_msg("%s (%lld, %lld): int8 %g, f32 %g: |diff| %g over the bound %g",
                             fe_dtype_info(dts[di])->name, (long long)m, (long long)n,
                             ci[m * N + n], cf[m * N + n], diff, bound);
                if (diff / bound > worst) worst = diff / bound;
            }
        }
        print_message("%s: |int8 - f32| at most %.2f of the half-step bound\n",
                      fe_dtype_info(dts[di])->name, worst);
        operands_free(&o);
    }
    fe_device_destroy(dev);
}

/* A whole register tile goes into C straight from the registers unless the last K block has
 * an epilogue (int8.inc); edge tiles and epilogues go through a tile buffer. With a bias of
 * zeros every last-block tile takes the buffer, without one the whole tiles do not: the two
 * must give the same C, on every ISA and int8_dot, with three K blocks (KC 128: partial sums
 * added in C) and rows and columns past the tiles (13 x 70). */
static void gemm_int8_tiles_into_c_equal_the_tile_buffer_path(void **s) {
    (void)s;
    enum { M2 = 13, N2 = 70, K2 = 416 };
    const fe_dtype dts[] = {FE_DTYPE_Q8_0, FE_DTYPE_Q4_0, FE_DTYPE_Q4_1, FE_DTYPE_Q5_0};
    fe_device *probe = device_at(FE_ISA_AVX512);
    const fe_isa best = fe_device_get_info(probe)->best_isa;
    fe_device_destroy(probe);
    const int64_t mk[2] = {M2, K2}, nk[2] = {N2, K2}, mn[2] = {M2, N2}, n1[1] = {N2};
    int checked = 0;
    for (int isa = 0; isa <= (int)best; isa++) {
        fe_device *dev = device_at((fe_isa)isa);
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            fe_tensor a = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mk);
            fe_tensor w = fe_tensor_contiguous(NULL, dts[di], 2, nk);
            fe_tensor c = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
            fe_tensor bias = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, n1);
            test_buf ab, wb, zb, c1, c2;
            assert_true(test_buf_alloc(&ab, &a) && test_buf_alloc(&wb, &w));
            assert_true(test_buf_alloc(&zb, &bias) && test_buf_alloc(&c1, &c) &&
                        test_buf_alloc(&c2, &c));
            test_rng rng = {.s = 0x7113 + di};
            test_buf_draw(&ab, FE_DTYPE_F32, -2, 2, &rng);
            test_buf_draw(&wb, dts[di], -1, 1, &rng);
            memset(zb.mem, 0, (size_t)N2 * sizeof(float));
            a.data = ab.mem, w.data = wb.mem, bias.data = zb.mem;
            for (int dot = 0; dot <= 1; dot++) {
                const fe_setting gp[1] = {{"act_int8", 1}};
                const fe_setting gt[2] = {{"int8_dot", dot}, {"KC", 128}};
                c.data = c1.mem;
                fe_tensor plain[5] = {a, w, {.rank = 0}, {.rank = 0}, c};
                run(dev, "GEMM", plain, 5, gp, 1, gt, 2);
                c.data = c2.mem;
                fe_tensor biased[5] = {a, w, bias, {.rank = 0}, c};
                run(dev, "GEMM", biased, 5, gp, 1, gt, 2);
                const float *x = (const float *)c1.mem, *y = (const float *)c2.mem;
                for (int64_t i = 0; i < M2 * N2; i++)
                    if (!(x[i] == y[i]))
                        fail_msg("%s, %s, int8_dot %d, C(%lld, %lld): %.9g straight into C, "
                                 "%.9g through the tile buffer", fe_isa_name((fe_isa)isa),
                                 fe_dtype_info(dts[di])->name, dot, (long long)(i / N2),
                                 (long long)(i % N2), x[i], y[i]);
                checked++;
            }
            test_buf_free(&ab);
            test_buf_free(&wb);
            test_buf_free(&zb);
            test_buf_free(&c1);
            test_buf_free(&c2);
        }
        fe_device_destroy(dev);
    }
    print_message("tiles into C = tile buffer path in %d (ISA, dtype, int8_dot) runs\n", checked);
}

/* q5_0's stored values reach 31 (q4's 15): rows of B all 31 or all 0 (x = 15 d or -16 d) times
 * rows of A all 1 (q = 127 everywhere) give the largest sums of each sign, 32 x 31 x 127 a
 * block, which 16-bit partial sums of 16 products would saturate. C = 15 K or -16 K (d = 1),
 * on every ISA and int8_dot, up to the f32 scaling's rounding. */
static void gemm_int8_q5_0_extremes_stay_exact(void **s) {
    (void)s;
    enum { M3 = 7, N3 = 18, K3 = 640 };
    fe_device *probe = device_at(FE_ISA_AVX512);
    const fe_isa best = fe_device_get_info(probe)->best_isa;
    fe_device_destroy(probe);
    const int64_t mk[2] = {M3, K3}, nk[2] = {N3, K3}, mn[2] = {M3, N3};
    fe_tensor a = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mk);
    fe_tensor w = fe_tensor_contiguous(NULL, FE_DTYPE_Q5_0, 2, nk);
    fe_tensor c = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
    test_buf ab, wb, cb;
    assert_true(test_buf_alloc(&ab, &a) && test_buf_alloc(&wb, &w) && test_buf_alloc(&cb, &c));
    for (int64_t i = 0; i < M3 * K3; i++) ((float *)ab.mem)[i] = 1.0f;
    fe_block_q5_0 *blk = (fe_block_q5_0 *)wb.mem;
    for (int64_t n = 0; n < N3; n++)
        for (int64_t b = 0; b < K3 / 32; b++) {
            fe_block_q5_0 *x = blk + n * (K3 / 32) + b;
            x->d = fe_f32_to_f16(1.0f);
            memset(x->qh, n % 2 ? 0 : 0xff, sizeof x->qh);
            memset(x->qs, n % 2 ? 0 : 0xff, sizeof x->qs);
        }
    a.data = ab.mem, w.data = wb.mem, c.data = cb.mem;
    int checked = 0;
    for (int isa = 0; isa <= (int)best; isa++) {
        fe_device *dev = device_at((fe_isa)isa);
        for (int dot = 0; dot <= 1; dot++) {
            const fe_setting gp[1] = {{"act_int8", 1}}, gt[1] = {{"int8_dot", dot}};
            fe_tensor g[5] = {a, w, {.rank = 0}, {.rank = 0}, c};
            run(dev, "GEMM", g, 5, gp, 1, gt, 1);
            const float *y = (const float *)cb.mem;
            for (int64_t i = 0; i < M3 * N3; i++) {
                const double want = (i % N3) % 2 ? -16.0 * K3 : 15.0 * K3;
                if (fabs(y[i] - want) > 1e-5 * fabs(want))
                    fail_msg("%s, int8_dot %d, C(%lld, %lld) = %.9g, not %g", fe_isa_name((fe_isa)isa),
                             dot, (long long)(i / N3), (long long)(i % N3), y[i], want);
            }
            checked++;
        }
        fe_device_destroy(dev);
    }
    test_buf_free(&ab);
    test_buf_free(&wb);
    test_buf_free(&cb);
    print_message("q5_0 extremes exact in %d (ISA, int8_dot) runs\n", checked);
}

/* A's rows are quantised once a call, a share a worker, where the workers split N (kernels.inc,
 * gm_quant_a), and each worker's own where they split M: on 2 and 3 workers C must be the
 * bytes of 1 worker's run, at full and bounded rows, for every int8 design and block dtype. */
enum { QK = 512 };
static void run_rows_on(fe_isa isa, int workers, fe_tensor *g, const fe_setting *tun,
                        int64_t rows) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = workers;
    o.max_isa = (int)isa;
    fe_device *dev = NULL;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    const fe_setting gp[1] = {{"act_int8", 1}};
    const int64_t vals[2] = {rows, QK};
    run_values(dev, "GEMM", g, 5, gp, 1, tun, 1, vals, 2);
    fe_device_destroy(dev);
}

static void gemm_int8_shared_quantisation_is_each_workers_own(void **s) {
    (void)s;
    const fe_dtype dts[] = {FE_DTYPE_Q8_0, FE_DTYPE_Q4_0, FE_DTYPE_Q4_1,
                            FE_DTYPE_Q5_0, FE_DTYPE_Q4_K, FE_DTYPE_Q6_K};
    const int64_t shapes[2][2] = {{9, 300}, {70, 40}}; /* (M, N): N split, then M split */
    fe_device *probe = device_at(FE_ISA_AVX512);
    const fe_isa best = fe_device_get_info(probe)->best_isa;
    fe_device_destroy(probe);
    int checked = 0;
    for (int isa = 0; isa <= (int)best; isa++)
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
            for (int sh = 0; sh < 2; sh++) {
                const int64_t m = shapes[sh][0], n = shapes[sh][1];
                const int64_t mk[2] = {m, QK}, nk[2] = {n, QK}, mn[2] = {m, n};
                fe_tensor a = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mk);
                fe_tensor w = fe_tensor_contiguous(NULL, dts[di], 2, nk);
                fe_tensor c = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, mn);
                test_buf ab, wb, c1, cw;
                assert_true(test_buf_alloc(&ab, &a) && test_buf_alloc(&wb, &w));
                assert_true(test_buf_alloc(&c1, &c) && test_buf_alloc(&cw, &c));
                test_rng rng = {.s = 0x5a7e + di};
                test_buf_draw(&ab, FE_DTYPE_F32, -2, 2, &rng);
                test_buf_draw(&wb, dts[di], -1, 1, &rng);
                a.data = ab.mem, w.data = wb.mem;
                for (int dot = 0; dot <= 3; dot++)
                    for (int64_t rows = m; rows > 0; rows = rows == m ? m / 2 + 1 : 0) {
                        const fe_setting tun[1] = {{"int8_dot", dot}};
                        memset(c1.mem, 0, (size_t)(m * n) * 4);
                        c.data = c1.mem;
                        fe_tensor g[5] = {a, w, {.rank = 0}, {.rank = 0}, c};
                        run_rows_on((fe_isa)isa, 1, g, tun, rows);
                        for (int workers = 2; workers <= 3; workers++) {
                            memset(cw.mem, 0, (size_t)(m * n) * 4);
                            g[4].data = cw.mem;
                            run_rows_on((fe_isa)isa, workers, g, tun, rows);
                            if (memcmp(c1.mem, cw.mem, (size_t)(m * n) * 4) != 0)
                                fail_msg("%s, %s, %lld x %lld, rows %lld, int8_dot %d: %d "
                                         "workers differ from 1", fe_isa_name((fe_isa)isa),
                                         fe_dtype_info(dts[di])->name, (long long)m,
                                         (long long)n, (long long)rows, dot, workers);
                            checked++;
                        }
                    }
                test_buf_free(&ab);
                test_buf_free(&wb);
                test_buf_free(&c1);
                test_buf_free(&cw);
            }
    print_message("act_int8 on 2 and 3 workers = 1 worker in %d runs\n", checked);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemm_int8_rows_are_gemv_int8_batches),
        cmocka_unit_test(gemm_int8_is_within_half_a_step_of_f32),
        cmocka_unit_test(gemm_int8_tiles_into_c_equal_the_tile_buffer_path),
        cmocka_unit_test(gemm_int8_q5_0_extremes_stay_exact),
        cmocka_unit_test(gemm_int8_shared_quantisation_is_each_workers_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
