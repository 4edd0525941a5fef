/* graph/trace.c: the tracing API a body calls: inputs, weights, states, per-call values and
 * their affine arithmetic, views (reshape, transpose, bound, at), operator steps, outputs and
 * carries. Every builder checks what it can at once and records the first error, naming the
 * step and the fix; later builders given a bad handle return one quietly. */
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

/* Grows *arr (of elem bytes) to hold one more; false (and a trace error) when out of memory. */
static bool grow(fe_trace *t, void **arr, int n, int *cap, size_t elem) {
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

static fe_h add_view(fe_trace *t, const fe_view *v) {
    if (!grow(t, (void **)&t->views, t->n_views, &t->cap_views, sizeof *t->views)) return FE_NO_TENSOR;
    t->views[t->n_views++] = *v;
    return (fe_h){t->n_views};
}

static void set_contiguous(fe_view *v) {
    int64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        v->stride[i] = s;
        s *= v->shape[i];
    }
}

static int64_t numel(const fe_view *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->shape[i];
    return n;
}

static const fe_view *arg(fe_trace *t, fe_h h, const char *what) {
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
        if (f->next_input >= f->n_inputs || f->next_input >= 16) {
            fe_trace_fail(t, FE_E_INVALID, "graph \"%s\" called inside asks for input \"%s\" "
                          "but was given %d inputs", f->g->name, name, f->n_inputs);
            return FE_NO_TENSOR;
        }
        snprintf(t->frame_inputs[t->depth - 1][f->next_input], 32, "%s", name);
        return f->inputs[f->next_input++];
    }
    for (int i = 0; i < t->n_sig; i++) {
        if (strcmp(t->sig[i].name, name) != 0) continue;
        const fe_tensor *s = &t->sig[i].t;
        fe_view v = {.dtype = s->dtype, .rank = s->rank, .kind = BUF_INPUT, .buf = i};
        memcpy(v.shape, s->shape, sizeof v.shape);
        set_contiguous(&v);
        return add_view(t, &v);
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
        return add_view(t, &v);
    }
    fe_trace_fail(t, FE_E_NOTFOUND, "no weight \"%s\"; give it with fe_graph_set_weight before "
                  "compiling", path);
    return FE_NO_TENSOR;
}

int fe_graph_state_index(const fe_graph *g, const char *path) {
    for (int i = 0; i < g->n_states; i++)
        if (strcmp(g->states[i].path, path) == 0) return i;
    return -1;
}

static int declare_state(fe_trace *t, const char *path, fe_dtype dt, int rank, const int64_t *shape) {
    fe_graph *g = t->g;
    if (rank < 1 || rank > FE_MAX_RANK || !fe_dtype_info(dt)) {
        fe_trace_fail(t, FE_E_INVALID, "state \"%s\": give a dtype and rank 1..%d", path, FE_MAX_RANK);
        return -1;
    }
    int i = fe_graph_state_index(g, path);
    if (i >= 0) {
        fe_state_rec *s = &g->states[i];
        bool same = s->dtype == dt && s->rank == rank;
        for (int d = 0; same && d < rank; d++) same = s->shape[d] == shape[d];
        if (!same)
            fe_trace_fail(t, FE_E_SHAPE, "state \"%s\" was declared with another dtype or shape; "
                          "every version must declare a state alike", path);
        return same ? i : -1;
    }
    if (g->n_states == g->cap_states) {
        int nc = g->cap_states ? g->cap_states * 2 : 8;
        void *p = fe_realloc(g->states, (size_t)nc * sizeof *g->states);
        if (!p) {
            fe_trace_fail(t, FE_E_NOMEM, "out of memory declaring state \"%s\"", path);
            return -1;
        }
        g->states = p;
        g->cap_states = nc;
    }
    fe_state_rec s = {.dtype = dt, .rank = rank};
    snprintf(s.path, sizeof s.path, "%s", path);
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 1 || shape[d] > ((int64_t)1 << 40)) {
            fe_trace_fail(t, FE_E_SHAPE, "state \"%s\": size %lld on axis %d; sizes are 1..2^40",
                          path, (long long)shape[d], d);
            return -1;
        }
        s.shape[d] = shape[d];
        n *= shape[d];
    }
    s.bytes = fe_dtype_bytes(dt, n);
    s.mem = fe_pages_alloc(s.bytes); /* zero; resident only as far as it is written */
    if (!s.mem) {
        fe_trace_fail(t, FE_E_NOMEM, "out of memory for state \"%s\" (%zu bytes)", path, s.bytes);
        return -1;
    }
    g->states[g->n_states] = s;
    return g->n_states++;
}

