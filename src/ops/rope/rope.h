/* ops/rope/rope.h: what RoPE's declaration (rope.c) and its kernels (kernels.inc) share:
 * tunable, extent, value and param indices.
 *
 * x (S, H, D) f32 -> y (S, H, D) f32 (y may be x), table (P, D) f32 whose row p holds the
 * cos of the D/2 angles of position p, then their sin (a model builds it with
 * lm/model/rope_table.h). Row r of x (all H heads) is rotated by table row pos + r. Extents
 * S, H, D and last_pos; per-call values "rows" (the first rows of x; later rows of y are
 * untouched) and "pos" (in [0, last_pos]). */
#ifndef FE_OPS_ROPE_H
#define FE_OPS_ROPE_H

#include "ops/op.h"

enum { ROPE_WIDTH, ROPE_HPI };                 /* tunables */
enum { ROPE_S, ROPE_H, ROPE_D, ROPE_LAST };    /* extents (last_pos = max(P - S, 0)) */
enum { ROPE_V_ROWS, ROPE_V_POS };              /* per-call values */
enum { ROPE_FORM };                            /* params */
enum { ROPE_ROTATE_HALF, ROPE_INTERLEAVED };   /* values of param form */

#endif
