/* bench/bench_memory.c: memory roofs of this machine and how close the registry's
 * memory-bound kernels come to them.
 *
 * Prints the device line, then, in the same run and with every worker of the pool:
 *   1. read bandwidth (sum of a 256 MiB f32 buffer) with k = 1, 2, 4, 8 streams per worker;
 *   2. STREAM triad (3 x 64 MiB, three arrays' bytes counted) with normal and non-temporal
 *      stores; the better is "triad";
 *   3. every operator case marked .bench in the registry (iterated generically, no op is
 *      named here), made into a kernel at all workers and timed: an input the design reads
 *      from a layout of its own (GEMV's panel = 1 W) gets that layout made once before the
 *      timing, as a compiled graph makes it for its weight, so the figure is the decode's
 *      and not a per-call packing's; median GB/s (cost bytes / median time) against its
 *      roof (triad for FE_ROOF_TRIAD, read for FE_ROOF_READ), as measured in 1-2 (%start)
 *      and as the median ratio to a roof run paired with each kernel run (%now); PASS when
 *      %now >= 70%, BELOW otherwise. FE_ROOF_COMPUTE cases print GFLOP/s, unjudged;
 *   4. the roofs again (drift over the run) and the CPU share other processes took.
 * Every measurement prints its median and min..max spread: this VM is shared and noisy, and
 * the host's memory bandwidth itself drifts (docs/performance.md).
 * The roofs themselves are measured by src/support/membw.c (fe_membw_measure). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "support/membw.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "support/bench_device.h"

enum { WARMUP = 2, MIN_RUNS = 11, MAX_RUNS = 21, ROOF_REPEATS = 20 };
#define TIME_BUDGET_S 1.5 /* per case: stop after MIN_RUNS once past this */
#define TARGET 0.70

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static double rng_uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

/* Elements an operand view spans: 1 + sum (shape - 1) * stride. */
static int64_t span_of(const fe_tensor *t) {
    int64_t s = 1;
    for (int d = 0; d < t->rank; d++) s += (t->shape[d] - 1) * t->stride[d];
    return s;
}

static void fill_operand(fe_tensor *t, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) {
        double v = rng_uniform(lo, hi);
        switch (t->dtype) {
        case FE_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
        case FE_DTYPE_BF16: ((uint16_t *)t->data)[i] = fe_f32_to_bf16((float)v); break;
        case FE_DTYPE_F16: ((uint16_t *)t->data)[i] = fe_f32_to_f16((float)v); break;
        /* integers (indices, ids): small and non-negative unless the range says otherwise */
        case FE_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
        case FE_DTYPE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
        case FE_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)(v < 0 ? 0 : v); break;
        default: break;
        }
    }
}

static void print_stats(const char *what, const fe_membw_stats *s) {
    printf("  %-22s best %7.2f GB/s   median %7.2f   spread %7.2f .. %7.2f   (%d runs)\n",
           what, s->best_gbs, s->median_gbs, s->worst_gbs, s->best_gbs, s->runs);
}

/* The case's params in declaration order: defaults, then the case's overrides. */
static void case_params(const fe_op *op, const fe_case *c, double *out) {
    for (int i = 0; i < op->n_params; i++) out[i] = op->params[i].def;
    for (int s = 0; s < c->n_params; s++) {
        int i = fe_op_param_index(op, c->params[s].name);
        if (i >= 0) out[i] = c->params[s].value;
    }
}

typedef struct {
    int cases, passed, below, failed;
} tally;

/* CPU time the whole machine spent busy (all CPUs, /proc/stat jiffies) and this process
 * spent (all threads), in seconds: their difference over the run is what others used. */
static double machine_busy_s(void) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (got < 8) return -1;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]; /* not idle, iowait */
    long hz = sysconf(_SC_CLK_TCK);
    return (double)busy / (double)(hz > 0 ? hz : 100);
}

