/* graph/internal.h: what tracing, compiling, calling and drawing share.
 *
 * A trace records views (every fe_h is one: a dtype, shape and strides over a base buffer,
 * a constant offset, per-call offsets and per-axis bounds), steps (an operator, the views of
 * its operands, params and explicit per-call values), per-call checks, outputs and carries.
 * Compiling turns a trace into a version: a kernel per step, scratch offsets from lifetimes,
 * and preallocated args and dispatch steps, so a call only patches words and pointers. */
#ifndef FE_GRAPH_INTERNAL_H
#define FE_GRAPH_INTERNAL_H

#include "ferrum/graph.h"
#include "ops/kernel.h"

enum { FE_MAX_DYN = 2, FE_MAX_FRAMES = 8 };

typedef enum { BUF_INPUT = 1, BUF_WEIGHT, BUF_STATE, BUF_SCRATCH } fe_buf_kind;
typedef enum { VAR_SCRATCHPAD, VAR_CARRIED, VAR_DISPATCH } fe_var_kind;

typedef struct fe_view {
    fe_dtype dtype;
    int rank;
    int64_t shape[FE_MAX_RANK], stride[FE_MAX_RANK];
    fe_buf_kind kind;
    int buf;                 /* index among inputs / weights / states / scratch buffers */
    int64_t offset;          /* elements */
    fe_val dyn[FE_MAX_DYN];  /* per-call offsets, in elements */
    int n_dyn;
    fe_val bound[FE_MAX_RANK];
    bool has_bound[FE_MAX_RANK];
} fe_view;

typedef struct fe_tstep {
    const fe_op *op;
    int operand[FE_MAX_OPERANDS]; /* view ids (1-based), 0 absent */
    fe_setting params[FE_MAX_PARAMS]; /* values; the names are param_names (the step moves) */
    char param_names[FE_MAX_PARAMS][32];
    int n_params;
    fe_val value[FE_MAX_VALUES];
    bool value_given[FE_MAX_VALUES];
    char label[64];
} fe_tstep;

/* A per-call check: 0 <= v and v + v2 + len <= dim (v2 is the constant 0 unless a window
 * ends at pos + n of two words). */
typedef struct fe_check {
    fe_val v, v2;
    int64_t len, dim;
    char what[96];
} fe_check;

typedef struct fe_carry_rec {
    int var;      /* carried word, or -1 */
    fe_val next;
    int state;    /* carried tensor's state index, or -1 */
} fe_carry_rec;

typedef struct fe_scratch_buf {
    size_t bytes, offset;
    int first, last; /* steps that write it first and read it last */
} fe_scratch_buf;

typedef struct fe_frame {
    fe_graph *g;
    const fe_h *inputs;
    int n_inputs, next_input;
    fe_h *outs;
    int n_outs, max_outs;
    char (*input_names)[32];
} fe_frame;

struct fe_trace {
    fe_graph *g;
    const fe_named_tensor *sig;
    int n_sig;
    fe_view *views;
    int n_views, cap_views;
    fe_tstep *steps;
    int n_steps, cap_steps;
    fe_check *checks;
    int n_checks, cap_checks;
    fe_scratch_buf *scratch;
    int n_scratch, cap_scratch;
    int outputs[16];
    int n_outputs;
    fe_carry_rec carries[16];
    int n_carries;
    bool dispatch_time; /* the body declared a dispatch-time value: forces each_step */
    fe_frame frames[FE_MAX_FRAMES];
    int depth;
    char frame_inputs[FE_MAX_FRAMES][16][32];
    fe_error err;
};

typedef struct fe_state_rec {
    char path[96];
    fe_dtype dtype;
    int rank;
    int64_t shape[FE_MAX_RANK];
    size_t bytes;
    void *mem, *ref_mem;
} fe_state_rec;

typedef struct fe_var_rec {
    char name[32];
    fe_var_kind kind;
    int64_t word, ref_word;
} fe_var_rec;

typedef struct fe_weight_rec {
    char path[96];
    fe_tensor t;
} fe_weight_rec;

typedef struct fe_step_ctx {
    fe_kernel_fn fn;
    const fe_args *args;
    const fe_design *design;
} fe_step_ctx;

typedef struct fe_version {
    int n_sig;
    fe_named_tensor sig[16];
    char sig_names[16][32];
    fe_trace tr;          /* the trace, owned */
    fe_kernel **kernels;  /* one per step */
    fe_args *args;        /* bound per call */
    fe_step_ctx *ctx;
    fe_step *runlist;
    int n_steps;
    int *ws_buf;          /* per step: the scratch buffer holding its op workspace, or -1 */
    bool each_step;
    size_t scratch_bytes;
    uint64_t *step_ns;    /* profiling: each step's summed wall time (NULL until profiled) */
    uint64_t profiled_calls;
    int unread_weight;    /* a weight without data when compiled (calls refused), or -1;
                           * weights cannot change once a version is compiled */
} fe_version;

struct fe_graph {
    fe_device *dev;
    char name[64];
    fe_body_fn body;
    const void *model;
    fe_weight_rec *weights;
    int n_weights, cap_weights;
    fe_state_rec *states;
    int n_states, cap_states;
    fe_var_rec vars[32];
    int n_vars;
    fe_version **versions;
    int n_versions, cap_versions;
    fe_compile_options opts;
    void *scratch, *ref_scratch;
    size_t scratch_bytes, ref_scratch_bytes;
    fe_graph_stats stats;
    bool profiling;         /* fe_graph_set_profiling: calls time their steps */
    fe_error err;
};

/* trace.c */
void fe_trace_init(fe_trace *t, fe_graph *g, const fe_named_tensor *sig, int n_sig);
void fe_trace_deinit(fe_trace *t);
fe_status fe_trace_fail(fe_trace *t, fe_status s, const char *fmt, ...) FE_PRINTF(3, 4);
const fe_view *fe_trace_view(const fe_trace *t, fe_h h);
/* steps.c: a scratch buffer alive from the current step to the current step (callers move
 * first/last); its index, or -1 on out of memory (the trace records the error) */
int fe_trace_new_scratch(fe_trace *t, size_t bytes);
int fe_graph_state_index(const fe_graph *g, const char *path);

/* compile.c */
fe_status fe_version_build(fe_graph *g, const fe_named_tensor *sig, int n_sig, fe_version **out);
void fe_version_destroy(fe_version *v);

/* profile.c: (re)sets the version's step clock, allocating it the first time; when memory
 * is short it stays NULL and the version's calls run untimed. Called when profiling turns on
 * and when a version is built while it is on, never from a call. */
void fe_version_clock(fe_version *v);

/* run.c: evaluates an affine value with the graph's (or the reference's) words */
int64_t fe_val_eval(const fe_graph *g, fe_val v, bool reference);

#endif
