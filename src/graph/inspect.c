/* graph/inspect.c: the tuner's view of a compiled version (graph/inspect.h): its steps'
 * operators, kernels, operand shapes, params, held tunables and per-call values at given
 * words, read from the version the graph compiled. */
#include <string.h>

#include "core/error.h"
#include "graph/inspect.h"
#include "graph/internal.h"

fe_status fe_graph_version_index(fe_graph *g, const fe_named_tensor *sig, int n_sig, int *index) {
    fe_version *v;
    fe_status st = fe_version_find(g, sig, n_sig, &v);
    if (st != FE_OK) return st;
    for (int i = 0; i < g->n_versions; i++)
        if (g->versions[i] == v) *index = i;
    return FE_OK;
}

int fe_graph_version_steps(const fe_graph *g, int v) {
    return v >= 0 && v < g->n_versions ? g->versions[v]->n_steps : 0;
}

bool fe_graph_version_each_step(const fe_graph *g, int v) {
    return v >= 0 && v < g->n_versions && g->versions[v]->each_step;
}

fe_status fe_graph_step_info(const fe_graph *g, int v, int s, const fe_word *words, int n_words,
                             fe_step_info *out, fe_error *err) {
    memset(out, 0, sizeof *out);
    if (v < 0 || v >= g->n_versions || s < 0 || s >= g->versions[v]->n_steps)
        return fe_error_set(err, FE_E_INVALID, "graph \"%s\" has no step %d of version %d",
                            g->name, s, v);
    const fe_version *ver = g->versions[v];
    int64_t w[FE_MAX_VARS];
    for (int i = 0; i < g->n_vars; i++) w[i] = g->vars[i].word;
    for (int k = 0; k < n_words; k++) {
        int i = -1;
        for (int j = 0; words[k].name && j < g->n_vars && i < 0; j++)
            if (strcmp(g->vars[j].name, words[k].name) == 0) i = j;
        if (i < 0)
            return fe_error_set(err, FE_E_INVALID, "graph \"%s\" has no per-call value \"%s\"",
                                g->name, words[k].name ? words[k].name : "(null)");
        w[i] = words[k].value;
    }
    const fe_tstep *st = &ver->tr.steps[s];
    const fe_kernel *k = ver->kernels[s];
    out->label = st->label;
    out->op = st->op;
    out->kernel = k;
    for (int i = 0; i < st->op->n_operands; i++) {
        if (!st->operand[i]) continue;
        const fe_view *view = fe_trace_view(&ver->tr, (fe_h){st->operand[i]});
        fe_tensor *t = &out->operands[i];
        out->weight[i] = fe_view_is_fixed_weight(view); /* as layouts.c lays out */
        out->weight_id[i] = out->weight[i]
                                ? (uint64_t)(view->buf + 1) << 40 | (uint64_t)view->offset
                                : 0;
        *t = (fe_tensor){.dtype = view->dtype, .rank = view->rank};
        memcpy(t->shape, view->shape, sizeof t->shape);
        memcpy(t->stride, view->stride, sizeof t->stride);
    }
    for (int p = 0; p < st->n_params; p++)
        out->params[p] = (fe_setting){st->param_names[p], st->params[p].value};
    out->n_params = st->n_params;
    const fe_design *d = fe_kernel_design(k);
    for (int i = 0; i < st->op->n_tunables; i++)
        if (fe_kernel_tunable_source(k, i) == FE_TUNABLE_FROM_CALL_SITE)
            out->held[out->n_held++] = (fe_setting){st->op->tunables[i].name,
                                                    (double)d->tunables[i]};
    fe_step_values(ver, s, w, out->values, &out->empty, &out->follows_words);
    return FE_OK;
}
