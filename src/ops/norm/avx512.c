/* ops/norm/avx512.c: the norm family's kernels built for avx512 (see kernels.inc). */
#include "ops/norm/kernels.inc"
