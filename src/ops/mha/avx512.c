/* ops/mha/avx512.c: the MHA kernel built for avx512 (see kernels.inc). */
#include "ops/mha/kernels.inc"
