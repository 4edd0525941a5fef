/* ops/gemm/avx512.c: the GEMM kernel built for avx512 (see kernels.inc). */
#include "ops/gemm/kernels.inc"
