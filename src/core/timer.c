/* core/timer.c: the monotonic clock. */
#include <time.h>

#include "ferrum/core.h"

uint64_t fe_time_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
