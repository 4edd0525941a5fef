/* ops/activation/shared.c: cost and test operands shared by the activation family. */
#include "ops/activation/activation.h"

void fe_activation_cost(const fe_args *a, double flops_per, fe_cost *out) {
    double n = (double)a->v[0];
    out->flops = n * flops_per;
    out->bytes = n * 8.0;
}

void fe_activation_operands(const fe_case *c, const double *params, fe_tensor *out) {
    (void)params;
    int rank = c->n_dims > 0 ? c->n_dims : 1;
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, rank, c->dims);
    out[1] = out[0];
}
