/* bench/bench_gemm.c: GEMM against this machine's FMA peak and against OpenBLAS.
 *
 * Prints the device line, then, in the same run and with every worker of the pool:
 *   1. the FMA peak: each worker runs independent chains of register-only vector FMAs (16
 *      in zmm on AVX-512, 12 in ymm on AVX2); GFLOP/s = 2 x lanes x FMAs / time, best and
 *      median of the repeats, measured again before each case (the best figure counts);
 *      where the device has AVX512_BF16, the bf16 dot peak the same way from vdpbf16ps
 *      chains (2 x 32 multiply-adds per instruction);
 *   2. every GEMM case marked .bench in the registry, made at all workers and timed, paired
 *      run by run with OpenBLAS cblas_sgemm (f32, C = A.B^T, the same thread count) on the
 *      same M x N x K: median GFLOP/s with the slowest..fastest spread, % of the FMA peak
 *      (target >= 70%), and ferrum/OpenBLAS as the median of the paired ratios (target
 *      >= 0.9). bf16 cases are compared with OpenBLAS in f32 (it has no bf16 B). A case
 *      whose kernel resolved bf16_dot (act_bf16 on AVX512_BF16) can pass 100% of the FMA
 *      peak; it is judged against the bf16 dot peak instead, printed beside it, and runs
 *      again with every other bf16 dot design (bf16_dot 1, packed k-pairs; 2, B's rows as
 *      stored; 3, AMX-BF16 tiles, judged against the AMX peak: 4 chains of TDPBF16PS),
 *      one line each, so the designs are compared in the same run.
 *   3. the CPU share other processes took during the run.
 * An act_int8 case runs again with every other int8_dot design that can run here (3: AMX-INT8
 * tiles, judged against the same vpdpbusd peak, so past 100 % where the tiles pass it).
 * An act_int8 case is judged against the int8 peak (vpdpbusd chains where the device has
 * AVX512-VNNI or, for the avx2 kernels, AVX-VNNI; else vpmaddubsw + vpmaddwd + vpaddd), in
 * int8 operations (2 a multiply-add); its %peak column is of that peak, as a bf16_dot case's is of the bf16 dot peak. A q8_0
 * case without VNNI multiplies int8 by int8, which that path does by sign transfer (one
 * vpsignb more a product): it is judged against the int8 x int8 peak of those four
 * operations (fe_int8_sign_peak), and its note gives both percentages.
 * Usage: bench_gemm [--cpu-time] [TEXT] runs only the cases whose name contains TEXT;
 * --cpu-time times by the process's CPU time (peaks too) and skips OpenBLAS: on a shared host,
 * with FERRUM_WORKERS=1 (the process clock sums other threads' time only at scheduler events,
 * so short multi-worker calls read unevenly).
 * OpenBLAS runs the kernels it picks for this CPU (see peer_at_its_best).
 * The VM is shared: every figure is a median with its spread, and pairing adjacent runs
 * keeps the ratio honest when the host changes speed under us. */
#include <cblas.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "support/peak.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "ops/kernel.h"
#include "support/bench_device.h"

