/* bench/support/membw.c: the bandwidth measurements of membw.h: splitting buffers over the
 * pool's workers, timing repeated dispatches, and summarizing the runs. The loops themselves
 * are in membw/kernels.inc, one build per ISA, chosen here from fe_device_info.isa. */
#include "membw.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "device/split.h"

typedef float (*read_fn)(const float *, int64_t, int);
typedef void (*triad_fn)(float *, const float *, const float *, float, int64_t, bool);

static read_fn pick_read(fe_isa isa) {
    return isa >= FE_ISA_AVX512 ? fe_membw_read_avx512
           : isa == FE_ISA_AVX2 ? fe_membw_read_avx2 : fe_membw_read_scalar;
}

static triad_fn pick_triad(fe_isa isa) {
    return isa >= FE_ISA_AVX512 ? fe_membw_triad_avx512
           : isa == FE_ISA_AVX2 ? fe_membw_triad_avx2 : fe_membw_triad_scalar;
}

/* Worker shares start on 4 KiB boundaries (1024 floats). */
enum { SHARE_ALIGN = 1024, MAX_WORKERS = 1024 };

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void fe_membw_summarize(double *t, int n, double bytes, fe_membw_stats *out) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    *out = (fe_membw_stats){
        .runs = n, .bytes = bytes, .median_s = med, .min_s = t[0], .max_s = t[n - 1],
        .best_gbs = bytes / t[0] / 1e9, .median_gbs = bytes / med / 1e9,
        .worst_gbs = bytes / t[n - 1] / 1e9,
    };
}

typedef struct {
    read_fn read;
    triad_fn triad;
    const float *src;
    float *a;
    const float *b, *c;
    int64_t n;
    int streams;
    bool nt;
    float fill_a, fill_b, fill_c;
    _Alignas(64) float sums[MAX_WORKERS]; /* keeps the read sums alive */
} job;

static void read_step(void *ctx, int ith, int nth) {
    job *j = ctx;
    int64_t lo, hi;
    fe_split(j->n, ith, nth, SHARE_ALIGN, &lo, &hi);
    j->sums[ith % MAX_WORKERS] = j->read(j->src + lo, hi - lo, j->streams);
}

static void triad_step(void *ctx, int ith, int nth) {
    job *j = ctx;
    int64_t lo, hi;
    fe_split(j->n, ith, nth, SHARE_ALIGN, &lo, &hi);
    j->triad(j->a + lo, j->b + lo, j->c + lo, 3.0f, hi - lo, j->nt);
}

/* First touch by the worker that later reads the share. */
static void fill_step(void *ctx, int ith, int nth) {
    job *j = ctx;
    int64_t lo, hi;
    fe_split(j->n, ith, nth, SHARE_ALIGN, &lo, &hi);
    float *bufs[3] = {j->a, (float *)j->b, (float *)j->c};
    float vals[3] = {j->fill_a, j->fill_b, j->fill_c};
    for (int k = 0; k < 3; k++)
        if (bufs[k])
            for (int64_t i = lo; i < hi; i++) bufs[k][i] = vals[k];
}

static void run_timed(fe_device *dev, fe_step_fn fn, job *j, int repeats, double bytes,
                      fe_membw_stats *out) {
    const fe_device_info *info = fe_device_get_info(dev);
    fe_step step = {.fn = fn, .ctx = j, .width = info->n_workers};
    if (repeats < 1) repeats = 1;
    double *t = malloc((size_t)repeats * sizeof *t);
    fe_device_dispatch(dev, &step, 1); /* warm-up: TLB, caches, pool awake */
    for (int r = 0; r < repeats; r++) {
        uint64_t t0 = fe_time_ns();
        fe_device_dispatch(dev, &step, 1);
        double dt = (double)(fe_time_ns() - t0) * 1e-9;
        if (t) t[r] = dt > 1e-9 ? dt : 1e-9;
    }
    if (t) {
        fe_membw_summarize(t, repeats, bytes, out);
    } else {
        memset(out, 0, sizeof *out);
    }
    free(t);
}

