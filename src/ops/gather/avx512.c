/* ops/gather/avx512.c: Gather's kernel built for avx512 (see kernels.inc). */
#include "ops/gather/kernels.inc"
