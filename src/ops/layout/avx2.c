/* ops/layout/avx2.c: the layout family's kernels (Copy, Transpose) built for avx2 (see kernels.inc). */
#include "ops/layout/kernels.inc"