static double self_cpu_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Buffers for re-measuring a roof right before each case (the host's bandwidth drifts). */
typedef struct {
    const fe_membw_report *roofs;
    float *r, *a, *b, *c;
    int64_t nr, nt;
    int best_k;    /* read streams per worker that did best */
    bool best_nt;  /* triad store kind that did best */
} roof_check;

/* The case's roof measured once, now, in the configuration that won at the start. */
static double roof_once(fe_device *dev, const roof_check *rc, fe_roof roof) {
    fe_membw_stats s;
    if (roof == FE_ROOF_READ) fe_membw_read(dev, rc->r, rc->nr, rc->best_k, 1, &s);
    else fe_membw_triad(dev, rc->a, rc->b, rc->c, rc->nt, rc->best_nt, 1, &s);
    return s.best_gbs;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) { /* sorts v */
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void bench_case(fe_device *dev, const fe_op *op, const fe_case *c,
                       const roof_check *rc, tally *tl) {
    const fe_membw_report *roofs = rc->roofs;
    const fe_device_info *info = fe_device_get_info(dev);
    double params[FE_MAX_PARAMS] = {0};
    case_params(op, c, params);
    fe_tensor ops[FE_MAX_OPERANDS];
    memset(ops, 0, sizeof ops);
    op->operands_for(c, params, ops);

    fe_setting tun[1];
    int n_tun = 0;
    if (fe_op_tunable_index(op, "WIDTH") >= 0) tun[n_tun++] = (fe_setting){"WIDTH", info->n_workers};
    fe_op_request req = {.op = op->name, .operands = ops, .n_operands = op->n_operands,
                         .params = c->params, .n_params = c->n_params,
                         .tunables = tun, .n_tunables = n_tun};
    fe_error err = {0};
    fe_kernel *k = NULL;
    tl->cases++;
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) {
        printf("  %-16s %-10s cannot make the kernel: %s\n", op->name, c->name, err.message);
        tl->failed++;
        return;
    }

    bool ok = true;
    for (int i = 0; i < op->n_operands; i++) {
        if (ops[i].rank == 0) continue; /* absent optional operand */
        int64_t n = span_of(&ops[i]);
        size_t bytes = (size_t)n * fe_dtype_info(ops[i].dtype)->size;
        ops[i].data = fe_aligned_alloc(64, bytes);
        if (!ops[i].data) {
            ok = false;
            break;
        }
        const fe_operand_decl *od = &op->operands[i];
        if (od->role == FE_OUT) {
            memset(ops[i].data, 0, bytes); /* touched before timing, like the inputs */
        } else {
            double lo = -1.0, hi = 1.0;
            if (od->draw_lo < od->draw_hi) lo = od->draw_lo, hi = od->draw_hi;
            else if (c->lo < c->hi) lo = c->lo, hi = c->hi;
            if (!fe_dtype_info(ops[i].dtype)->is_float && lo < 0) lo = 0, hi = hi > 4 ? hi : 4;
            fill_operand(&ops[i], n, lo, hi);
        }
    }

    /* the layouts the design reads its inputs from (a graph's weights: made once, at load) */
    void *lay[FE_MAX_OPERANDS] = {0};
    bool laid_out = false;
    for (int i = 0; i < op->n_operands && ok; i++) {
        size_t bytes = ops[i].data && op->operands[i].role == FE_IN
                     ? fe_kernel_layout_bytes(k, i, NULL) : 0;
        if (!bytes) continue;
        lay[i] = fe_aligned_alloc(64, bytes);
        ok = lay[i] && fe_kernel_make_layout(k, i, &ops[i], lay[i]) == FE_OK;
        laid_out = true;
    }

    /* Each timed run is paired with a run of the roof just before it: the host's memory
     * bandwidth drifts (it was seen to halve and recover within seconds), and the ratio of
     * adjacent runs survives that where a ratio to the figure from the start does not. */
    bool memory_bound = op->roof != FE_ROOF_COMPUTE;
    double t[MAX_RUNS], now[MAX_RUNS] = {0};
    int runs = 0;
    if (!ok) {
        printf("  %-16s %-10s out of memory for the operands or a layout\n", op->name, c->name);
    } else {
        for (int w = 0; w < WARMUP && ok; w++)
            ok = fe_kernel_run_layouts(k, ops, op->n_operands, (const void *const *)lay, NULL,
                                       0) == FE_OK;
        uint64_t start = fe_time_ns();
        while (ok && runs < MAX_RUNS) {
            if (memory_bound) now[runs] = roof_once(dev, rc, op->roof);
            uint64_t t0 = fe_time_ns();
            ok = fe_kernel_run_layouts(k, ops, op->n_operands, (const void *const *)lay, NULL,
                                       0) == FE_OK;
            uint64_t t1 = fe_time_ns();
            t[runs++] = (double)(t1 - t0) * 1e-9;
            if (runs >= MIN_RUNS && (double)(t1 - start) * 1e-9 > TIME_BUDGET_S) break;
        }
        if (!ok) printf("  %-16s %-10s run refused: %s\n", op->name, c->name, fe_kernel_message(k));
    }

    if (ok && runs > 0) {
        double flops = 0, bytes = 0;
        fe_kernel_cost(k, NULL, 0, &flops, &bytes);
        double ratio[MAX_RUNS];
        for (int r = 0; r < runs; r++) ratio[r] = memory_bound ? bytes / t[r] / 1e9 / now[r] : 0;
        double pct_now = memory_bound ? median_of(ratio, runs) : 0;
        double roof_now = memory_bound ? median_of(now, runs) : 0;
        fe_membw_stats s;
        fe_membw_summarize(t, runs, bytes, &s);
        char tunables[96] = "";
        size_t tn = 0;
        for (int i = 0; i < op->n_tunables && tn < sizeof tunables; i++)
            tn += (size_t)snprintf(tunables + tn, sizeof tunables - tn, "%s%s=%lld",
                                   i ? "," : "", op->tunables[i].name,
                                   (long long)fe_kernel_tunable(k, op->tunables[i].name));
        if (op->roof == FE_ROOF_COMPUTE) {
            printf("  %-16s %-10s %-6s %8.2f GFLOP/s (%.2f..%.2f)  compute-bound, not judged  %s\n",
                   op->name, c->name, fe_isa_name(fe_kernel_isa(k)), flops / s.median_s / 1e9,
                   flops / s.max_s / 1e9, flops / s.min_s / 1e9, tunables);
        } else {
            bool triad = op->roof == FE_ROOF_TRIAD;
            double start = triad ? roofs->triad_gbs : roofs->read_gbs;
            bool pass = pct_now >= TARGET;
            printf("  %-16s %-10s %-6s %7.2f  %7.2f..%-7.2f %-5s %7.2f %7.2f  %5.1f%% %5.1f%%  %-5s  %5.1f ms  %s\n",
                   op->name, c->name, fe_isa_name(fe_kernel_isa(k)), s.median_gbs,
                   s.worst_gbs, s.best_gbs, triad ? "triad" : "read", start, roof_now,
                   100.0 * s.median_gbs / start, 100.0 * pct_now, pass ? "PASS" : "BELOW",
                   s.median_s * 1e3, tunables);
            if (laid_out) printf("  %-16s %-10s (read from its layout, made once)\n", "", "");
            if (pass) tl->passed++;
            else tl->below++;
        }
    } else {
        tl->failed++;
    }
    for (int i = 0; i < op->n_operands; i++) fe_free(ops[i].data), fe_free(lay[i]);
    fe_kernel_destroy(k);
}

static void print_roofs(const fe_membw_report *r) {
    printf("\nread bandwidth: %zu MiB f32, %d workers, %s loops, sum per worker\n",
           r->read_bytes >> 20, r->n_workers, fe_isa_name(r->isa));
    for (int i = 0; i < FE_MEMBW_READ_KS; i++) {
        char what[32];
        snprintf(what, sizeof what, "k=%d streams/worker", r->read_k[i]);
        print_stats(what, &r->read[i]);
    }
    printf("  read (best)            %7.2f GB/s\n", r->read_gbs);
    printf("\nSTREAM triad a = b + s*c: 3 x %zu MiB f32, 3 arrays' bytes counted, %d workers, %s\n",
           r->triad_bytes >> 20, r->n_workers, fe_isa_name(r->isa));
    print_stats("normal stores", &r->triad_store);
    print_stats("non-temporal stores", &r->triad_stream);
    printf("  triad (best)           %7.2f GB/s\n", r->triad_gbs);
}

/* The pool pins worker i (i >= 1) to CPU i mod n_cpus but leaves the dispatching thread,
 * worker 0, where the OS puts it; when that is a CPU a pinned worker owns, the two share one
 * core and the dispatch takes twice as long. So the bench pins itself to CPU 0. */
int main(void) {
    uint64_t t_start = fe_time_ns();
    double busy0 = machine_busy_s(), self0 = self_cpu_s();
    fe_device *dev = bench_device_open("bench_memory");
    if (!dev) return 1;
    const fe_device_info *info = fe_device_get_info(dev);

    fe_membw_report r;
    fe_membw_options mo = {.repeats = ROOF_REPEATS};
    if (fe_membw_measure(dev, &mo, &r) != FE_OK) {
        fprintf(stderr, "bench_memory: out of memory for the bandwidth buffers\n");
        fe_device_destroy(dev);
        return 1;
    }
    print_roofs(&r);

    printf("\nkernels (.bench cases, %d workers): GB/s = cost bytes / median time, spread = "
           "slowest..fastest run;\n  roof start = the figure above, now = the roof re-run just "
           "before each kernel run (median);\n  PASS when the median of kernel/roof over those "
           "pairs (%%now) is >= %.0f%%\n", info->n_workers, TARGET * 100);
    printf("  %-16s %-10s %-6s %7s  %-16s %-5s %7s %7s  %6s %6s  %-5s  %8s  %s\n", "op", "case",
           "isa", "GB/s", "spread", "roof", "start", "now", "%start", "%now", "", "median",
           "tunables");
    /* roof "start": the figure above (best run); "now": the median of the roof's runs paired
     * with the kernel's, each just before one; %now, the median of the paired ratios, is
     * what PASS/BELOW judges */
    roof_check rc = {.roofs = &r, .nr = (int64_t)(r.read_bytes / 4), .nt = (int64_t)(r.triad_bytes / 4),
                     .best_nt = r.triad_stream.best_gbs >= r.triad_store.best_gbs, .best_k = 1};
    for (int i = 0; i < FE_MEMBW_READ_KS; i++)
        if (r.read[i].best_gbs >= r.read_gbs) rc.best_k = r.read_k[i];
    rc.r = fe_aligned_alloc(64, (size_t)rc.nr * 4);
    rc.a = fe_aligned_alloc(64, (size_t)rc.nt * 4);
    rc.b = fe_aligned_alloc(64, (size_t)rc.nt * 4);
    rc.c = fe_aligned_alloc(64, (size_t)rc.nt * 4);
    if (!rc.r || !rc.a || !rc.b || !rc.c) {
        fprintf(stderr, "bench_memory: out of memory for the roof buffers\n");
        return 1;
    }
    for (int64_t i = 0; i < rc.nr; i++) rc.r[i] = 1.0f;
    for (int64_t i = 0; i < rc.nt; i++) rc.a[i] = 0.0f, rc.b[i] = 1.0f, rc.c[i] = 2.0f;
    tally tl = {0};
    for (int i = 0; i < fe_op_count(); i++) {
        const fe_op *op = fe_op_at(i);
        for (int j = 0; j < op->n_cases; j++)
            if (op->cases[j].bench && op->operands_for) bench_case(dev, op, &op->cases[j], &rc, &tl);
    }

    fe_free(rc.r);
    fe_free(rc.a);
    fe_free(rc.b);
    fe_free(rc.c);

    /* the roofs again: how far the machine drifted while the kernels ran */
    fe_membw_report r2;
    mo.repeats = ROOF_REPEATS / 2;
    if (fe_membw_measure(dev, &mo, &r2) == FE_OK) {
        double dr = r2.read_gbs / r.read_gbs - 1, dt = r2.triad_gbs / r.triad_gbs - 1;
        printf("\nroofs again after the kernels: read %.2f GB/s (%+.0f%%), triad %.2f GB/s (%+.0f%%)%s\n",
               r2.read_gbs, 100 * dr, r2.triad_gbs, 100 * dt,
               dr < -0.15 || dr > 0.15 || dt < -0.15 || dt > 0.15
                   ? "  -- drifted more than 15%: the machine is shared, rerun for a verdict"
                   : "");
    }
    double wall = (double)(fe_time_ns() - t_start) * 1e-9;
    double busy1 = machine_busy_s(), self1 = self_cpu_s();
    if (busy0 >= 0 && busy1 >= 0) {
        double others = (busy1 - busy0) - (self1 - self0);
        if (others < 0) others = 0;
        printf("other processes used %.0f%% of the machine's %d CPUs during the run%s\n",
               100.0 * others / (wall * info->n_cores), info->n_cores,
               others > 0.1 * wall ? " -- numbers are disturbed" : "");
    }
    printf("\n%d cases: %d PASS, %d BELOW, %d not run; total %.1f s\n", tl.cases, tl.passed,
           tl.below, tl.failed, wall);
    fe_device_destroy(dev);
    return tl.failed ? 1 : 0;
}
