/* ferrum/ops.h: declared operators, run one at a time.
 *
 * An operator (a registry entry) is made into a kernel for given operand shapes: its params
 * are checked (infer), its tunables resolved (call site > profile > resolve(dev) > default)
 * and a kernel variant picked for the device's ISA. The result is a design plus extents.
 * fe_kernel_run checks the operands and per-call values against what was compiled and runs
 * nothing when any is wrong. Graphs (graph.h) lower the same kernels into plans. */
#ifndef FERRUM_OPS_H
#define FERRUM_OPS_H

#include <stdio.h>

#include "ferrum/core.h"
#include "ferrum/device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FE_MAX_RANK 4

/* A view of memory. Strides are in elements. A contiguous tensor has stride[rank-1] = 1. */
typedef struct fe_tensor {
    void *data;
    fe_dtype dtype;
    int rank; /* 1..FE_MAX_RANK; 0 marks an absent optional operand */
    int64_t shape[FE_MAX_RANK];
    int64_t stride[FE_MAX_RANK];
} fe_tensor;

/* A row-major contiguous view of `data` (which may be NULL when only the shape matters). */
FE_API fe_tensor fe_tensor_contiguous(void *data, fe_dtype dt, int rank, const int64_t *shape);
/* Elements in the view (product of the shape). */
FE_API int64_t fe_tensor_numel(const fe_tensor *t);
/* "(2048, 8192)" into buf (cut to fit, always terminated): shapes in messages. */
FE_API void fe_shape_format(int rank, const int64_t *shape, char *buf, size_t n);

/* A param or tunable by name. A CHOICE param (GEMV's epilogue, RoPE's form...) is best
 * given by its option's name, `choice`, which is checked against the declared options (an
 * unknown one is refused, listing them) and becomes the option's index; `value` is then
 * ignored. FE_CHOICE("epilogue", "swiglu") writes one in an initializer (static tables
 * included). Borrowed for the call only. */
typedef struct fe_setting {
    const char *name;
    double value;
    const char *choice; /* NULL: value holds the number (for a CHOICE, the option's index) */
} fe_setting;

#define FE_CHOICE(param, option) {.name = (param), .choice = (option)}

typedef struct fe_op fe_op;           /* a declaration; static, never freed */
typedef struct fe_profile fe_profile; /* tunables as data, most specific match wins */
typedef struct fe_kernel fe_kernel;   /* an operator made for one device and extents */

/* The registry. fe_op_find matches names without regard to case; NULL when absent. */
FE_API int fe_op_count(void);
FE_API const fe_op *fe_op_at(int i);
FE_API const fe_op *fe_op_find(const char *name);
FE_API const char *fe_op_name(const fe_op *op);
FE_API const char *fe_op_summary(const fe_op *op);
/* Writes op's declaration to f as text, several lines: operands, params, tunables with their
 * search domains, per-call values, kernels and tolerance (what `ferrum ops` prints). */
FE_API void fe_op_describe(const fe_op *op, FILE *f);

typedef struct fe_op_request {
    const char *op;              /* registry name, e.g. "Softmax" */
    const fe_tensor *operands;   /* in declaration order; data is ignored here */
    int n_operands;
    const fe_setting *params;    /* by name; unnamed params take their declared default */
    int n_params;
    const fe_setting *tunables;  /* the call site's settings: highest precedence */
    int n_tunables;
    const fe_profile *profile;   /* may be NULL; borrowed for the call only */
    bool shared_workspace;       /* the caller provides the op's scratch at run time (a graph
                                  * shares one region among steps that never overlap) */
} fe_op_request;

/* Makes a kernel. On error *out is NULL and err says which rule broke and how to fix it.
 * The device is borrowed and must outlive the kernel. Caller fe_kernel_destroy()s. */
FE_API fe_status fe_kernel_create(fe_device *dev, const fe_op_request *req, fe_kernel **out,
                                  fe_error *err);
