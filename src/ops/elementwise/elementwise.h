/* ops/elementwise/elementwise.h: what the elementwise family shares.
 *
 * Binary ops (ElementwiseAdd, ElementwiseMul, AXPY) take same-shaped f32 operands viewed as
 * N flat elements, with a per-call bound n (the first n elements; default N). Rowwise ops
 * (RowwiseAdd, RowwiseMul) take a (rows, cols) matrix and a (cols) vector, with a per-call
 * bound on rows. Tunables: WIDTH, and `stream` (non-temporal stores, derived: on when the
 * output outgrows the last-level cache). Kernels live in kernels.inc, compiled per ISA. */
#ifndef FE_OPS_ELEMENTWISE_H
#define FE_OPS_ELEMENTWISE_H

#include "ops/op.h"

enum { EW_WIDTH, EW_STREAM };

extern const fe_tunable_decl fe_elementwise_tunables[2];
extern const fe_value_decl fe_elementwise_flat_values[1];
extern const fe_value_decl fe_elementwise_row_values[1];
extern const char *const fe_elementwise_flat_extents[1];
extern const char *const fe_elementwise_row_extents[2];

/* infer: all operands share operand 0's shape; ext N = element count */
fe_status fe_elementwise_flat_infer(fe_op_ctx *c);
/* infer: operand 0 is (rows, cols), operand 1 is (cols), operand 2 like operand 0 */
fe_status fe_elementwise_row_infer(fe_op_ctx *c);
void fe_elementwise_resolve(fe_op_ctx *c);
/* cost: `flops_per` FLOPs per element; bytes of every operand over the bounded range */
void fe_elementwise_flat_cost(const fe_args *a, const fe_design *d, fe_cost *out);
void fe_elementwise_row_cost(const fe_args *a, const fe_design *d, fe_cost *out);
/* test operands: dims[0] elements (flat, n_operands operands), or (dims[0], dims[1]) rows */
void fe_elementwise_flat3_operands(const fe_case *c, const double *params, fe_tensor *out);
void fe_elementwise_row_operands(const fe_case *c, const double *params, fe_tensor *out);

#endif
