/* ops/activation/avx512.c: the activation family's kernels built for avx512 (see kernels.inc). */
#include "ops/activation/kernels.inc"
