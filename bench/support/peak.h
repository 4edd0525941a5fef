/* bench/support/peak.h: the arithmetic peak of this machine's workers, measured, for benches
 * that judge a compute-bound kernel (GEMM, prefill) against it. */
#ifndef FE_BENCH_PEAK_H
#define FE_BENCH_PEAK_H

#include <stdbool.h>

#include "ferrum/device.h"

/* GFLOP/s of all workers together, best and median of `repeats` runs (1..16): of f32 FMAs
 * (zmm on AVX-512 devices, ymm on AVX2; *lanes = 16 or 8), or with bf16 of vdpbf16ps (2
 * products a lane; *lanes = 0 and the figures 0 where the device lacks AVX512_BF16). */
void fe_flops_peak(fe_device *dev, bool bf16, int repeats, double *best, double *median,
                   int *lanes);

#endif
