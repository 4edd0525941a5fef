/* apps/study/graph_layer.c: the layer as one ferrum graph, in two granularities.
 *
 * runlist: every operator its own step, intermediates in the arena: a GEMM per projection,
 * its bias a RowwiseAdd, MHA, the residual an ElementwiseAdd, LayerNorm, GELU; one dispatch a
 * call (fused packaging), or one per step (runlist_each_step). Attention stays one MHA step
 * in both modes: ferrum has no batched per-head GEMM, and the s x s scores of 12 heads at
 * 16384 tokens would not fit an arena.
 *
 * hybrid: a few fused steps: QKV as one GEMM over the stacked weight with its bias (then
 * three Copy steps split it into the contiguous q, k, v MHA takes: MHA reads no strided
 * views); MHA; the out-projection GEMM with bias and the residual in its epilogue (ferrum has
 * no attention + projection operator, so that fusion is two steps); FFN-up GEMM with bias and
 * GELU in its epilogue (the epilogue has GELU's tanh form only, so BERT's erf GELU is a GELU
 * step after the GEMM); FFN-down GEMM with bias and residual; LayerNorm (the add is in the
 * GEMM before it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

struct study_graph_layer {
    const study_weights *w;
    study_mode mode;
    fe_graph *g;
    fe_tensor out;
};

static fe_h op2(fe_trace *t, const char *op, fe_h a, fe_h b) {
    fe_h in[2] = {a, b};
    return fe_apply(t, op, in, 2, NULL, 0, NULL, 0);
}

/* x W^T (+ bias) (+ residual), activation by name ("none", "gelu") */
static fe_h gemm(fe_trace *t, fe_h x, const char *w, const char *bias, fe_h res,
                 const char *act) {
    fe_h in[4] = {x, fe_weight(t, w), bias ? fe_weight(t, bias) : FE_NO_TENSOR, res};
    fe_setting s = FE_CHOICE("activation", act);
    int n_in = res.id ? 4 : bias ? 3 : 2;
    return fe_apply(t, "GEMM", in, n_in, &s, 1, NULL, 0);
}

static fe_h layernorm(fe_trace *t, fe_h x, const char *w, const char *b) {
    fe_h in[3] = {x, fe_weight(t, w), fe_weight(t, b)};
    return fe_apply(t, "LayerNorm", in, 3, NULL, 0, NULL, 0);
}

static fe_h gelu(fe_trace *t, fe_h x, study_kind kind) {
    fe_setting f = FE_CHOICE("form", kind == STUDY_BERT ? "erf" : "tanh");
    return fe_apply(t, "GELU", &x, 1, &f, 1, NULL, 0);
}

/* (s, h) -> (s, heads, d) */
static fe_h heads(fe_trace *t, fe_h x, const study_shape *s) {
    const int64_t qs[3] = {s->seq, s->heads, s->hidden / s->heads};
    return fe_reshape(t, x, 3, qs);
}

static fe_h attention(fe_trace *t, fe_h q, fe_h k, fe_h v, const study_shape *s) {
    fe_h in[3] = {heads(t, q, s), heads(t, k, s), heads(t, v, s)};
    fe_setting causal = {"causal", s->kind == STUDY_GPT2 ? 1 : 0};
    fe_h att = fe_apply(t, "MHA", in, 3, &causal, 1, NULL, 0);
    const int64_t flat[2] = {s->seq, s->hidden};
    return fe_reshape(t, att, 2, flat);
}

/* fine-grained: Attn(u) as GEMM, bias, MHA, GEMM, bias */
static fe_h attn_fine(fe_trace *t, fe_h u, const study_shape *s) {
    fe_h q = op2(t, "RowwiseAdd", gemm(t, u, "wq", NULL, FE_NO_TENSOR, "none"), fe_weight(t, "bq"));
    fe_h k = op2(t, "RowwiseAdd", gemm(t, u, "wk", NULL, FE_NO_TENSOR, "none"), fe_weight(t, "bk"));
    fe_h v = op2(t, "RowwiseAdd", gemm(t, u, "wv", NULL, FE_NO_TENSOR, "none"), fe_weight(t, "bv"));
    fe_h a = attention(t, q, k, v, s);
    return op2(t, "RowwiseAdd", gemm(t, a, "wo", NULL, FE_NO_TENSOR, "none"), fe_weight(t, "bo"));
}

