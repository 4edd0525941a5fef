/* ops/norm/norm.h: what the row-normalisation family (Softmax, RMSNorm, LayerNorm) shares.
 *
 * Each op takes x (rows, cols) f32, optional per-column vectors (weight, bias: (cols) each,
 * absent = rank 0), and y shaped like x, in that order. Extents: rows, cols. Per-call
 * values: "rows" (the first rows are computed; later rows are untouched), and for Softmax
 * also "valid_cols". Tunables: WIDTH (workers) and rows_per_item (workers split the bounded
 * rows in whole items of that many rows). Kernels live in kernels.inc, compiled per ISA.
 *
 * Test cases leave optional operands out through fe_case.absent (operands_for gives rank 0). */
#ifndef FE_OPS_NORM_H
#define FE_OPS_NORM_H

#include "ops/op.h"

enum { NORM_WIDTH, NORM_RPI, NORM_STREAM };
enum { NORM_ROWS, NORM_COLS };         /* extents */
enum { NORM_V_ROWS, NORM_V_VALID };    /* per-call values (valid_cols: Softmax only) */

extern const fe_tunable_decl fe_norm_tunables[3];
extern const char *const fe_norm_extents[2];
extern const fe_value_decl fe_norm_values[2];

/* infer: operand 0 is (rows, cols); operands 1..n-2 are optional (cols) vectors; the last
 * operand has operand 0's shape. ext = {rows, cols}. */
fe_status fe_norm_infer(fe_op_ctx *c);
/* test operands: x = (dims[0], dims[1]), n_vectors (cols) vectors named by the op's
 * operands 1..n_vectors (absent when the case name contains "no_<name>"), y like x. */
void fe_norm_operands(const fe_case *c, const fe_operand_decl *decl, int n_vectors,
                      fe_tensor *out);

/* the kernels, tile = the 4-vector unrolled block of the reduction loops */
/* stream: on when the output outgrows the last-level cache (derived from the extents) */
void fe_norm_resolve(fe_op_ctx *c);
/* Softmax's workspace: one row of exponentials per worker, so the final pass can stream */
size_t fe_norm_softmax_workspace(const fe_args *a, const fe_design *d, int nth);

#endif
