/* ops/gather/avx2.c: Gather's kernel built for avx2 (see kernels.inc). */
#include "ops/gather/kernels.inc"
