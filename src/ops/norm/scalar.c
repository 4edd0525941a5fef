/* ops/norm/scalar.c: the norm family's kernels built for scalar (see kernels.inc). */
#include "ops/norm/kernels.inc"