enum { WARMUP = 2, MIN_RUNS = 7, MAX_RUNS = 15, PEAK_REPEATS = 9 };
#define TIME_BUDGET_S 3.0 /* per case: stop after MIN_RUNS once past this */
#define PEAK_TARGET 0.70
#define PEER_TARGET 0.90

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const double *v, int n) {
    double s[64];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static double min_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

static double max_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* ---- 1. FMA peak (src/support/peak.c) ---- */

static void fma_peak_of(fe_device *dev, bool bf16, int repeats, double *best, double *median,
                        int *lanes) {
    fe_flops_peak(dev, bf16, repeats, best, median, lanes);
}

static void fma_peak(fe_device *dev, int repeats, double *best, double *median, int *lanes) {
    fe_flops_peak(dev, false, repeats, best, median, lanes);
}

/* ---- 2. GEMM cases ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float rng_float(void) { /* xorshift64*, uniform in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 4503599627370496.0 - 1.0);
}

static void fill(fe_tensor *t) {
    int64_t n = fe_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        float v = rng_float();
        switch (t->dtype) {
        case FE_DTYPE_F32: ((float *)t->data)[i] = v; break;
        case FE_DTYPE_BF16: ((uint16_t *)t->data)[i] = fe_f32_to_bf16(v); break;
        case FE_DTYPE_F16: ((uint16_t *)t->data)[i] = fe_f32_to_f16(v); break;
        default: memset(t->data, 0x11, fe_dtype_bytes(t->dtype, n)); return;
        }
    }
}

typedef struct {
    int cases, peak_ok, peer_ok, failed;
} tally;

/* the AMX-BF16 tile peak (best of all, GFLOP/s): a bf16_dot = 3 case is judged against it */
static double amx_peak;
/* >= 0: bench_case makes the kernel with this int8_dot, and skips the case (printing nothing)
 * where resolve turns it to another */
static int int8_choice = -1;

/* --cpu-time: every figure (peaks and cases) from this process's CPU time, OpenBLAS not run
 * (its threads' waiting would count as ferrum's) */
static bool cpu_time;

/* case c's operands (into ops) and its kernel on dev with the tunables tun[0..nt) */
static fe_status case_kernel(fe_device *dev, const fe_op *op, const fe_case *c,
                             const fe_setting *tun, int nt, fe_tensor ops[FE_MAX_OPERANDS],
                             fe_kernel **k, fe_error *err) {
    double params[FE_MAX_PARAMS] = {0};
    memset(ops, 0, FE_MAX_OPERANDS * sizeof *ops);
    op->operands_for(c, params, ops);
    fe_op_request req = {.op = op->name, .operands = ops, .n_operands = op->n_operands,
                         .params = c->params, .n_params = c->n_params, .tunables = tun,
                         .n_tunables = nt};
    return fe_kernel_create(dev, &req, k, err);
}

/* Times case c with the kernel's resolved design, or with bf16_dot = `dot` where dot >= 0.
 * With `layouts`, an input the design reads from a layout of its own (B under bf16_dot = 1)
 * is laid out once before the runs, as a graph does for its weights; without, the kernel
 * packs it per run. Returns the bf16_dot the kernel ran (-1 when it was not made);
 * *laid_out: whether some input was read from a layout. */
static int bench_case(fe_device *dev, const fe_op *op, const fe_case *c, int dot_choice,
                      bool layouts, double *peak, double *dot_peak, double *i8_peak,
                      double *i8s_peak, tally *tl, bool *laid_out) {
    *laid_out = false;
    /* the peak again, right before the case: a neighbour that held a core while it was first
     * measured would otherwise flatter every % of it */
    double again, again_med;
    int lanes;
    fma_peak(dev, 3, &again, &again_med, &lanes);
    if (again > *peak) *peak = again;
    const fe_device_info *info = fe_device_get_info(dev);
    fe_tensor ops[FE_MAX_OPERANDS];
    fe_setting tun[3] = {{"WIDTH", info->n_workers}};
    int nt = 1;
    if (dot_choice >= 0) tun[nt++] = (fe_setting){"bf16_dot", dot_choice};
    if (int8_choice >= 0) tun[nt++] = (fe_setting){"int8_dot", int8_choice};
    fe_error err = {0};
    fe_kernel *k = NULL;
    tl->cases++;
    if (case_kernel(dev, op, c, tun, nt, ops, &k, &err) != FE_OK) {
        printf("  %-21s cannot make the kernel: %s\n", c->name, err.message);
        tl->failed++;
        return -1;
    }
    if ((int8_choice >= 0 && fe_kernel_tunable(k, "int8_dot") != int8_choice) ||
        (dot_choice >= 0 && fe_kernel_tunable(k, "bf16_dot") != dot_choice)) {
        tl->cases--; /* resolved to another design: that one ran already */
        fe_kernel_destroy(k);
        return -1;
    }
    const int64_t M = ops[0].shape[0], K = ops[0].shape[1], N = ops[1].shape[0];
    const int dot_ran = (int)fe_kernel_tunable(k, "bf16_dot");
    const bool dot = dot_ran >= 1;
    if (dot) {
        fma_peak_of(dev, true, 3, &again, &again_med, &lanes);
        if (again > *dot_peak) *dot_peak = again;
    }
    const bool amx = dot_ran == 3;
    if (amx) {
        fe_amx_peak(dev, 3, &again, &again_med);
        if (again > amx_peak) amx_peak = again;
    }
    bool i8 = false, vnni = false;
    for (int i = 0; i < c->n_params; i++) i8 |= !strcmp(c->params[i].name, "act_int8") && c->params[i].value;
    if (i8) {
        fe_int8_peak(dev, 3, &again, &again_med, &lanes, &vnni);
        if (again > *i8_peak) *i8_peak = again;
    }
    /* q8_0 by sign transfer: int8_dot 0 over a signed B */
    const bool sign =
        i8 && ops[1].dtype == FE_DTYPE_Q8_0 && fe_kernel_tunable(k, "int8_dot") == 0;
    if (sign) {
        fe_int8_sign_peak(dev, 3, &again, &again_med);
        if (again > *i8s_peak) *i8s_peak = again;
    }
    bool ok = true;
    for (int i = 0; i < op->n_operands && ok; i++) {
        if (ops[i].rank == 0) continue;
        size_t bytes = fe_dtype_bytes(ops[i].dtype, fe_tensor_numel(&ops[i]));
        ops[i].data = fe_aligned_alloc(64, bytes);
        if (!ops[i].data) ok = false;
        else if (op->operands[i].role == FE_IN) fill(&ops[i]);
        else memset(ops[i].data, 0, bytes);
    }
    void *lay[FE_MAX_OPERANDS] = {0};
    for (int i = 0; i < op->n_operands && ok && layouts; i++) {
        size_t bytes = ops[i].data ? fe_kernel_layout_bytes(k, i, NULL) : 0;
        if (!bytes) continue;
        lay[i] = fe_aligned_alloc(64, bytes);
        ok = lay[i] && fe_kernel_make_layout(k, i, &ops[i], lay[i]) == FE_OK;
        *laid_out = true;
    }
    /* the peer's operands: A, B in f32, C */
    float *pa = fe_aligned_alloc(64, (size_t)(M * K) * 4), *pb = fe_aligned_alloc(64, (size_t)(N * K) * 4);
    float *pc = fe_aligned_alloc(64, (size_t)(M * N) * 4);
    if (!pa || !pb || !pc) ok = false;
    if (!ok) {
        printf("  %-21s out of memory for the operands\n", c->name);
        tl->failed++;
    } else {
        memcpy(pa, ops[0].data, (size_t)(M * K) * 4);
        for (int64_t i = 0; i < N * K; i++) pb[i] = rng_float();
        memset(pc, 0, (size_t)(M * N) * 4);
        for (int w = 0; w < WARMUP && ok; w++) {
            ok = fe_kernel_run_layouts(k, ops, op->n_operands, (const void *const *)lay, NULL,
                                       0) == FE_OK;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f,
                        pa, (int)K, pb, (int)K, 0.0f, pc, (int)N);
        }
        double flops = 2.0 * (double)M * (double)N * (double)K;
        double g[MAX_RUNS], p[MAX_RUNS], ratio[MAX_RUNS];
        int runs = 0;
        uint64_t start = fe_time_ns();
        while (ok && runs < MAX_RUNS) {
            const double c0 = fe_peak_clock_s();
            uint64_t t0 = fe_time_ns();
            ok = fe_kernel_run_layouts(k, ops, op->n_operands, (const void *const *)lay, NULL,
                                       0) == FE_OK;
            uint64_t t1 = fe_time_ns();
            const double c1 = fe_peak_clock_s();
            if (!cpu_time)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K,
                            1.0f, pa, (int)K, pb, (int)K, 0.0f, pc, (int)N);
            uint64_t t2 = fe_time_ns();
            /* CPU time: the workers' seconds together, so the pool's rate is flops over
             * them, times the workers */
            g[runs] = cpu_time ? flops * info->n_workers / (c1 - c0) / 1e9
                               : flops / ((double)(t1 - t0) * 1e-9) / 1e9;
            p[runs] = cpu_time ? 0 : flops / ((double)(t2 - t1) * 1e-9) / 1e9;
            ratio[runs] = cpu_time ? 0 : g[runs] / p[runs];
            runs++;
            if (runs >= MIN_RUNS && (double)(t2 - start) * 1e-9 > TIME_BUDGET_S) break;
        }
        if (!ok) {
            printf("  %-21s run refused: %s\n", c->name, fe_kernel_message(k));
            tl->failed++;
        } else {
            double gm = median_of(g, runs), pm = median_of(p, runs), rm = median_of(ratio, runs);
            const double dpeak = amx ? amx_peak : *dot_peak;
            double pct = *peak > 0 ? gm / *peak : 0, dpct = dpeak > 0 ? gm / dpeak : 0;
            double ipct = *i8_peak > 0 ? gm / *i8_peak : 0;
            const double spct = *i8s_peak > 0 ? gm / *i8s_peak : 0;
            if (sign) ipct = spct;
            bool pk = (dot ? dpct : i8 ? ipct : pct) >= PEAK_TARGET;
            bool pr = !cpu_time && rm >= PEER_TARGET;
            tl->peak_ok += pk;
            tl->peer_ok += pr;
            char dot_note[160] = "";
            if (dot) snprintf(dot_note, sizeof dot_note, "  (bf16_dot %d %s%s: %.1f%% of the "
                              "%s peak)", dot_ran, dot_ran == 2 ? "rows" : amx ? "AMX tiles, " : "",
                              dot_ran == 2 ? ""
                              : *laid_out  ? "packed, B from its layout, made once"
                                           : "packed, B packed per call",
                              100 * dpct, amx ? "AMX-BF16" : "bf16 dot");
            if (i8 && !sign)
                snprintf(dot_note, sizeof dot_note, "  (act_int8, int8_dot %lld%s, %s: %.1f%% of "
                         "the int8 peak)", (long long)fe_kernel_tunable(k, "int8_dot"),
                         fe_kernel_tunable(k, "int8_dot") == 3 ? " AMX tiles" : "",
                         *laid_out ? "B from its layout, made once" : "B packed per call",
                         100 * ipct);
            if (sign)
                snprintf(dot_note, sizeof dot_note, "  (act_int8, int8_dot 0, q8_0 by sign "
                         "transfer: %.1f%% of the int8 x int8 peak, %.1f%% of the int8 peak)",
                         100 * spct, *i8_peak > 0 ? 100 * gm / *i8_peak : 0);
            printf("  %-21s %4lld x %5lld x %5lld  %7.1f (%6.1f..%6.1f)  %5.1f%% %-5s  %7.1f "
                   "(%6.1f..%6.1f)  %5.2f %-5s  MC=%lld NC=%lld KC=%lld%s\n",
                   c->name, (long long)M, (long long)N, (long long)K, gm, min_of(g, runs),
                   max_of(g, runs), 100 * (dot ? dpct : i8 ? ipct : pct), pk ? "PASS" : "BELOW",
                   pm, min_of(p, runs),
                   max_of(p, runs), rm, cpu_time ? "(off)" : pr ? "PASS" : "BELOW",
                   (long long)fe_kernel_tunable(k, "MC"), (long long)fe_kernel_tunable(k, "NC"),
                   (long long)fe_kernel_tunable(k, "KC"), dot_note);
        }
    }
    fe_free(pa);
    fe_free(pb);
    fe_free(pc);
    for (int i = 0; i < op->n_operands; i++) fe_free(lay[i]);
    for (int i = 0; i < op->n_operands; i++) fe_free(ops[i].data);
    fe_kernel_destroy(k);
    return dot_ran;
}

