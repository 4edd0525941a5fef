/* apps/study/family.h: the study's case matrix as data: the two layer kinds (BERT encoder,
 * GPT-2 decoder), the six model families, the three execution modes (and runlist's each_step
 * variant), the sequence lengths, and the layer's FLOP count. Nothing here runs anything. */
#ifndef FE_STUDY_FAMILY_H
#define FE_STUDY_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

/* BERT: post-LN, bidirectional attention, GELU (erf), biases.
 * GPT-2: pre-LN, causal attention, GELU (tanh), biases. */
typedef enum { STUDY_BERT = 0, STUDY_GPT2, STUDY_KIND_COUNT } study_kind;

/* offload: host C runs the layer, each GEMM its own device dispatch, operands copied in and
 * results out. runlist: one fine-grained graph, one dispatch a call. runlist_each_step: the
 * same graph, one dispatch per step. hybrid: a few fused steps in one dispatch. */
typedef enum {
    STUDY_OFFLOAD = 0,
    STUDY_RUNLIST,
    STUDY_HYBRID,
    STUDY_RUNLIST_EACH_STEP,
    STUDY_MODE_COUNT
} study_mode;

typedef struct study_family {
    const char *name;
    int64_t hidden, ffn, heads;
} study_family;

/* One layer's shape: a family at a sequence length, of a kind. */
typedef struct study_shape {
    study_kind kind;
    int64_t seq, hidden, ffn, heads;
} study_shape;

int study_family_count(void);
const study_family *study_family_at(int i);
/* NULL when there is no family of that name; also finds "tiny_32" (hidden 32, FFN 64, 4
 * heads), the tests' family, which is not one of the six. */
const study_family *study_family_find(const char *name);

const char *study_kind_name(study_kind k);   /* "bert", "gpt2" */
const char *study_mode_name(study_mode m);   /* "offload", "runlist", "hybrid", ... */
/* false when name is none of them. */
bool study_kind_from_name(const char *name, study_kind *out);
bool study_mode_from_name(const char *name, study_mode *out);

/* The sequence lengths of the full matrix: 64, 128, ... 16384. */
enum { STUDY_SEQ_MIN = 64, STUDY_SEQ_MAX = 16384 };

/* 6sh^2 (Q, K, V) + 4s^2h (scores and P.V) + 2sh^2 (out-projection) + 4shi (FFN): the
 * layer's multiply-adds times two; norms, softmax and GELU are not counted. */
double study_layer_flops(const study_shape *s);

/* A shape of a family; false (and why in msg) when hidden is not a multiple of heads. */
bool study_shape_make(const study_family *f, study_kind kind, int64_t seq, study_shape *out,
                      char *msg, int msg_n);

#endif
