/* graph/builders.c: the steps a body records, through trace.c's API: any operator
 * (fe_apply), a step writing into a view of a state (fe_apply_into, fe_copy_into), gathers
 * (fe_take), graph outputs, carried values, and another graph traced into this one (fe_call).
 * Output shapes come from the operator's shape_out; bounds on the first operand carry to
 * same-sized output axes, and bounds a value declares (bounds_out) to the axis it names. */
#include <string.h>

#include "graph/internal.h"

/* The operator named opname, with the counts its step can hold; NULL (recorded) if not. */
static const fe_op *find_op(fe_trace *t, const char *opname, int n_inputs, int n_params,
                            int n_values) {
    const fe_op *op = fe_op_find(opname);
    if (!op) {
        fe_trace_fail(t, FE_E_NOTFOUND, "no operator named \"%s\" (`ferrum ops` lists them)", opname);
        return NULL;
    }
    if (n_params > FE_MAX_PARAMS || n_values > FE_MAX_VALUES || n_inputs < 0) {
        fe_trace_fail(t, FE_E_INVALID, "%s: more than %d params or %d per-call values", op->name,
                      FE_MAX_PARAMS, FE_MAX_VALUES);
        return NULL;
    }
    return op;
}

/* The inputs, in the op's order of non-output operands, into the step and (shapes only)
 * into c; FE_NO_TENSOR skips an optional one. Returns the op's first output operand, -1 on
 * a refusal (recorded). */
static int bind_inputs(fe_trace *t, fe_tstep *st, fe_op_ctx *c, const fe_h *inputs,
                       int n_inputs) {
    const fe_op *op = st->op;
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
            fe_trace_fail(t, FE_E_INVALID, "%s: input %d is not a tensor of this trace", st->label, k - 1);
            return -1;
        }
        st->operand[i] = h.id;
        c->operands[i] = (fe_tensor){.dtype = v->dtype, .rank = v->rank};
        memcpy(c->operands[i].shape, v->shape, sizeof v->shape);
        c->present[i] = true;
    }
    if (k < n_inputs) {
        fe_trace_fail(t, FE_E_INVALID, "%s: given %d inputs; it takes %d", st->label, n_inputs, k);
        return -1;
    }
    if (first_out < 0 || !st->operand[0]) {
        fe_trace_fail(t, FE_E_INVALID, "%s: needs its first input", st->label);
        return -1;
    }
    return first_out;
}

/* The params into the step (names copied, so the caller's strings need not outlive the
 * trace) and into c, over the declared defaults. A CHOICE given by name becomes its index
 * here, or the trace refuses it naming the choices. */
static bool set_params(fe_trace *t, fe_tstep *st, fe_op_ctx *c, const fe_setting *params,
                       int n_params) {
    const fe_op *op = st->op;
    for (int i = 0; i < op->n_params; i++) c->params[i] = op->params[i].def;
    for (int p = 0; p < n_params; p++) {
        double value;
        char why[320];
        if (fe_op_setting_value(op, &params[p], &value, why, sizeof why) != FE_OK) {
            fe_trace_fail(t, FE_E_INVALID, "%s: %s", st->label, why);
            return false;
        }
        int i = fe_op_param_index(op, params[p].name);
        if (i >= 0) c->params[i] = value;
        snprintf(st->param_names[p], sizeof st->param_names[p], "%s", params[p].name);
        st->params[p] = (fe_setting){st->param_names[p], value};
    }
    st->n_params = n_params;
    return true;
}

/* The per-call values given explicitly, by the op's value names. */
static bool set_values(fe_trace *t, fe_tstep *st, const fe_value_set *values, int n_values) {
    const fe_op *op = st->op;
    for (int v = 0; v < n_values; v++) {
        int i = -1;
        for (int j = 0; j < op->n_values && i < 0; j++)
            if (strcmp(op->values[j].name, values[v].name) == 0) i = j;
        if (i < 0) {
            fe_trace_fail(t, FE_E_INVALID, "%s has no per-call value \"%s\"", st->label, values[v].name);
            return false;
        }
        st->value[i] = values[v].value;
        st->value_given[i] = true;
    }
    return true;
}

