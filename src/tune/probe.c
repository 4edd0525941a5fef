/* tune/probe.c: timing one thing alone, or two in turn (a run of each a round: figures of
 * the same stretch of time). Warm-up, then repeats until the median settles or
 * the budget ends (with at least the options' min_samples), or, given a bound, as soon as
 * the first two samples both pass it (fe_tune_probe_below). A figure is refused when its spread ((p90 - p10) / median) is wide or
 * when the process got less CPU time than its workers would use over the wall time (another
 * process took a core): then it is measured again, up to the attempts allowed, and reported
 * unreliable rather than trusted. Given the device, each figure also gets the memory's read
 * rate around its runs (fe_device_read_gbps before and after, the higher: a pass another
 * process interrupted reads low, and a level that held for the figure reads the same twice). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "tune/tune.h"


enum { MIN_SAMPLES = 31, MIN_NS = 20000000, MAX_SAMPLES = 4096 };
enum { FAR_SAMPLES = 2 }; /* samples past far_ns that end a figure */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the process's CPU time over all its threads (exact, unlike getrusage's ticks) */
static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double pct(const double *sorted, int n, double p) {
    return sorted[(int)floor(p * (n - 1) + 0.5)];
}

/* n figures (1 or 2) from runs taken in turn, one of each a round: samples until the median
 * of all of them and of the first half agree within 2 % for every one (at least MIN_SAMPLES
 * rounds), or the budget ends: the same budget for two in turn as for one alone (figures of
 * one stretch of time compare well with fewer samples, and a cold `ferrum tune` of the 1B
 * shape, whose second pass pairs the fastest settings, stays within its 10 minutes).
 * cpu_share: process CPU / wall over the rounds. */
