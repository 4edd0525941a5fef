/* ops/rope/rope.h: what RoPE's declaration (rope.c) and its kernels (kernels.inc) share:
 * tunable, extent, value and param indices, and the kernel table.
 *
 * x (S, H, D) f32 -> y (S, H, D) f32 (y may be x), table (P, D) f32 whose row p holds the
 * cos of the D/2 angles of position p, then their sin (lm/model/rope_table.h builds one). Row r of x
 * (all H heads) is rotated by table row pos + r. Extents S, H, D and last_pos; per-call
 * values "rows" (the first rows of x; later rows of y are untouched) and "pos" (in
 * [0, last_pos]). */
#ifndef FE_OPS_ROPE_H
#define FE_OPS_ROPE_H

#include "ops/op.h"

enum { ROPE_WIDTH, ROPE_HPI };                 /* tunables */
enum { ROPE_S, ROPE_H, ROPE_D, ROPE_LAST };    /* extents (last_pos = max(P - S, 0)) */
enum { ROPE_V_ROWS, ROPE_V_POS };              /* per-call values */
enum { ROPE_FORM };                            /* params */
enum { ROPE_ROTATE_HALF, ROPE_INTERLEAVED };   /* values of param form */

/* tile: pairs one vector step rotates (rotate_half: VW pairs; interleaved VW / 2) */
#define FE_ROPE_KERNELS(name)                                                              \
    void fe_##name##_scalar(const fe_args *, const fe_design *, int, int);                \
    void fe_##name##_avx2(const fe_args *, const fe_design *, int, int);                  \
    void fe_##name##_avx512(const fe_args *, const fe_design *, int, int);                \
    static const fe_kernel_decl name##_kernels[] = {                                      \
        {FE_ISA_SCALAR, fe_##name##_scalar, 1},                                           \
        {FE_ISA_AVX2, fe_##name##_avx2, 8},                                               \
        {FE_ISA_AVX512, fe_##name##_avx512, 16},                                          \
    }

#endif
