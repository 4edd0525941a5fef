/* graph/trace.c: the trace object a body is given, and the handles it hands out: inputs,
 * weights, states, carried tensors, per-call values and their affine arithmetic. A trace
 * keeps the first error, naming the step and the fix; later builders given a bad handle
 * return one quietly. Views of handles are views.c's; steps are builders.c's. */
#include <string.h>

#include "core/alloc.h"
#include "graph/internal.h"

fe_status fe_trace_fail(fe_trace *t, fe_status s, const char *fmt, ...) {
    if (t->err.status != FE_OK) return t->err.status;
    va_list ap;
    va_start(ap, fmt);
    char msg[480];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fe_error_set(&t->err, s, "graph \"%s\": %s", t->g->name, msg);
}

fe_status fe_trace_status(const fe_trace *t) { return t->err.status; }

int fe_shape(const fe_trace *t, fe_h x, int64_t shape[FE_MAX_RANK]) {
    const fe_view *v = fe_trace_view(t, x);
    if (!v) return 0;
    memcpy(shape, v->shape, sizeof v->shape);
    return v->rank;
}

fe_dtype fe_dtype_of(const fe_trace *t, fe_h x) {
    const fe_view *v = fe_trace_view(t, x);
    return v ? v->dtype : FE_DTYPE_COUNT;
}

void fe_trace_init(fe_trace *t, fe_graph *g, const fe_named_tensor *sig, int n_sig) {
    memset(t, 0, sizeof *t);
    t->g = g;
    t->sig = sig;
    t->n_sig = n_sig;
}

void fe_trace_deinit(fe_trace *t) {
    fe_free(t->views);
    fe_free(t->steps);
    fe_free(t->checks);
    fe_free(t->scratch);
    t->views = NULL;
    t->steps = NULL;
    t->checks = NULL;
    t->scratch = NULL;
}

bool fe_trace_grow(fe_trace *t, void **arr, int n, int *cap, size_t elem) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 16;
    void *p = fe_realloc(*arr, (size_t)nc * elem);
    if (!p) {
        fe_trace_fail(t, FE_E_NOMEM, "out of memory while tracing");
        return false;
    }
    *arr = p;
    *cap = nc;
    return true;
}

const fe_view *fe_trace_view(const fe_trace *t, fe_h h) {
    return h.id >= 1 && h.id <= t->n_views ? &t->views[h.id - 1] : NULL;
}

fe_h fe_trace_add_view(fe_trace *t, const fe_view *v) {
    if (!fe_trace_grow(t, (void **)&t->views, t->n_views, &t->cap_views, sizeof *t->views))
        return FE_NO_TENSOR;
    t->views[t->n_views++] = *v;
    return (fe_h){t->n_views};
}

int fe_trace_new_scratch(fe_trace *t, size_t bytes) {
    if (!fe_trace_grow(t, (void **)&t->scratch, t->n_scratch, &t->cap_scratch, sizeof *t->scratch))
        return -1;
    t->scratch[t->n_scratch] = (fe_scratch_buf){.bytes = bytes, .first = t->n_steps,
                                                .last = t->n_steps};
    return t->n_scratch++;
}

void fe_trace_val_name(const fe_trace *t, fe_val v, char *buf, size_t n) {
    if (v.var < 0 && v.var2 < 0) snprintf(buf, n, "%lld", (long long)v.add);
    else if (v.var2 < 0) snprintf(buf, n, "%s", t->g->vars[v.var].name);
    else snprintf(buf, n, "%s+%s", t->g->vars[v.var].name, t->g->vars[v.var2].name);
}

const fe_view *fe_trace_arg(fe_trace *t, fe_h h, const char *what) {
    if (t->err.status != FE_OK) return NULL;
    const fe_view *v = fe_trace_view(t, h);
    if (!v) fe_trace_fail(t, FE_E_INVALID, "%s: not a tensor of this trace", what);
    return v;
}

fe_h fe_input(fe_trace *t, const char *name) {
    if (t->err.status != FE_OK) return FE_NO_TENSOR;
    if (t->depth > 0) { /* inside fe_call: the k-th input name the inner body asks for */
        fe_frame *f = &t->frames[t->depth - 1];
        for (int k = 0; k < f->next_input; k++)
            if (strcmp(t->frame_inputs[t->depth - 1][k], name) == 0) return f->inputs[k];
        if (f->next_input >= f->n_inputs || f->next_input >= FE_MAX_INPUTS) {
            fe_trace_fail(t, FE_E_INVALID, "graph \"%s\" called inside asks for input \"%s\" "
                          "but was given %d inputs", f->g->name, name, f->n_inputs);
            return FE_NO_TENSOR;
        }
        snprintf(t->frame_inputs[t->depth - 1][f->next_input], FE_NAME_LEN, "%s", name);
        return f->inputs[f->next_input++];
    }
    for (int i = 0; i < t->n_sig; i++) {
        if (strcmp(t->sig[i].name, name) != 0) continue;
        const fe_tensor *s = &t->sig[i].t;
        fe_view v = {.dtype = s->dtype, .rank = s->rank, .kind = BUF_INPUT, .buf = i};
        memcpy(v.shape, s->shape, sizeof v.shape);
        fe_view_set_contiguous(&v);
        return fe_trace_add_view(t, &v);
    }
    fe_trace_fail(t, FE_E_INVALID, "the body asks for input \"%s\" but the call gives no input "
                  "of that name; pass it in the inputs", name);
    return FE_NO_TENSOR;
}

