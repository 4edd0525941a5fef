/* device/read_gauge.c: the read gauge (read_gauge.h). The loop is plain C: its rate is read
 * against its own rate at another moment, never against a kernel's, so that it need not be
 * the fastest read the ISA allows, only one the memory, not the core, bounds (eight
 * independent 8-byte sums a line, well past one core's share of the memory's rate). */
#include "device/read_gauge.h"

#include "core/alloc.h"
#include "device/split.h"
#include "ferrum/core.h"

/* The buffer: 4 L3s, 256 MiB to 1 GiB, read a quarter a pass, the quarters in turn: a pass
 * reads what was last read three passes (three L3s of reads) before. Twice the L3 read over
 * and over read faster than memory on a 32 MiB-L3 Zen 4 guest (64-72 GB/s against 36 at 128
 * MiB and 32 at 256): its L3 is not a strict LRU, so a pass found part of the last one
 * there. A quarter a pass keeps a pass at about 2 ms there (a figure reads the gauge twice). */
static const size_t MIN_BYTES = (size_t)256 << 20, MAX_BYTES = (size_t)1 << 30;
enum { LINE_WORDS = 8, SUMS = 64, QUARTERS = 4 };

struct fe_read_gauge_job {
    const uint64_t *buf;
    int64_t lines;
    bool fill;
    _Alignas(64) uint64_t sums[SUMS][LINE_WORDS]; /* per worker (mod SUMS): keeps the reads */
};

static void gauge_step(void *ctx, int ith, int nth) {
    fe_read_gauge_job *j = ctx;
    int64_t lo, hi;
    fe_split(j->lines, ith, nth, 64, &lo, &hi); /* shares of 4 KiB pages */
    uint64_t *p = (uint64_t *)j->buf + lo * LINE_WORDS;
    if (j->fill) { /* first touch by the worker that reads the share later */
        for (int64_t i = 0; i < (hi - lo) * LINE_WORDS; i++) p[i] = (uint64_t)i;
        return;
    }
    /* named sums: an array of them was kept on the stack, a store and a load a word */
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (const uint64_t *q = p, *end = p + (hi - lo) * LINE_WORDS; q < end; q += LINE_WORDS) {
        s0 += q[0], s1 += q[1], s2 += q[2], s3 += q[3];
        s4 += q[4], s5 += q[5], s6 += q[6], s7 += q[7];
    }
    uint64_t *out = j->sums[ith % SUMS];
    out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
    out[4] = s4, out[5] = s5, out[6] = s6, out[7] = s7;
}

double fe_read_gauge_run(fe_read_gauge *g, fe_pool *pool, size_t l3_bytes, int passes) {
    if (g->failed) return 0;
    const int width = fe_pool_size(pool);
    if (!g->buf) {
        size_t bytes = 4 * l3_bytes < MIN_BYTES   ? MIN_BYTES
                     : 4 * l3_bytes > MAX_BYTES ? MAX_BYTES
                                                : 4 * l3_bytes;
        g->buf = fe_pages_alloc_huge(bytes);
        g->job = g->buf ? fe_aligned_alloc(64, sizeof *g->job) : NULL;
        if (!g->job) {
            fe_pages_free(g->buf, bytes);
            *g = (fe_read_gauge){.failed = true};
            return 0;
        }
        g->bytes = bytes;
        *g->job = (fe_read_gauge_job){.buf = g->buf, .lines = (int64_t)(bytes / 64), .fill = true};
        fe_pool_run(pool, &(fe_step){gauge_step, g->job, width}, 1, NULL);
    }
    fe_read_gauge_job *j = g->job;
    const size_t quarter = g->bytes / QUARTERS; /* an L3 or more: whole lines */
    double best = 0;
    for (int p = 0; p < (passes > 0 ? passes : 1); p++) {
        const uint64_t *from = g->buf + (g->next++ % QUARTERS) * (quarter / sizeof *g->buf);
        *j = (fe_read_gauge_job){.buf = from, .lines = (int64_t)(quarter / 64)};
        uint64_t t0 = fe_time_ns();
        fe_pool_run(pool, &(fe_step){gauge_step, j, width}, 1, NULL);
        double ns = (double)(fe_time_ns() - t0);
        if (ns > 0 && (double)quarter / ns > best) best = (double)quarter / ns;
    }
    return best;
}

void fe_read_gauge_free(fe_read_gauge *g) {
    if (g->buf) fe_pages_free(g->buf, g->bytes);
    fe_free(g->job);
    *g = (fe_read_gauge){0};
}
