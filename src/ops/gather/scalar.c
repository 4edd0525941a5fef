/* ops/gather/scalar.c: Gather's kernel built for scalar (see kernels.inc). */
#include "ops/gather/kernels.inc"
