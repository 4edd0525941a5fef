/* bench/bench_gemv.c: GEMV (src/ops/gemv) at its bench shapes against this machine's read
 * bandwidth.
 *
 * Prints the device line, measures the read roof (fe_membw_measure: every worker sums its
 * share of 256 MiB with 1, 2, 4, 8 streams), then, for every GEMV case marked .bench (Llama
 * 3.2 1B shapes, one batch), made at all workers with its resolved tunables:
 *   - the median time of repeated runs, each run cold: a roof run (fe_membw_read over the
 *     256 MiB buffer, which also evicts W from every cache) just before it;
 *   - GB/s of weights read (N * bytes of one W row / time) and %now, the median over the
 *     runs of kernel GB/s / the paired roof run's GB/s (the host's bandwidth drifts, so a
 *     ratio of adjacent runs is what is judged); PASS at >= 85 %; %start, the median GB/s
 *     against the best read measured at the start;
 *   - for quantised weights, the effective GB/s (the bytes the same matrix takes in bf16 /
 *     time) and the speedup over the bf16 case of the same shape.
 * A design that reads W from a layout of its own (panel = 1) reads it from one made once, as a
 * graph makes it for a model's weight ("W from its layout" after the tunables).
 * Then %now for every rows_per_step and every prefetch distance the declaration allows, the
 * other tunables resolved: what each buys. Every figure is a median with its spread; this VM
 * is shared and noisy (bench/README.md), and a worker that loses its core to another process
 * stretches a whole run: read the load average printed first.
 *
 * FERRUM_BENCH_ONLY=TEXT runs only the cases whose name holds TEXT ("q4_k/", "2048x8192").
 * --cpu-time times the paired roof runs and the kernel runs by this process's CPU time over
 * the workers (each one's rate while it ran) instead of the wall clock: on a host shared with
 * other jobs, where a worker that loses its core stretches a wall-clock run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "support/membw.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "core/quant.h"
#include "support/bench_device.h"
#include "support/layouts.h"

enum { WARMUP = 2, MIN_RUNS = 9, MAX_RUNS = 21, SWEEP_RUNS = 7, MAX_CASES = 32 };
#define TIME_BUDGET_S 1.5
#define TARGET 0.85

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float rng_f(void) { /* xorshift64*, uniform in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 4503599627370496.0 - 1.0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median_of(double *v, int n) { /* sorts v */
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    fe_device *dev;
    const float *roof_buf;
    int64_t roof_n;
    int roof_k;
} roof_ctx;

static bool cpu_time; /* --cpu-time */
static int n_workers = 1;

/* seconds now: the wall clock, or (--cpu-time) this process's CPU time over the workers */
static double clock_s(void) {
    if (!cpu_time) return (double)fe_time_ns() * 1e-9;
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9) / n_workers;
}

static double roof_once(const roof_ctx *rc) {
    fe_membw_stats s;
    const double t0 = clock_s();
    fe_membw_read(rc->dev, rc->roof_buf, rc->roof_n, rc->roof_k, 1, &s);
    const double t1 = clock_s();
    return cpu_time ? (double)rc->roof_n * 4.0 / (t1 - t0) / 1e9 : s.best_gbs;
}

/* Fills an operand: W rows quantised from uniform [-1, 1) (block dtypes through
 * fe_quant_row), other floats uniform, converted. */
static bool fill(fe_tensor *t) {
    int64_t K = t->shape[t->rank - 1], rows = fe_tensor_numel(t) / K;
    float *row = malloc((size_t)K * 4);
    if (!row) return false;
    size_t rb = fe_dtype_bytes(t->dtype, K);
    for (int64_t r = 0; r < rows; r++) {
        unsigned char *dst = (unsigned char *)t->data + (size_t)r * rb;
        for (int64_t j = 0; j < K; j++) row[j] = rng_f();
        switch (t->dtype) {
        case FE_DTYPE_F32: memcpy(dst, row, (size_t)K * 4); break;
        case FE_DTYPE_BF16:
            for (int64_t j = 0; j < K; j++) ((uint16_t *)dst)[j] = fe_f32_to_bf16(row[j]);
            break;
        case FE_DTYPE_F16:
            for (int64_t j = 0; j < K; j++) ((uint16_t *)dst)[j] = fe_f32_to_f16(row[j]);
            break;
        default: fe_quant_row(t->dtype, row, dst, K); break;
        }
    }
    free(row);
    return true;
}

