/* bench/bench_attention.c: attention over many query rows (an encoder's packed batch, a
 * prompt chunk) against this machine's FMA peak, in both of MHA's paths (row_block).
 *
 * Where a decode step's attention reads a cache (bench_mha), attention over a chunk of rows
 * is arithmetic: every row meets every key of its range. This bench times, on every worker:
 *   - SegmentedMHA at all-MiniLM-L6-v2's shape: 12 heads of 32, bidirectional, q, k and v
 *     columns of the fused q|k|v projection, 1 and 32 sentences of 128 tokens (the encoder's
 *     batch 1 and batch 32), and 8 sentences of 40;
 *   - MHA over a causal prompt chunk of 256 rows at the start of the cache: Llama 3.2 1B
 *     (32 q heads, 8 kv heads, head_dim 64) and SmolLM2-135M (9 q heads, 3 kv heads, 64);
 * each in the path resolve picks (row_block: row-blocked where bidirectional or for 16 rows
 * and more, one row at a time for a causal decode step) and in the other (the "1 row"
 * lines).
 * Each line gives GFLOP/s (fe_kernel_cost flops / time: 4 D + 4 per attended row, head and
 * key), median of the calls with the slowest..fastest spread, and the share of the FMA peak
 * measured in the same run (bench/support/peak.c).
 * Usage: bench_attention [--cpu-time]. --cpu-time times by the process's CPU time (the peak
 * too): on a host shared with other jobs, with FERRUM_WORKERS=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "support/bench_device.h"
#include "support/peak.h"

enum { WARMUP = 2, RUNS = 15 };

static bool cpu_time; /* --cpu-time */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) { /* xorshift64*, [-1, 1) */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545f4914f6cdd1dull) >> 11) / 4503599627370496.0 - 1.0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const char *name;
    bool segmented;            /* SegmentedMHA over packed segments, else MHA over a chunk */
    int64_t rows, hq, hkv, d;  /* query rows (all segments), heads, head_dim */
    int64_t seg_len;           /* SegmentedMHA: each segment's length */
    int row_block;             /* the tunable row_block given, or -1: resolve's */
} shape;

static const shape shapes[] = {
    {"minilm 1 x 128", true, 128, 12, 12, 32, 128, -1},
    {"minilm 32 x 128", true, 4096, 12, 12, 32, 128, -1},
    {"minilm 8 x 40", true, 320, 12, 12, 32, 40, -1},
    {"minilm 32x128 1 row", true, 4096, 12, 12, 32, 128, 0},
    {"llama-1b chunk 256", false, 256, 32, 8, 64, 0, -1},
    {"llama-1b chunk 1 row", false, 256, 32, 8, 64, 0, 0},
    {"smollm2 chunk 256", false, 256, 9, 3, 64, 0, -1},
    {"smollm2 chunk 1 row", false, 256, 9, 3, 64, 0, 0},
};