bool fe_has_input(const fe_trace *t, const char *name) {
    if (t->depth > 0) return true;
    for (int i = 0; i < t->n_sig; i++)
        if (strcmp(t->sig[i].name, name) == 0) return true;
    return false;
}

fe_h fe_weight(fe_trace *t, const char *path) {
    if (t->err.status != FE_OK) return FE_NO_TENSOR;
    fe_graph *g = t->depth > 0 ? t->frames[t->depth - 1].g : t->g;
    for (int i = 0; i < g->n_weights; i++) {
        if (strcmp(g->weights[i].path, path) != 0) continue;
        const fe_tensor *w = &g->weights[i].t;
        fe_view v = {.dtype = w->dtype, .rank = w->rank, .kind = BUF_WEIGHT, .buf = i};
        memcpy(v.shape, w->shape, sizeof v.shape);
        memcpy(v.stride, w->stride, sizeof v.stride);
        /* weights of an inner graph are found through their own graph: index into ours */
        if (g != t->g) {
            int j = -1;
            for (int k = 0; k < t->g->n_weights && j < 0; k++)
                if (w->data ? t->g->weights[k].t.data == w->data
                            : strcmp(t->g->weights[k].path, path) == 0)
                    j = k;
            if (j < 0 && fe_graph_set_weight(t->g, path, *w) == FE_OK) j = t->g->n_weights - 1;
            if (j < 0) {
                fe_trace_fail(t, FE_E_NOMEM, "out of memory adding weight \"%s\"", path);
                return FE_NO_TENSOR;
            }
            v.buf = j;
        }
        return fe_trace_add_view(t, &v);
    }
    fe_trace_fail(t, FE_E_NOTFOUND, "no weight \"%s\"; give it with fe_graph_set_weight before "
                  "compiling", path);
    return FE_NO_TENSOR;
}

fe_h fe_state(fe_trace *t, const char *path, fe_dtype dt, int rank, const int64_t *shape) {
    if (t->err.status != FE_OK) return FE_NO_TENSOR;
    int i;
    fe_error e = {0};
    if (fe_graph_declare_state(t->g, path, dt, rank, shape, &i, &e) != FE_OK) {
        fe_trace_fail(t, e.status, "%s", e.message);
        return FE_NO_TENSOR;
    }
    fe_view v = {.dtype = dt, .rank = rank, .kind = BUF_STATE, .buf = i};
    memcpy(v.shape, shape, (size_t)rank * sizeof *shape);
    fe_view_set_contiguous(&v);
    return fe_trace_add_view(t, &v);
}

static fe_val declare_var(fe_trace *t, const char *name, fe_var_kind kind) {
    fe_graph *g = t->g;
    for (int i = 0; i < g->n_vars; i++) {
        if (strcmp(g->vars[i].name, name) != 0) continue;
        if (g->vars[i].kind != kind)
            fe_trace_fail(t, FE_E_INVALID, "per-call value \"%s\" is declared with two kinds",
                          name);
        return (fe_val){.var = i, .var2 = -1, .mul = 1};
    }
    if (g->n_vars == FE_MAX_VARS) {
        fe_trace_fail(t, FE_E_INVALID, "per-call value \"%s\": a graph has at most %d "
                      "(FE_MAX_VARS in graph/internal.h); reuse one or raise the limit", name,
                      FE_MAX_VARS);
        return fe_const(0);
    }
    if (strlen(name) >= FE_NAME_LEN) {
        fe_trace_fail(t, FE_E_INVALID, "per-call value \"%s\": a name has at most %d characters "
                      "(FE_NAME_LEN)", name, FE_NAME_LEN - 1);
        return fe_const(0);
    }
    fe_var_rec *v = &g->vars[g->n_vars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->kind = kind;
    return (fe_val){.var = g->n_vars++, .var2 = -1, .mul = 1};
}

fe_val fe_scratchpad(fe_trace *t, const char *name) { return declare_var(t, name, VAR_SCRATCHPAD); }
fe_val fe_carried(fe_trace *t, const char *name) { return declare_var(t, name, VAR_CARRIED); }
fe_val fe_dispatch_time(fe_trace *t, const char *name) {
    t->dispatch_time = true;
    return declare_var(t, name, VAR_DISPATCH);
}
fe_val fe_const(int64_t c) { return (fe_val){.var = -1, .var2 = -1, .add = c}; }
fe_val fe_val_add(fe_val v, int64_t c) {
    v.add += c;
    return v;
}
fe_val fe_val_mul(fe_val v, int64_t c) {
    v.mul *= c;
    v.mul2 *= c;
    v.add *= c;
    return v;
}

fe_val fe_val_sum(fe_trace *t, fe_val a, fe_val b) {
    fe_val r = a;
    r.add += b.add;
    int32_t vars[2] = {b.var, b.var2};
    int64_t muls[2] = {b.mul, b.mul2};
    for (int i = 0; i < 2; i++) {
        if (vars[i] < 0) continue;
        if (r.var == vars[i]) r.mul += muls[i];
        else if (r.var2 == vars[i]) r.mul2 += muls[i];
        else if (r.var < 0) r.var = vars[i], r.mul = muls[i];
        else if (r.var2 < 0) r.var2 = vars[i], r.mul2 = muls[i];
        else fe_trace_fail(t, FE_E_UNSUPPORTED, "fe_val_sum: a value may name at most two per-call values");
    }
    return r;
}

fe_h fe_carried_tensor(fe_trace *t, const char *name, fe_dtype dt, int rank, const int64_t *shape) {
    char path[FE_PATH_LEN];
    snprintf(path, sizeof path, "carried.%s", name);
    return fe_state(t, path, dt, rank, shape);
}