/* the int8_dot case c resolves to on dev with nothing given */
static int ran8(fe_device *dev, const fe_op *op, const fe_case *c) {
    fe_tensor ops[FE_MAX_OPERANDS];
    fe_error err = {0};
    fe_kernel *k = NULL;
    if (case_kernel(dev, op, c, NULL, 0, ops, &k, &err) != FE_OK) return -1;
    const int r = (int)fe_kernel_tunable(k, "int8_dot");
    fe_kernel_destroy(k);
    return r;
}

/* ---- 3. noise ---- */

static double machine_busy_s(void) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (got < 8) return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)(hz > 0 ? hz : 100);
}

static double self_cpu_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* OpenBLAS picks its kernels when it loads: from OPENBLAS_CORETYPE when that is set, else
 * from cpuid. An environment that pins an older core (this VM's sets Haswell: AVX2 kernels
 * on an AVX-512 machine) would make a weak peer, so the bench reruns itself without the
 * variable and OpenBLAS runs what it picks for this CPU. FERRUM_BENCH_KEEP_CORETYPE=1 keeps
 * it. */
static void peer_at_its_best(char **argv) {
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (!set || getenv("FERRUM_BENCH_KEEP_CORETYPE")) return;
    setenv("FERRUM_BENCH_DROPPED_CORETYPE", set, 1);
    unsetenv("OPENBLAS_CORETYPE");
    execv("/proc/self/exe", argv);
    setenv("OPENBLAS_CORETYPE", getenv("FERRUM_BENCH_DROPPED_CORETYPE"), 1); /* exec failed */
    unsetenv("FERRUM_BENCH_DROPPED_CORETYPE");
}

