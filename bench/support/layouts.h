/* bench/support/layouts.h: the weight layouts a kernel reads its inputs from (fe_op.layout:
 * the GEMV and GEMM panel designs), made once as a graph makes them for a model's weights.
 * A bench that runs such a kernel by fe_kernel_run alone times a per-call packing the model
 * never pays; it runs it by fe_kernel_run_layouts over these. */
#ifndef FE_BENCH_LAYOUTS_H
#define FE_BENCH_LAYOUTS_H

#include "ferrum/ops.h"

/* lay[i] (n_ops of them): operand i in k's layout, made from ops[i], or NULL where k reads
 * operand i as stored. Returns how many were made, or -1 when out of memory (lay then holds
 * what was made: free it). */
int bench_layouts_make(fe_kernel *k, const fe_tensor *ops, int n_ops, void **lay);
void bench_layouts_free(void **lay, int n_ops);

#endif
