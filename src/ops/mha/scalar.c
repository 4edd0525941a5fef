/* ops/mha/scalar.c: the MHA kernel built for scalar (see kernels.inc). */
#include "ops/mha/kernels.inc"
