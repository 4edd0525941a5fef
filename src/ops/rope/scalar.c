/* ops/rope/scalar.c: RoPE's kernel built for scalar (see kernels.inc). */
#include "ops/rope/kernels.inc"