/* Times one shape; returns nonzero when its kernel cannot be made or run. */
static int run_shape(fe_device *dev, const shape *s, double peak) {
    fe_kernel *kern = NULL;
    int rc = 0;
    fe_tensor t[5];
    int n_t;
    const char *op;
    float *qkv = NULL;
    int32_t *lengths = NULL;
    float *out = NULL, *k = NULL, *v = NULL;
    int64_t values[3];
    int n_values;
    const int64_t R = s->rows, D = s->d;
    int64_t qsh[3] = {R, s->hq, D}, ksh[3] = {R, s->hkv, D};
    size_t qn = (size_t)(R * s->hq * D);
    out = fe_aligned_alloc(64, qn * sizeof *out);
    if (s->segmented) { /* q, k, v as column views of one fused projection */
        const int64_t w = (s->hq + 2 * s->hkv) * D, segs = R / s->seg_len;
        qkv = fe_aligned_alloc(64, (size_t)(R * w) * sizeof *qkv);
        lengths = fe_aligned_alloc(64, (size_t)segs * sizeof *lengths);
        if (!qkv || !lengths || !out) {
            printf("  %-20s out of memory for the operands\n", s->name);
            rc = 1;
            goto done;
        }
        for (int64_t i = 0; i < R * w; i++) qkv[i] = uniform();
        for (int64_t i = 0; i < segs; i++) lengths[i] = (int32_t)s->seg_len;
        t[0] = fe_tensor_contiguous(qkv, FE_DTYPE_F32, 3, qsh);
        t[1] = fe_tensor_contiguous(qkv + s->hq * D, FE_DTYPE_F32, 3, ksh);
        t[2] = fe_tensor_contiguous(qkv + (s->hq + s->hkv) * D, FE_DTYPE_F32, 3, ksh);
        for (int i = 0; i < 3; i++) t[i].stride[0] = w;
        t[3] = fe_tensor_contiguous(lengths, FE_DTYPE_I32, 1, &segs);
        t[4] = fe_tensor_contiguous(out, FE_DTYPE_F32, 3, qsh);
        n_t = 5, op = "SegmentedMHA";
        values[0] = R, n_values = 1;
    } else { /* the chunk at positions 0..R-1 over a cache of R keys */
        k = fe_aligned_alloc(64, (size_t)(R * s->hkv * D) * sizeof *k);
        v = fe_aligned_alloc(64, (size_t)(R * s->hkv * D) * sizeof *v);
        qkv = fe_aligned_alloc(64, qn * sizeof *qkv);
        if (!k || !v || !qkv || !out) {
            printf("  %-20s out of memory for the operands\n", s->name);
            rc = 1;
            goto done;
        }
        for (size_t i = 0; i < qn; i++) qkv[i] = uniform();
        for (int64_t i = 0; i < R * s->hkv * D; i++) k[i] = uniform(), v[i] = uniform();
        t[0] = fe_tensor_contiguous(qkv, FE_DTYPE_F32, 3, qsh);
        t[1] = fe_tensor_contiguous(k, FE_DTYPE_F32, 3, ksh);
        t[2] = fe_tensor_contiguous(v, FE_DTYPE_F32, 3, ksh);
        t[3] = fe_tensor_contiguous(out, FE_DTYPE_F32, 3, qsh);
        n_t = 4, op = "MHA";
        values[0] = R, values[1] = R, values[2] = 0, n_values = 3; /* kv_valid, rows, offset */
    }
    fe_setting causal = {"causal", s->segmented ? 0 : 1};
    fe_setting rows = {"row_block", s->row_block};
    fe_op_request req = {.op = op, .operands = t, .n_operands = n_t, .params = &causal,
                         .n_params = 1, .tunables = &rows, .n_tunables = s->row_block >= 0};
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &kern, &err) != FE_OK) {
        printf("  %-20s cannot make the kernel: %s\n", s->name, err.message);
        rc = 1;
        goto done;
    }
    double ts[RUNS];
    for (int r = 0; r < WARMUP + RUNS && rc == 0; r++) {
        double c0 = fe_peak_clock_s();
        if (fe_kernel_run(kern, t, n_t, values, n_values) != FE_OK) {
            printf("  %-20s run refused: %s\n", s->name, fe_kernel_message(kern));
            rc = 1;
        }
        if (r >= WARMUP) ts[r - WARMUP] = fe_peak_clock_s() - c0;
    }
    if (rc == 0) {
        double flops = 0, bytes = 0;
        fe_kernel_cost(kern, values, n_values, &flops, &bytes);
        int workers = fe_device_get_info(dev)->n_workers;
        qsort(ts, RUNS, sizeof ts[0], cmp_double);
        /* CPU time sums the workers' seconds: the pool's rate is flops over it, times them */
        double scale = cpu_time ? workers : 1;
        double med = flops * scale / ts[RUNS / 2] / 1e9;
        printf("  %-20s %5lld x %2lld/%-2lld x %3lld  %7.1f (%6.1f..%6.1f) GFLOP/s  %5.1f%% of "
               "peak  %8.1f us a call  B_q=%lld B_kv=%lld row_block=%lld\n", s->name, (long long)R,
               (long long)s->hq, (long long)s->hkv, (long long)D, med,
               flops * scale / ts[RUNS - 1] / 1e9, flops * scale / ts[0] / 1e9,
               peak > 0 ? 100 * med / peak : 0, ts[RUNS / 2] * 1e6 / scale,
               (long long)fe_kernel_tunable(kern, "B_q"),
               (long long)fe_kernel_tunable(kern, "B_kv"),
               (long long)fe_kernel_tunable(kern, "row_block"));
    }
done:
    fe_kernel_destroy(kern);
    fe_free(qkv);
    fe_free(lengths);
    fe_free(out);
    fe_free(k);
    fe_free(v);
    return rc;
}

int main(int argc, char **argv) {
    bool cpu = cpu_time = argc > 1 && !strcmp(argv[1], "--cpu-time");
    if (argc > 2 || (argc == 2 && !cpu)) {
        fprintf(stderr, "usage: bench_attention [--cpu-time]\n");
        return 2;
    }
    fe_peak_cpu_time(cpu);
    fe_device *dev = bench_device_open("bench_attention");
    if (!dev) return 1;
    double peak, median;
    int lanes;
    fe_flops_peak(dev, false, 9, &peak, &median, &lanes);
    printf("FMA peak (%s): %.1f GFLOP/s best, %.1f median, %d workers\n",
           cpu ? "CPU time" : "wall", peak, median, fe_device_get_info(dev)->n_workers);
    printf("attention: GFLOP/s = kernel cost flops / time, median (slowest..fastest) of %d calls\n",
           RUNS);
    int rc = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) rc |= run_shape(dev, &shapes[i], peak);
    bench_print_load("end");
    fe_device_destroy(dev);
    return rc;
}
