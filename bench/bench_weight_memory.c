/* bench/bench_weight_memory.c: where a model's weights should live for decoding. A decode step
 * streams every weight once, so the memory the weights sit in can matter as much as the
 * kernel: this times the BF16 GEMV (src/ops/gemv; panel = 0, reading W as stored) over one
 * matrix of Llama 3.2 1B's head (128256 x 2048, 525 MB, far past the caches) placed in each of
 *   - map:       a read-only private file mapping of a file holding it (how a checkpoint is
 *                read when it is used mapped), pages faulted in by a first pass;
 *   - populate:  the same with MAP_POPULATE;
 *   - anon-4k:   anonymous memory, MADV_NOHUGEPAGE (4 KiB pages);
 *   - anon-huge: anonymous memory, 2 MiB aligned, MADV_HUGEPAGE (transparent huge pages);
 * round-robin over 15 rounds, so that the host's drifting bandwidth hits every placement alike,
 * each run cold (a 256 MiB read before it). Prints the median GB/s of each and the median of
 * its per-round ratio to `map`, with the huge pages the kernel actually gave
 * (AnonHugePages / FilePmdMapped of this process). The file goes to $TMPDIR (default /tmp)
 * and is removed at the end. Usage: bench_weight_memory [rows] (default 128256). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "support/membw.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "support/bench_device.h"

enum { ROUNDS = 15, PLACES = 4, K = 2048 };
static const char *const place_names[PLACES] = {"map", "populate", "anon-4k", "anon-huge"};

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* smaps_rollup's huge-page lines, in MiB */
static void huge_pages(double *anon_mib, double *file_mib) {
    *anon_mib = *file_mib = 0;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return;
    char line[256];
    long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) *anon_mib = (double)kb / 1024;
        if (sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1) *file_mib = (double)kb / 1024;
    }
    fclose(f);
}

static void *anon(size_t bytes, bool huge) {
    size_t align = (size_t)2 << 20, len = (bytes + align - 1) & ~(align - 1);
    char *p = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    madvise(a, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return a; /* the bench exits without unmapping */
}

int main(int argc, char **argv) {
    int64_t N = argc > 1 ? atoll(argv[1]) : 128256;
    if (N < 16 || N > (1 << 22)) {
        fprintf(stderr, "bench_weight_memory: rows must be in [16, 4194304]; got %s\n", argv[1]);
        return 2;
    }
    fe_device *dev = bench_device_open("bench_weight_memory");
    if (!dev) return 1;
    fe_error err = {0};

    size_t bytes = (size_t)N * K * 2;
    uint16_t *src = anon(bytes, false);
    float *x = malloc(K * sizeof *x), *y = malloc((size_t)N * sizeof *y);
    int64_t roof_n = 64 << 20;
    float *roof = malloc((size_t)roof_n * sizeof *roof);
    if (!src || !x || !y || !roof) {
        fprintf(stderr, "bench_weight_memory: out of memory\n");
        return 1;
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < bytes / 2; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        src[i] = fe_f32_to_bf16((float)((double)(s >> 11) / 9007199254740992.0 - 0.5));
    }
    for (int i = 0; i < K; i++) x[i] = (float)(i % 7) - 3;
    for (int64_t i = 0; i < roof_n; i++) roof[i] = 1;

    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/ferrum_bench_weights_XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, src, bytes) != (ssize_t)bytes) {
        fprintf(stderr, "bench_weight_memory: cannot write %zu bytes to %s\n", bytes, path);
        return 1;
    }
    void *place[PLACES];
    place[0] = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    place[1] = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    place[2] = src;
    place[3] = anon(bytes, true);
    close(fd);
    unlink(path);
    if (place[0] == MAP_FAILED || place[1] == MAP_FAILED || !place[3]) {
        fprintf(stderr, "bench_weight_memory: cannot map the weights\n");
        return 1;
    }
    memcpy(place[3], src, bytes);
    volatile uint16_t sink = 0;
    for (size_t i = 0; i < bytes / 2; i += 2048) sink ^= ((const uint16_t *)place[0])[i]; /* fault in */
    (void)sink;
    double anon_mib, file_mib;
    huge_pages(&anon_mib, &file_mib);
    printf("GEMV bf16 %lld x %d (%.0f MB); huge pages in this process: anonymous %.0f MiB, "
           "file PMD-mapped %.0f MiB\n", (long long)N, K, (double)bytes / 1e6, anon_mib, file_mib);

    int64_t wshape[2] = {N, K}, xshape[2] = {1, K}, yshape[2] = {1, N};
    fe_tensor ops[6] = {
        [0] = fe_tensor_contiguous(place[0], FE_DTYPE_BF16, 2, wshape),
        [1] = fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xshape),
        [5] = fe_tensor_contiguous(y, FE_DTYPE_F32, 2, yshape),
    };
    /* panel = 0: the kernel reads W as stored, where this bench places it (panel = 1 would
     * read a layout the plan makes in memory of its own, or pack W per call here) */
    const fe_setting rows_as_stored[1] = {{"panel", 0}};
    fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6,
                         .tunables = rows_as_stored, .n_tunables = 1};
    fe_kernel *k = NULL;
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) {
        fprintf(stderr, "bench_weight_memory: %s\n", err.message);
        return 1;
    }
    double gbs[PLACES][ROUNDS], ratio[PLACES][ROUNDS], roofs[ROUNDS];
    for (int r = -1; r < ROUNDS; r++) { /* round -1 warms every placement */
        for (int p = 0; p < PLACES; p++) {
            fe_membw_stats rs;
            fe_membw_read(dev, roof, roof_n, 4, 1, &rs);
            if (r >= 0 && p == 0) roofs[r] = rs.best_gbs;
            ops[0].data = place[p];
            uint64_t t0 = fe_time_ns();
            fe_kernel_run(k, ops, 6, NULL, 0);
            double sec = (double)(fe_time_ns() - t0) * 1e-9;
            if (r >= 0) gbs[p][r] = (double)bytes / sec / 1e9;
        }
        for (int p = 0; r >= 0 && p < PLACES; p++) ratio[p][r] = gbs[p][r] / gbs[0][r];
    }
    printf("read bandwidth (4 streams per worker) beside the runs: median %.1f GB/s\n",
           median(roofs, ROUNDS));
    printf("  %-10s %12s %10s %14s\n", "placement", "GB/s median", "spread", "vs map (paired)");
    for (int p = 0; p < PLACES; p++) {
        double r = median(ratio[p], ROUNDS), m = median(gbs[p], ROUNDS);
        printf("  %-10s %12.1f %4.1f..%-5.1f %13.3fx\n", place_names[p], m, gbs[p][0],
               gbs[p][ROUNDS - 1], r);
    }
    bench_print_load("the end");
    fe_kernel_destroy(k);
    fe_device_destroy(dev);
    return 0;
}
