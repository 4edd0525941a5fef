/* bench/support/membw/avx512.c: the bandwidth loops built for avx512 (see kernels.inc). */
#include "kernels.inc"