static void usage(FILE *f) {
    fprintf(f, "usage: bench_gemm [--cpu-time] [TEXT]\n"
               "  TEXT        run only the GEMM cases whose name contains TEXT (e.g. i8_, bf16/)\n"
               "  --cpu-time  time by this process's CPU time instead of the wall clock, peaks\n"
               "              and cases alike (rates of the workers while they ran, times the\n"
               "              workers): on a host shared with other jobs; OpenBLAS is not run\n"
               "  FERRUM_ISA=avx2|scalar limits the kernels; FERRUM_WORKERS the workers\n");
}

int main(int argc, char **argv) {
    const char *only = NULL; /* run only the cases whose name has it */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--cpu-time")) {
            cpu_time = true;
        } else if (argv[i][0] == '-' || only) {
            fprintf(stderr, "bench_gemm: unknown argument '%s': give at most one TEXT to "
                    "match case names, and --cpu-time\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            only = argv[i];
        }
    }
    fe_peak_cpu_time(cpu_time);
    peer_at_its_best(argv);
    uint64_t t_start = fe_time_ns();
    double busy0 = machine_busy_s(), self0 = self_cpu_s();
    fe_device *dev = bench_device_open("bench_gemm");
    if (!dev) return 1;
    const fe_device_info *info = fe_device_get_info(dev);
    openblas_set_num_threads(info->n_workers); /* the peer at the pool's thread count */
    const char *kept = getenv("OPENBLAS_CORETYPE"), *dropped = getenv("FERRUM_BENCH_DROPPED_CORETYPE");
    printf("peer: %s, core %s (%s%s%s), %d threads\n", openblas_get_config(),
           openblas_get_corename(), kept ? "OPENBLAS_CORETYPE=" : "from cpuid",
           kept ? kept : dropped ? "; the environment's OPENBLAS_CORETYPE=" : "",
           kept ? "" : dropped ? dropped : "", openblas_get_num_threads());
    if (dropped) printf("  (dropped so that OpenBLAS runs its best kernels for this CPU)\n");

    double peak, peak_med, dot_peak, dot_med;
    int lanes, dot_lanes;
    fma_peak(dev, PEAK_REPEATS, &peak, &peak_med, &lanes);
    if (lanes)
        printf("\nFMA peak: %d workers x %d chains of %d-lane FMAs in registers: best %.1f "
               "GFLOP/s (%.1f per worker), median %.1f\n", info->n_workers,
               lanes == 16 ? 16 : 12, lanes, peak, peak / info->n_workers, peak_med);
    else
        printf("\nFMA peak: no AVX2/AVX-512 FMA on this device; %% of peak not judged\n");
    fma_peak_of(dev, true, PEAK_REPEATS, &dot_peak, &dot_med, &dot_lanes);
    double i8_peak, i8_med;
    int i8_lanes;
    bool vnni;
    fe_int8_peak(dev, PEAK_REPEATS, &i8_peak, &i8_med, &i8_lanes, &vnni);
    double i8s_peak = 0, i8s_med = 0;
    if (!vnni) fe_int8_sign_peak(dev, PEAK_REPEATS, &i8s_peak, &i8s_med);
    if (i8_lanes)
        printf("int8 peak: %d workers x %s: best %.1f G int8 ops/s (2 per multiply-add; %.1f "
               "per worker), median %.1f, %.2f x the FMA peak\n", info->n_workers,
               vnni && i8_lanes == 16 ? "16 chains of vpdpbusd (16 lanes x 4 products)"
               : vnni ? "16 chains of AVX-VNNI vpdpbusd (8 lanes x 4 products)"
                    : "12 chains of vpmaddubsw + vpmaddwd + vpaddd (8 lanes x 4 products)",
               i8_peak, i8_peak / info->n_workers, i8_med, peak > 0 ? i8_peak / peak : 0);
    if (i8s_peak > 0)
        printf("int8 x int8 peak (q8_0 without VNNI): %d workers x 12 chains of vpsignb + "
               "vpmaddubsw + vpmaddwd + vpaddd: best %.1f G int8 ops/s (%.1f per worker), "
               "median %.1f, %.2f x the int8 peak\n", info->n_workers, i8s_peak,
               i8s_peak / info->n_workers, i8s_med, i8_peak > 0 ? i8s_peak / i8_peak : 0);
    if (dot_lanes)
        printf("bf16 dot peak: %d workers x 16 chains of vdpbf16ps (16 lanes x 2 products): "
               "best %.1f GFLOP/s (%.1f per worker), median %.1f, %.2f x the FMA peak\n",
               info->n_workers, dot_peak, dot_peak / info->n_workers, dot_med,
               peak > 0 ? dot_peak / peak : 0);

    double amx_med;
    fe_amx_peak(dev, PEAK_REPEATS, &amx_peak, &amx_med);
    if (amx_peak > 0)
        printf("AMX-BF16 peak: %d workers x 4 chains of TDPBF16PS (16 x 16 x 32 products): best "
               "%.1f GFLOP/s (%.1f per worker), median %.1f, %.2f x the bf16 dot peak\n",
               info->n_workers, amx_peak, amx_peak / info->n_workers, amx_med,
               dot_peak > 0 ? amx_peak / dot_peak : 0);

    const fe_op *op = fe_op_find("GEMM");
    if (!op) {
        fprintf(stderr, "bench_gemm: no GEMM operator in the registry\n");
        fe_device_destroy(dev);
        return 1;
    }
    if (cpu_time)
        printf("\n--cpu-time: every figure from this process's CPU time (workers' rates while "
               "they ran, times the workers); OpenBLAS not run\n");
    printf("\nGEMM C = A.B^T at %d workers, %s kernels; GFLOP/s = 2MNK / time, median "
           "(slowest..fastest);\n  %%peak = median / best FMA peak (PASS >= %.0f%%; of the "
           "bf16 dot peak for a bf16_dot kernel, of the int8 peak for act_int8); vs OpenBLAS = median of ferrum/OpenBLAS over "
           "adjacent pairs (PASS >= %.2f)\n",
           info->n_workers, fe_isa_name(info->isa), PEAK_TARGET * 100, PEER_TARGET);
    printf("  %-21s %-22s  %-24s  %-12s %-24s  %s\n", "case (B dtype)", "M x N x K",
           "ferrum GFLOP/s", "%peak", "OpenBLAS f32 GFLOP/s", "ferrum/OpenBLAS");
    tally tl = {0};
    /* a case that resolved a bf16 dot design runs again with each other one, beside it */
    const int dot_t = fe_op_tunable_index(op, "bf16_dot");
    for (int j = 0; j < op->n_cases; j++) {
        if (!op->cases[j].bench || (only && !strstr(op->cases[j].name, only))) continue;
        bool laid, other_laid;
        int ran = bench_case(dev, op, &op->cases[j], -1, true, &peak, &dot_peak, &i8_peak,
                             &i8s_peak, &tl, &laid);
        /* the same design packing B per call, as a kernel run alone does */
        if (laid)
            bench_case(dev, op, &op->cases[j], ran, false, &peak, &dot_peak, &i8_peak,
                       &i8s_peak, &tl, &other_laid);
        for (int ch = 0; ran >= 1 && dot_t >= 0 && ch < op->tunables[dot_t].domain.n_choices;
             ch++) {
            int other = (int)op->tunables[dot_t].domain.choices[ch];
            if (other >= 1 && other != ran)
                bench_case(dev, op, &op->cases[j], other, true, &peak, &dot_peak, &i8_peak,
                           &i8s_peak, &tl, &other_laid);
        }
        /* an act_int8 case runs again with each other int8 design that can run here */
        bool i8 = false;
        for (int i = 0; i < op->cases[j].n_params; i++)
            i8 |= !strcmp(op->cases[j].params[i].name, "act_int8") && op->cases[j].params[i].value;
        const int i8_t = fe_op_tunable_index(op, "int8_dot");
        for (int ch = 0; i8 && i8_t >= 0 && ch < op->tunables[i8_t].domain.n_choices; ch++) {
            int8_choice = (int)op->tunables[i8_t].domain.choices[ch];
            if (int8_choice != ran8(dev, op, &op->cases[j]))
                bench_case(dev, op, &op->cases[j], -1, true, &peak, &dot_peak, &i8_peak,
                           &i8s_peak, &tl, &other_laid);
            int8_choice = -1;
        }
    }
    if (lanes) printf("  (FMA peak, re-measured before each case, best of all: %.1f GFLOP/s)\n", peak);
    if (i8_lanes)
        printf("  (int8 peak, re-measured before each act_int8 case, best of all: %.1f G ops/s)\n",
               i8_peak);
    if (i8s_peak > 0)
        printf("  (int8 x int8 peak, re-measured before each q8_0 case without VNNI, best of "
               "all: %.1f G ops/s)\n", i8s_peak);
    if (dot_lanes)
        printf("  (bf16 dot peak, re-measured before each bf16_dot case, best of all: %.1f "
               "GFLOP/s)\n", dot_peak);
    if (amx_peak > 0)
        printf("  (AMX-BF16 peak, re-measured before each bf16_dot = 3 case, best of all: %.1f "
               "GFLOP/s)\n", amx_peak);

    double wall = (double)(fe_time_ns() - t_start) * 1e-9;
    double busy1 = machine_busy_s(), self1 = self_cpu_s();
    if (busy0 >= 0 && busy1 >= 0) {
        double others = (busy1 - busy0) - (self1 - self0);
        if (others < 0) others = 0;
        printf("\nother processes used %.0f%% of the machine's %d CPUs during the run%s\n",
               100.0 * others / (wall * info->n_cores), info->n_cores,
               others > 0.1 * wall ? " -- numbers are disturbed" : "");
    }
    printf("%d cases: %d at >= %.0f%% of peak, %d at >= %.2f x OpenBLAS, %d not run; %.1f s\n",
           tl.cases, tl.peak_ok, PEAK_TARGET * 100, tl.peer_ok, PEER_TARGET, tl.failed, wall);
    fe_device_destroy(dev);
    return tl.failed ? 1 : 0;
}
