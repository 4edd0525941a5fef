/* tests/test_kquant.c: the q5_0, q4_k and q6_k blocks (core/quant.h) and the kquant row
 * kernels (ops/kquant): hand-made blocks decode to the values their layout defines, encoding
 * round-trips within each sub-block's step, every ISA's decode is fe_dequant_row's bit for
 * bit, the f32 dots agree with a double dot of the decoded row, and the int8 (q8_K) dots stay
 * within the activation rounding of the f32 ones. The GEMV / GEMM / Gather kernels over these
 * dtypes are checked against their references by the catalog (test_catalog). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/quant.h"
#include "ops/kquant/kquant.h"
#include "support/testing.h"

typedef void (*dequant_fn)(fe_dtype, const void *, float *, int64_t);
typedef float (*dot_f32_fn)(fe_dtype, const unsigned char *, const float *, int64_t);
typedef float (*dot_i8_fn)(fe_dtype, const unsigned char *, const int8_t *, const float *,
                           const int16_t *, int64_t);

typedef struct isa_kernels {
    fe_isa isa;
    const char *name;
    dequant_fn dequant;
    dot_f32_fn dot_f32;
    dot_i8_fn dot_i8;
    fe_kq_quant_fn quant;
} isa_kernels;

static const isa_kernels isas[] = {
    {FE_ISA_SCALAR, "scalar", fe_kq_dequant_scalar, fe_kq_dot_f32_scalar, fe_kq_dot_int8_scalar,
     fe_kq_quant_x_scalar},
    {FE_ISA_AVX2, "avx2", fe_kq_dequant_avx2, fe_kq_dot_f32_avx2, fe_kq_dot_int8_avx2,
     fe_kq_quant_x_avx2},
    {FE_ISA_AVX512, "avx512", fe_kq_dequant_avx512, fe_kq_dot_f32_avx512, fe_kq_dot_int8_avx512,
     fe_kq_quant_x_avx512},
};

static const fe_dtype kq_types[] = {FE_DTYPE_Q5_0, FE_DTYPE_Q4_K, FE_DTYPE_Q6_K};

static fe_isa best_isa(void) { return fe_device_get_info(test_dev)->best_isa; }

/* A q4_k block with d = 1, dmin = 0.5, sub-block j's scale j + 1 and min 2 j (the high two bits
 * of scales 4..7 and mins 4..7 packed in the top of bytes 0..7, as ggml's get_scale_min_k4
 * reads them), and element e's nibble e % 16: x[e] = (j + 1) * (e % 16) - 0.5 * 2 j. */
static void q4_k_hand_made_block_decodes_to_its_formula(void **s) {
    (void)s;
    fe_block_q4_k b;
    memset(&b, 0, sizeof b);
    b.d = fe_f32_to_f16(1.0f);
    b.dmin = fe_f32_to_f16(0.5f);
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++) sc[j] = j + 1, mn[j] = 2 * j;
    sc[7] = 63, mn[6] = 50; /* values past 4 bits, so the high bits matter */
    for (int j = 0; j < 4; j++) {
        b.scales[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        b.scales[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        b.scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
    for (int e = 0; e < 256; e++) { /* runs of 64: low nibbles = first 32, high = next 32 */
        int run = e / 64, i = e % 64;
        b.qs[32 * run + i % 32] |= (uint8_t)(i < 32 ? e % 16 : (e % 16) << 4);
    }
    float y[256];
    assert_true(fe_dequant_row(FE_DTYPE_Q4_K, &b, y, 256));
    for (int e = 0; e < 256; e++) {
        int j = e / 32;
        float want = (float)sc[j] * (float)(e % 16) - 0.5f * (float)mn[j];
        if (y[e] != want) fail_msg("q4_k element %d: %g, want %g", e, y[e], want);
    }
}

/* A q6_k block with d = 0.25, scales -8..7 over the 16 sub-blocks and q = e % 64 (low 4 bits
 * in ql, high 2 in qh, interleaved as ggml's dequantize_row_q6_K reads them). */
static void q6_k_hand_made_block_decodes_to_its_formula(void **s) {
    (void)s;
    fe_block_q6_k b;
    memset(&b, 0, sizeof b);
    b.d = fe_f32_to_f16(0.25f);
    for (int j = 0; j < 16; j++) b.scales[j] = (int8_t)(j - 8);
    for (int e = 0; e < 256; e++) {
        int q = (e * 7) % 64, h = e / 128, l = e % 32, r = (e % 128) / 32;
        /* ggml: ql[l] low = r0, ql[l+32] low = r1, ql[l] high = r2, ql[l+32] high = r3 */
        uint8_t *ql = b.ql + 64 * h + (r == 1 || r == 3 ? 32 : 0);
        *(ql + l) |= (uint8_t)(r < 2 ? q & 15 : (q & 15) << 4);
        b.qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * r));
    }
    float y[256];
    assert_true(fe_dequant_row(FE_DTYPE_Q6_K, &b, y, 256));
    for (int e = 0; e < 256; e++) {
        float want = 0.25f * (float)(e / 16 - 8) * (float)((e * 7) % 64 - 32);
        if (y[e] != want) fail_msg("q6_k element %d: %g, want %g", e, y[e], want);
    }
}