void fe_membw_read(fe_device *dev, const float *buf, int64_t n, int streams, int repeats,
                   fe_membw_stats *out) {
    job *j = fe_aligned_alloc(64, sizeof *j);
    if (!j) {
        memset(out, 0, sizeof *out);
        return;
    }
    *j = (job){.read = pick_read(fe_device_get_info(dev)->isa), .src = buf, .n = n,
               .streams = streams};
    run_timed(dev, read_step, j, repeats, (double)n * sizeof(float), out);
    fe_free(j);
}

void fe_membw_triad(fe_device *dev, float *a, const float *b, const float *c, int64_t n,
                    bool nontemporal, int repeats, fe_membw_stats *out) {
    job *j = fe_aligned_alloc(64, sizeof *j);
    if (!j) {
        memset(out, 0, sizeof *out);
        return;
    }
    *j = (job){.triad = pick_triad(fe_device_get_info(dev)->isa), .a = a, .b = b, .c = c,
               .n = n, .nt = nontemporal};
    run_timed(dev, triad_step, j, repeats, 3.0 * (double)n * sizeof(float), out);
    fe_free(j);
}

static void fill(fe_device *dev, float *a, float *b, float *c, int64_t n, float va, float vb,
                 float vc) {
    job *j = fe_aligned_alloc(64, sizeof *j);
    if (!j) return;
    *j = (job){.a = a, .b = b, .c = c, .n = n, .fill_a = va, .fill_b = vb, .fill_c = vc};
    fe_step step = {.fn = fill_step, .ctx = j, .width = fe_device_get_info(dev)->n_workers};
    fe_device_dispatch(dev, &step, 1);
    fe_free(j);
}

fe_status fe_membw_measure(fe_device *dev, const fe_membw_options *opts, fe_membw_report *out) {
    fe_membw_options o = opts ? *opts : (fe_membw_options){0};
    if (!o.read_bytes) o.read_bytes = (size_t)256 << 20;
    if (!o.triad_bytes) o.triad_bytes = (size_t)64 << 20;
    if (o.repeats < 1) o.repeats = 10;
    const fe_device_info *info = fe_device_get_info(dev);
    memset(out, 0, sizeof *out);
    out->isa = info->isa;
    out->n_workers = info->n_workers;
    out->read_bytes = o.read_bytes;
    out->triad_bytes = o.triad_bytes;

    int64_t nr = (int64_t)(o.read_bytes / sizeof(float));
    float *r = fe_aligned_alloc(64, (size_t)nr * sizeof(float));
    if (!r) return FE_E_NOMEM;
    fill(dev, r, NULL, NULL, nr, 1.0f, 0, 0);
    static const int ks[FE_MEMBW_READ_KS] = {1, 2, 4, 8};
    for (int i = 0; i < FE_MEMBW_READ_KS; i++) {
        out->read_k[i] = ks[i];
        fe_membw_read(dev, r, nr, ks[i], o.repeats, &out->read[i]);
        if (out->read[i].best_gbs > out->read_gbs) out->read_gbs = out->read[i].best_gbs;
    }
    fe_free(r);

    int64_t nt = (int64_t)(o.triad_bytes / sizeof(float));
    float *a = fe_aligned_alloc(64, (size_t)nt * sizeof(float));
    float *b = fe_aligned_alloc(64, (size_t)nt * sizeof(float));
    float *c = fe_aligned_alloc(64, (size_t)nt * sizeof(float));
    if (!a || !b || !c) {
        fe_free(a);
        fe_free(b);
        fe_free(c);
        return FE_E_NOMEM;
    }
    fill(dev, a, b, c, nt, 0.0f, 1.0f, 2.0f);
    fe_membw_triad(dev, a, b, c, nt, false, o.repeats, &out->triad_store);
    fe_membw_triad(dev, a, b, c, nt, true, o.repeats, &out->triad_stream);
    out->triad_gbs = out->triad_store.best_gbs > out->triad_stream.best_gbs
                         ? out->triad_store.best_gbs : out->triad_stream.best_gbs;
    fe_free(a);
    fe_free(b);
    fe_free(c);
    return FE_OK;
}
