/* bench/support/peak.c: this machine's arithmetic peak (see peak.h): every worker runs
 * independent chains of register-only vector multiply-adds, long enough that the chains
 * outnumber latency x pipes, and the best / median of repeated dispatches is the peak. */
#include "peak.h"

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

enum { PEAK_REPEATS = 16 };

typedef struct {
    long iters;
    float sink[64];
} peak_ctx;

/* 16 chains in zmm (32 registers), 12 in ymm (16 registers, two hold the constants): either
 * way more than FMA latency x FMA pipes (4 x 2 on Zen 5 and recent Intel) */
#define CHAINS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CHAINS(X) CHAINS12(X) X(12) X(13) X(14) X(15)

__attribute__((target("avx512f,fma"))) static void peak_avx512(void *ctx, int ith, int nth) {
    (void)nth;
    peak_ctx *c = ctx;
    const __m512 m = _mm512_set1_ps(0.999999f), s = _mm512_set1_ps(1e-6f);
#define DECL(i) __m512 a##i = _mm512_set1_ps(1.0f + (float)(i) * 1e-3f);
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, m, s);
#define SUM(i) t = _mm512_add_ps(t, a##i);
    CHAINS(DECL)
    for (long r = 0; r < c->iters; r++) { CHAINS(STEP) }
    __m512 t = _mm512_setzero_ps();
    CHAINS(SUM)
    c->sink[ith % 64] = _mm512_reduce_add_ps(t);
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("avx2,fma"))) static void peak_avx2(void *ctx, int ith, int nth) {
    (void)nth;
    peak_ctx *c = ctx;
    const __m256 m = _mm256_set1_ps(0.999999f), s = _mm256_set1_ps(1e-6f);
#define DECL(i) __m256 a##i = _mm256_set1_ps(1.0f + (float)(i) * 1e-3f);
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, m, s);
#define SUM(i) t = _mm256_add_ps(t, a##i);
    CHAINS12(DECL)
    for (long r = 0; r < c->iters; r++) { CHAINS12(STEP) }
    __m256 t = _mm256_setzero_ps();
    CHAINS12(SUM)
    float o[8];
    _mm256_storeu_ps(o, t);
    c->sink[ith % 64] = o[0];
#undef DECL
#undef STEP
#undef SUM
}

/* the same 16 chains of vdpbf16ps: 16 lanes x 2 bf16 products each */
__attribute__((target("avx512f,avx512bf16"))) static void peak_bf16(void *ctx, int ith,
                                                                     int nth) {
    (void)nth;
    peak_ctx *c = ctx;
    const __m512bh m = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f), s = m; /* bf16 0.996 pairs */
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i) * 1e-3f);
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, m, s);
#define SUM(i) t = _mm512_add_ps(t, a##i);
    CHAINS(DECL)
    for (long r = 0; r < c->iters; r++) { CHAINS(STEP) }
    __m512 t = _mm512_setzero_ps();
    CHAINS(SUM)
    c->sink[ith % 64] = _mm512_reduce_add_ps(t);
#undef DECL
#undef STEP
#undef SUM
}

/* 4 chains of AMX TDPBF16PS (each 16 x 16 x 32 bf16 products into a 16 x 16 f32 tile),
 * from two A and two B tiles loaded once: the tile unit's own rate, what the GEMM's
 * bf16_dot = 3 runs. Its iterations are 16 of the vector loops' (one TDPBF16PS is about
 * 16 cycles where a vector multiply-add is 0.5). */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} peak_amx_config;

__attribute__((target("amx-tile,amx-bf16"))) static void peak_amx(void *ctx, int ith, int nth) {
    (void)nth;
    peak_ctx *c = ctx;
    _Alignas(64) peak_amx_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _Alignas(64) static const uint16_t ones[16 * 32] = {0}; /* zeros: the rate is the same */
    _Alignas(64) float out[16 * 16];
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ones, 64);
    _tile_loadd(5, ones, 64);
    _tile_loadd(6, ones, 64);
    _tile_loadd(7, ones, 64);
    for (long r = 0; r < c->iters / 16; r++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    c->sink[ith % 64] = out[0];
}

