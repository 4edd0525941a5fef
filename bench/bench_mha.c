/* bench/bench_mha.c: MHA decode over a KV cache costs what kv_valid says, not what the cache
 * holds.
 *
 * Prints the device line, then times one decode step of Llama 3.2 1B attention (Sq = 1,
 * Hq = 32, Hkv = 8, D = 64, causal, the query at position kv_valid - 1) on every worker:
 *   - one kernel made for a 32768-position cache, called with kv_valid = 512, 4096, 32768;
 *   - kernels made for 512- and 4096-position caches, called with the cache full.
 * Each row gives the median time per call over 31 calls (after 3 warm-up calls) with the
 * fastest..slowest spread, and GB/s (fe_kernel_cost bytes: the attended k/v rows, q, out /
 * median), each setting timed alone. Then the pairs (the same kv_valid in the large cache
 * and in a cache of that size) timed again, call by call in alternation, so a drift of the
 * shared machine hits both: their ratio is about 1 when the work follows kv_valid. Then time
 * against keys within the large cache. Calls repeat on the same buffers, so attended rows
 * that fit the last-level cache (512 keys: 2 MiB of k and v) run from it; 32768 keys
 * (128 MiB) stream from memory. The VM is shared: read the spread before any figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "support/bench_device.h"

enum { HQ = 32, HKV = 8, HD = 64, WARMUP = 3, RUNS = 31 };

/* A kernel made for one cache size, with its operands. */
typedef struct {
    int64_t cache;
    fe_kernel *k;
    fe_tensor t[4];
} setup;

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

static void setup_free(setup *s) {
    for (int i = 0; i < 4; i++) fe_free(s->t[i].data);
    fe_kernel_destroy(s->k);
}

/* Makes the kernel for a cache of `cache` positions and fills its operands. */
static int setup_make(fe_device *dev, int64_t cache, setup *s) {
    memset(s, 0, sizeof *s);
    s->cache = cache;
    int64_t qs[3] = {1, HQ, HD}, ks[3] = {cache, HKV, HD};
    s->t[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs);
    s->t[1] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, ks);
    s->t[2] = s->t[1];
    s->t[3] = s->t[0];
    fe_op_request req = {.op = "MHA", .operands = s->t, .n_operands = 4};
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &s->k, &err) != FE_OK) {
        fprintf(stderr, "bench_mha: %s\n", err.message);
        return 1;
    }
    for (int i = 0; i < 4; i++) {
        size_t n = (size_t)fe_tensor_numel(&s->t[i]);
        float *p = fe_aligned_alloc(64, n * sizeof(float));
        if (!p) {
            fprintf(stderr, "bench_mha: out of memory for a %lld-position cache\n",
                    (long long)cache);
            return 1;
        }
        for (size_t j = 0; j < n; j++) p[j] = i == 3 ? 0.0f : uniform();
        s->t[i].data = p;
    }
    return 0;
}

/* One decode call at kv_valid (the query at position kv_valid - 1); its time in seconds. */
static double call(setup *s, int64_t kv_valid, int *rc) {
    int64_t values[3] = {kv_valid, 1, kv_valid - 1}; /* kv_valid, q_rows, q_offset */
    uint64_t t0 = fe_time_ns();
    if (fe_kernel_run(s->k, s->t, 4, values, 3) != FE_OK) {
        fprintf(stderr, "bench_mha: %s\n", fe_kernel_message(s->k));
        *rc = 1;
    }
    return (double)(fe_time_ns() - t0) * 1e-9;
}

static row summarize(setup *s, int64_t kv_valid, double *ts) {
    qsort(ts, RUNS, sizeof ts[0], cmp_double);
    int64_t values[3] = {kv_valid, 1, kv_valid - 1};
    double bytes = 0, med = ts[RUNS / 2];
    fe_kernel_cost(s->k, values, 3, NULL, &bytes);
    return (row){s->cache, kv_valid, med, ts[0], ts[RUNS - 1], bytes / med / 1e9};
}

