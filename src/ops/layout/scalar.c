/* ops/layout/scalar.c: the layout family's kernels (Copy, Transpose) built for scalar (see kernels.inc). */
#include "ops/layout/kernels.inc"
