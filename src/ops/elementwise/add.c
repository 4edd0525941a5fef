/* ops/elementwise/add.c: ElementwiseAdd, y = a + b, elementwise over same-shaped f32 tensors. */
#include "ops/elementwise/elementwise.h"

FE_KERNELS(elementwise_add, 1, 8, 16);

static const fe_operand_decl operands[] = {
    {"a", FE_IN, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},
    {"b", FE_IN, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 1, FE_MAX_RANK},
};

static void reference(const fe_args *args, const fe_design *d) {
    (void)d;
    const float *pa = args->t[0].data, *pb = args->t[1].data;
    float *y = args->t[2].data;
    for (int64_t i = 0; i < args->v[0]; i++) {
        double a = pa[i], b = pb[i];
        y[i] = (float)(a + b);
    }
}

static const fe_case cases[] = {
    {.name = "small", .dims = {1000}, .n_dims = 1},
    {.name = "64MiB", .dims = {(int64_t)16 << 20}, .n_dims = 1, .extensive = true, .bench = true},
};

FE_OP_DEFINE(elementwise_add) {
    .name = "ElementwiseAdd",
    .summary = "y = a + b, elementwise",
    .tunables = fe_elementwise_tunables, .n_tunables = 2,
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = fe_elementwise_flat_extents, .n_extents = 1,
    .values = fe_elementwise_flat_values, .n_values = 1,
    .infer = fe_elementwise_flat_infer,
    .resolve = fe_elementwise_resolve,
    .reference = reference,
    .kernels = elementwise_add_kernels, .n_kernels = FE_COUNT(elementwise_add_kernels),
    .cost = fe_elementwise_flat_cost,
    .operands_for = fe_elementwise_flat3_operands,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-6, .atol = 0,
};