static void measure(fe_probe_fn const *fn, void *const *ctx, int nf, const fe_tune_options *o,
                    double far_ns, double *const *samples, fe_cost_figure *out,
                    double *cpu_share) {
    double budget_ns = o->budget_ms * 1e6;
    int min_samples = o->min_samples > 0 ? o->min_samples : 1;
    /* the options' warm-up runs, but none begun past FE_TUNE_WARM_NS: one run that long has brought
     * in whatever the next will find in cache (three warm-up runs of a prefill's 58 ms GEMM
     * were 3 / 8 of its figure's time, a fifth of a cold tune of the Llama 3.2 1B shape) */
    const uint64_t w0 = fe_time_ns();
    for (int i = 0; i < o->warmup && (i == 0 || (double)(fe_time_ns() - w0) < FE_TUNE_WARM_NS); i++)
        for (int f = 0; f < nf; f++) fn[f](ctx[f]);
    double cpu0 = cpu_seconds();
    uint64_t t0 = fe_time_ns();
    int n = 0;
    double sorted[MAX_SAMPLES];
    while (n < MAX_SAMPLES) {
        for (int f = 0; f < nf; f++) {
            uint64_t a = fe_time_ns();
            fn[f](ctx[f]);
            samples[f][n] = (double)(fe_time_ns() - a);
        }
        n++;
        /* far_ns: two samples past it say enough (fe_tune_probe_below) */
        if (far_ns > 0 && nf == 1 && n == FAR_SAMPLES && samples[0][0] > far_ns &&
            samples[0][1] > far_ns)
            break;
        double spent = (double)(fe_time_ns() - t0);
        if (n >= MIN_SAMPLES && (n & 7) == 0 && (spent >= MIN_NS || spent > budget_ns)) {
            bool settled = true;
            for (int f = 0; f < nf && settled; f++) {
                memcpy(sorted, samples[f], (size_t)n * sizeof *sorted);
                qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
                double all = pct(sorted, n, 0.5);
                memcpy(sorted, samples[f], (size_t)(n / 2) * sizeof *sorted);
                qsort(sorted, (size_t)(n / 2), sizeof *sorted, cmp_double);
                settled = fabs(all - pct(sorted, n / 2, 0.5)) <= 0.02 * all;
            }
            if (settled) break;
        }
        if (spent > budget_ns && n >= min_samples) break;
    }
    double wall = (double)(fe_time_ns() - t0) * 1e-9;
    *cpu_share = wall > 0 ? (cpu_seconds() - cpu0) / wall : 0;
    for (int f = 0; f < nf; f++) {
        memcpy(sorted, samples[f], (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
        out[f] = (fe_cost_figure){.median_ns = pct(sorted, n, 0.5), .p10_ns = pct(sorted, n, 0.1),
                                  .p90_ns = pct(sorted, n, 0.9), .samples = n};
    }
}

/* fe_tune_probe for nf things in turn (fe_tune_probe_pair's and its own) */
static void probe_n(fe_probe_fn const *fn, void *const *ctx, int nf, int width, fe_device *gauge,
                    const fe_tune_options *o, double far_ns, fe_cost_figure *out, char *why,
                    size_t why_n) {
    double *samples[2] = {fe_malloc(MAX_SAMPLES * sizeof(double)),
                          nf > 1 ? fe_malloc(MAX_SAMPLES * sizeof(double)) : NULL};
    for (int f = 0; f < nf; f++) out[f] = (fe_cost_figure){0};
    why[0] = 0;
    if (!samples[0] || (nf > 1 && !samples[1])) {
        snprintf(why, why_n, "out of memory for the samples");
        fe_free(samples[0]);
        fe_free(samples[1]);
        return;
    }
    int attempts = o->attempts > 0 ? o->attempts : 1;
    for (int a = 0; a < attempts; a++) {
        double share, spread = 0;
        double before = gauge ? fe_device_read_gbps(gauge, 1) : 0;
        measure(fn, ctx, nf, o, far_ns, samples, out, &share);
        double after = gauge ? fe_device_read_gbps(gauge, 1) : 0;
        double level = fmax(before, after);
        for (int f = 0; f < nf; f++) {
            out[f].cpus = share;
            out[f].read_gbps = level;
            double sf = out[f].median_ns > 0 ? (out[f].p90_ns - out[f].p10_ns) / out[f].median_ns
                                             : INFINITY;
            if (sf > spread) spread = sf;
        }
        /* the pool's workers spin between steps: a step of `width` keeps about that many
         * cores busy; much less CPU than that means they were descheduled */
        double want = 0.75 * width;
        if (spread > o->max_spread)
            snprintf(why, why_n, "spread (p90-p10)/median %.0f%% > %.0f%% in %d tries",
                     100 * spread, 100 * o->max_spread, a + 1);
        else if (share < want)
            snprintf(why, why_n, "the process had %.2f CPUs of the %d it ran on (another "
                     "process took the CPU) in %d tries", share, width, a + 1);
        else {
            for (int f = 0; f < nf; f++) out[f].reliable = true;
            why[0] = 0;
            break;
        }
        /* let whatever took the CPU pass before the next try */
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    fe_free(samples[0]);
    fe_free(samples[1]);
}

fe_cost_figure fe_tune_probe(fe_probe_fn fn, void *ctx, int width, fe_device *gauge,
                             const fe_tune_options *o, char *why, size_t why_n) {
    return fe_tune_probe_below(fn, ctx, width, gauge, o, 0, why, why_n);
}

fe_cost_figure fe_tune_probe_below(fe_probe_fn fn, void *ctx, int width, fe_device *gauge,
                                   const fe_tune_options *o, double far_ns, char *why,
                                   size_t why_n) {
    fe_cost_figure f;
    probe_n(&fn, &ctx, 1, width, gauge, o, far_ns, &f, why, why_n);
    return f;
}

void fe_tune_probe_pair(fe_probe_fn fa, void *ca, fe_probe_fn fb, void *cb, int width,
                        fe_device *gauge, const fe_tune_options *o, fe_cost_figure *a,
                        fe_cost_figure *b, char *why, size_t why_n) {
    fe_probe_fn fn[2] = {fa, fb};
    void *ctx[2] = {ca, cb};
    fe_cost_figure out[2];
    probe_n(fn, ctx, 2, width, gauge, o, 0, out, why, why_n);
    out[0].in_turn = out[1].in_turn = true;
    *a = out[0], *b = out[1];
}