/* q5_0: x = d (q - 16), the fifth bit of element j from bit j of qh (j + 16: bit j + 16). */
static void q5_0_hand_made_block_decodes_to_its_formula(void **s) {
    (void)s;
    fe_block_q5_0 b;
    memset(&b, 0, sizeof b);
    b.d = fe_f32_to_f16(0.5f);
    uint32_t qh = 0;
    for (int j = 0; j < 32; j++) {
        int q = (j * 11) % 32, i = j % 16;
        b.qs[i] |= (uint8_t)(j < 16 ? q & 15 : (q & 15) << 4);
        qh |= (uint32_t)(q >> 4) << j;
    }
    memcpy(b.qh, &qh, 4);
    float y[32];
    assert_true(fe_dequant_row(FE_DTYPE_Q5_0, &b, y, 32));
    for (int j = 0; j < 32; j++)
        if (y[j] != 0.5f * (float)((j * 11) % 32 - 16))
            fail_msg("q5_0 element %d: %g, want %g", j, y[j], 0.5f * (float)((j * 11) % 32 - 16));
}

static void fill(float *x, int64_t n, unsigned seed) {
    test_rng r = {.s = 0x9e3779b97f4a7c15ull ^ seed};
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(test_rng_uniform(&r, -1, 1) * (1.0 + 3.0 * (i / 32 % 3 == 0)));
}

/* Each element within (half a step of its sub-block's grid + the scale's own rounding); a
 * dead encoder (all zeros, or one block copied) fails this. */
static void k_blocks_round_trip_within_their_steps(void **s) {
    (void)s;
    enum { N = 1024 };
    float x[N], y[N];
    unsigned char blocks[N / 256 * 210 + N / 32 * 22];
    fill(x, N, 1);
    for (int t = 0; t < 3; t++) {
        fe_dtype dt = kq_types[t];
        memset(blocks, 0, sizeof blocks);
        assert_true(fe_quant_row(dt, x, blocks, N));
        assert_true(fe_dequant_row(dt, blocks, y, N));
        int sub = dt == FE_DTYPE_Q6_K ? 16 : 32;
        double err2 = 0, x2 = 0;
        for (int b = 0; b < N / sub; b++) {
            float lo = 0, hi = 0, amax = 0;
            for (int j = 0; j < sub; j++) {
                float v = x[b * sub + j];
                lo = fminf(lo, v), hi = fmaxf(hi, v), amax = fmaxf(amax, fabsf(v));
            }
            /* q5_0: 32 levels of amax / 16, asymmetric as q4_0's (the side opposite the
             * largest magnitude clips a step short); q4_k: 16 levels over [min(0, lo), hi],
             * the 6-bit scale and min adding up to a step more; q6_k: 64 levels of amax / 32 */
            float step = dt == FE_DTYPE_Q5_0 ? amax / 16 : dt == FE_DTYPE_Q4_K ? (hi - lo) / 15 : amax / 32;
            float tol = dt == FE_DTYPE_Q5_0 ? 1.01f * step : 2.0f * step;
            for (int j = 0; j < sub; j++) {
                int e = b * sub + j;
                if (fabsf(y[e] - x[e]) > tol + 1e-6f)
                    fail_msg("%s element %d: %g -> %g (step %g)", fe_dtype_info(dt)->name, e,
                             x[e], y[e], step);
                err2 += (double)(y[e] - x[e]) * (y[e] - x[e]);
                x2 += (double)x[e] * x[e];
            }
        }
        /* and on the whole, as a 4/5/6-bit code should: relative RMS error */
        double rel = sqrt(err2 / x2), bound = dt == FE_DTYPE_Q4_K ? 0.12 : dt == FE_DTYPE_Q5_0 ? 0.05 : 0.04;
        if (rel > bound) fail_msg("%s: relative RMS error %g > %g", fe_dtype_info(dt)->name, rel, bound);
    }
}

