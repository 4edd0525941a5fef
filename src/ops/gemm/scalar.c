/* ops/gemm/scalar.c: the GEMM kernel built for scalar (see kernels.inc). */
#include "ops/gemm/kernels.inc"
