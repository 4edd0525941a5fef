/* bench/support/membw/scalar.c: the bandwidth loops built for scalar (see kernels.inc). */
#include "kernels.inc"
