/* ops/activation/activation.h: what the activation family (unary y = f(x)) shares.
 *
 * Every op (ReLU, LeakyReLU, SiLU, GELU, Sigmoid, Tanh, Clamp) takes x (f32, rank 1..4) and
 * writes y of the same shape, viewed as N flat elements, with a per-call bound n (the first
 * n elements; default N). Infer, resolve, tunables (WIDTH, stream), extents and values are
 * the elementwise family's; cost and test operands are ours. Kernels live in kernels.inc,
 * compiled per ISA; a kernel reads its params as d->params[i] in declaration order. */
#ifndef FE_OPS_ACTIVATION_H
#define FE_OPS_ACTIVATION_H

#include "ops/elementwise/elementwise.h"

/* cost: `flops_per` FLOPs per element; 8 bytes per element (read x, write y) */
void fe_activation_cost(const fe_args *a, double flops_per, fe_cost *out);
/* test operands: x and y, both contiguous f32 of the case's dims */
void fe_activation_operands(const fe_case *c, const double *params, fe_tensor *out);
/* the two operands every activation declares */
#define FE_ACT_OPERANDS                                                                    \
    static const fe_operand_decl operands[] = {                                           \
        {"x", FE_IN, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},                                \
        {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},                               \
    }

#endif