/* Times a at kv_a and b at kv_b, call by call in alternation (b may be NULL). */
static int time_pair(setup *a, int64_t kv_a, setup *b, int64_t kv_b, row *ra, row *rb) {
    double ta[RUNS], tb[RUNS];
    int rc = 0;
    for (int r = 0; r < WARMUP + RUNS && rc == 0; r++) {
        double x = call(a, kv_a, &rc), y = b ? call(b, kv_b, &rc) : 0;
        if (r >= WARMUP) ta[r - WARMUP] = x, tb[r - WARMUP] = y;
    }
    if (rc) return rc;
    *ra = summarize(a, kv_a, ta);
    if (b) *rb = summarize(b, kv_b, tb);
    return 0;
}

static void print_row(const row *r) {
    printf("  %8lld  %8lld  %10.1f us  %8.1f .. %-8.1f  %7.2f GB/s\n", (long long)r->cache,
           (long long)r->kv_valid, r->median_s * 1e6, r->min_s * 1e6, r->max_s * 1e6, r->gbs);
}

int main(void) {
    fe_device *dev = bench_device_open("bench_mha");
    if (!dev) return 1;
    printf("\nMHA decode, Llama 3.2 1B shapes (Sq 1, Hq %d, Hkv %d, D %d, causal), %d workers;\n"
           "median of %d calls, fastest .. slowest; GB/s = attended k/v + q + out bytes / median\n",
           HQ, HKV, HD, fe_device_get_info(dev)->n_workers, RUNS);
    printf("  %8s  %8s  %13s  %20s\n", "cache", "kv_valid", "time/call", "spread (us)");

    setup big = {0}, s512 = {0}, s4k = {0};
    row alone[5], pair[4];
    int rc = setup_make(dev, 32768, &big);
    if (rc == 0) rc = setup_make(dev, 512, &s512);
    if (rc == 0) rc = setup_make(dev, 4096, &s4k);
    /* each alone, then the two pairs in alternation */
    if (rc == 0) rc = time_pair(&big, 512, NULL, 0, &alone[0], NULL);
    if (rc == 0) rc = time_pair(&big, 4096, NULL, 0, &alone[1], NULL);
    if (rc == 0) rc = time_pair(&big, 32768, NULL, 0, &alone[2], NULL);
    if (rc == 0) rc = time_pair(&s512, 512, NULL, 0, &alone[3], NULL);
    if (rc == 0) rc = time_pair(&s4k, 4096, NULL, 0, &alone[4], NULL);
    if (rc == 0) rc = time_pair(&big, 512, &s512, 512, &pair[0], &pair[1]);
    if (rc == 0) rc = time_pair(&big, 4096, &s4k, 4096, &pair[2], &pair[3]);
    if (rc == 0) {
        for (int i = 0; i < 5; i++) print_row(&alone[i]);
        printf("\nsame kv_valid, cache 32768 vs a cache of kv_valid positions, timed call by "
               "call in alternation\n(about 1 when the work follows kv_valid; two 16 MiB "
               "working sets then share the LLC):\n");
        for (int i = 0; i < 4; i += 2)
            printf("  kv_valid %5lld: %8.1f us vs %8.1f us  ratio %.2f\n",
                   (long long)pair[i].kv_valid, pair[i].median_s * 1e6,
                   pair[i + 1].median_s * 1e6, pair[i].median_s / pair[i + 1].median_s);
        printf("\ntime against keys in the 32768 cache (512 and 4096 keys run from the LLC, "
               "32768 from memory):\n");
        for (int i = 1; i < 3; i++)
            printf("  kv_valid %5lld vs 512: keys x%.0f, time x%.1f\n",
                   (long long)alone[i].kv_valid, (double)alone[i].kv_valid / 512.0,
                   alone[i].median_s / alone[0].median_s);
    }
    setup_free(&big);
    setup_free(&s512);
    setup_free(&s4k);
    fe_device_destroy(dev);
    return rc;
}
