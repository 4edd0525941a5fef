/* ops/mha/avx2.c: the MHA kernel built for avx2 (see kernels.inc). */
#include "ops/mha/kernels.inc"
