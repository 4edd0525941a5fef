/* bench/support/membw.h: measured memory bandwidth of this machine, the roofs that bench/ judges
 * memory-bound kernels against.
 *
 * Two figures, each taken with every worker of the device pool (one dispatch, one step of
 * width n_workers, each worker on its own contiguous share):
 *   read:  summing a large f32 buffer, with k = 1, 2, 4, 8 concurrent read streams per
 *          worker (the share split into k sub-chunks read interleaved in one loop);
 *   triad: STREAM's a[i] = b[i] + s * c[i] over three arrays, counting three arrays' bytes
 *          as STREAM does, with normal and with non-temporal stores.
 * Buffers come from fe_aligned_alloc (64-byte aligned, like kernel operands here) and are
 * touched by the workers before timing. The loops are written once over device/cpu/vec.h in
 * membw/kernels.inc and built once per ISA by the Makefile; the device's
 * fe_device_info.isa picks one at run time. 1 GB = 1e9 bytes throughout. */
#ifndef FE_BENCH_MEMBW_H
#define FE_BENCH_MEMBW_H

#include "ferrum/device.h"

/* Summary of repeated timings of one measurement. GB/s figures are bytes / time. */
typedef struct fe_membw_stats {
    int runs;
    double bytes;      /* bytes counted per run */
    double median_s, min_s, max_s;
    double best_gbs;   /* bytes / min_s: the best run */
    double median_gbs; /* bytes / median_s */
    double worst_gbs;  /* bytes / max_s: the slowest run */
} fe_membw_stats;

/* Sorts times[0..n) in place and fills *out (n >= 1). */
void fe_membw_summarize(double *times_s, int n, double bytes, fe_membw_stats *out);

enum { FE_MEMBW_READ_KS = 4 }; /* k = 1, 2, 4, 8 */

typedef struct fe_membw_options {
    size_t read_bytes;  /* read buffer; 0: 256 MiB */
    size_t triad_bytes; /* each triad array; 0: 64 MiB */
    int repeats;        /* timed runs per measurement; 0: 10 */
} fe_membw_options;

typedef struct fe_membw_report {
    fe_isa isa;          /* the loops' ISA (the device's fe_device_info.isa) */
    int n_workers;
    size_t read_bytes, triad_bytes;
    int read_k[FE_MEMBW_READ_KS];
    fe_membw_stats read[FE_MEMBW_READ_KS];
    fe_membw_stats triad_store, triad_stream; /* normal / non-temporal stores */
    double read_gbs;  /* best read over every k and run */
    double triad_gbs; /* best triad over both store kinds and every run */
} fe_membw_report;

/* Allocates the buffers, touches them with the workers, measures read (every k) and triad
 * (both store kinds) and frees the buffers. FE_E_NOMEM when the buffers cannot be had. */
fe_status fe_membw_measure(fe_device *dev, const fe_membw_options *opts, fe_membw_report *out);

/* The single measurements on caller buffers (64-byte aligned, already touched):
 * read of n floats with `streams` (1..8) streams per worker, `repeats` runs; */
void fe_membw_read(fe_device *dev, const float *buf, int64_t n, int streams, int repeats,
                   fe_membw_stats *out);
/* triad a = b + s * c over n floats each, `repeats` runs. */
void fe_membw_triad(fe_device *dev, float *a, const float *b, const float *c, int64_t n,
                    bool nontemporal, int repeats, fe_membw_stats *out);

/* Per-ISA loops (membw/kernels.inc). read: sum of p[0..n) with `streams` interleaved
 * sub-chunks; triad: a = b + s * c over [0, n), streaming stores when `nt`. */
#define FE_MEMBW_DECLARE(sfx)                                                              \
    float fe_membw_read_##sfx(const float *p, int64_t n, int streams);                    \
    void fe_membw_triad_##sfx(float *a, const float *b, const float *c, float s, int64_t n, \
                              bool nt)
FE_MEMBW_DECLARE(scalar);
FE_MEMBW_DECLARE(avx2);
FE_MEMBW_DECLARE(avx512);

#endif