FE_API void fe_kernel_destroy(fe_kernel *k);

/* Runs the kernel on `operands` (same shapes and dtypes as at create; strides may differ
 * where the operand allows views). `values` are the op's per-call values in declaration
 * order (NULL: each at its default, the full extent). Any operand or value past its view
 * returns an error and runs nothing; the message is then on the kernel. */
FE_API fe_status fe_kernel_run(fe_kernel *k, const fe_tensor *operands, int n_operands,
                               const int64_t *values, int n_values);
FE_API const char *fe_kernel_message(const fe_kernel *k); /* borrowed; "" when none */

/* The design's identity: equal for two kernels that resolve alike, whatever their extents. */
FE_API uint64_t fe_kernel_design_key(const fe_kernel *k);
FE_API fe_isa fe_kernel_isa(const fe_kernel *k);
/* A resolved tunable by name; -1 when the op has none of that name. */
FE_API int64_t fe_kernel_tunable(const fe_kernel *k, const char *name);
/* FLOPs and bytes moved by one run at the given per-call values (NULL: defaults). */
FE_API void fe_kernel_cost(const fe_kernel *k, const int64_t *values, int n_values,
                           double *flops, double *bytes);

/* Profiles: JSON of the form
 *   {"entries": [{"op": "Softmax", "when": {"cols": 4096}, "tunables": {"WIDTH": 1}}],
 *    "folds": [...]}  (optional; see fe_profile_fold)
 * An entry applies when its op matches and every `when` name has that value: a param or an
 * extent (a number), or "OPERAND.dtype" (e.g. "w.dtype": "q8_0", the operand present with
 * that dtype); the entry with the most `when` names wins, the first among equals. Other keys
 * of an entry (a "note") are kept and never read. */
FE_API fe_status fe_profile_parse(const char *text, size_t len, fe_profile **out, fe_error *err);
FE_API fe_status fe_profile_load(const char *path, fe_profile **out, fe_error *err);
FE_API void fe_profile_destroy(fe_profile *p);
/* Entries in the profile (0 for NULL). */
FE_API int fe_profile_count(const fe_profile *p);
/* Adds an entry for op at the shape `when` (params and extents by name with a value;
 * "OPERAND.dtype" with the dtype's name as `choice`), setting
 * `tunables`, replacing the entry of the same op whose `when` names the same values (other
 * entries are kept). `note` (may be NULL) is kept as the entry's "note", for a reader; loads
 * ignore it. The entry is checked as fe_profile_load checks one: FE_E_INVALID names what is
 * wrong. Everything is copied; nothing is borrowed past the call. An empty profile comes from
 * fe_profile_parse("{\"entries\": []}"). */
FE_API fe_status fe_profile_put(fe_profile *p, const char *op, const fe_setting *when, int n_when,
                                const fe_setting *tunables, int n_tunables, const char *note,
                                fe_error *err);
/* Fold decisions (the tuner's; the graph's fold pass applies them under fold = all): the
 * profile's "folds": [{"site": KEY, "keep": false}], KEY a fold site's key (ferrum/graph.h
 * fe_fold_site.key: its kind, ops and shapes). fe_profile_fold: 1 keep, 0 do not, -1 the
 * profile says nothing (or p is NULL). fe_profile_put_fold replaces the decision of the same
 * site; `note` (may be NULL) is kept for a reader. fe_profile_folds: how many (0 for NULL). */
FE_API int fe_profile_fold(const fe_profile *p, const char *site);
FE_API int fe_profile_folds(const fe_profile *p);
FE_API fe_status fe_profile_put_fold(fe_profile *p, const char *site, bool keep, const char *note,
                                     fe_error *err);
/* Writes the profile to path whole: to a temporary beside it, then renamed over it, so a
 * reader never sees half a file. The directory must exist. FE_E_IO names the path. */
FE_API fe_status fe_profile_save(const fe_profile *p, const char *path, fe_error *err);

#ifdef __cplusplus
}
#endif
#endif
