/* ops/sample/scalar.c: Sample's kernel built for scalar (see kernels.inc). */
#include "ops/sample/kernels.inc"