/* Bounds an output inherits: the first operand's on same-sized axes, and those a per-call
 * value declares it carries out (bounds_out) from its operand's axis. */
static void carry_bounds(const fe_trace *t, const fe_tstep *st, fe_view *out) {
    const fe_op *op = st->op;
    const fe_view *in0 = fe_trace_view(t, (fe_h){st->operand[0]});
    for (int d = 0; d < out->rank && d < in0->rank; d++)
        if (in0->has_bound[d] && in0->shape[d] == out->shape[d]) {
            out->bound[d] = in0->bound[d];
            out->has_bound[d] = true;
        }
    for (int k = 0; k < op->n_values; k++) {
        const fe_value_decl *vd = &op->values[k];
        int oa = vd->bounds_out - 1;
        const fe_view *src = st->operand[vd->operand] ? fe_trace_view(t, (fe_h){st->operand[vd->operand]}) : NULL;
        if (oa < 0 || oa >= out->rank || !src || vd->map != FE_MAP_BOUND) continue;
        int sa = vd->axis < 0 ? src->rank + vd->axis : vd->axis;
        if (sa >= 0 && sa < src->rank && src->has_bound[sa] && src->shape[sa] == out->shape[oa]) {
            out->bound[oa] = src->bound[sa];
            out->has_bound[oa] = true;
        }
    }
}

/* Output operand i (shape and dtype in c): the view dst when it is the first output and dst
 * is given (it must match; an output shape_out leaves at rank 0, a cache the op writes rows
 * of, takes dst's shape, which the op's infer checks at compile; one it leaves at rank 0 and
 * dtype FE_DTYPE_COUNT, Convert's, takes dst's dtype as well), else a new scratch buffer. */
static bool place_output(fe_trace *t, fe_tstep *st, const fe_op_ctx *c, int i, int dst) {
    const fe_tensor *o = &c->operands[i];
    if (dst) {
        const fe_view *dv = fe_trace_view(t, (fe_h){dst});
        bool any = o->rank == 0; /* shaped by its destination */
        bool any_dtype = any && o->dtype == FE_DTYPE_COUNT;
        bool same = dv && (any || dv->rank == o->rank) && (any_dtype || dv->dtype == o->dtype);
        for (int d = 0; same && !any && d < o->rank; d++) same = dv->shape[d] == o->shape[d];
        if (!same) {
            fe_trace_fail(t, FE_E_SHAPE, "%s: its output does not fit the view it is written "
                          "into (shape or dtype differ); make the destination view match",
                          st->label);
            return false;
        }
        st->operand[i] = dst;
        return true;
    }
    if (o->rank < 1 || !fe_dtype_info(o->dtype)) {
        fe_trace_fail(t, FE_E_SHAPE, "%s: its inputs give no output shape (check their "
                      "shapes against `ferrum ops %s`; an output the inputs cannot shape, "
                      "such as a cache, is written into a view with fe_apply_into)",
                      st->label, st->op->name);
        return false;
    }
    fe_view ov = {.dtype = o->dtype, .rank = o->rank, .kind = BUF_SCRATCH};
    memcpy(ov.shape, o->shape, sizeof ov.shape);
    fe_view_set_contiguous(&ov);
    carry_bounds(t, st, &ov);
    ov.buf = fe_trace_new_scratch(t, fe_dtype_bytes(o->dtype, fe_view_numel(&ov)));
    if (ov.buf < 0) return false;
    fe_h h = fe_trace_add_view(t, &ov);
    st->operand[i] = h.id;
    return h.id != 0;
}

/* Records one step of `op`. dst: the view its first output is written into, or 0 for a
 * new scratch buffer. Returns the first output's view id, 0 on error. */
