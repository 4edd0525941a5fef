/* ops/activation/scalar.c: the activation family's kernels built for scalar (see kernels.inc). */
#include "ops/activation/kernels.inc"
