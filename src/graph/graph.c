/* graph/graph.c: the graph object: made from a device, a name and a body (a model's
 * forward pass, traced per input signature), holding its weights and states (store.c), its
 * per-call values, its compiled versions (compile.c) and the weights' layouts they read
 * (layouts.c), and destroyed with all of them.
 * Also its compile options' defaults, its last message and its statistics. */
#include <string.h>

#include "core/alloc.h"
#include "graph/internal.h"

fe_compile_options fe_compile_options_default(void) {
    return (fe_compile_options){.packaging = FE_PACK_AUTO};
}

fe_status fe_graph_create(fe_device *dev, const char *name, fe_body_fn body, const void *model,
                          fe_graph **out, fe_error *err) {
    *out = NULL;
    if (!dev || !body)
        return fe_error_set(err, FE_E_INVALID, "graph: give a device and a body function");
    fe_graph *g = fe_calloc(1, sizeof *g);
    if (!g) return fe_error_set(err, FE_E_NOMEM, "graph: out of memory");
    g->dev = dev;
    snprintf(g->name, sizeof g->name, "%s", name ? name : "graph");
    g->body = body;
    g->model = model;
    g->opts = fe_compile_options_default();
    *out = g;
    return FE_OK;
}

void fe_graph_destroy(fe_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_versions; i++) fe_version_destroy(g->versions[i]);
    for (int i = 0; i < g->n_states; i++) {
        fe_pages_free(g->states[i].mem, g->states[i].bytes);
        fe_free(g->states[i].ref_mem);
    }
    fe_layout_store_destroy(g->own_layouts);
    fe_free(g->versions);
    fe_free(g->states);
    fe_free(g->weights);
    fe_free(g->scratch);
    fe_free(g->ref_scratch);
    fe_free(g);
}

const char *fe_graph_message(const fe_graph *g) { return g->err.message; }

fe_graph_stats fe_graph_get_stats(const fe_graph *g) {
    fe_graph_stats s = g->stats;
    s.arena_bytes = g->scratch_bytes; /* op workspaces live in the scratch arena */
    for (int i = 0; i < g->n_states; i++) s.arena_bytes += g->states[i].bytes;
    s.layout_bytes = fe_layout_store_bytes(fe_graph_layout_store(g));
    return s;
}
