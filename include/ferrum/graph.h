/* ferrum/graph.h: graphs — trace once, compile once, call many times.
 *
 * A model is a struct holding its weights plus a body function that calls operator builders
 * on handles. The body is traced once per input signature into steps; compiling resolves each
 * step into a kernel, plans one arena from value lifetimes and lowers the steps into a
 * runlist. A call writes the per-call words (positions, row counts), checks every per-call
 * bound and offset against its view, and dispatches: one dispatch for the whole runlist
 * (`fused`, the default) or one per step (`each_step`). Nothing is allocated or rebuilt on
 * the call path.
 *
 * Per-call values are opaque while tracing (C cannot branch on them); arithmetic on them
 * builds affine forms (pos + 1, chunk * C) that bound (fe_bound), offset (fe_at) or index
 * views. Three kinds: scratchpad (given by the caller each call), carried (computed by the
 * graph for its own next call: the device loop), dispatch-time (forces each_step packaging;
 * steps whose bounded work is empty are not dispatched). */
#ifndef FERRUM_GRAPH_H
#define FERRUM_GRAPH_H

#include <stdio.h>

#include "ferrum/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fe_graph fe_graph;
typedef struct fe_trace fe_trace;

/* A traced tensor. id 0 is "no tensor": builders given one return one, the first error is
 * kept on the trace and reported by compile. */
typedef struct fe_h {
    int32_t id;
} fe_h;

/* A per-call value as an affine form mul * word[var] + mul2 * word[var2] + add (a term whose
 * var is < 0 is absent): pos + 1, chunk * C, pos + n. */
typedef struct fe_val {
    int32_t var, var2;
    int64_t mul, mul2, add;
} fe_val;

#define FE_NO_TENSOR ((fe_h){0})

typedef fe_status (*fe_body_fn)(fe_trace *t, const void *model);

/* Creates a graph over `body`. The device and model are borrowed and must outlive the graph.
 * Caller fe_graph_destroy()s. */
FE_API fe_status fe_graph_create(fe_device *dev, const char *name, fe_body_fn body,
                                 const void *model, fe_graph **out, fe_error *err);
FE_API void fe_graph_destroy(fe_graph *g);
/* The message of the last failed call on the graph; "" when none. Borrowed. */
FE_API const char *fe_graph_message(const fe_graph *g);
/* Names a weight (`layers.3.q`) the body may read with fe_weight. The tensor's memory is
 * borrowed: it must outlive the graph and not change between compile and call. Its data
 * may be NULL (an unread weight: shape and dtype only): the graph then traces, compiles and
 * draws, and every call is refused with FE_E_STATE naming the weight. */
FE_API fe_status fe_graph_set_weight(fe_graph *g, const char *path, fe_tensor w);

/* ---- tracing: called from a body ---- */

/* The input named `name`; its shape is the signature's (fe_graph_compile / fe_graph_call). */
FE_API fe_h fe_input(fe_trace *t, const char *name);
/* Whether the signature being traced has an input of that name (a body may trace one
 * version for a chunk of tokens and another for the carried token). */
FE_API bool fe_has_input(const fe_trace *t, const char *name);
FE_API fe_h fe_weight(fe_trace *t, const char *path);
/* A persistent state (a KV cache) named by path, zeroed at first compile; every version of
 * the graph sees the same memory. Declaring it again must give the same dtype and shape. */
FE_API fe_h fe_state(fe_trace *t, const char *path, fe_dtype dt, int rank, const int64_t *shape);

FE_API fe_val fe_scratchpad(fe_trace *t, const char *name);
FE_API fe_val fe_carried(fe_trace *t, const char *name);
FE_API fe_val fe_dispatch_time(fe_trace *t, const char *name);
FE_API fe_val fe_const(int64_t c);
FE_API fe_val fe_val_add(fe_val v, int64_t c);
FE_API fe_val fe_val_mul(fe_val v, int64_t c);
/* a + b; the sum may name at most two per-call values (else the trace records an error) */
FE_API fe_val fe_val_sum(fe_trace *t, fe_val a, fe_val b);

