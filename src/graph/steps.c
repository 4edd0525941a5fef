/* graph/steps.c: the tracing API that records steps: any operator (fe_apply), a step writing
 * into a view of a state (fe_apply_into, fe_copy_into), gathers (fe_take), graph outputs,
 * carried values, and another graph traced into this one (fe_call). Output shapes come from
 * the operator's shape_out; bounds on the first operand carry to same-sized output axes. */
#include <string.h>

#include "core/alloc.h"
#include "graph/internal.h"

static bool grow_steps(fe_trace *t) {
    if (t->n_steps < t->cap_steps) return true;
    int nc = t->cap_steps ? t->cap_steps * 2 : 32;
    void *p = fe_realloc(t->steps, (size_t)nc * sizeof *t->steps);
    if (!p) {
        fe_trace_fail(t, FE_E_NOMEM, "out of memory while tracing");
        return false;
    }
    t->steps = p;
    t->cap_steps = nc;
    return true;
}

int fe_trace_new_scratch(fe_trace *t, size_t bytes) {
    if (t->n_scratch == t->cap_scratch) {
        int nc = t->cap_scratch ? t->cap_scratch * 2 : 32;
        void *p = fe_realloc(t->scratch, (size_t)nc * sizeof *t->scratch);
        if (!p) {
            fe_trace_fail(t, FE_E_NOMEM, "out of memory while tracing");
            return -1;
        }
        t->scratch = p;
        t->cap_scratch = nc;
    }
    t->scratch[t->n_scratch] = (fe_scratch_buf){.bytes = bytes, .first = t->n_steps, .last = t->n_steps};
    return t->n_scratch++;
}

static fe_h push_view(fe_trace *t, const fe_view *v) {
    if (t->n_views == t->cap_views) {
        int nc = t->cap_views ? t->cap_views * 2 : 64;
        void *p = fe_realloc(t->views, (size_t)nc * sizeof *t->views);
        if (!p) {
            fe_trace_fail(t, FE_E_NOMEM, "out of memory while tracing");
            return FE_NO_TENSOR;
        }
        t->views = p;
        t->cap_views = nc;
    }
    t->views[t->n_views++] = *v;
    return (fe_h){t->n_views};
}

/* Records one step of `op`. dst: the view its (single) output is written into, or 0 for a
 * new scratch buffer. Returns the output's view id, 0 on error. */