static fe_h ffn_fine(fe_trace *t, fe_h u, const study_shape *s) {
    fe_h up = op2(t, "RowwiseAdd", gemm(t, u, "w_up", NULL, FE_NO_TENSOR, "none"),
                  fe_weight(t, "b_up"));
    fe_h d = gemm(t, gelu(t, up, s->kind), "w_down", NULL, FE_NO_TENSOR, "none");
    return op2(t, "RowwiseAdd", d, fe_weight(t, "b_down"));
}

static fe_status body_runlist(fe_trace *t, const void *model) {
    const study_graph_layer *L = model;
    const study_shape *s = &L->w->shape;
    fe_h x = fe_input(t, "x"), y;
    if (s->kind == STUDY_BERT) {
        fe_h x1 = layernorm(t, op2(t, "ElementwiseAdd", x, attn_fine(t, x, s)), "ln1_w", "ln1_b");
        y = layernorm(t, op2(t, "ElementwiseAdd", x1, ffn_fine(t, x1, s)), "ln2_w", "ln2_b");
    } else {
        fe_h x1 = op2(t, "ElementwiseAdd", x, attn_fine(t, layernorm(t, x, "ln1_w", "ln1_b"), s));
        y = op2(t, "ElementwiseAdd", x1, ffn_fine(t, layernorm(t, x1, "ln2_w", "ln2_b"), s));
    }
    fe_output(t, y);
    return fe_trace_status(t);
}

/* coarse: QKV (one GEMM with bias, split by three copies), MHA, out-projection + bias +
 * residual res */
static fe_h attn_coarse(fe_trace *t, fe_h u, fe_h res, const study_shape *s) {
    fe_h qkv = gemm(t, u, "wqkv", "bqkv", FE_NO_TENSOR, "none"); /* (s, 3h) */
    const int64_t split[3] = {s->seq, 3, s->hidden}, flat[2] = {s->seq, s->hidden};
    fe_h parts = fe_reshape(t, qkv, 3, split), p[3];
    for (int j = 0; j < 3; j++) {
        fe_h view = fe_at(t, parts, 1, fe_const(j), fe_const(1)); /* (s, 1, h), strided */
        fe_h c = fe_apply(t, "Copy", &view, 1, NULL, 0, NULL, 0);
        p[j] = fe_reshape(t, c, 2, flat);
    }
    fe_h a = attention(t, p[0], p[1], p[2], s);
    return gemm(t, a, "wo", "bo", res, "none");
}

/* FFN-up with bias and GELU (the epilogue's tanh form; erf as its own step), FFN-down with
 * bias and residual res */
static fe_h ffn_coarse(fe_trace *t, fe_h u, fe_h res, const study_shape *s) {
    fe_h up = s->kind == STUDY_GPT2 ? gemm(t, u, "w_up", "b_up", FE_NO_TENSOR, "gelu")
                                    : gelu(t, gemm(t, u, "w_up", "b_up", FE_NO_TENSOR, "none"),
                                           s->kind);
    return gemm(t, up, "w_down", "b_down", res, "none");
}

static fe_status body_hybrid(fe_trace *t, const void *model) {
    const study_graph_layer *L = model;
    const study_shape *s = &L->w->shape;
    fe_h x = fe_input(t, "x"), y;
    if (s->kind == STUDY_BERT) {
        fe_h x1 = layernorm(t, attn_coarse(t, x, x, s), "ln1_w", "ln1_b");
        y = layernorm(t, ffn_coarse(t, x1, x1, s), "ln2_w", "ln2_b");
    } else {
        fe_h x1 = attn_coarse(t, layernorm(t, x, "ln1_w", "ln1_b"), x, s);
        y = ffn_coarse(t, layernorm(t, x1, "ln2_w", "ln2_b"), x1, s);
    }
    fe_output(t, y);
    return fe_trace_status(t);
}

