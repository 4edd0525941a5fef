/* bench/bench_vnni_pipes.c: which vector operations an int8 GEMM's inner loop can add beside
 * its vpdpbusd products for free, and which take their pipes, on this core (AVX512-VNNI).
 *
 * One thread. Each loop runs 12 independent vpdpbusd chains (zmm, registers only) per
 * iteration, then a few more operations on registers of their own (no chain through the
 * products): 3 vpmulld, 3 vpmaddwd, 3 FMAs, 3 vcvtdq2ps, 3 vpaddd, or the 12 products' A
 * operand broadcast from memory ({1to16}) instead of a register. Prints ns an iteration
 * (best of 5 runs of 2e7 iterations) and each loop over the products-only loop: about 1.00
 * means free beside the products, about 1.25 (15 / 12) means each of the 3 took a product's
 * slot. kquant.inc's and int8.inc's designs count their scale multiplies (vpmulld), offset
 * sums (vpmaddwd) and f32 FMAs against the products by it (docs/performance.md, the
 * thirteenth session). Exits 0 without VNNI (nothing to measure). */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ferrum/device.h"
#include "support/bench_device.h"

#define ITERS 20000000L
#define TGT __attribute__((target("avx512f,avx512bw,avx512vnni"), noinline))

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int32_t quads[64 * 8] __attribute__((aligned(64)));

#define DP(acc, u, x) __asm__ volatile("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(x))
#define DPM(acc, u, p)                                                                     \
    __asm__ volatile("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)(p)))
#define OP(ins, acc, s) __asm__ volatile(ins " %1, %0, %0" : "+v"(acc) : "v"(s))
#define OP3(ins) OP(ins, m0, sc); OP(ins, m1, sc); OP(ins, m2, sc)
#define CVT(acc, s) __asm__ volatile("vcvtdq2ps %1, %0" : "+v"(acc) : "v"(s))
#define PRODUCTS(X)                                                                        \
    DP(a0, b0, X); DP(a1, b1, X); DP(a2, b0, X); DP(a3, b1, X); DP(a4, b0, X); DP(a5, b1, X); \
    DP(a6, b0, X); DP(a7, b1, X); DP(a8, b0, X); DP(a9, b1, X); DP(a10, b0, X); DP(a11, b1, X)
#define REGS                                                                               \
    __m512i a0 = _mm512_set1_epi32(1), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, \
            a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;                                 \
    __m512i b0 = _mm512_set1_epi32(3), b1 = _mm512_set1_epi32(5), x = _mm512_set1_epi32(1); \
    __m512i sc = _mm512_set1_epi32(1), m0 = sc, m1 = sc, m2 = sc
#define SINK                                                                               \
    __asm__ volatile("" ::"v"(a0), "v"(a1), "v"(a2), "v"(a3), "v"(a4), "v"(a5));          \
    __asm__ volatile("" ::"v"(a6), "v"(a7), "v"(a8), "v"(a9), "v"(a10), "v"(a11));         \
    __asm__ volatile("" ::"v"(m0), "v"(m1), "v"(m2))

TGT static void loop_products(long n) {
    REGS;
    for (long i = 0; i < n; i++) { PRODUCTS(x); }
    SINK;
}
TGT static void loop_mulld(long n) {
    REGS;
    for (long i = 0; i < n; i++) { PRODUCTS(x); OP3("vpmulld"); }
    SINK;
}
TGT static void loop_maddwd(long n) {
    REGS;
    for (long i = 0; i < n; i++) { PRODUCTS(x); OP3("vpmaddwd"); }
    SINK;
}
TGT static void loop_fma(long n) {
    REGS;
    for (long i = 0; i < n; i++) { PRODUCTS(x); OP3("vfmadd231ps"); }
    SINK;
}
TGT static void loop_cvt(long n) {
    REGS;
    for (long i = 0; i < n; i++) { PRODUCTS(x); CVT(m0, sc); CVT(m1, sc); CVT(m2, sc); }
    SINK;
}
TGT static void loop_add(long n) {
    REGS;
    for (long i = 0; i < n; i++) { PRODUCTS(x); OP3("vpaddd"); }
    SINK;
}
TGT static void loop_bcast(long n) {
    REGS;
    for (long i = 0; i < n; i++) {
        const int32_t *p = quads + (i & 63) * 8;
        DPM(a0, b0, p); DPM(a1, b1, p); DPM(a2, b0, p + 1); DPM(a3, b1, p + 1);
        DPM(a4, b0, p + 2); DPM(a5, b1, p + 2); DPM(a6, b0, p + 3); DPM(a7, b1, p + 3);
        DPM(a8, b0, p + 4); DPM(a9, b1, p + 4); DPM(a10, b0, p + 5); DPM(a11, b1, p + 5);
    }
    (void)x;
    SINK;
}

static double best_ns(void (*fn)(long)) {
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t = now_s();
        fn(ITERS);
        t = now_s() - t;
        if (t < best) best = t;
    }
    return best / (double)ITERS * 1e9;
}

int main(void) {
    fe_device *dev = bench_device_open("bench_vnni_pipes"); /* the machine line, the load */
    if (!dev) return 1;
    fe_device_destroy(dev);
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni")) {
        printf("no AVX512-VNNI on this CPU: nothing to measure\n");
        return 0;
    }
    static const struct {
        const char *name;
        void (*fn)(long);
    } loops[] = {
        {"12 vpdpbusd (products only)", loop_products},
        {"+ 3 vpmulld", loop_mulld},
        {"+ 3 vpmaddwd", loop_maddwd},
        {"+ 3 vfmadd231ps", loop_fma},
        {"+ 3 vcvtdq2ps", loop_cvt},
        {"+ 3 vpaddd", loop_add},
        {"A broadcast from memory {1to16}", loop_bcast},
    };
    printf("one thread, zmm, 12 independent vpdpbusd chains an iteration; best of 5 x %ld\n",
           ITERS);
    double base = 0;
    for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++) {
        double ns = best_ns(loops[i].fn);
        if (i == 0) base = ns;
        printf("  %-34s %7.3f ns an iteration  %5.2f x the products alone\n", loops[i].name,
               ns, ns / base);
    }
    return 0;
}