/* 16 chains of vpdpbusd: 16 lanes x 4 products */
__attribute__((target("avx512f,avx512vnni"))) static void peak_vnni(void *ctx, int ith,
                                                                     int nth) {
    (void)nth;
    peak_ctx *c = ctx;
    const __m512i u = _mm512_set1_epi8(3), x = _mm512_set1_epi8(-2);
#define DECL(i) __m512i a##i = _mm512_set1_epi32(i);
#define STEP(i) a##i = _mm512_dpbusd_epi32(a##i, u, x);
#define SUM(i) t = _mm512_add_epi32(t, a##i);
    CHAINS(DECL)
    for (long r = 0; r < c->iters; r++) { CHAINS(STEP) }
    __m512i t = _mm512_setzero_si512();
    CHAINS(SUM)
    c->sink[ith % 64] = (float)_mm512_reduce_add_epi32(t);
#undef DECL
#undef STEP
#undef SUM
}

/* 16 chains of AVX-VNNI's vpdpbusd on ymm: 8 lanes x 4 products (the avx2 kernels' int8
 * dot product where the device has avxvnni) */
__attribute__((target("avx2,avxvnni"))) static void peak_avxvnni(void *ctx, int ith, int nth) {
    (void)nth;
    peak_ctx *c = ctx;
    const __m256i u = _mm256_set1_epi8(3), x = _mm256_set1_epi8(-2);
#define DECL(i) __m256i a##i = _mm256_set1_epi32(i);
#define STEP(i) a##i = _mm256_dpbusd_avx_epi32(a##i, u, x);
#define SUM(i) t = _mm256_add_epi32(t, a##i);
    CHAINS(DECL)
    for (long r = 0; r < c->iters; r++) { CHAINS(STEP) }
    __m256i t = _mm256_setzero_si256();
    CHAINS(SUM)
    int32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, t);
    c->sink[ith % 64] = (float)(lanes[0] + lanes[7]);
#undef DECL
#undef STEP
#undef SUM
}

/* 12 chains of vpmaddubsw, vpmaddwd by ones, vpaddd: 8 lanes x 4 products. Each chain's u8
 * operand is its own vector loaded from memory behind a pointer the compiler cannot follow
 * (as act_int8's B panels are loaded): with two constant operands it hoisted the products
 * out of the loop, and the probe timed 12 vpaddd an iteration (805 "G ops/s" on 2 Zen 5
 * cores, 2x what vpmaddubsw can do there).
 * With `sign`, the same chains for int8 x int8 (q8_0 B without VNNI): vpsignb first moves a
 * signed B vector's signs onto the broadcast A quad, and vpmaddubsw takes |B| (loaded, as
 * act_int8 takes it once per B vector for a tile's rows): the four operations a q8_0 product
 * takes on that path, where q4's u8 B takes three. */
__attribute__((target("avx2"), always_inline)) static inline void
maddubs_chains(void *ctx, int ith, const bool sign) {
    peak_ctx *c = ctx;
    _Alignas(32) int8_t src[24 * 32]; /* 12 signed B vectors, then 12 u8 (|B|) */
    for (int i = 0; i < 24 * 32; i++) src[i] = (int8_t)(i >= 12 * 32 ? i % 7 + 1 : -(i % 5) - 1);
    const __m256i *w = (const __m256i *)src;
    const __m256i x = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
#define DECL(i) __m256i a##i = _mm256_set1_epi32(i);
#define STEP(i)                                                                            \
    a##i = _mm256_add_epi32(                                                               \
        a##i, _mm256_madd_epi16(                                                           \
                  _mm256_maddubs_epi16(_mm256_load_si256(w + 12 + (i)),                    \
                                       sign ? _mm256_sign_epi8(x, _mm256_load_si256(w + (i))) \
                                            : x),                                          \
                  one));
#define SUM(i) t = _mm256_add_epi32(t, a##i);
    CHAINS12(DECL)
    for (long r = 0; r < c->iters; r++) {
        __asm__ volatile("" : "+r"(w) : : "memory"); /* the products are not hoisted */
        CHAINS12(STEP)
    }
    __m256i t = _mm256_setzero_si256();
    CHAINS12(SUM)
    c->sink[ith % 64] = (float)_mm256_extract_epi32(t, 0);
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("avx2"))) static void peak_maddubs(void *ctx, int ith, int nth) {
    (void)nth;
    maddubs_chains(ctx, ith, false);
}