static int record(fe_trace *t, int dst, const char *opname, const fe_h *inputs, int n_inputs,
                  const fe_setting *params, int n_params, const fe_value_set *values, int n_values) {
    if (t->err.status != FE_OK) return 0;
    const fe_op *op = fe_op_find(opname);
    if (!op) {
        fe_trace_fail(t, FE_E_NOTFOUND, "no operator named \"%s\" (`ferrum ops` lists them)", opname);
        return 0;
    }
    if (n_params > FE_MAX_PARAMS || n_values > FE_MAX_VALUES || n_inputs < 0) {
        fe_trace_fail(t, FE_E_INVALID, "%s: too many params or values", op->name);
        return 0;
    }
    if (!grow_steps(t)) return 0;
    fe_tstep st;
    memset(&st, 0, sizeof st);
    st.op = op;
    snprintf(st.label, sizeof st.label, "%s#%d", op->name, t->n_steps);
    fe_op_ctx c = {.op = op, .dev = fe_device_get_info(t->g->dev)};
    int k = 0, first_out = -1;
    for (int i = 0; i < op->n_operands; i++) {
        if (op->operands[i].role == FE_OUT) {
            if (first_out < 0) first_out = i;
            continue;
        }
        fe_h h = k < n_inputs ? inputs[k] : FE_NO_TENSOR;
        k++;
        if (h.id == 0) continue; /* absent: compile checks it is optional */
        const fe_view *v = fe_trace_view(t, h);
        if (!v) {
            fe_trace_fail(t, FE_E_INVALID, "%s: input %d is not a tensor of this trace", st.label, k - 1);
            return 0;
        }
        st.operand[i] = h.id;
        c.operands[i] = (fe_tensor){.dtype = v->dtype, .rank = v->rank};
        memcpy(c.operands[i].shape, v->shape, sizeof v->shape);
        c.present[i] = true;
    }
    if (k < n_inputs) {
        fe_trace_fail(t, FE_E_INVALID, "%s: given %d inputs; it takes %d", st.label, n_inputs, k);
        return 0;
    }
    if (first_out < 0 || !st.operand[0]) {
        fe_trace_fail(t, FE_E_INVALID, "%s: needs its first input", st.label);
        return 0;
    }
    for (int i = 0; i < op->n_params; i++) c.params[i] = op->params[i].def;
    for (int p = 0; p < n_params; p++) {
        int i = fe_op_param_index(op, params[p].name);
        if (i >= 0) c.params[i] = params[p].value;
        snprintf(st.param_names[p], sizeof st.param_names[p], "%s", params[p].name);
        st.params[p] = (fe_setting){st.param_names[p], params[p].value};
    }
    st.n_params = n_params;
    for (int v = 0; v < n_values; v++) {
        int i = -1;
        for (int j = 0; j < op->n_values && i < 0; j++)
            if (strcmp(op->values[j].name, values[v].name) == 0) i = j;
        if (i < 0) {
            fe_trace_fail(t, FE_E_INVALID, "%s has no per-call value \"%s\"", st.label, values[v].name);
            return 0;
        }
        st.value[i] = values[v].value;
        st.value_given[i] = true;
    }
    /* output shapes */
    if (op->shape_out) {
        op->shape_out(&c);
    } else {
        for (int i = 0; i < op->n_operands; i++)
            if (op->operands[i].role == FE_OUT) c.operands[i] = c.operands[0];
    }
    const fe_view *in0 = fe_trace_view(t, (fe_h){st.operand[0]});
    fe_view in0v = *in0;
    for (int i = 0; i < op->n_operands; i++) {
        if (op->operands[i].role != FE_OUT) continue;
        const fe_tensor *o = &c.operands[i];
        if (dst && i == first_out) {
            const fe_view *dv = fe_trace_view(t, (fe_h){dst});
            bool same = dv && dv->rank == o->rank && dv->dtype == o->dtype;
            for (int d = 0; same && d < o->rank; d++) same = dv->shape[d] == o->shape[d];
            if (!same) {
                fe_trace_fail(t, FE_E_SHAPE, "%s: its output does not fit the view it is written "
                              "into (shape or dtype differ); make the destination view match",
                              st.label);
                return 0;
            }
            st.operand[i] = dst;
            continue;
        }
        if (o->rank < 1 || !fe_dtype_info(o->dtype)) {
            fe_trace_fail(t, FE_E_SHAPE, "%s: its inputs give no output shape (check their "
                          "shapes against `ferrum ops %s`)", st.label, op->name);
            return 0;
        }
        fe_view ov = {.dtype = o->dtype, .rank = o->rank, .kind = BUF_SCRATCH};
        memcpy(ov.shape, o->shape, sizeof ov.shape);
        int64_t n = 1;
        for (int d = o->rank - 1; d >= 0; d--) {
            ov.stride[d] = n;
            n *= o->shape[d];
        }
        for (int d = 0; d < o->rank && d < in0v.rank; d++)
            if (in0v.has_bound[d] && in0v.shape[d] == ov.shape[d]) {
                ov.bound[d] = in0v.bound[d];
                ov.has_bound[d] = true;
            }
        for (int k = 0; k < op->n_values; k++) { /* bounds a value declares it carries out */
            const fe_value_decl *vd = &op->values[k];
            int oa = vd->bounds_out - 1;
            const fe_view *src = st.operand[vd->operand] ? fe_trace_view(t, (fe_h){st.operand[vd->operand]}) : NULL;
            if (oa < 0 || oa >= ov.rank || !src || vd->map != FE_MAP_BOUND) continue;
            int sa = vd->axis < 0 ? src->rank + vd->axis : vd->axis;
            if (sa >= 0 && sa < src->rank && src->has_bound[sa] && src->shape[sa] == ov.shape[oa]) {
                ov.bound[oa] = src->bound[sa];
                ov.has_bound[oa] = true;
            }
        }
        ov.buf = fe_trace_new_scratch(t, fe_dtype_bytes(o->dtype, n));
        if (ov.buf < 0) return 0;
        fe_h h = push_view(t, &ov);
        if (!h.id) return 0;
        st.operand[i] = h.id;
    }
    /* scratch read by this step lives at least until it */
    for (int i = 0; i < op->n_operands; i++) {
        const fe_view *v = st.operand[i] ? fe_trace_view(t, (fe_h){st.operand[i]}) : NULL;
        if (v && v->kind == BUF_SCRATCH) t->scratch[v->buf].last = t->n_steps;
    }
    t->steps[t->n_steps++] = st;
    return st.operand[first_out];
}

fe_h fe_apply(fe_trace *t, const char *op, const fe_h *inputs, int n_inputs,
              const fe_setting *params, int n_params, const fe_value_set *values, int n_values) {
    return (fe_h){record(t, 0, op, inputs, n_inputs, params, n_params, values, n_values)};
}

fe_status fe_apply_into(fe_trace *t, fe_h dst, const char *op, const fe_h *inputs, int n_inputs,
                        const fe_setting *params, int n_params, const fe_value_set *values,
                        int n_values) {
    const fe_view *d = fe_trace_view(t, dst);
    if (t->err.status == FE_OK && (!d || d->kind == BUF_INPUT || d->kind == BUF_WEIGHT))
        return fe_trace_fail(t, FE_E_INVALID, "%s: a step may write only into a state or a "
                             "step's result, not into an input or a weight", op);
    record(t, dst.id, op, inputs, n_inputs, params, n_params, values, n_values);
    return t->err.status;
}

fe_status fe_copy_into(fe_trace *t, fe_h dst, fe_h src) {
    return fe_apply_into(t, dst, "Copy", &src, 1, NULL, 0, NULL, 0);
}

fe_h fe_take(fe_trace *t, fe_h table, fe_h ids) {
    fe_h in[2] = {table, ids};
    return fe_apply(t, "Gather", in, 2, NULL, 0, NULL, 0);
}