typedef struct {
    double median_s, min_s, max_s, pct_now, roof_now;
    int runs;
} timing;

/* Times the kernel cold (a roof run before each run), its inputs read from their layouts
 * where it has them; false when it cannot run. *laid_out: whether some input was. */
static bool time_kernel(const roof_ctx *rc, fe_kernel *k, fe_tensor *ops, int n_ops,
                        double wbytes, int min_runs, int max_runs, timing *out,
                        bool *laid_out) {
    double t[MAX_RUNS], now[MAX_RUNS], ratio[MAX_RUNS];
    void *lay[FE_MAX_OPERANDS] = {0};
    const int made = bench_layouts_make(k, ops, n_ops, lay);
    if (laid_out) *laid_out = made > 0;
    if (made < 0) {
        bench_layouts_free(lay, n_ops);
        return false;
    }
    const void *const *ls = (const void *const *)lay;
    for (int w = 0; w < WARMUP; w++)
        if (fe_kernel_run_layouts(k, ops, n_ops, ls, NULL, 0) != FE_OK) {
            bench_layouts_free(lay, n_ops);
            return false;
        }
    uint64_t start = fe_time_ns();
    int runs = 0;
    while (runs < max_runs) {
        now[runs] = roof_once(rc);
        const double t0 = clock_s();
        fe_kernel_run_layouts(k, ops, n_ops, ls, NULL, 0);
        const double t1 = clock_s();
        t[runs] = t1 - t0;
        ratio[runs] = wbytes / t[runs] / 1e9 / now[runs];
        runs++;
        if (runs >= min_runs && (double)(fe_time_ns() - start) * 1e-9 > TIME_BUDGET_S) break;
    }
    out->runs = runs;
    out->pct_now = median_of(ratio, runs);
    out->roof_now = median_of(now, runs);
    out->median_s = median_of(t, runs); /* sorts t */
    out->min_s = t[0];
    out->max_s = t[runs - 1];
    bench_layouts_free(lay, n_ops);
    return true;
}

/* made at all workers with the tunables the case pins (a "_rows" case's panel = 0), and
 * `tunable` = v in place of the case's own when tunable is not NULL; the rest resolved */
