/* device/counters.h: what a device counts, for the graph layer and the tests rather than
 * the public API: dispatches since creation (a graph reports how many a call made, and the
 * tests check a fused call is one dispatch). */
#ifndef FE_DEVICE_COUNTERS_H
#define FE_DEVICE_COUNTERS_H

#include <stdint.h>

#include "ferrum/device.h"

/* Dispatches (fe_device_dispatch, fe_device_dispatch_timed) since the device was created. */
uint64_t fe_device_dispatch_count(const fe_device *dev);

#endif
