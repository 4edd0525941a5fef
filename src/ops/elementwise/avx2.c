/* ops/elementwise/avx2.c: the elementwise family's kernels built for avx2 (see kernels.inc). */
#include "ops/elementwise/kernels.inc"
