/* apps/study/memcpy.c: the memcpy-bandwidth study and the roofline's ceilings.
 *
 * memcpy_bandwidth: a buffer copied by W workers of the pool (one dispatch, one step of width
 * W, each worker memcpy'ing its contiguous share), sizes 4 KiB .. 64 MiB x W = 1, 2, 4, ...
 * up to the pool. GB/s = bytes copied / time (1 GB = 1e9 B; the memory traffic is twice
 * that: each byte is read and written). The fastest size of each worker count is its peak
 * (is_best).
 *
 * ceilings (roofline): measured in the same run: the compute ceiling is the GFLOP/s of a
 * 1024^3 f32 GEMM with all workers and with one (an attainable peak: ferrum's own best
 * kernel, not the datasheet's); the bandwidth ceiling is the read bandwidth of a 256 MiB
 * buffer summed by all workers and by one. Rows give median and spread; the roof is p90,
 * the fast end (a roof is what the machine can do, not what it usually did). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct copy_ctx {
    char *dst;
    const char *src;
    size_t bytes;
    int iters;
    unsigned long long sink[64];
} copy_ctx;

static void share(size_t bytes, int ith, int nth, size_t *lo, size_t *hi) {
    *lo = bytes / 64 * (size_t)ith / (size_t)nth * 64;
    *hi = ith == nth - 1 ? bytes : bytes / 64 * (size_t)(ith + 1) / (size_t)nth * 64;
}

static void copy_step(void *ctx, int ith, int nth) {
    copy_ctx *c = ctx;
    size_t lo, hi;
    share(c->bytes, ith, nth, &lo, &hi);
    for (int i = 0; i < c->iters; i++) memcpy(c->dst + lo, c->src + lo, hi - lo);
}

/* sums 64-bit words with four chains so the loads, not the adds, set the pace */
static void read_step(void *ctx, int ith, int nth) {
    copy_ctx *c = ctx;
    size_t lo, hi;
    share(c->bytes, ith, nth, &lo, &hi);
    const unsigned long long *p = (const unsigned long long *)(c->src + lo);
    const size_t n = (hi - lo) / 8;
    unsigned long long s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int it = 0; it < c->iters; it++)
        for (size_t i = 0; i + 4 <= n; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
    c->sink[ith % 64] = s0 ^ s1 ^ s2 ^ s3;
}

/* median seconds per pass of step over c (width w), reps figures, each of enough passes to
 * take about 2 ms */
static study_timing time_step(fe_device *dev, fe_step_fn fn, copy_ctx *c, int w, int reps, double *t) {
    fe_step st = {fn, c, w};
    c->iters = 1;
    fe_device_dispatch(dev, &st, 1); /* warm: pages touched */
    double t0 = now_ns();
    fe_device_dispatch(dev, &st, 1);
    double one = now_ns() - t0;
    c->iters = one > 2e6 ? 1 : (int)(2e6 / (one > 1 ? one : 1)) + 1;
    for (int r = 0; r < reps; r++) {
        t0 = now_ns();
        fe_device_dispatch(dev, &st, 1);
        t[r] = (now_ns() - t0) / c->iters;
    }
    return study_timing_of(t, reps);
}

static int worker_counts(const fe_device *dev, int *ws) {
    const int n = fe_device_get_info(dev)->n_workers;
    int k = 0;
    for (int w = 1; w < n; w *= 2) ws[k++] = w;
    ws[k++] = n;
    return k;
}