/* Random bytes with sane scales (test_buf_draw's blocks), n elements of dtype dt. */
static void draw(fe_dtype dt, int64_t n, unsigned seed, test_buf *b) {
    int64_t shape[1] = {n};
    fe_tensor t = fe_tensor_contiguous(NULL, dt, 1, shape);
    assert_true(test_buf_alloc(b, &t));
    test_rng r = {.s = seed};
    test_buf_draw(b, dt, -1, 1, &r);
}

static void every_isa_decodes_as_fe_dequant_row(void **s) {
    (void)s;
    enum { N = 2048 };
    float want[N], got[N];
    for (int t = 0; t < 3; t++) {
        test_buf b;
        draw(kq_types[t], N, 7u + (unsigned)t, &b);
        assert_true(fe_dequant_row(kq_types[t], b.mem, want, N));
        for (int i = 0; i < 3 && isas[i].isa <= best_isa(); i++) {
            memset(got, 0xff, sizeof got);
            isas[i].dequant(kq_types[t], b.mem, got, N);
            if (memcmp(got, want, sizeof want) != 0)
                fail_msg("%s %s decode differs from fe_dequant_row", isas[i].name,
                         fe_dtype_info(kq_types[t])->name);
        }
        test_buf_free(&b);
    }
}

/* f32 dots against a double dot of the decoded row (f32 summation error only); int8 dots
 * equal to the reference's integer computation as a float, and within the activations'
 * rounding (each q8 within half a step dx / 2 of x) of the exact dot. */
static void dots_match_decoded_rows_and_int8_stays_within_its_rounding(void **s) {
    (void)s;
    enum { K = 2048 };
    static float x[K], w[K], dx[K / 32];
    static int8_t q[K];
    static int16_t bsums[K / 16];
    fill(x, K, 3);
    for (int t = 0; t < 3; t++) {
        fe_dtype dt = kq_types[t];
        test_buf b;
        draw(dt, K, 11u + (unsigned)t, &b);
        assert_true(fe_dequant_row(dt, b.mem, w, K));
        double exact = 0, mag = 0, bound = 0;
        for (int j = 0; j < K; j++) exact += (double)w[j] * x[j], mag += fabs((double)w[j] * x[j]);
        int xb = fe_kq_xblock(dt);
        fe_kq_quant_x(x, K, xb, q, dx, bsums);
        for (int j = 0; j < K; j++) bound += 0.5 * dx[j / xb] * fabs((double)w[j]);
        float ref8 = (float)fe_kq_dot_int8_ref(dt, b.mem, q, dx, bsums, K);
        assert_true(fabs(ref8 - exact) <= bound * 1.0001 + 1e-6);
        assert_true(fabs(exact) > 1e-3 * mag); /* the data makes a dot that is not ~0 */
        for (int i = 0; i < 3 && isas[i].isa <= best_isa(); i++) {
            float f = isas[i].dot_f32(dt, b.mem, x, K);
            if (fabs(f - exact) > 1e-5 * mag)
                fail_msg("%s %s f32 dot %g, exact %g", isas[i].name, fe_dtype_info(dt)->name, f, exact);
            float g = isas[i].dot_i8(dt, b.mem, q, dx, bsums, K);
            if (g != ref8)
                fail_msg("%s %s int8 dot %.9g, reference %.9g", isas[i].name,
                         fe_dtype_info(dt)->name, g, ref8);
        }
        test_buf_free(&b);
    }
}

/* The q8_K activations: dx = amax / 127 per 256 (32 for q5_0), q within [-127, 127] with the
 * largest magnitude at 127, bsums the sums of 16. */
