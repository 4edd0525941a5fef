/* ops/layout/avx512.c: the layout family's kernels (Copy, Transpose) built for avx512 (see kernels.inc). */
#include "ops/layout/kernels.inc"
