/* bench/bench_mha.c: MHA decode over a KV cache costs what kv_valid says, not what the cache
 * holds.
 *
 * Prints the device line, then times one decode step of Llama 3.2 1B attention (Sq = 1,
 * Hq = 32, Hkv = 8, D = 64, causal, the query at position kv_valid - 1) on every worker:
 *   - one kernel made for a 32768-position cache, called with kv_valid = 512, 4096, 32768;
 *   - kernels made for 512- and 4096-position caches, called with the cache full.
 * Each row gives the median time per call over 31 calls (after 3 warm-up calls) with the
 * fastest..slowest spread, and GB/s (fe_kernel_cost bytes: the attended k/v rows, q, out /
 * median). Then the ratios: the same kv_valid in a large and a small cache (about 1 when the
 * work follows kv_valid), and time against keys within the large cache.
 * Calls repeat on the same buffers, so a cache whose attended rows fit the last-level cache
 * (512 keys: 2 MiB of k and v) runs from it; 32768 keys (128 MiB) stream from memory. The VM is
 * shared: read the spread before any single figure. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"

enum { HQ = 32, HKV = 8, HD = 64, WARMUP = 3, RUNS = 31 };

typedef struct {
    int64_t cache, kv_valid;
    double median_s, min_s, max_s, gbs;
} row;

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

/* Makes the kernel for a cache of `cache` positions and times it at each kv_valid in kvs. */
static int bench_cache(fe_device *dev, int64_t cache, const int64_t *kvs, int n_kvs, row *out) {
    int64_t qs[3] = {1, HQ, HD}, ks[3] = {cache, HKV, HD};
    fe_tensor t[4];
    t[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs);
    t[1] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, ks);
    t[2] = t[1];
    t[3] = t[0];
    fe_op_request req = {.op = "MHA", .operands = t, .n_operands = 4};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) {
        fprintf(stderr, "bench_mha: %s\n", err.message);
        return 1;
    }
    size_t qn = (size_t)HQ * HD, kn = (size_t)cache * HKV * HD;
    float *q = fe_aligned_alloc(64, qn * 4), *kc = fe_aligned_alloc(64, kn * 4);
    float *vc = fe_aligned_alloc(64, kn * 4), *o = fe_aligned_alloc(64, qn * 4);
    int rc = 1;
    if (!q || !kc || !vc || !o) {
        fprintf(stderr, "bench_mha: out of memory for a %lld-position cache\n", (long long)cache);
        goto done;
    }
    for (size_t i = 0; i < qn; i++) q[i] = uniform(), o[i] = 0;
    for (size_t i = 0; i < kn; i++) kc[i] = uniform(), vc[i] = uniform();
    t[0].data = q, t[1].data = kc, t[2].data = vc, t[3].data = o;
    for (int c = 0; c < n_kvs; c++) {
        int64_t values[3] = {kvs[c], 1, kvs[c] - 1}; /* kv_valid, q_rows, q_offset */
        double ts[RUNS];
        for (int r = 0; r < WARMUP + RUNS; r++) {
            uint64_t t0 = fe_time_ns();
            if (fe_kernel_run(k, t, 4, values, 3) != FE_OK) {
                fprintf(stderr, "bench_mha: %s\n", fe_kernel_message(k));
                goto done;
            }
            if (r >= WARMUP) ts[r - WARMUP] = (double)(fe_time_ns() - t0) * 1e-9;
        }
        qsort(ts, RUNS, sizeof ts[0], cmp_double);
        double bytes = 0;
        fe_kernel_cost(k, values, 3, NULL, &bytes);
        double med = ts[RUNS / 2];
        out[c] = (row){cache, kvs[c], med, ts[0], ts[RUNS - 1], bytes / med / 1e9};
    }
    rc = 0;
done:
    fe_free(q);
    fe_free(kc);
    fe_free(vc);
    fe_free(o);
    fe_kernel_destroy(k);
    return rc;
}

static void print_row(const row *r) {
    printf("  %8lld  %8lld  %10.1f us  %8.1f .. %-8.1f  %7.2f GB/s\n", (long long)r->cache,
           (long long)r->kv_valid, r->median_s * 1e6, r->min_s * 1e6, r->max_s * 1e6, r->gbs);
}

int main(void) {
    fe_device_options opts = fe_device_options_default();
    if (opts.pin) { /* worker 0 is this thread: keep it off the pinned workers' CPUs */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    fe_device *dev = NULL;
    fe_error err = {0};
    if (fe_device_create(&opts, &dev, &err) != FE_OK) {
        fprintf(stderr, "bench_mha: %s\n", err.message);
        return 1;
    }
    char desc[512];
    fe_device_describe(dev, desc, sizeof desc);
    printf("machine: %s\n", desc);
    double load[1] = {0};
    if (getloadavg(load, 1) == 1) printf("load average (1 min) at start: %.2f\n", load[0]);
    printf("\nMHA decode, Llama 3.2 1B shapes (Sq 1, Hq %d, Hkv %d, D %d, causal), %d workers;\n"
           "median of %d calls, fastest .. slowest; GB/s = attended k/v + q + out bytes / median\n",
           HQ, HKV, HD, fe_device_get_info(dev)->n_workers, RUNS);
    printf("  %8s  %8s  %13s  %20s  %12s\n", "cache", "kv_valid", "time/call", "spread (us)",
           "");

    const int64_t big_kvs[3] = {512, 4096, 32768}, kv512[1] = {512}, kv4k[1] = {4096};
    row big[3], small512[1], small4k[1];
    int rc = bench_cache(dev, 32768, big_kvs, 3, big);
    if (rc == 0) rc = bench_cache(dev, 512, kv512, 1, small512);
    if (rc == 0) rc = bench_cache(dev, 4096, kv4k, 1, small4k);
    if (rc == 0) {
        for (int i = 0; i < 3; i++) print_row(&big[i]);
        print_row(&small512[0]);
        print_row(&small4k[0]);
        printf("\nsame kv_valid, cache 32768 vs cache of kv_valid (about 1 when the work follows "
               "kv_valid):\n");
        printf("  kv_valid   512: %8.1f us vs %8.1f us  ratio %.2f\n", big[0].median_s * 1e6,
               small512[0].median_s * 1e6, big[0].median_s / small512[0].median_s);
        printf("  kv_valid  4096: %8.1f us vs %8.1f us  ratio %.2f\n", big[1].median_s * 1e6,
               small4k[0].median_s * 1e6, big[1].median_s / small4k[0].median_s);
        printf("\ntime against keys in the 32768 cache (keys ratio / time ratio):\n");
        for (int i = 1; i < 3; i++)
            printf("  kv_valid %5lld vs 512: keys x%.0f, time x%.1f\n", (long long)big[i].kv_valid,
                   (double)big[i].kv_valid / 512.0, big[i].median_s / big[0].median_s);
    }
    fe_device_destroy(dev);
    return rc;
}
