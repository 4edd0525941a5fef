/* ops/sample/avx512.c: Sample's kernel built for avx512 (see kernels.inc). */
#include "ops/sample/kernels.inc"
