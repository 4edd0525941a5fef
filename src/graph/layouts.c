/* graph/layouts.c: the weights' layouts a plan reads (fe_layout_store, graph.h). A step
 * whose design reads a weight operand in a layout of its own (fe_op.layout: a weight
 * repacked for a register tile, e.g. GEMM's k-pair panels of 32 rows) gets it made once,
 * when its version compiles, from the weight's data (weights cannot change once a version
 * is compiled). A layout is keyed by the weight view's memory, dtype, shape and strides and
 * by its format (formats are global, ops/op.h), so every step of every version, and of every
 * graph that shares the store, reading the same view in the same format reads one layout,
 * whichever op reads it (a bf16 weight's k-pair panels serve the prefill's GEMM and the
 * decode's GEMV). The weight itself stays where its owner put it (mapped or in memory) for
 * the steps that read it as stored; a layout costs its bytes beside the weight's. */
#include <pthread.h>
#include <string.h>

#include "core/alloc.h"
#include "graph/internal.h"

typedef struct layout_rec {
    const fe_op *op;
    int operand;
    uint64_t format;
    const void *data;        /* the view laid out: its first element, dtype, shape, strides */
    fe_dtype dtype;
    int rank;
    int64_t shape[FE_MAX_RANK], stride[FE_MAX_RANK];
    size_t bytes;
    void *mem;
} layout_rec;

struct fe_layout_store {
    layout_rec *recs;
    int n, cap;
    size_t bytes;
    pthread_mutex_t lock; /* graphs sharing the store may compile from several threads */
    fe_layout_made_fn on_made; /* the owner's hook, told of each weight laid out */
    void *on_made_user;
};

void fe_layout_store_on_made(fe_layout_store *s, fe_layout_made_fn fn, void *user) {
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->on_made = fn;
    s->on_made_user = user;
    pthread_mutex_unlock(&s->lock);
}

/* the bytes from a view's first element to its last */
static size_t view_extent(const fe_tensor *t) {
    int64_t last = 0;
    for (int d = 0; d < t->rank; d++) last += (t->shape[d] - 1) * t->stride[d];
    return fe_dtype_bytes(t->dtype, last + 1);
}

fe_status fe_layout_store_create(fe_layout_store **out, fe_error *err) {
    *out = fe_calloc(1, sizeof **out);
    if (!*out) return fe_error_set(err, FE_E_NOMEM, "layout store: out of memory");
    pthread_mutex_init(&(*out)->lock, NULL);
    return FE_OK;
}

void fe_layout_store_destroy(fe_layout_store *s) {
    if (!s) return;
    for (int r = 0; r < s->n; r++) fe_pages_free(s->recs[r].mem, s->recs[r].bytes);
    fe_free(s->recs);
    pthread_mutex_destroy(&s->lock);
    fe_free(s);
}

size_t fe_layout_store_bytes(const fe_layout_store *s) {
    if (!s) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&s->lock);
    size_t b = s->bytes;
    pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
    return b;
}

const fe_layout_store *fe_graph_layout_store(const fe_graph *g) {
    return g->opts.layouts ? g->opts.layouts : g->own_layouts;
}

/* formats are global (ops/op.h): one copy whichever op and operand reads it */
static bool same(const layout_rec *r, uint64_t format, const fe_tensor *t, size_t bytes) {
    if (r->format != format || r->data != t->data ||
        r->dtype != t->dtype || r->rank != t->rank || r->bytes != bytes)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (r->shape[d] != t->shape[d] || r->stride[d] != t->stride[d]) return false;
    return true;
}

/* Operand i of step s (the weight view t) in the layout its kernel reads (bytes in format),
 * from the store or made there. Under the store's lock. */
static fe_status layout_of(fe_graph *g, fe_layout_store *st, fe_version *v, int s, int i,
                           const fe_tensor *t, size_t bytes, uint64_t format, const char *path,
                           const void **out) {
    fe_kernel *k = v->kernels[s];
    const fe_op *op = v->tr.steps[s].op;
    for (int r = 0; r < st->n; r++)
        if (same(&st->recs[r], format, t, bytes)) {
            *out = st->recs[r].mem;
            return FE_OK;
        }
    if (st->n == st->cap) {
        int nc = st->cap ? st->cap * 2 : 16;
        void *p = fe_realloc(st->recs, (size_t)nc * sizeof *st->recs);
        if (!p) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory listing layouts");
        st->recs = p;
        st->cap = nc;
    }
    /* straight from the OS, in huge pages where the kernel gives them: a model's layouts
     * are GBs, and 4 KiB pages first-touched one by one cost seconds of faults */
    void *mem = fe_pages_alloc_huge(bytes);
    if (!mem)
        return fe_error_set(&g->err, FE_E_NOMEM, "graph \"%s\": out of memory for the %zu-byte "
                            "layout of weight \"%s\" (%s reads it repacked)", g->name, bytes,
                            path, op->name);
    fe_status rc = fe_kernel_make_layout(k, i, t, mem);
    if (rc != FE_OK) {
        fe_pages_free(mem, bytes);
        return fe_error_set(&g->err, rc, "graph \"%s\", step %s: %s", g->name,
                            v->tr.steps[s].label, fe_kernel_message(k));
    }
    layout_rec *r = &st->recs[st->n++];
    *r = (layout_rec){.op = op, .operand = i, .format = format, .data = t->data,
                      .dtype = t->dtype, .rank = t->rank, .bytes = bytes, .mem = mem};
    memcpy(r->shape, t->shape, sizeof r->shape);
    memcpy(r->stride, t->stride, sizeof r->stride);
    st->bytes += bytes;
    *out = mem;
    if (st->on_made) st->on_made(st->on_made_user, t->data, view_extent(t));
    return FE_OK;
}

fe_status fe_version_layouts(fe_graph *g, fe_version *v) {
    v->layouts = fe_calloc((size_t)(v->n_steps ? v->n_steps : 1) * FE_MAX_OPERANDS,
                           sizeof *v->layouts);
    if (!v->layouts) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory for layouts");
    fe_status rc = FE_OK;
    fe_layout_store *st = g->opts.layouts;
    if (st) pthread_mutex_lock(&st->lock);
    for (int s = 0; rc == FE_OK && s < v->n_steps; s++) {
        const fe_tstep *ts = &v->tr.steps[s];
        for (int i = 0; rc == FE_OK && i < ts->op->n_operands; i++) {
            const fe_view *w = ts->operand[i] ? fe_trace_view(&v->tr, (fe_h){ts->operand[i]}) : NULL;
            /* a weight read whole or at a constant offset, with data to lay out */
            if (!w || !fe_view_is_fixed_weight(w) || !g->weights[w->buf].t.data) continue;
            uint64_t format;
            size_t bytes = fe_kernel_layout_bytes(v->kernels[s], i, &format);
            if (!bytes) continue;
            if (!st && !g->own_layouts &&
                (rc = fe_layout_store_create(&g->own_layouts, &g->err)) != FE_OK)
                break;
            fe_tensor t = {.data = (char *)g->weights[w->buf].t.data +
                                   fe_dtype_bytes(w->dtype, w->offset),
                           .dtype = w->dtype, .rank = w->rank};
            memcpy(t.shape, w->shape, sizeof t.shape);
            memcpy(t.stride, w->stride, sizeof t.stride);
            rc = layout_of(g, st ? st : g->own_layouts, v, s, i, &t, bytes, format,
                           g->weights[w->buf].path, &v->layouts[s * FE_MAX_OPERANDS + i]);
        }
    }
    if (st) pthread_mutex_unlock(&st->lock);
    return rc;
}
