/* ops/activation/avx2.c: the activation family's kernels built for avx2 (see kernels.inc). */
#include "ops/activation/kernels.inc"
