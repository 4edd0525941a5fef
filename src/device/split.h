/* device/split.h: how a step's n items are shared among its nth workers: worker ith takes
 * one contiguous range, ranges differ in size by at most one align unit, and every range
 * starts on a multiple of align (so a worker's vectors or cache lines are its own). Kernels
 * and anything else dispatched on the pool split their work with it. */
#ifndef FE_DEVICE_SPLIT_H
#define FE_DEVICE_SPLIT_H

#include <stdint.h>

/* The range [lo, hi) of n items that worker ith of nth takes, lo and hi multiples of align
 * (except hi == n). */
static inline void fe_split(int64_t n, int ith, int nth, int64_t align, int64_t *lo,
                            int64_t *hi) {
    if (align < 1) align = 1;
    int64_t units = (n + align - 1) / align;
    int64_t per = units / nth, extra = units % nth;
    int64_t u0 = ith * per + (ith < extra ? ith : extra);
    int64_t u1 = u0 + per + (ith < extra ? 1 : 0);
    *lo = u0 * align < n ? u0 * align : n;
    *hi = u1 * align < n ? u1 * align : n;
}

#endif
