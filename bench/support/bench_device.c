/* bench/support/bench_device.c: see bench_device.h. */
#include "bench_device.h"

#include <stdio.h>
#include <stdlib.h>

void bench_print_load(const char *when) {
    double load[1] = {0};
    if (getloadavg(load, 1) == 1) printf("load average (1 min) at %s: %.2f\n", when, load[0]);
}

fe_device *bench_device_open(const char *prog) {
    fe_device_options o = fe_device_options_default();
    fe_device *dev = NULL;
    fe_error err = {0};
    if (fe_device_create(&o, &dev, &err) != FE_OK) {
        fprintf(stderr, "%s: %s\n", prog, err.message);
        return NULL;
    }
    char desc[512];
    fe_device_describe(dev, desc, sizeof desc);
    printf("machine: %s\n", desc);
    bench_print_load("start");
    return dev;
}
