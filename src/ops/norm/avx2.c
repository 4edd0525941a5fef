/* ops/norm/avx2.c: the norm family's kernels built for avx2 (see kernels.inc). */
#include "ops/norm/kernels.inc"
