/* graph/inspect.h: the tuner's view of a compiled graph. A version's steps, each with its
 * operator, compiled kernel, operands (shapes, strides and dtypes, no data), params, the
 * tunables its call site held, and the per-call values it reads at a given set of words
 * (the same evaluation a call makes). Read-only: nothing here changes the graph's words,
 * states or versions, except compiling a version asked for by signature. */
#ifndef FE_GRAPH_INSPECT_H
#define FE_GRAPH_INSPECT_H

#include "ferrum/graph.h"
#include "ops/kernel.h"

typedef struct fe_step_info {
    const char *label;        /* "GEMV#12"; borrowed, lives as long as the graph */
    const fe_op *op;
    const fe_kernel *kernel;  /* the compiled kernel: design key, tunables, width */
    fe_tensor operands[FE_MAX_OPERANDS]; /* data NULL; rank 0 for an absent operand */
    bool weight[FE_MAX_OPERANDS];        /* one of the graph's weights: the kernel reads it
                                          * from its layout where the design has one */
    uint64_t weight_id[FE_MAX_OPERANDS]; /* which weight (its buffer and offset), equal for
                                          * the steps of the graph that read the same one;
                                          * 0 where weight[i] is false */
    fe_setting params[FE_MAX_PARAMS];    /* names borrowed from the graph */
    int n_params;
    fe_setting held[FE_MAX_TUNABLES];    /* the tunables the call site gave (names static) */
    int n_held;
    int64_t values[FE_MAX_VALUES];       /* at the words asked for, in declaration order */
    bool empty;               /* a bound of 0 leaves the step no work at those words */
    bool follows_words;       /* some value depends on a per-call word */
} fe_step_info;

/* The index of the version compiled for the signature (compiling it on first sight, with
 * the graph's last compile options). Errors are the graph's (fe_graph_message). */
fe_status fe_graph_version_index(fe_graph *g, const fe_named_tensor *sig, int n_sig, int *index);
/* Steps in version v (0 when there is no such version). */
int fe_graph_version_steps(const fe_graph *g, int v);
/* Whether version v dispatches once per step (else once per call). */
bool fe_graph_version_each_step(const fe_graph *g, int v);
/* Step s of version v with its values at the words: the graph's current words, with those
 * named in `words` replaced. FE_E_INVALID (in err) for a name the graph has no per-call
 * value of, or a version or step out of range. */
fe_status fe_graph_step_info(const fe_graph *g, int v, int s, const fe_word *words, int n_words,
                             fe_step_info *out, fe_error *err);

#endif