fe_status fe_output(fe_trace *t, fe_h x) {
    if (t->err.status != FE_OK) return t->err.status;
    const fe_view *v = fe_trace_view(t, x);
    if (!v) return fe_trace_fail(t, FE_E_INVALID, "fe_output: not a tensor of this trace");
    if (t->depth > 0) {
        fe_frame *f = &t->frames[t->depth - 1];
        if (f->n_outs < f->max_outs) f->outs[f->n_outs] = x;
        f->n_outs++;
        return FE_OK;
    }
    if (v->kind == BUF_INPUT || v->kind == BUF_WEIGHT) {
        const char *what = v->kind == BUF_INPUT ? t->sig[v->buf].name : t->g->weights[v->buf].path;
        return fe_trace_fail(t, FE_E_INVALID, "output %d is the %s \"%s\" itself; an output must be "
                             "computed by a step (copy it with Copy if you need it back)",
                             t->n_outputs, v->kind == BUF_INPUT ? "input" : "weight", what);
    }
    if (t->n_outputs == (int)(sizeof t->outputs / sizeof t->outputs[0]))
        return fe_trace_fail(t, FE_E_INVALID, "more than %d outputs", t->n_outputs);
    if (v->kind == BUF_SCRATCH) t->scratch[v->buf].last = 1 << 30; /* lives past the call */
    t->outputs[t->n_outputs++] = x.id;
    return FE_OK;
}

static fe_carry_rec *new_carry(fe_trace *t) {
    if (t->n_carries == (int)(sizeof t->carries / sizeof t->carries[0])) {
        fe_trace_fail(t, FE_E_INVALID, "more than %d carried values", t->n_carries);
        return NULL;
    }
    return &t->carries[t->n_carries++];
}

fe_status fe_carry(fe_trace *t, const char *name, fe_val next) {
    if (t->err.status != FE_OK) return t->err.status;
    for (int i = 0; i < t->g->n_vars; i++) {
        if (strcmp(t->g->vars[i].name, name) != 0) continue;
        if (t->g->vars[i].kind != VAR_CARRIED)
            return fe_trace_fail(t, FE_E_INVALID, "fe_carry: \"%s\" is not a carried value; "
                                 "declare it with fe_carried", name);
        fe_carry_rec *c = new_carry(t);
        if (c) *c = (fe_carry_rec){.var = i, .next = next, .state = -1};
        return t->err.status;
    }
    return fe_trace_fail(t, FE_E_INVALID, "fe_carry: no carried value \"%s\"; declare it with "
                         "fe_carried", name);
}

fe_status fe_carry_tensor(fe_trace *t, const char *name, fe_h next) {
    if (t->err.status != FE_OK) return t->err.status;
    char path[96];
    snprintf(path, sizeof path, "carried.%s", name);
    int s = fe_graph_state_index(t->g, path);
    if (s < 0)
        return fe_trace_fail(t, FE_E_INVALID, "fe_carry_tensor: no carried tensor \"%s\"; declare "
                             "it with fe_carried_tensor", name);
    const fe_state_rec *st = &t->g->states[s];
    fe_view v = {.dtype = st->dtype, .rank = st->rank, .kind = BUF_STATE, .buf = s};
    memcpy(v.shape, st->shape, sizeof v.shape);
    int64_t n = 1;
    for (int d = st->rank - 1; d >= 0; d--) {
        v.stride[d] = n;
        n *= st->shape[d];
    }
    fe_h dst = push_view(t, &v);
    if (fe_copy_into(t, dst, next) != FE_OK) return t->err.status;
    fe_carry_rec *c = new_carry(t);
    if (c) *c = (fe_carry_rec){.var = -1, .state = s};
    return t->err.status;
}

fe_status fe_call(fe_trace *t, fe_graph *inner, const fe_h *inputs, int n_inputs, fe_h *outs,
                  int max_outs, int *n_outs) {
    if (t->err.status != FE_OK) return t->err.status;
    if (t->depth == FE_MAX_FRAMES)
        return fe_trace_fail(t, FE_E_INVALID, "graphs called inside graphs nest deeper than %d",
                             FE_MAX_FRAMES);
    if (n_inputs > 16) return fe_trace_fail(t, FE_E_INVALID, "fe_call: more than 16 inputs");
    fe_frame *f = &t->frames[t->depth++];
    *f = (fe_frame){.g = inner, .inputs = inputs, .n_inputs = n_inputs, .outs = outs,
                    .max_outs = max_outs};
    fe_status st = inner->body(t, inner->model);
    int got = f->n_outs;
    t->depth--;
    if (st != FE_OK && t->err.status == FE_OK)
        fe_trace_fail(t, st, "graph \"%s\" called inside failed", inner->name);
    if (t->err.status == FE_OK && got > max_outs)
        fe_trace_fail(t, FE_E_INVALID, "graph \"%s\" called inside returns %d outputs; room for %d",
                      inner->name, got, max_outs);
    if (n_outs) *n_outs = got;
    return t->err.status;
}
