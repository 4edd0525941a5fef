/* ops/elementwise/avx512.c: the elementwise family's kernels built for avx512 (see kernels.inc). */
#include "ops/elementwise/kernels.inc"
