/* ops/sample/avx2.c: Sample's kernel built for avx2 (see kernels.inc). */
#include "ops/sample/kernels.inc"