static fe_kernel *make(fe_device *dev, const fe_op *op, const fe_case *c, fe_tensor *ops,
                       const char *tunable, int v) {
    fe_setting tun[FE_MAX_TUNABLES + 2] = {{"WIDTH", fe_device_get_info(dev)->n_workers}};
    int n = 1;
    for (int i = 0; i < c->n_tunables; i++)
        if (!tunable || strcmp(c->tunables[i].name, tunable) != 0) tun[n++] = c->tunables[i];
    if (tunable) tun[n++] = (fe_setting){tunable, v};
    fe_op_request req = {.op = op->name, .operands = ops, .n_operands = op->n_operands,
                         .params = c->params, .n_params = c->n_params, .tunables = tun,
                         .n_tunables = n};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK)
        printf("  %-20s cannot make the kernel: %s\n", c->name, err.message);
    return k;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu-time")) {
            cpu_time = true;
        } else {
            FILE *f = strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? stderr : stdout;
            fprintf(f, "usage: bench_gemv [--cpu-time]\n"
                       "  --cpu-time  time the roof and kernel runs by this process's CPU time\n"
                       "              over the workers instead of the wall clock (a shared host)\n"
                       "  FERRUM_BENCH_ONLY=TEXT runs only the cases whose name holds TEXT;\n"
                       "  FERRUM_ISA=avx2|scalar limits the kernels; FERRUM_WORKERS the workers\n");
            return f == stdout ? 0 : 2;
        }
    }
    fe_device *dev = bench_device_open("bench_gemv");
    if (!dev) return 1;
    int workers = fe_device_get_info(dev)->n_workers;
    n_workers = workers;
    const char *only = getenv("FERRUM_BENCH_ONLY");

    fe_membw_report r;
    fe_membw_options mo = {.repeats = 10};
    if (fe_membw_measure(dev, &mo, &r) != FE_OK) {
        fprintf(stderr, "bench_gemv: out of memory for the bandwidth buffers\n");
        return 1;
    }
    roof_ctx rc = {.dev = dev, .roof_n = (int64_t)(r.read_bytes / 4), .roof_k = 1};
    printf("\nread bandwidth (%zu MiB, %d workers, %s): ", r.read_bytes >> 20, workers,
           fe_isa_name(r.isa));
    for (int i = 0; i < FE_MEMBW_READ_KS; i++) {
        printf("k=%d %.1f  ", r.read_k[i], r.read[i].best_gbs);
        if (r.read[i].best_gbs >= r.read_gbs) rc.roof_k = r.read_k[i];
    }
    printf("-> best %.2f GB/s (k=%d)\n", r.read_gbs, rc.roof_k);
    float *rbuf = fe_aligned_alloc(64, r.read_bytes);
    if (!rbuf) return 1;
    for (int64_t i = 0; i < rc.roof_n; i++) rbuf[i] = 1.0f;
    rc.roof_buf = rbuf;

    const fe_op *op = fe_op_find("GEMV");
    if (!op) {
        fprintf(stderr, "bench_gemv: no GEMV in the registry\n");
        return 1;
    }
    if (cpu_time)
        printf("\n--cpu-time: the paired roof runs and the kernel runs timed by CPU time over "
               "the workers\n");
    printf("\nGEMV, 1 batch, %d workers; each run cold (a 256 MiB roof read before it); "
           "GB/s = W bytes / time;\n  %%now = median of kernel GB/s / paired roof GB/s (PASS "
           "at >= %.0f%%); %%start = median GB/s / the best read above;\n  eff = "
           "bf16-equivalent bytes / time\n", workers, TARGET * 100);
    printf("  %-20s %-6s %9s %8s %17s %7s %6s %6s %-5s %8s %7s  %s\n", "case", "isa",
           "median ms", "W GB/s", "spread GB/s", "roof", "%now", "%start", "", "eff GB/s",
           "vs bf16", "tunables");
    const fe_case *done[MAX_CASES];
    double done_s[MAX_CASES];
    int n_done = 0, failed = 0, below = 0;
    /* pass 0: every case with its resolved tunables; pass 1, 2: one tunable swept, the
     * others resolved */
    static const char *const swept[3] = {NULL, "rows_per_step", "prefetch"};
    const fe_domain *sweep_d[3] = {NULL, NULL, NULL};
    for (int p = 1; p < 3; p++) {
        int ti = fe_op_tunable_index(op, swept[p]);
        if (ti >= 0 && op->tunables[ti].domain.kind == FE_DOMAIN_CHOICES)
            sweep_d[p] = &op->tunables[ti].domain;
    }
    for (int pass = 0; pass < 3; pass++) {
        if (pass > 0 && !sweep_d[pass]) continue;
        if (pass > 0) {
            printf("\n%s sweep: %%now (median ms), %d cold runs each\n  %-20s", swept[pass],
                   SWEEP_RUNS, "case");
            for (int v = 0; v < sweep_d[pass]->n_choices; v++)
                printf(" %16lld", (long long)sweep_d[pass]->choices[v]);
            printf("\n");
        }
        for (int ci = 0; ci < op->n_cases; ci++) {
            const fe_case *c = &op->cases[ci];
            if (!c->bench || (only && *only && !strstr(c->name, only))) continue;
            fe_tensor ops[FE_MAX_OPERANDS] = {0};
            double params[FE_MAX_PARAMS] = {0};
            op->operands_for(c, params, ops);
            bool ok = true;
            for (int i = 0; i < op->n_operands && ok; i++) {
                if (!ops[i].rank) continue;
                size_t bytes = fe_dtype_bytes(ops[i].dtype, fe_tensor_numel(&ops[i]));
                ops[i].data = fe_aligned_alloc(64, bytes);
                ok = ops[i].data && (op->operands[i].role == FE_OUT
                                         ? (memset(ops[i].data, 0, bytes), true)
                                         : fill(&ops[i]));
            }
            int64_t N = ops[0].shape[ops[0].rank - 2], K = ops[0].shape[ops[0].rank - 1];
            double wbytes = (double)fe_tensor_numel(&ops[0]) / (double)K *
                            (double)fe_dtype_bytes(ops[0].dtype, K);
            if (!ok) {
                printf("  %-20s out of memory for the operands\n", c->name);
                failed++;
            } else if (pass == 0) {
                fe_kernel *k = make(dev, op, c, ops, NULL, 0);
                timing tm;
                bool laid_out = false;
                if (!k || !time_kernel(&rc, k, ops, op->n_operands, wbytes, MIN_RUNS, MAX_RUNS, &tm,
                                       &laid_out)) {
                    failed++;
                } else {
                    char tun[128] = "", eff[16] = "", vs[16] = "";
                    size_t tn = 0;
                    for (int i = 0; i < op->n_tunables; i++)
                        tn += (size_t)snprintf(tun + tn, sizeof tun - tn, "%s%s=%lld", i ? "," : "",
                                               op->tunables[i].name,
                                               (long long)fe_kernel_tunable(k, op->tunables[i].name));
                    if (laid_out) snprintf(tun + tn, sizeof tun - tn, " (W from its layout)");
                    if (ops[0].dtype != FE_DTYPE_BF16) {
                        snprintf(eff, sizeof eff, "%.2f", (double)N * (double)K * 2.0 / tm.median_s / 1e9);
                        for (int j = 0; j < n_done; j++)
                            if (done[j]->dims[1] == c->dims[1] && done[j]->dims[2] == c->dims[2])
                                snprintf(vs, sizeof vs, "%.2fx", done_s[j] / tm.median_s);
                    } else if (n_done < MAX_CASES) {
                        done[n_done] = c;
                        done_s[n_done++] = tm.median_s;
                    }
                    bool pass_ = tm.pct_now >= TARGET;
                    below += !pass_;
                    printf("  %-20s %-6s %9.3f %8.2f %8.2f..%-8.2f %7.2f %5.1f%% %5.1f%% %-5s %8s %7s  %s\n",
                           c->name, fe_isa_name(fe_kernel_isa(k)), tm.median_s * 1e3,
                           wbytes / tm.median_s / 1e9, wbytes / tm.max_s / 1e9,
                           wbytes / tm.min_s / 1e9, tm.roof_now, 100 * tm.pct_now,
                           100 * wbytes / tm.median_s / 1e9 / r.read_gbs,
                           pass_ ? "PASS" : "BELOW", eff, vs, tun);
                }
                fe_kernel_destroy(k);
            } else {
                printf("  %-20s", c->name);
                for (int v = 0; v < sweep_d[pass]->n_choices; v++) {
                    fe_kernel *k = make(dev, op, c, ops, swept[pass],
                                        (int)sweep_d[pass]->choices[v]);
                    timing tm;
                    if (k && time_kernel(&rc, k, ops, op->n_operands, wbytes, SWEEP_RUNS,
                                         SWEEP_RUNS, &tm, NULL))
                        printf("  %5.1f%% (%6.3f)", 100 * tm.pct_now, tm.median_s * 1e3);
                    else
                        printf(" %16s", "-");
                    fe_kernel_destroy(k);
                }
                printf("\n");
            }
            for (int i = 0; i < op->n_operands; i++) fe_free(ops[i].data);
            fflush(stdout);
        }
    }
    fe_free(rbuf);
    printf("\n%d below %.0f%% of the read roof, %d not run (noisy shared VM: rerun before "
           "reading much into one figure)\n", below, TARGET * 100, failed);
    fe_device_destroy(dev);
    return failed ? 1 : 0;
}
