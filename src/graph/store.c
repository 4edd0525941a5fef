/* graph/store.c: a graph's named weights and states, shared by all its versions. A weight
 * is the caller's tensor (borrowed; it may have no data yet: shape and dtype are enough to
 * trace, compile and draw); a state is memory the graph owns, zeroed when first declared and
 * declared alike by every version that names it, so one version's writes are the next one's
 * reads. Nothing here knows about traces: tracing (trace.c) and stepping (builders.c) come
 * here, never the other way round. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "graph/internal.h"

fe_status fe_graph_set_weight(fe_graph *g, const char *path, fe_tensor w) {
    if (!path || !*path || strlen(path) >= sizeof g->weights[0].path)
        return fe_error_set(&g->err, FE_E_INVALID, "weight path must be 1..%d characters",
                            FE_PATH_LEN - 1);
    /* data may be NULL: an unread weight (shape and dtype only) traces and compiles, and
     * the graph refuses calls until it has data */
    if (w.rank < 1 || w.rank > FE_MAX_RANK || !fe_dtype_info(w.dtype))
        return fe_error_set(&g->err, FE_E_INVALID, "weight \"%s\": give a dtype and rank 1..%d",
                            path, FE_MAX_RANK);
    for (int i = 0; i < g->n_weights; i++)
        if (strcmp(g->weights[i].path, path) == 0) {
            if (g->n_versions)
                return fe_error_set(&g->err, FE_E_STATE, "weight \"%s\" cannot change after a "
                                    "version is compiled; make a new graph", path);
            g->weights[i].t = w;
            return FE_OK;
        }
    if (g->n_weights == g->cap_weights) {
        int nc = g->cap_weights ? g->cap_weights * 2 : 16;
        void *p = fe_realloc(g->weights, (size_t)nc * sizeof *g->weights);
        if (!p) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory adding weight \"%s\"", path);
        g->weights = p;
        g->cap_weights = nc;
    }
    fe_weight_rec *r = &g->weights[g->n_weights++];
    snprintf(r->path, sizeof r->path, "%s", path);
    r->t = w;
    return FE_OK;
}

int fe_graph_state_index(const fe_graph *g, const char *path) {
    for (int i = 0; i < g->n_states; i++)
        if (strcmp(g->states[i].path, path) == 0) return i;
    return -1;
}

fe_status fe_graph_declare_state(fe_graph *g, const char *path, fe_dtype dt, int rank,
                                 const int64_t *shape, int *index, fe_error *err) {
    *index = -1;
    if (rank < 1 || rank > FE_MAX_RANK || !fe_dtype_info(dt))
        return fe_error_set(err, FE_E_INVALID, "state \"%s\": give a dtype and rank 1..%d", path,
                            FE_MAX_RANK);
    if (strlen(path) >= FE_PATH_LEN)
        return fe_error_set(err, FE_E_INVALID, "state \"%s\": a path has at most %d characters "
                            "(FE_PATH_LEN); give a shorter one", path, FE_PATH_LEN - 1);
    int i = fe_graph_state_index(g, path);
    if (i >= 0) {
        fe_state_rec *s = &g->states[i];
        bool same = s->dtype == dt && s->rank == rank;
        for (int d = 0; same && d < rank; d++) same = s->shape[d] == shape[d];
        if (!same)
            return fe_error_set(err, FE_E_SHAPE, "state \"%s\" was declared with another dtype "
                                "or shape; every version must declare a state alike", path);
        *index = i;
        return FE_OK;
    }
    fe_state_rec s = {.dtype = dt, .rank = rank};
    snprintf(s.path, sizeof s.path, "%s", path);
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 1 || shape[d] > ((int64_t)1 << 40))
            return fe_error_set(err, FE_E_SHAPE, "state \"%s\": size %lld on axis %d; sizes are "
                                "1..2^40", path, (long long)shape[d], d);
        s.shape[d] = shape[d];
        n *= shape[d];
    }
    if (g->n_states == g->cap_states) {
        int nc = g->cap_states ? g->cap_states * 2 : 8;
        void *p = fe_realloc(g->states, (size_t)nc * sizeof *g->states);
        if (!p) return fe_error_set(err, FE_E_NOMEM, "out of memory declaring state \"%s\"", path);
        g->states = p;
        g->cap_states = nc;
    }
    s.bytes = fe_dtype_bytes(dt, n);
    s.mem = fe_pages_alloc(s.bytes); /* zero; resident only as far as it is written */
    if (!s.mem)
        return fe_error_set(err, FE_E_NOMEM, "out of memory for state \"%s\" (%zu bytes)", path,
                            s.bytes);
    g->states[g->n_states] = s;
    *index = g->n_states++;
    return FE_OK;
}
