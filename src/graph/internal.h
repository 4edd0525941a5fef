/* graph/internal.h: what tracing, compiling, calling and drawing share.
 *
 * A trace records views (every fe_h is one: a dtype, shape and strides over a base buffer,
 * a constant offset, per-call offsets and per-axis bounds), steps (an operator, the views of
 * its operands, params and explicit per-call values), per-call checks, outputs and carries.
 * Compiling turns a trace into a version: a kernel per step, scratch offsets from lifetimes,
 * and preallocated args and dispatch steps, so a call only patches words and pointers.
 *
 * The files, each calling only those listed after it (no file-level cycle):
 *   graph.c      the graph object: create, destroy, options, stats
 *   run.c        calling a version: words, checks, binding, dispatch, carries, reference
 *   draw.c       DOT of the compiled versions
 *   inspect.c    the tuner's view of a compiled version (graph/inspect.h)
 *   values.c     per-call values at a set of words: affine forms, a step's values
 *   compile.c    a version from a trace: kernels, arena, runlist, packaging
 *   layouts.c    the weights' layouts a version's kernels read (made once, shared)
 *   fold.c       the fold pass on a trace (epilogue, prologue, drain)
 *   step_timing.c  the per-step clocks of profiled calls
 *   builders.c   the steps a body records (fe_apply, fe_output, fe_carry, fe_call...)
 *   views.c      views of handles (reshape, transpose, bound, at, window)
 *   trace.c      the trace object: handles, inputs, weights, states, per-call values
 *   store.c      the graph's named weights and states */
#ifndef FE_GRAPH_INTERNAL_H
#define FE_GRAPH_INTERNAL_H

#include "ferrum/graph.h"
#include "ops/kernel.h"

/* Fixed limits of a graph; raise a constant to lift its limit. Counts are checked where
 * they apply, and passing one is a refusal naming the limit (there is none on the number of
 * steps). Names longer than their buffer are refused where they are declared (inputs,
 * per-call values, weights, states) and cut to fit where they are only printed (labels,
 * check descriptions, the graph's name). */
enum {
    FE_MAX_DYN = 2,         /* per-call offsets on one view (fe_at, fe_window on a view) */
    FE_MAX_FRAMES = 8,      /* graphs called inside graphs (fe_call), nested */
    FE_MAX_INPUTS = 16,     /* named inputs of a signature, and of one fe_call */
    FE_MAX_OUTPUTS = 16,    /* fe_output per trace (also what fe_graph_loop hands on_step) */
    FE_MAX_CARRIES = 16,    /* fe_carry + fe_carry_tensor per trace */
    FE_MAX_VARS = 32,       /* per-call values (scratchpad, carried, dispatch-time) per graph */
    FE_NAME_LEN = 32,       /* an input's or per-call value's name, with its NUL */
    FE_PATH_LEN = 96,       /* a weight's or state's path, with its NUL */
    FE_LABEL_LEN = 64,      /* a step's label ("GEMV#12") */
    FE_GRAPH_NAME_LEN = 64, /* a graph's name in messages (a longer one is cut to fit) */
    FE_CHECK_LEN = 96,      /* a per-call check's description in its refusal */
};

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

/* A weight read whole or at a constant offset (no per-call offset): what a plan can lay out
 * once (layouts.c) and the tuner prices as a constant input (inspect.c). */
static inline bool fe_view_is_fixed_weight(const fe_view *v) {
    return v->kind == BUF_WEIGHT && !v->n_dyn;
}

typedef struct fe_tstep {
    const fe_op *op;
    int operand[FE_MAX_OPERANDS]; /* view ids (1-based), 0 absent */
    fe_setting params[FE_MAX_PARAMS]; /* values; the names are param_names (the step moves) */
    char param_names[FE_MAX_PARAMS][FE_NAME_LEN];
    int n_params;
    fe_val value[FE_MAX_VALUES];
    bool value_given[FE_MAX_VALUES];
    char label[FE_LABEL_LEN];
} fe_tstep;

/* A per-call check: 0 <= v and v + v2 + len <= dim (v2 is the constant 0 unless a window
 * ends at pos + n of two words). */
typedef struct fe_check {
    fe_val v, v2;
    int64_t len, dim;
    char what[FE_CHECK_LEN];
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
    int outputs[FE_MAX_OUTPUTS];
    int n_outputs;
    fe_carry_rec carries[FE_MAX_CARRIES];
    int n_carries;
    bool dispatch_time; /* the body declared a dispatch-time value: forces each_step */
    fe_frame frames[FE_MAX_FRAMES];
    int depth;
    char frame_inputs[FE_MAX_FRAMES][FE_MAX_INPUTS][FE_NAME_LEN];
    fe_error err;
};

typedef struct fe_state_rec {
    char path[FE_PATH_LEN];
    fe_dtype dtype;
    int rank;
    int64_t shape[FE_MAX_RANK];
    size_t bytes;
    void *mem, *ref_mem;
} fe_state_rec;

typedef struct fe_var_rec {
    char name[FE_NAME_LEN];
    fe_var_kind kind;
    int64_t word, ref_word;
} fe_var_rec;

typedef struct fe_weight_rec {
    char path[FE_PATH_LEN];
    fe_tensor t;
} fe_weight_rec;

typedef struct fe_step_ctx {
    fe_kernel_fn fn;
    const fe_args *args;
    const fe_design *design;
} fe_step_ctx;

