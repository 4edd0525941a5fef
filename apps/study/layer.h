/* apps/study/layer.h: one transformer layer's weights and its executors.
 *
 * Weights are f32 host buffers drawn from a seed (the study needs no checkpoint: every mode
 * and the reference read the same numbers). Matrices are stored as GEMM's B operand, (out,
 * in), so y = x W^T + b.
 *   BERT (post-LN):  x1 = LN1(x + Attn(x));       y = LN2(x1 + FFN(x1))
 *   GPT-2 (pre-LN):  x1 = x + Attn(LN1(x));       y = x1 + FFN(LN2(x1))
 *   Attn(u) = MHA(u Wq^T + bq, u Wk^T + bk, u Wv^T + bv) Wo^T + bo  (causal for GPT-2)
 *   FFN(u)  = GELU(u Wup^T + bup) Wdown^T + bdown                    (erf BERT, tanh GPT-2)
 *
 * An executor runs the layer in one mode: create (compiles what the mode compiles, uploads
 * the weights where the mode keeps them), run (x (seq, hidden) in, y (seq, hidden) out, both
 * host memory), destroy. */
#ifndef FE_STUDY_LAYER_H
#define FE_STUDY_LAYER_H

#include <stddef.h>
#include <stdio.h>

#include "family.h"
#include "ferrum/graph.h"

typedef struct study_weights {
    study_shape shape;
    float *wq, *wk, *wv, *wo;     /* (h, h) each */
    float *bq, *bk, *bv, *bo;     /* (h) */
    float *wqkv, *bqkv;           /* (3h, h), (3h): wq, wk, wv stacked (the fused QKV) */
    float *w_up, *b_up;           /* (i, h), (i) */
    float *w_down, *b_down;       /* (h, i), (h) */
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* (h) each */
    size_t bytes;                 /* all of the above (wqkv counted once) */
} study_weights;

/* Draws every weight from seed: matrices uniform in +-1/sqrt(in) (activations stay O(1)),
 * biases in +-0.1, LayerNorm weights in [0.5, 1.5] and biases in +-0.1. false on no memory. */
bool study_weights_init(study_weights *w, const study_shape *s, unsigned long long seed);
void study_weights_deinit(study_weights *w);
/* x (seq, hidden) uniform in [-1, 1] from seed. */
void study_input_fill(float *x, const study_shape *s, unsigned long long seed);

/* The plain float32 reference (double sums), written from the definitions above: y (seq,
 * hidden). false on no memory. Never fast. */
bool study_reference(const study_weights *w, const float *x, float *y);

/* The same, for the given rows only: y (n_rows, hidden), row r of y is row rows[r] of the
 * layer's output. K and V of every row are still computed (attention needs them), nothing
 * else of the other rows: the check of long sequences, where the whole reference would take
 * hours. false on no memory. */
bool study_reference_rows(const study_weights *w, const float *x, const int64_t *rows, int n_rows,
                          float *y);

typedef struct study_exec study_exec;

typedef struct study_exec_stats {
    int dispatches;          /* device dispatches one run makes */
    int steps;               /* graph steps (offload: GEMM kernels run) */
    int designs;             /* distinct kernel designs */
    size_t arena_bytes;      /* device-side working memory (graph arena; offload: buffers) */
} study_exec_stats;

/* Builds mode m for the weights (borrowed: they must outlive the executor). On error NULL and
 * msg says why. */
study_exec *study_exec_create(fe_device *dev, const study_weights *w, study_mode m, char *msg,
                              size_t msg_n);
/* y = layer(x); x and y are (seq, hidden) host buffers. false and msg on error. */
bool study_exec_run(study_exec *e, const float *x, float *y, char *msg, size_t msg_n);
study_exec_stats study_exec_get_stats(const study_exec *e);
/* Writes one line per kernel step, "<mode> <step label> <isa> width <W> key <design key>",
 * and returns the number of distinct design keys. The graph modes read them from the graph's
 * DOT (fe_graph_dot: the public view of a compiled plan). -1 on error. */
int study_exec_write_designs(const study_exec *e, FILE *out);
void study_exec_destroy(study_exec *e);

/* The two executors behind study_exec (offload.c, graph_layer.c). */
typedef struct study_offload study_offload;
study_offload *study_offload_create(fe_device *dev, const study_weights *w, char *msg,
                                    size_t msg_n);
bool study_offload_run(study_offload *o, const float *x, float *y, char *msg, size_t msg_n);
study_exec_stats study_offload_stats(const study_offload *o);
int study_offload_write_designs(const study_offload *o, FILE *out);
void study_offload_destroy(study_offload *o);

typedef struct study_graph_layer study_graph_layer;
/* m: STUDY_RUNLIST, STUDY_RUNLIST_EACH_STEP or STUDY_HYBRID. */
study_graph_layer *study_graph_layer_create(fe_device *dev, const study_weights *w,
                                            study_mode m, char *msg, size_t msg_n);
bool study_graph_layer_run(study_graph_layer *g, const float *x, float *y, char *msg,
                           size_t msg_n);
study_exec_stats study_graph_layer_stats(const study_graph_layer *g);
int study_graph_layer_write_designs(const study_graph_layer *g, FILE *out);
void study_graph_layer_destroy(study_graph_layer *g);

#endif
