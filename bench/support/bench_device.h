/* bench/support/bench_device.h: what every bench does first: make the default device (its
 * pool pins the workers, this thread as worker 0 on CPU 0) and print the machine line and
 * the load average beside the numbers. */
#ifndef FE_BENCH_DEVICE_H
#define FE_BENCH_DEVICE_H

#include "ferrum/device.h"

/* The device, or NULL after printing why to stderr as "prog: message". */
fe_device *bench_device_open(const char *prog);
/* "load average (1 min) at <when>: x.xx" */
void bench_print_load(const char *when);

#endif