typedef struct fe_version {
    int n_sig;
    fe_named_tensor sig[FE_MAX_INPUTS];
    char sig_names[FE_MAX_INPUTS][FE_NAME_LEN];
    fe_trace tr;          /* the trace, owned */
    fe_kernel **kernels;  /* one per step */
    fe_args *args;        /* bound per call */
    fe_step_ctx *ctx;
    fe_step *runlist;
    bool *empty;          /* per step, set by each call's binding: a bound of 0 leaves no work */
    int n_steps;
    int *ws_buf;          /* per step: the scratch buffer holding its op workspace, or -1 */
    /* per step and operand (s * FE_MAX_OPERANDS + i): the graph's layout of that weight
     * operand the step's kernel reads (layouts.c), or NULL */
    const void **layouts;
    bool each_step;
    size_t scratch_bytes;
    uint64_t *step_ns;    /* profiling: each step's summed wall time (NULL until profiled) */
    uint64_t profiled_calls;
    int unread_weight;    /* a weight without data when compiled (calls refused), or -1;
                           * weights cannot change once a version is compiled */
} fe_version;

struct fe_graph {
    fe_device *dev;
    char name[FE_GRAPH_NAME_LEN];
    fe_body_fn body;
    const void *model;
    fe_weight_rec *weights;
    int n_weights, cap_weights;
    fe_state_rec *states;
    int n_states, cap_states;
    fe_layout_store *own_layouts; /* the graph's own store (layouts.c), made when a version
                                   * first needs one and its options name no shared store */
    fe_var_rec vars[FE_MAX_VARS];
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

/* A view's extents and strides */
static inline int64_t fe_view_numel(const fe_view *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->shape[i];
    return n;
}
/* sets row-major strides for the shape */
static inline void fe_view_set_contiguous(fe_view *v) {
    int64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        v->stride[i] = s;
        s *= v->shape[i];
    }
}
/* whether the view is row-major contiguous (axes of size 1 may have any stride) */
static inline bool fe_view_is_contiguous(const fe_view *v) {
    int64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        if (v->shape[i] > 1 && v->stride[i] != s) return false;
        s *= v->shape[i];
    }
    return true;
}

/* store.c: the graph's named states. The index of the state at path, or -1. */
int fe_graph_state_index(const fe_graph *g, const char *path);
/* Declares a state (zeroed pages, resident as written) or finds the one declared alike;
 * *index is its index. Refuses a bad dtype, rank or size, and a path declared otherwise. */
fe_status fe_graph_declare_state(fe_graph *g, const char *path, fe_dtype dt, int rank,
                                 const int64_t *shape, int *index, fe_error *err);

/* trace.c */
void fe_trace_init(fe_trace *t, fe_graph *g, const fe_named_tensor *sig, int n_sig);
void fe_trace_deinit(fe_trace *t);
/* Records the trace's first error ("graph \"name\": ..."); returns the recorded status. */
fe_status fe_trace_fail(fe_trace *t, fe_status s, const char *fmt, ...) FE_PRINTF(3, 4);
/* The view of a handle, or NULL when it is not one of this trace's. */
const fe_view *fe_trace_view(const fe_trace *t, fe_h h);
/* The view of a builder's argument, or NULL (recording "what: not a tensor of this trace")
 * when it is not one, or when the trace has already failed. */
const fe_view *fe_trace_arg(fe_trace *t, fe_h h, const char *what);
/* Grows *arr (of elem bytes, n used of *cap) to hold one more; false (and a trace error)
 * when out of memory. */
bool fe_trace_grow(fe_trace *t, void **arr, int n, int *cap, size_t elem);
/* A new handle for v; FE_NO_TENSOR when out of memory (the trace records it). */
fe_h fe_trace_add_view(fe_trace *t, const fe_view *v);
/* A scratch buffer alive from the current step to the current step (callers move
 * first/last); its index, or -1 on out of memory (the trace records the error). */
int fe_trace_new_scratch(fe_trace *t, size_t bytes);
/* A per-call value's name as a refusal prints it ("pos", "pos+n", or the constant). */
void fe_trace_val_name(const fe_trace *t, fe_val v, char *buf, size_t n);

/* values.c: v at the words (one per per-call value, by index). */
int64_t fe_val_at(fe_val v, const int64_t *words);
/* The per-call values step s of ver reads at the words, in the op's declaration order:
 * given at the call site, else from the bound its operand's view carries, else the
 * declared default (the full extent). *empty: a bound of 0 leaves no work. *follows_words
 * (may be NULL): some value depends on a word. */
void fe_step_values(const fe_version *ver, int s, const int64_t *words, int64_t *vals,
                    bool *empty, bool *follows_words);

/* fold.c: folds the trace's steps as o->fold says; counts[kind] how many of each were taken.
 * A refusal (priced without a price) is recorded on the trace. */
fe_status fe_fold_steps(fe_trace *t, const fe_compile_options *o, int counts[FE_FOLD_KINDS]);

/* compile.c: the version compiled for a signature, compiling it on first sight. */
fe_status fe_version_find(fe_graph *g, const fe_named_tensor *sig, int n_sig, fe_version **out);
void fe_version_destroy(fe_version *v);

/* layouts.c: for every step of v whose design reads a weight operand in a layout of its
 * own, finds the layout of that view in that format in the graph's store (its options'
 * shared one, else its own) or makes it there (from the weight's data, once, on the
 * device), and points v->layouts at it. Weights without data get none (the version refuses
 * calls). FE_E_NOMEM names the weight. */
fe_status fe_version_layouts(fe_graph *g, fe_version *v);
/* The store the graph's layouts are in (NULL: none made). */
const fe_layout_store *fe_graph_layout_store(const fe_graph *g);

/* step_timing.c: (re)sets the version's step clock, allocating it the first time; when
 * memory is short it stays NULL and the version's calls run untimed. Called when profiling
 * turns on and when a version is built while it is on, never from a call. */
void fe_version_clock(fe_version *v);

#endif
