/* ops/elementwise/scalar.c: the elementwise family's kernels built for scalar (see kernels.inc). */
#include "ops/elementwise/kernels.inc"