/* A carried tensor: persistent like a state; fe_carry_tensor copies a step's result into it
 * at the end of every call, on the device, for the next call to read (the token drawn). */
FE_API fe_h fe_carried_tensor(fe_trace *t, const char *name, fe_dtype dt, int rank,
                              const int64_t *shape);

/* Views. */
FE_API fe_h fe_reshape(fe_trace *t, fe_h x, int rank, const int64_t *shape);
FE_API fe_h fe_transpose(fe_trace *t, fe_h x, int axis0, int axis1);
/* x[:n] along axis: the bound carries through reshape and transpose to every consumer. */
FE_API fe_h fe_bound(fe_trace *t, fe_h x, int axis, fe_val n);
/* x[pos : pos + len] along axis, pos per call; len must be a compile-time size. */
FE_API fe_h fe_at(fe_trace *t, fe_h x, int axis, fe_val pos, fe_val len);
/* x[pos : pos + len] along axis with only its first n rows touched (n per call, n <= len):
 * the check is pos + n <= size, so a chunk of len rows may be written near the end of a
 * cache. Consumers must respect the bound (every operator's work follows its bounds). */
FE_API fe_h fe_window(fe_trace *t, fe_h x, int axis, fe_val pos, int64_t len, fe_val n);
/* Rows of table gathered by ids (Gather). */
FE_API fe_h fe_take(fe_trace *t, fe_h table, fe_h ids);

/* Any registered operator. `inputs` are its FE_IN operands in declaration order (FE_NO_TENSOR
 * for an absent optional one); `values` gives per-call values explicitly by name (others are
 * derived from the bounds the operand views carry). Returns its (first) output. */
typedef struct fe_value_set {
    const char *name;
    fe_val value;
} fe_value_set;
FE_API fe_h fe_apply(fe_trace *t, const char *op, const fe_h *inputs, int n_inputs,
                     const fe_setting *params, int n_params, const fe_value_set *values,
                     int n_values);
/* As fe_apply, the output written into `dst` (a view of a state: the KV write). */
FE_API fe_status fe_apply_into(fe_trace *t, fe_h dst, const char *op, const fe_h *inputs,
                               int n_inputs, const fe_setting *params, int n_params,
                               const fe_value_set *values, int n_values);
/* dst = src (Copy), e.g. a row into a state at a per-call offset. */
FE_API fe_status fe_copy_into(fe_trace *t, fe_h dst, fe_h src);

/* Marks a graph output (in order). An output must be computed by a step. */
FE_API fe_status fe_output(fe_trace *t, fe_h x);
/* The graph's carried values, returned last: a word for the next call (pos + 1) ... */
FE_API fe_status fe_carry(fe_trace *t, const char *name, fe_val next);
/* ... or a tensor copied into a carried tensor at the end of the call. */
FE_API fe_status fe_carry_tensor(fe_trace *t, const char *name, fe_h next);
/* Traces another graph's body into this one; its outputs are returned through `outs`. */
FE_API fe_status fe_call(fe_trace *t, fe_graph *inner, const fe_h *inputs, int n_inputs,
                         fe_h *outs, int max_outs, int *n_outs);
/* The shape of a traced tensor into shape[]; returns its rank (0 for no tensor). */
FE_API int fe_shape(const fe_trace *t, fe_h x, int64_t shape[FE_MAX_RANK]);
/* The dtype of a traced tensor (FE_DTYPE_COUNT for no tensor): a body picks an operator's
 * design by it, e.g. int8 activations for a block-quantised weight. */
FE_API fe_dtype fe_dtype_of(const fe_trace *t, fe_h x);
/* The first error of the trace (FE_OK when none). A body returns it. */
FE_API fe_status fe_trace_status(const fe_trace *t);

/* ---- compiling and calling ---- */