static int record(fe_trace *t, int dst, const char *opname, const fe_h *inputs, int n_inputs,
                  const fe_setting *params, int n_params, const fe_value_set *values, int n_values) {
    if (t->err.status != FE_OK) return 0;
    const fe_op *op = find_op(t, opname, n_inputs, n_params, n_values);
    if (!op || !fe_trace_grow(t, (void **)&t->steps, t->n_steps, &t->cap_steps, sizeof *t->steps))
        return 0;
    fe_tstep st = {.op = op};
    snprintf(st.label, sizeof st.label, "%s#%d", op->name, t->n_steps);
    fe_op_ctx c = {.op = op, .dev = fe_device_get_info(t->g->dev)};
    int first_out = bind_inputs(t, &st, &c, inputs, n_inputs);
    if (first_out < 0 || !set_params(t, &st, &c, params, n_params) ||
        !set_values(t, &st, values, n_values))
        return 0;
    if (op->shape_out) {
        op->shape_out(&c);
    } else {
        for (int i = 0; i < op->n_operands; i++)
            if (op->operands[i].role == FE_OUT) c.operands[i] = c.operands[0];
    }
    for (int i = 0; i < op->n_operands; i++)
        if (op->operands[i].role == FE_OUT && !place_output(t, &st, &c, i, i == first_out ? dst : 0))
            return 0;
    /* scratch read by this step lives at least until it (an output, read after fe_output,
     * keeps living past the call) */
    for (int i = 0; i < op->n_operands; i++) {
        const fe_view *v = st.operand[i] ? fe_trace_view(t, (fe_h){st.operand[i]}) : NULL;
        if (v && v->kind == BUF_SCRATCH && t->scratch[v->buf].last < t->n_steps)
            t->scratch[v->buf].last = t->n_steps;
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
    if (t->n_outputs == FE_MAX_OUTPUTS)
        return fe_trace_fail(t, FE_E_INVALID, "more than %d outputs (FE_MAX_OUTPUTS in "
                             "graph/internal.h); return fewer or raise the limit", FE_MAX_OUTPUTS);
    if (v->kind == BUF_SCRATCH) t->scratch[v->buf].last = 1 << 30; /* lives past the call */
    t->outputs[t->n_outputs++] = x.id;
    return FE_OK;
}

static fe_carry_rec *new_carry(fe_trace *t) {
    if (t->n_carries == FE_MAX_CARRIES) {
        fe_trace_fail(t, FE_E_INVALID, "more than %d carried values (FE_MAX_CARRIES in "
                      "graph/internal.h); carry fewer or raise the limit", FE_MAX_CARRIES);
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
    char path[FE_PATH_LEN];
    snprintf(path, sizeof path, "carried.%s", name);
    int s = fe_graph_state_index(t->g, path);
    if (s < 0)
        return fe_trace_fail(t, FE_E_INVALID, "fe_carry_tensor: no carried tensor \"%s\"; declare "
                             "it with fe_carried_tensor", name);
    const fe_state_rec *st = &t->g->states[s];
    fe_view v = {.dtype = st->dtype, .rank = st->rank, .kind = BUF_STATE, .buf = s};
    memcpy(v.shape, st->shape, sizeof v.shape);
    fe_view_set_contiguous(&v);
    fe_h dst = fe_trace_add_view(t, &v);
    if (fe_copy_into(t, dst, next) != FE_OK) return t->err.status;
    fe_carry_rec *c = new_carry(t);
    if (c) *c = (fe_carry_rec){.var = -1, .state = s};
    return t->err.status;
}

fe_status fe_call(fe_trace *t, fe_graph *inner, const fe_h *inputs, int n_inputs, fe_h *outs,
                  int max_outs, int *n_outs) {
    if (t->err.status != FE_OK) return t->err.status;
    if (t->depth == FE_MAX_FRAMES)
        return fe_trace_fail(t, FE_E_INVALID, "graphs called inside graphs nest deeper than %d "
                             "(FE_MAX_FRAMES in graph/internal.h)", FE_MAX_FRAMES);
    if (n_inputs > FE_MAX_INPUTS)
        return fe_trace_fail(t, FE_E_INVALID, "fe_call: %d inputs; at most %d (FE_MAX_INPUTS in "
                             "graph/internal.h)", n_inputs, FE_MAX_INPUTS);
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