__attribute__((target("avx2"))) static void peak_maddubs_sign(void *ctx, int ith, int nth) {
    (void)nth;
    maddubs_chains(ctx, ith, true);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Best and median G-ops/s of `repeats` dispatches of fn on every worker, ops_per_iter
 * operations per loop iteration and worker. */
static bool cpu_clock; /* fe_peak_cpu_time */

void fe_peak_cpu_time(bool on) { cpu_clock = on; }

/* seconds on the wall clock, or (fe_peak_cpu_time) of this process's CPU time */
double fe_peak_clock_s(void) {
    if (!cpu_clock) return (double)fe_time_ns() * 1e-9;
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void measure(fe_device *dev, void (*fn)(void *, int, int), double ops_per_iter,
                    int repeats, double *best, double *median) {
    const fe_device_info *info = fe_device_get_info(dev);
    peak_ctx c = {.iters = 1000000};
    fe_step step = {.fn = fn, .ctx = &c, .width = info->n_workers};
    fe_device_dispatch(dev, &step, 1); /* warm up, clocks up */
    double g[PEAK_REPEATS];
    c.iters = 4000000;
    if (repeats > PEAK_REPEATS) repeats = PEAK_REPEATS;
    if (repeats < 1) repeats = 1;
    for (int r = 0; r < repeats; r++) {
        const double t0 = fe_peak_clock_s();
        fe_device_dispatch(dev, &step, 1);
        /* CPU time: all workers' seconds together, so a worker's rate is ops / s and the
         * pool's that times the workers */
        const double s = (fe_peak_clock_s() - t0) / (cpu_clock ? info->n_workers : 1);
        g[r] = ops_per_iter * (double)c.iters * info->n_workers / s / 1e9;
    }
    qsort(g, (size_t)repeats, sizeof *g, cmp_d);
    *best = g[repeats - 1];
    *median = repeats % 2 ? g[repeats / 2] : 0.5 * (g[repeats / 2 - 1] + g[repeats / 2]);
}

void fe_flops_peak(fe_device *dev, bool bf16, int repeats, double *best, double *median,
                   int *lanes) {
    const fe_device_info *info = fe_device_get_info(dev);
    bool z = info->isa >= FE_ISA_AVX512 && info->features.avx512f;
    *lanes = z ? 16 : info->features.avx2 && info->features.fma ? 8 : 0;
    if (bf16 && !(z && info->features.avx512bf16)) *lanes = 0;
    *best = *median = 0;
    if (!*lanes) return;
    measure(dev, bf16 ? peak_bf16 : z ? peak_avx512 : peak_avx2,
            2.0 * *lanes * (bf16 ? 2.0 : 1.0) * (z ? 16.0 : 12.0), repeats, best, median);
}

void fe_amx_peak(fe_device *dev, int repeats, double *best, double *median) {
    const fe_device_info *info = fe_device_get_info(dev);
    *best = *median = 0;
    if (info->isa < FE_ISA_AVX512 || !info->features.amx_bf16) return;
    measure(dev, peak_amx, 4.0 * 16 * 16 * 32 * 2 / 16, repeats, best, median);
}

void fe_int8_peak(fe_device *dev, int repeats, double *best, double *median, int *lanes,
                  bool *vnni) {
    const fe_device_info *info = fe_device_get_info(dev);
    const bool zmm = info->dpbusd && info->isa >= FE_ISA_AVX512;
    *vnni = info->dpbusd;
    *lanes = zmm ? 16 : info->isa >= FE_ISA_AVX2 && info->features.avx2 ? 8 : 0;
    *best = *median = 0;
    if (!*lanes) return;
    measure(dev, zmm ? peak_vnni : *vnni ? peak_avxvnni : peak_maddubs,
            2.0 * *lanes * 4.0 * (*vnni ? 16.0 : 12.0), repeats, best, median);
}

void fe_int8_sign_peak(fe_device *dev, int repeats, double *best, double *median) {
    const fe_device_info *info = fe_device_get_info(dev);
    *best = *median = 0;
    if (info->isa < FE_ISA_AVX2 || !info->features.avx2) return;
    measure(dev, peak_maddubs_sign, 2.0 * 8 * 4.0 * 12.0, repeats, best, median);
}
