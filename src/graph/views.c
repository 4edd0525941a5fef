/* graph/views.c: views of a trace's handles, each a new handle over the same buffer:
 * reshape (a contiguous view, bounds carried where the axes allow), transpose, bound (x[:n],
 * the bound following the view to every consumer), at (a per-call offset), window (an offset
 * and a bound). Every per-call offset and bound adds a check that a call makes before any
 * work: 0 <= value and value + length <= the axis. */
#include <string.h>

#include "graph/internal.h"

static bool check_axis(fe_trace *t, const fe_view *v, int axis, const char *what) {
    if (axis >= 0 && axis < v->rank) return true;
    fe_trace_fail(t, FE_E_INVALID, "%s: axis %d of a rank-%d tensor", what, axis, v->rank);
    return false;
}

fe_h fe_reshape(fe_trace *t, fe_h x, int rank, const int64_t *shape) {
    const fe_view *v = fe_trace_arg(t, x, "fe_reshape");
    if (!v) return FE_NO_TENSOR;
    fe_view r = *v;
    r.rank = rank;
    if (rank < 1 || rank > FE_MAX_RANK) {
        fe_trace_fail(t, FE_E_INVALID, "fe_reshape: rank %d; give 1..%d", rank, FE_MAX_RANK);
        return FE_NO_TENSOR;
    }
    memset(r.shape, 0, sizeof r.shape);
    memcpy(r.shape, shape, (size_t)rank * sizeof *shape);
    if (fe_view_numel(&r) != fe_view_numel(v) || !fe_view_is_contiguous(v)) {
        fe_trace_fail(t, FE_E_SHAPE, "fe_reshape: %lld elements%s cannot take a shape of %lld; "
                      "reshape keeps the element count of a contiguous view (copy it first)",
                      (long long)fe_view_numel(v), fe_view_is_contiguous(v) ? "" : " (a strided view)",
                      (long long)fe_view_numel(&r));
        return FE_NO_TENSOR;
    }
    fe_view_set_contiguous(&r);
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
    return fe_trace_add_view(t, &r);
}

fe_h fe_transpose(fe_trace *t, fe_h x, int a0, int a1) {
    const fe_view *v = fe_trace_arg(t, x, "fe_transpose");
    if (!v || !check_axis(t, v, a0, "fe_transpose") || !check_axis(t, v, a1, "fe_transpose"))
        return FE_NO_TENSOR;
    fe_view r = *v;
    r.shape[a0] = v->shape[a1], r.shape[a1] = v->shape[a0];
    r.stride[a0] = v->stride[a1], r.stride[a1] = v->stride[a0];
    r.bound[a0] = v->bound[a1], r.bound[a1] = v->bound[a0];
    r.has_bound[a0] = v->has_bound[a1], r.has_bound[a1] = v->has_bound[a0];
    return fe_trace_add_view(t, &r);
}

static void add_check(fe_trace *t, fe_val v, int64_t len, int64_t dim, const char *what) {
    if (!fe_trace_grow(t, (void **)&t->checks, t->n_checks, &t->cap_checks, sizeof *t->checks)) return;
    fe_check *c = &t->checks[t->n_checks++];
    c->v = v;
    c->v2 = fe_const(0);
    c->len = len;
    c->dim = dim;
    snprintf(c->what, sizeof c->what, "%s", what);
}

fe_h fe_bound(fe_trace *t, fe_h x, int axis, fe_val n) {
    const fe_view *v = fe_trace_arg(t, x, "fe_bound");
    if (!v || !check_axis(t, v, axis, "fe_bound")) return FE_NO_TENSOR;
    fe_view r = *v;
    if (n.var < 0 && n.var2 < 0) { /* a constant bound is a slice */
        if (n.add < 0 || n.add > v->shape[axis]) {
            fe_trace_fail(t, FE_E_BOUNDS, "fe_bound: %lld rows of an axis of %lld",
                          (long long)n.add, (long long)v->shape[axis]);
            return FE_NO_TENSOR;
        }
        r.shape[axis] = n.add;
        return fe_trace_add_view(t, &r);
    }
    r.bound[axis] = n;
    r.has_bound[axis] = true;
    char what[FE_CHECK_LEN], name[FE_NAME_LEN];
    fe_trace_val_name(t, n, name, sizeof name);
    snprintf(what, sizeof what, "bound %s on axis %d", name, axis);
    add_check(t, n, 0, v->shape[axis], what);
    return fe_trace_add_view(t, &r);
}

fe_h fe_at(fe_trace *t, fe_h x, int axis, fe_val pos, fe_val len) {
    const fe_view *v = fe_trace_arg(t, x, "fe_at");
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
        return fe_trace_add_view(t, &r);
    }
    if (r.n_dyn == FE_MAX_DYN) {
        fe_trace_fail(t, FE_E_UNSUPPORTED, "fe_at: more than %d per-call offsets on one view (FE_MAX_DYN)",
                      FE_MAX_DYN);
        return FE_NO_TENSOR;
    }
    r.dyn[r.n_dyn++] = fe_val_mul(pos, v->stride[axis]);
    char what[FE_CHECK_LEN], name[FE_NAME_LEN];
    fe_trace_val_name(t, pos, name, sizeof name);
    snprintf(what, sizeof what, "offset %s (+%lld) on axis %d", name, (long long)len.add, axis);
    add_check(t, pos, len.add, v->shape[axis], what);
    return fe_trace_add_view(t, &r);
}

fe_h fe_window(fe_trace *t, fe_h x, int axis, fe_val pos, int64_t len, fe_val n) {
    const fe_view *v = fe_trace_arg(t, x, "fe_window");
    if (!v || !check_axis(t, v, axis, "fe_window")) return FE_NO_TENSOR;
    if (len < 1 || len > v->shape[axis] || (n.var < 0 && n.var2 < 0 && (n.add < 0 || n.add > len))) {
        fe_trace_fail(t, FE_E_BOUNDS, "fe_window: %lld rows (bound %lld) of an axis of %lld",
                      (long long)len, (long long)n.add, (long long)v->shape[axis]);
        return FE_NO_TENSOR;
    }
    if (v->n_dyn == FE_MAX_DYN) {
        fe_trace_fail(t, FE_E_UNSUPPORTED, "fe_window: more than %d per-call offsets on one view (FE_MAX_DYN)",
                      FE_MAX_DYN);
        return FE_NO_TENSOR;
    }
    fe_view r = *v;
    r.shape[axis] = len;
    r.dyn[r.n_dyn++] = fe_val_mul(pos, v->stride[axis]);
    r.bound[axis] = n;
    r.has_bound[axis] = true;
    char what[FE_CHECK_LEN], pname[FE_NAME_LEN], nname[FE_NAME_LEN];
    fe_trace_val_name(t, pos, pname, sizeof pname);
    fe_trace_val_name(t, n, nname, sizeof nname);
    /* per call: pos >= 0 and pos + n within the axis; 0 <= n <= len */
    snprintf(what, sizeof what, "window end %s + %s on axis %d", pname, nname, axis);
    add_check(t, pos, 0, v->shape[axis], what);
    if (t->err.status == FE_OK) t->checks[t->n_checks - 1].v2 = n;
    snprintf(what, sizeof what, "window rows %s on axis %d", nname, axis);
    add_check(t, n, 0, len, what);
    return fe_trace_add_view(t, &r);
}
