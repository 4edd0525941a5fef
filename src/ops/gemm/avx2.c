/* ops/gemm/avx2.c: the GEMM kernel built for avx2 (see kernels.inc). */
#include "ops/gemm/kernels.inc"
