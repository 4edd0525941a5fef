/* ops/rope/avx512.c: RoPE's kernel built for avx512 (see kernels.inc). */
#include "ops/rope/kernels.inc"
