/* ops/kernel.h: the internal side of fe_kernel, for the graph compiler and the tests:
 * its design, the args a run would see, running the reference, and the step it dispatches. */
#ifndef FE_OPS_KERNEL_H
#define FE_OPS_KERNEL_H

#include "ops/op.h"

const fe_design *fe_kernel_design(const fe_kernel *k);
const int64_t *fe_kernel_extents(const fe_kernel *k);
/* Checks operands and values as fe_kernel_run does and fills `out`; no work runs. */
fe_status fe_kernel_bind(fe_kernel *k, const fe_tensor *operands, int n_operands,
                         const int64_t *values, int n_values, fe_args *out);
/* Runs the op's reference (single thread, plain float32/double) on bound args. */
fe_status fe_kernel_run_reference(fe_kernel *k, const fe_tensor *operands, int n_operands,
                                  const int64_t *values, int n_values);
/* Layouts (fe_op.layout): the bytes of input operand i in the design's own layout at the
 * kernel's extents, 0 when the design reads it as stored; *format (may be NULL) names the
 * layout's format. */
size_t fe_kernel_layout_bytes(const fe_kernel *k, int operand, uint64_t *format);
/* Writes operand i in that layout into dst (64-byte aligned, fe_kernel_layout_bytes long)
 * from t (the operand as the kernel was made for, with data), on the kernel's device and
 * width. FE_E_INVALID when t does not match or the design has no layout for operand i. */
fe_status fe_kernel_make_layout(fe_kernel *k, int operand, const fe_tensor *t, void *dst);
/* fe_kernel_run, reading operand i from layouts[i] where that is not NULL: made by
 * fe_kernel_make_layout from operands[i], whose contents have not changed since (borrowed
 * for the run). layouts may be NULL; else it holds n_operands entries, as operands does
 * (the operands past them, optional ones the op declares later, have none). */
fe_status fe_kernel_run_layouts(fe_kernel *k, const fe_tensor *operands, int n_operands,
                                const void *const *layouts, const int64_t *values,
                                int n_values);
/* The kernel function a dispatch runs and the workers it runs on (the resolved WIDTH). */
fe_kernel_fn fe_kernel_function(const fe_kernel *k);
int fe_kernel_width(const fe_kernel *k);
/* Where tunable i of the design came from, by the precedence (the tuner holds what the call
 * site or the profile gave and searches the rest). */
typedef enum {
    FE_TUNABLE_FROM_CALL_SITE = 0,
    FE_TUNABLE_FROM_PROFILE,
    FE_TUNABLE_FROM_RESOLVE,
    FE_TUNABLE_FROM_DEFAULT,
} fe_tunable_source;
fe_tunable_source fe_kernel_tunable_source(const fe_kernel *k, int i);
/* The scratch the op needs; made with shared_workspace, the caller sets args->ws to it. */
size_t fe_kernel_workspace_bytes(const fe_kernel *k);
/* Matches a profile entry for a request being made (tunable_profile.c). Sets tunables not yet set;
 * returns FE_OK when nothing matched. */
fe_status fe_profile_apply(const fe_profile *p, fe_op_ctx *c);

#endif
