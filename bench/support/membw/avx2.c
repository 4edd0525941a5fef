/* bench/support/membw/avx2.c: the bandwidth loops built for avx2 (see kernels.inc). */
#include "kernels.inc"