fe_h fe_state(fe_trace *t, const char *path, fe_dtype dt, int rank, const int64_t *shape) {
    if (t->err.status != FE_OK) return FE_NO_TENSOR;
    int i = declare_state(t, path, dt, rank, shape);
    if (i < 0) return FE_NO_TENSOR;
    fe_view v = {.dtype = dt, .rank = rank, .kind = BUF_STATE, .buf = i};
    memcpy(v.shape, shape, (size_t)rank * sizeof *shape);
    set_contiguous(&v);
    return add_view(t, &v);
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
    if (g->n_vars == (int)(sizeof g->vars / sizeof g->vars[0])) {
        fe_trace_fail(t, FE_E_INVALID, "more than %d per-call values", g->n_vars);
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
    char path[96];
    snprintf(path, sizeof path, "carried.%s", name);
    return fe_state(t, path, dt, rank, shape);
}

static bool check_axis(fe_trace *t, const fe_view *v, int axis, const char *what) {
    if (axis >= 0 && axis < v->rank) return true;
    fe_trace_fail(t, FE_E_INVALID, "%s: axis %d of a rank-%d tensor", what, axis, v->rank);
    return false;
}

static bool contiguous(const fe_view *v) {
    int64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        if (v->shape[i] > 1 && v->stride[i] != s) return false;
        s *= v->shape[i];
    }
    return true;
}

fe_h fe_reshape(fe_trace *t, fe_h x, int rank, const int64_t *shape) {
    const fe_view *v = arg(t, x, "fe_reshape");
    if (!v) return FE_NO_TENSOR;
    fe_view r = *v;
    r.rank = rank;
    if (rank < 1 || rank > FE_MAX_RANK) {
        fe_trace_fail(t, FE_E_INVALID, "fe_reshape: rank %d; give 1..%d", rank, FE_MAX_RANK);
        return FE_NO_TENSOR;
    }
    memset(r.shape, 0, sizeof r.shape);
    memcpy(r.shape, shape, (size_t)rank * sizeof *shape);
    if (numel(&r) != numel(v) || !contiguous(v)) {
        fe_trace_fail(t, FE_E_SHAPE, "fe_reshape: %lld elements%s cannot take a shape of %lld; "
                      "reshape keeps the element count of a contiguous view (copy it first)",
                      (long long)numel(v), contiguous(v) ? "" : " (a strided view)",
                      (long long)numel(&r));
        return FE_NO_TENSOR;
    }
    set_contiguous(&r);
    /* A bound on axis a carries when the axes up to a are kept as they are (the reshape
     * splits or merges only axes after it), or when it bounds a prefix (every axis before a
     * has size 1) that a new axis with the same inner size bounds too. */
    memset(r.has_bound, 0, sizeof r.has_bound);
    for (int a = 0; a < v->rank; a++) {
        if (!v->has_bound[a]) continue;
        int to = -1;
        bool kept = a < rank;
        for (int b = 0; kept && b <= a; b++) kept = r.shape[b] == v->shape[b];
        if (kept && r.stride[a] == v->stride[a]) to = a;
        bool prefix = true;
        for (int b = 0; b < a; b++) prefix = prefix && v->shape[b] == 1;
        for (int b = 0; to < 0 && prefix && b < rank; b++) {
            if (r.stride[b] == v->stride[a]) to = b;
            if (r.shape[b] != 1) break;
        }
        if (to < 0) {
            fe_trace_fail(t, FE_E_SHAPE, "fe_reshape: the bound on axis %d cannot be carried "
                          "into this shape (keep the axes up to it, or bound a prefix)", a);
            return FE_NO_TENSOR;
        }
        r.bound[to] = v->bound[a];
        r.has_bound[to] = true;
    }
    return add_view(t, &r);
}

fe_h fe_transpose(fe_trace *t, fe_h x, int a0, int a1) {
    const fe_view *v = arg(t, x, "fe_transpose");
    if (!v || !check_axis(t, v, a0, "fe_transpose") || !check_axis(t, v, a1, "fe_transpose"))
        return FE_NO_TENSOR;
    fe_view r = *v;
    r.shape[a0] = v->shape[a1], r.shape[a1] = v->shape[a0];
    r.stride[a0] = v->stride[a1], r.stride[a1] = v->stride[a0];
    r.bound[a0] = v->bound[a1], r.bound[a1] = v->bound[a0];
    r.has_bound[a0] = v->has_bound[a1], r.has_bound[a1] = v->has_bound[a0];
    return add_view(t, &r);
}

static void add_check(fe_trace *t, fe_val v, int64_t len, int64_t dim, const char *what) {
    if (!grow(t, (void **)&t->checks, t->n_checks, &t->cap_checks, sizeof *t->checks)) return;
    fe_check *c = &t->checks[t->n_checks++];
    c->v = v;
    c->v2 = fe_const(0);
    c->len = len;
    c->dim = dim;
    snprintf(c->what, sizeof c->what, "%s", what);
}

static void var_name(const fe_trace *t, fe_val v, char *buf, size_t n) {
    if (v.var < 0 && v.var2 < 0) snprintf(buf, n, "%lld", (long long)v.add);
    else if (v.var2 < 0) snprintf(buf, n, "%s", t->g->vars[v.var].name);
    else snprintf(buf, n, "%s+%s", t->g->vars[v.var].name, t->g->vars[v.var2].name);
}