static fe_status set_weights(study_graph_layer *L) {
    const study_weights *w = L->w;
    const int64_t h = w->shape.hidden, i = w->shape.ffn;
    struct { const char *name; float *p; int rank; int64_t d0, d1; } all[] = {
        {"wq", w->wq, 2, h, h},       {"wk", w->wk, 2, h, h},        {"wv", w->wv, 2, h, h},
        {"wo", w->wo, 2, h, h},       {"bq", w->bq, 1, h, 0},        {"bk", w->bk, 1, h, 0},
        {"bv", w->bv, 1, h, 0},       {"bo", w->bo, 1, h, 0},        {"wqkv", w->wqkv, 2, 3 * h, h},
        {"bqkv", w->bqkv, 1, 3 * h, 0}, {"w_up", w->w_up, 2, i, h},  {"b_up", w->b_up, 1, i, 0},
        {"w_down", w->w_down, 2, h, i}, {"b_down", w->b_down, 1, h, 0},
        {"ln1_w", w->ln1_w, 1, h, 0}, {"ln1_b", w->ln1_b, 1, h, 0},
        {"ln2_w", w->ln2_w, 1, h, 0}, {"ln2_b", w->ln2_b, 1, h, 0},
    };
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        const int64_t shape[2] = {all[k].d0, all[k].d1};
        fe_status st = fe_graph_set_weight(
            L->g, all[k].name, fe_tensor_contiguous(all[k].p, FE_DTYPE_F32, all[k].rank, shape));
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

study_graph_layer *study_graph_layer_create(fe_device *dev, const study_weights *w,
                                            study_mode m, char *msg, size_t msg_n) {
    study_graph_layer *L = calloc(1, sizeof *L);
    if (!L) {
        snprintf(msg, msg_n, "out of memory creating the %s layer", study_mode_name(m));
        return NULL;
    }
    L->w = w;
    L->mode = m;
    fe_error err = {0};
    fe_body_fn body = m == STUDY_HYBRID ? body_hybrid : body_runlist;
    if (fe_graph_create(dev, study_mode_name(m), body, L, &L->g, &err) != FE_OK) {
        snprintf(msg, msg_n, "%s layer: %s", study_mode_name(m), err.message);
        free(L);
        return NULL;
    }
    fe_compile_options o = fe_compile_options_default();
    o.packaging = m == STUDY_RUNLIST_EACH_STEP ? FE_PACK_EACH_STEP : FE_PACK_FUSED;
    const int64_t xs[2] = {w->shape.seq, w->shape.hidden};
    fe_named_tensor in = {"x", fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, xs)};
    if (set_weights(L) != FE_OK || fe_graph_compile(L->g, &in, 1, &o) != FE_OK) {
        snprintf(msg, msg_n, "%s layer: %s", study_mode_name(m), fe_graph_message(L->g));
        study_graph_layer_destroy(L);
        return NULL;
    }
    return L;
}

bool study_graph_layer_run(study_graph_layer *L, const float *x, float *y, char *msg,
                           size_t msg_n) {
    const int64_t xs[2] = {L->w->shape.seq, L->w->shape.hidden};
    fe_named_tensor in = {"x", fe_tensor_contiguous((void *)x, FE_DTYPE_F32, 2, xs)};
    int n_out = 0;
    if (fe_graph_call(L->g, &in, 1, NULL, 0, &L->out, 1, &n_out) != FE_OK || n_out != 1) {
        snprintf(msg, msg_n, "%s layer: %s", study_mode_name(L->mode), fe_graph_message(L->g));
        return false;
    }
    memcpy(y, L->out.data, (size_t)(xs[0] * xs[1]) * sizeof(float));
    return true;
}

study_exec_stats study_graph_layer_stats(const study_graph_layer *L) {
    fe_graph_stats gs = fe_graph_get_stats(L->g);
    return (study_exec_stats){.dispatches = (int)gs.last_dispatches, .steps = gs.last_steps,
                              .designs = -1, .arena_bytes = gs.arena_bytes};
}

/* the steps' boxes of fe_graph_dot: label="<step>\n<isa>, width <W>\nkey <16 hex>" */
int study_graph_layer_write_designs(const study_graph_layer *L, FILE *out) {
    char *dot = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&dot, &n);
    if (!mem) return -1;
    fe_status st = fe_graph_dot(L->g, mem);
    fclose(mem);
    if (st != FE_OK) {
        free(dot);
        return -1;
    }
    enum { MAX_KEYS = 256 };
    unsigned long long keys[MAX_KEYS];
    int distinct = 0;
    for (char *line = strtok(dot, "\n"); line; line = strtok(NULL, "\n")) {
        char *lab = strstr(line, "shape=box, style=rounded, label=\"");
        if (!lab) continue;
        lab += strlen("shape=box, style=rounded, label=\"");
        char step[128], isa[16];
        int width = 0;
        unsigned long long key = 0;
        if (sscanf(lab, "%127[^\\]\\n%15[^,], width %d\\nkey %llx", step, isa, &width, &key) != 4)
            continue;
        fprintf(out, "%s %s %s width %d key %016llx\n", study_mode_name(L->mode), step, isa,
                width, key);
        bool seen = false;
        for (int i = 0; i < distinct; i++) seen = seen || keys[i] == key;
        if (!seen && distinct < MAX_KEYS) keys[distinct++] = key;
    }
    free(dot);
    return distinct;
}

void study_graph_layer_destroy(study_graph_layer *L) {
    if (!L) return;
    fe_graph_destroy(L->g);
    free(L);
}