static void activations_quantise_as_q8_k(void **s) {
    (void)s;
    enum { K = 512 };
    float x[K], dx[K / 32];
    int8_t q[K];
    int16_t bs[K / 16];
    fill(x, K, 5);
    fe_kq_quant_x(x, K, 256, q, dx, bs);
    for (int b = 0; b < 2; b++) {
        float amax = 0;
        int qmax = 0;
        for (int j = 0; j < 256; j++) {
            amax = fmaxf(amax, fabsf(x[256 * b + j]));
            qmax = abs(q[256 * b + j]) > qmax ? abs(q[256 * b + j]) : qmax;
            assert_true(fabsf(dx[b] * q[256 * b + j] - x[256 * b + j]) <= 0.5001f * dx[b]);
        }
        assert_true(dx[b] == amax / 127.0f);
        assert_int_equal(qmax, 127);
    }
    for (int g = 0; g < K / 16; g++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) sum += q[16 * g + j];
        assert_int_equal(bs[g], sum);
    }
}

/* Every ISA's quantiser gives fe_kq_quant_x's bytes, scales and sums bit for bit, on blocks
 * of 32 and 256: random values over magnitudes 1e-30..1e30, exact halves of the step (ties
 * round to even), zero blocks, signed zeros, a lone NaN and infinities (clamped to +-127 as
 * the plain loop's comparisons clamp them). */
static void every_isa_quantises_as_fe_kq_quant_x(void **s) {
    (void)s;
    enum { K = 1024 };
    static float x[K], dx[2][K / 32];
    static int8_t q[2][K];
    static int16_t bs[2][K / 16];
    unsigned r = 12345u;
    for (int j = 0; j < K; j++) {
        r = r * 1103515245u + 12345u;
        const float u = (float)((r >> 8) & 0xffff) / 65536.0f - 0.5f;
        x[j] = u * powf(10.0f, (float)((j / 64) % 13) * 5.0f - 30.0f);
    }
    for (int j = 0; j < 32; j++) x[32 + j] = (float)(j - 16) + 0.5f; /* ties: with amax 127, */
    x[32] = 127.0f;                                                     /* dx = 1, x / dx = x */
    for (int j = 0; j < 32; j++) x[64 + j] = (j & 1) ? -0.0f : 0.0f;  /* a zero block */
    x[100] = NAN;
    x[300] = INFINITY, x[301] = -INFINITY;
    for (int xb = 32; xb <= 256; xb *= 8) {
        fe_kq_quant_x(x, K, xb, q[0], dx[0], bs[0]);
        for (int i = 0; i < 3 && isas[i].isa <= best_isa(); i++) {
            memset(q[1], 0x55, sizeof q[1]);
            memset(dx[1], 0x55, sizeof dx[1]);
            memset(bs[1], 0x55, sizeof bs[1]);
            isas[i].quant(x, K, xb, q[1], dx[1], bs[1]);
            if (memcmp(q[0], q[1], K) || memcmp(dx[0], dx[1], (size_t)(K / xb) * sizeof(float)) ||
                memcmp(bs[0], bs[1], sizeof bs[0]))
                fail_msg("%s quantises blocks of %d other than fe_kq_quant_x", isas[i].name, xb);
        }
    }
}

/* dtype traits: bytes per weight as the cost models read them */
static void k_dtypes_have_ggml_block_sizes(void **s) {
    (void)s;
    assert_int_equal(fe_dtype_bytes(FE_DTYPE_Q4_K, 256), 144); /* 4.5 bits a weight */
    assert_int_equal(fe_dtype_bytes(FE_DTYPE_Q6_K, 512), 420); /* 6.5625 bits */
    assert_int_equal(fe_dtype_bytes(FE_DTYPE_Q5_0, 64), 44);   /* 5.5 bits */
    fe_dtype dt;
    assert_int_equal(fe_dtype_from_name("q4_k", &dt), FE_OK);
    assert_int_equal(dt, FE_DTYPE_Q4_K);
    assert_int_equal(fe_dtype_info(FE_DTYPE_Q6_K)->block, 256);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(q4_k_hand_made_block_decodes_to_its_formula),
        cmocka_unit_test(q6_k_hand_made_block_decodes_to_its_formula),
        cmocka_unit_test(q5_0_hand_made_block_decodes_to_its_formula),
        cmocka_unit_test(k_blocks_round_trip_within_their_steps),
        cmocka_unit_test(every_isa_decodes_as_fe_dequant_row),
        cmocka_unit_test(dots_match_decoded_rows_and_int8_stays_within_its_rounding),
        cmocka_unit_test(activations_quantise_as_q8_k),
        cmocka_unit_test(every_isa_quantises_as_fe_kq_quant_x),
        cmocka_unit_test(k_dtypes_have_ggml_block_sizes),
    };
    return cmocka_run_group_tests_name("kquant", tests, test_device_setup, test_device_teardown);
}
