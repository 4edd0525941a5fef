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

/* GFLOP/s of AMX-BF16 tiles, all workers, best and median of `repeats`: 4 chains of
 * TDPBF16PS (16 x 16 x 32 products each); 0 where the device has no AMX-BF16 (or runs
 * kernels below AVX-512). */
void fe_amx_peak(fe_device *dev, int repeats, double *best, double *median);

/* Giga int8 operations a second (2 per multiply-add, as GFLOP/s counts), best and median of
 * `repeats`: 16 chains of AVX512-VNNI vpdpbusd (16 lanes x 4 u8 x s8 products; *lanes 16)
 * where the device has it, 16 chains of AVX-VNNI's on ymm (*lanes 8) where the avx2 kernels
 * use it (fe_device_info.avxvnni), else 12 chains of AVX2 vpmaddubsw + vpmaddwd + vpaddd (32
 * products in 8 int32 lanes; *lanes 8), what act_int8's 16-bit path runs per product;
 * *vnni says which. */
void fe_int8_peak(fe_device *dev, int repeats, double *best, double *median, int *lanes,
                  bool *vnni);

/* The int8 x int8 peak without VNNI, as fe_int8_peak counts it: 12 chains of vpsignb +
 * vpmaddubsw + vpmaddwd + vpaddd (8 lanes x 4 products), the sign transfer act_int8 runs
 * for q8_0 B on AVX2 (a signed B has no u8 operand for vpmaddubsw); 0 without AVX2. */
void fe_int8_sign_peak(fe_device *dev, int repeats, double *best, double *median);

/* fe_peak_cpu_time(true): the peaks above (and fe_peak_clock_s) time by this process's CPU
 * time instead of the wall clock, each figure then the rate of the workers while they ran
 * (ops / CPU seconds x workers): on a host shared with other jobs, what a quiet machine
 * would give, as far as the others leave the caches and clocks alone. Off by default. */
void fe_peak_cpu_time(bool on);
/* Seconds on the clock fe_peak_cpu_time chose (process CPU time there; only differences
 * mean anything). */
double fe_peak_clock_s(void);

#endif