study_job_status study_job_memcpy(study_job_ctx *c) {
    enum { N_SIZES = 8, MAX_W = 32 };
    const size_t max_bytes = (size_t)64 << 20;
    char *src = malloc(max_bytes), *dst = malloc(max_bytes);
    const int reps = c->cfg->reps < 5 ? 5 : c->cfg->reps;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!src || !dst || !t) {
        free(src), free(dst), free(t);
        snprintf(c->msg, sizeof c->msg, "out of memory for two 64 MiB buffers");
        return JOB_FAILED;
    }
    memset(src, 1, max_bytes), memset(dst, 0, max_bytes);
    int ws[MAX_W];
    const int nw = worker_counts(c->dev, ws);
    for (int wi = 0; wi < nw; wi++) {
        study_row rows[N_SIZES];
        int best = 0;
        for (int si = 0; si < N_SIZES; si++) {
            const size_t bytes = (size_t)4096 << (2 * si); /* 4 KiB, 16 KiB, ... 64 MiB */
            copy_ctx cc = {.dst = dst, .src = src, .bytes = bytes};
            study_timing tm = time_step(c->dev, copy_step, &cc, ws[wi], reps, t);
            study_row r = study_job_row(c);
            snprintf(r.variant, sizeof r.variant, "bytes=%zu workers=%d", bytes, ws[wi]);
            snprintf(r.metric, sizeof r.metric, "copy_bandwidth");
            snprintf(r.unit, sizeof r.unit, "GB/s");
            r.median = (double)bytes / tm.median, r.p10 = (double)bytes / tm.p90, r.p90 = (double)bytes / tm.p10;
            r.samples = reps, r.bytes = (double)bytes, r.dispatches = 1;
            snprintf(r.note, sizeof r.note, "size_bytes=%zu; workers=%d; bytes copied per second (traffic is 2x)", bytes, ws[wi]);
            rows[si] = r;
            if (r.median > rows[best].median) best = si;
        }
        rows[best].is_best = true;
        for (int si = 0; si < N_SIZES; si++) study_emit(c, &rows[si]);
        printf("workers %d: peak %.1f GB/s at %s\n", ws[wi], rows[best].median, rows[best].variant);
    }
    free(src), free(dst), free(t);
    return JOB_OK;
}

study_job_status study_job_ceilings(study_job_ctx *c) {
    const int reps = c->cfg->reps < 5 ? 5 : c->cfg->reps;
    double *t = malloc((size_t)reps * sizeof *t);
    const size_t bytes = (size_t)256 << 20;
    char *buf = malloc(bytes);
    if (!t || !buf) {
        free(t), free(buf);
        snprintf(c->msg, sizeof c->msg, "out of memory for a 256 MiB buffer");
        return JOB_FAILED;
    }
    memset(buf, 3, bytes);
    const int n = fe_device_get_info(c->dev)->n_workers;
    for (int pass = 0; pass < 2; pass++) {
        const int w = pass == 0 ? n : 1;
        fe_setting width = {"WIDTH", (double)w, NULL};
        double flops = 0, b = 0;
        if (!study_time_gemm(c, 1024, 1024, 1024, &width, 1, t, reps, &flops, &b)) {
            free(t), free(buf);
            return JOB_FAILED;
        }
        study_timing tm = study_timing_of(t, reps);
        study_row r = study_job_row(c);
        snprintf(r.variant, sizeof r.variant, "compute workers=%d", w);
        snprintf(r.metric, sizeof r.metric, "ceiling_compute");
        snprintf(r.unit, sizeof r.unit, "GFLOP/s");
        r.median = flops / tm.median, r.p10 = flops / tm.p90, r.p90 = flops / tm.p10;
        r.samples = reps, r.flops = flops, r.bytes = b, r.dispatches = 1;
        r.is_best = pass == 0;
        snprintf(r.note, sizeof r.note, "%d runs of a 1024^3 f32 GEMM (WIDTH %d); the roofline's roof is p90, the fast end", reps, w);
        study_emit(c, &r);
        printf("compute ceiling, %d workers: %.1f GFLOP/s (median %.1f)\n", w, r.p90, r.median);
        copy_ctx cc = {.src = buf, .bytes = bytes};
        tm = time_step(c->dev, read_step, &cc, w, reps, t);
        study_row m = study_job_row(c);
        snprintf(m.variant, sizeof m.variant, "bandwidth workers=%d", w);
        snprintf(m.metric, sizeof m.metric, "ceiling_bandwidth");
        snprintf(m.unit, sizeof m.unit, "GB/s");
        m.median = (double)bytes / tm.median, m.p10 = (double)bytes / tm.p90, m.p90 = (double)bytes / tm.p10;
        m.samples = reps, m.bytes = (double)bytes, m.dispatches = 1;
        m.is_best = pass == 0;
        snprintf(m.note, sizeof m.note, "%d reads of a 256 MiB buffer by %d worker(s); the roofline's roof is p90, the fast end", reps, w);
        study_emit(c, &m);
        printf("bandwidth ceiling, %d workers: %.1f GB/s (median %.1f)\n", w, m.p90, m.median);
    }
    free(t), free(buf);
    return JOB_OK;
}