fe_h fe_bound(fe_trace *t, fe_h x, int axis, fe_val n) {
    const fe_view *v = arg(t, x, "fe_bound");
    if (!v || !check_axis(t, v, axis, "fe_bound")) return FE_NO_TENSOR;
    fe_view r = *v;
    if (n.var < 0 && n.var2 < 0) { /* a constant bound is a slice */
        if (n.add < 0 || n.add > v->shape[axis]) {
            fe_trace_fail(t, FE_E_BOUNDS, "fe_bound: %lld rows of an axis of %lld",
                          (long long)n.add, (long long)v->shape[axis]);
            return FE_NO_TENSOR;
        }
        r.shape[axis] = n.add;
        return add_view(t, &r);
    }
    r.bound[axis] = n;
    r.has_bound[axis] = true;
    char what[96], name[32];
    var_name(t, n, name, sizeof name);
    snprintf(what, sizeof what, "bound %s on axis %d", name, axis);
    add_check(t, n, 0, v->shape[axis], what);
    return add_view(t, &r);
}

fe_h fe_at(fe_trace *t, fe_h x, int axis, fe_val pos, fe_val len) {
    const fe_view *v = arg(t, x, "fe_at");
    if (!v || !check_axis(t, v, axis, "fe_at")) return FE_NO_TENSOR;
    if (len.var >= 0 || len.var2 >= 0) {
        fe_trace_fail(t, FE_E_INVALID, "fe_at: the length is the per-call value \"%s\" but a view's "
                      "size must be known when compiling; give a constant length and bound the "
                      "work with fe_bound", t->g->vars[len.var >= 0 ? len.var : len.var2].name);
        return FE_NO_TENSOR;
    }
    if (len.add < 1 || len.add > v->shape[axis]) {
        fe_trace_fail(t, FE_E_BOUNDS, "fe_at: length %lld on an axis of %lld", (long long)len.add,
                      (long long)v->shape[axis]);
        return FE_NO_TENSOR;
    }
    fe_view r = *v;
    r.shape[axis] = len.add;
    r.has_bound[axis] = false;
    if (pos.var < 0 && pos.var2 < 0) {
        if (pos.add < 0 || pos.add + len.add > v->shape[axis]) {
            fe_trace_fail(t, FE_E_BOUNDS, "fe_at: rows %lld..%lld of an axis of %lld",
                          (long long)pos.add, (long long)(pos.add + len.add), (long long)v->shape[axis]);
            return FE_NO_TENSOR;
        }
        r.offset += pos.add * v->stride[axis];
        return add_view(t, &r);
    }
    if (r.n_dyn == FE_MAX_DYN) {
        fe_trace_fail(t, FE_E_UNSUPPORTED, "fe_at: more than %d per-call offsets on one view",
                      FE_MAX_DYN);
        return FE_NO_TENSOR;
    }
    r.dyn[r.n_dyn++] = fe_val_mul(pos, v->stride[axis]);
    char what[96], name[32];
    var_name(t, pos, name, sizeof name);
    snprintf(what, sizeof what, "offset %s (+%lld) on axis %d", name, (long long)len.add, axis);
    add_check(t, pos, len.add, v->shape[axis], what);
    return add_view(t, &r);
}

fe_h fe_window(fe_trace *t, fe_h x, int axis, fe_val pos, int64_t len, fe_val n) {
    const fe_view *v = arg(t, x, "fe_window");
    if (!v || !check_axis(t, v, axis, "fe_window")) return FE_NO_TENSOR;
    if (len < 1 || len > v->shape[axis] || (n.var < 0 && n.var2 < 0 && (n.add < 0 || n.add > len))) {
        fe_trace_fail(t, FE_E_BOUNDS, "fe_window: %lld rows (bound %lld) of an axis of %lld",
                      (long long)len, (long long)n.add, (long long)v->shape[axis]);
        return FE_NO_TENSOR;
    }
    if (v->n_dyn == FE_MAX_DYN) {
        fe_trace_fail(t, FE_E_UNSUPPORTED, "fe_window: more than %d per-call offsets on one view",
                      FE_MAX_DYN);
        return FE_NO_TENSOR;
    }
    fe_view r = *v;
    r.shape[axis] = len;
    r.dyn[r.n_dyn++] = fe_val_mul(pos, v->stride[axis]);
    r.bound[axis] = n;
    r.has_bound[axis] = true;
    char what[96], pname[32], nname[32];
    var_name(t, pos, pname, sizeof pname);
    var_name(t, n, nname, sizeof nname);
    /* per call: pos >= 0 and pos + n within the axis; 0 <= n <= len */
    snprintf(what, sizeof what, "window end %s + %s on axis %d", pname, nname, axis);
    add_check(t, pos, 0, v->shape[axis], what);
    if (t->err.status == FE_OK) t->checks[t->n_checks - 1].v2 = n;
    snprintf(what, sizeof what, "window rows %s on axis %d", nname, axis);
    add_check(t, n, 0, len, what);
    return add_view(t, &r);
}
