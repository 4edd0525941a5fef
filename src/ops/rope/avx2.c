/* ops/rope/avx2.c: RoPE's kernel built for avx2 (see kernels.inc). */
#include "ops/rope/kernels.inc"
