/* device/read_gauge.h: the device's gauge of the memory's read rate (fe_device_read_gbps):
 * a buffer past the last-level cache, made on first use and kept with the device, that every
 * worker sums a share of. */
#ifndef FE_DEVICE_READ_GAUGE_H
#define FE_DEVICE_READ_GAUGE_H

#include <stddef.h>
#include <stdint.h>

#include "device/cpu/pool.h"

typedef struct fe_read_gauge_job fe_read_gauge_job; /* a pass's step context (read_gauge.c) */

typedef struct fe_read_gauge {
    uint64_t *buf;          /* NULL until first use */
    size_t bytes;
    fe_read_gauge_job *job; /* made with buf */
    unsigned next;          /* the quarter the next pass reads */
    bool failed;            /* the buffer could not be had: the gauge reads 0 from then on */
} fe_read_gauge;

/* The best of `passes` passes, each over the next quarter of the buffer (made on first use:
 * four times l3_bytes, 256 MiB to 1 GiB), each worker of the pool summing its contiguous
 * share; GB/s (1e9 bytes), 0 when the buffer cannot be had. */
double fe_read_gauge_run(fe_read_gauge *g, fe_pool *pool, size_t l3_bytes, int passes);
void fe_read_gauge_free(fe_read_gauge *g);

#endif
