/* lm/eval/oracle_math.h: the plain float64-accumulating primitives the oracles share (a
 * matrix product over decoded rows, RMSNorm in place, rotate-half RoPE, GELU tanh). Written
 * from the definitions, never through the graph or the operators' kernels. */
#ifndef FE_LM_EVAL_ORACLE_MATH_H
#define FE_LM_EVAL_ORACLE_MATH_H

#include "ferrum/ops.h"

/* out[i][r] = W[r] . x[i] for n rows x (n, in) -> out (n, rows); W's rows decoded one at a
 * time into row (in floats) with fe_dequant_row */
void fe_oracle_matmul(const fe_tensor *w, const float *x, int n, float *out, float *row);

/* x (d) normalised by its root mean square, times w (f32), in place */
void fe_oracle_rmsnorm(float *x, const fe_tensor *w, int64_t d, double eps);

/* rotate-half RoPE of one head vector v (hd) at position pos with base theta */
void fe_oracle_rope_half(float *v, int64_t hd, int64_t pos, double theta);

/* GELU, tanh form */
double fe_oracle_gelu_tanh(double x);

#endif