typedef enum { FE_PACK_AUTO = 0, FE_PACK_FUSED, FE_PACK_EACH_STEP } fe_packaging;

/* The fold pass: none (the steps as traced), all (every admissible fold, less those the
 * compile's profile turns off: fe_profile_fold), priced (each fold the pass finds is kept
 * only when fold_price says so: the tuner's modelled time drops). */
typedef enum { FE_FOLD_NONE = 0, FE_FOLD_ALL, FE_FOLD_PRICED } fe_fold_mode;
/* The three folds: a step into its producer's epilogue (SiLU or GELU, a residual
 * ElementwiseAdd into a GEMM or GEMV, the gated product of two GEMVs into the gate's; chains
 * fold in turn), an RMSNorm into the prologue of the GEMVs that read it, a Copy into a state
 * into its producer's drain. */
typedef enum { FE_FOLD_EPILOGUE = 0, FE_FOLD_PROLOGUE, FE_FOLD_DRAIN, FE_FOLD_KINDS } fe_fold_kind;
enum { FE_FOLD_MAX_INTO = 8, FE_FOLD_KEY_LEN = 256 };
/* One fold the pass found, by the trace's step labels ("SiLU#13"; borrowed for the call):
 * `step` goes, taken in by the steps `into` (its producer; the GEMVs an RMSNorm's prologue
 * goes into, at most FE_FOLD_MAX_INTO), and the steps `also` go with it (the gated fold's up
 * GEMV and activation). `version` is the index the version being compiled will have. `key`
 * names the fold apart from the trace's numbering, for profiles (ferrum/ops.h
 * fe_profile_fold): the kind, the ops of the step and of those taking it in, and the
 * operands (dtype, shape) of the first of these, e.g. "epilogue SiLU into GEMV: x f32
 * 1x576, w bf16 1536x576, y f32 1x1536" (at most FE_FOLD_KEY_LEN with its NUL). */
typedef struct fe_fold_site {
    fe_fold_kind kind;
    int version;
    const char *key;
    const char *step;
    const char *into[FE_FOLD_MAX_INTO];
    int n_into;
    const char *also[2];
    int n_also;
} fe_fold_site;
/* Whether to keep the fold. */
typedef bool (*fe_fold_price_fn)(void *user, const fe_fold_site *site);

/* Weights' layouts (an operator's design may read a weight repacked: GEMM's bf16 k-pair
 * panels), made once from the weight's data when a version compiles and kept beside the
 * weight. A graph keeps its own store of them unless its compile options name one that
 * several graphs share (the sessions of one model read the same weights): each layout is
 * then made once for all of them. A shared store must outlive every graph that uses it,
 * and serves the weights of one owner (a model): a layout is found again by the weight's
 * address, dtype, shape and strides, so memory freed and reused for other weights while the
 * store lives would read a stale layout. It is safe to compile graphs that share it from
 * several threads (one compile lays out at a time). A layout costs its bytes beside the
 * weight, which stays where its owner put it (other steps, e.g. a decode GEMV, read it). */
typedef struct fe_layout_store fe_layout_store;
/* Caller fe_layout_store_destroy()s, after the graphs that use it. */
FE_API fe_status fe_layout_store_create(fe_layout_store **out, fe_error *err);
FE_API void fe_layout_store_destroy(fe_layout_store *s);
/* Bytes of the layouts the store holds (0 for NULL). */
FE_API size_t fe_layout_store_bytes(const fe_layout_store *s);
/* Called, under the store's lock, each time a layout has been made from a weight's memory
 * [data, data + bytes): the steps that read the layout no longer read those bytes, so an
 * owner that can read them again (a file mapping) may drop its pages. Steps that read the
 * weight as stored still may (a Gather of a few embedding rows, another design): the owner
 * must keep the memory valid. */
typedef void (*fe_layout_made_fn)(void *user, const void *data, size_t bytes);
FE_API void fe_layout_store_on_made(fe_layout_store *s, fe_layout_made_fn fn, void *user);

