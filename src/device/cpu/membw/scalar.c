/* device/cpu/membw/scalar.c: the bandwidth loops built for scalar (see kernels.inc). */
#include "device/cpu/membw/kernels.inc"