typedef struct fe_compile_options {
    fe_packaging packaging; /* AUTO: fused unless a dispatch-time value forces each_step */
    fe_fold_mode fold;      /* default none */
    fe_fold_price_fn fold_price; /* fold = priced: asked per fold found */
    void *fold_user;
    bool verbose;           /* print the packaging and how each per-call value lowers */
    FILE *log;              /* where verbose goes (NULL: stderr) */
    const fe_profile *profile; /* borrowed for the compile */
    fe_layout_store *layouts;  /* weights' layouts shared with other graphs (outlives the
                                * graph); NULL: the graph keeps its own */
} fe_compile_options;

FE_API fe_compile_options fe_compile_options_default(void);

/* An input by name with its shape (data ignored when compiling). */
typedef struct fe_named_tensor {
    const char *name;
    fe_tensor t;
} fe_named_tensor;

/* Compiles the version for this input signature unless it exists. */
FE_API fe_status fe_graph_compile(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                                  const fe_compile_options *opts);

typedef struct fe_word {
    const char *name;
    int64_t value;
} fe_word;

/* Calls the version matching the inputs' signature (compiling it once, on first use, with
 * the options of the last compile). `words` set per-call values by name; a carried value
 * keeps what the previous call computed unless given here. Outputs are views of the arena,
 * valid until the next call. A bad bound, offset or index returns an error and runs nothing. */
FE_API fe_status fe_graph_call(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                               const fe_word *words, int n_words, fe_tensor *outputs,
                               int max_outputs, int *n_outputs);

/* The device loop: n calls in a row, each call's carried values feeding the next. After each
 * call on_step observes (step index, outputs); returning nonzero stops the loop. */
typedef int (*fe_loop_fn)(void *user, int step, const fe_tensor *outputs, int n_outputs);
FE_API fe_status fe_graph_loop(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                               const fe_word *words, int n_words, int n, fe_loop_fn on_step,
                               void *user);

/* The current value of a carried word (after a call). */
FE_API fe_status fe_graph_word(const fe_graph *g, const char *name, int64_t *value);

/* The oracle: runs the same traced body through each operator's reference on host memory,
 * with the states modelled (their own copies, persisting across reference calls). Outputs
 * are valid until the next reference call. */
FE_API fe_status fe_graph_reference(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                                    const fe_word *words, int n_words, fe_tensor *outputs,
                                    int max_outputs, int *n_outputs);

typedef struct fe_graph_stats {
    int versions;
    uint64_t compiles;        /* versions compiled since creation */
    uint64_t calls;
    uint64_t last_dispatches; /* dispatches the last call made */
    int last_steps;           /* steps in the last called version */
    size_t arena_bytes;       /* states + scratch (op workspaces included) */
    size_t layout_bytes;      /* weights repacked once into the layouts steps read (GEMM's
                               * bf16 k-pair panels), held beside the weights: the bytes of
                               * the graph's layout store (shared: of all its graphs) */
    int folds[FE_FOLD_KINDS]; /* folds the last compiled version took, by kind */
} fe_graph_stats;
FE_API fe_graph_stats fe_graph_get_stats(const fe_graph *g);

/* Step timing. While on, every call adds each step's wall time (from the barrier before it
 * to the one after it: the slowest worker's time and the barrier) to its version's clock;
 * off costs nothing. Turning it on clears the clocks. */
FE_API void fe_graph_set_profiling(fe_graph *g, bool on);
/* Per version with profiled calls: time a call, and the steps grouped by operator and weight
 * (layer numbers folded: "GEMV layers.*.wq"), with their share of the call, largest first. */
FE_API fe_status fe_graph_write_profile(const fe_graph *g, FILE *out);

/* Graphviz DOT of the graph's versions: steps, the per-call values they read, arena offsets
 * and sizes. */
FE_API fe_status fe_graph_dot(const fe_graph *g, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
