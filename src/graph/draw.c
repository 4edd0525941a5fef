/* graph/draw.c: Graphviz DOT of a graph's compiled versions: one cluster per version, a box
 * per step (operator, design key, width), an ellipse per buffer (input, weight, state, or
 * scratch with its arena offset and size), a diamond per per-call value with dashed edges to
 * the steps that read it (bound, offset or value). */
#include <string.h>

#include "graph/internal.h"

static void buffer_node(FILE *f, const fe_graph *g, const fe_version *v, int vi, const fe_view *w) {
    switch (w->kind) {
    case BUF_INPUT:
        fprintf(f, "  v%d_in%d [shape=ellipse, label=\"input %s\"];\n", vi, w->buf, v->sig[w->buf].name);
        break;
    case BUF_WEIGHT:
        fprintf(f, "  w%d [shape=ellipse, style=filled, fillcolor=lightgrey, label=\"weight %s\"];\n",
                w->buf, g->weights[w->buf].path);
        break;
    case BUF_STATE:
        fprintf(f, "  s%d [shape=cylinder, label=\"state %s\\n%zu bytes\"];\n", w->buf,
                g->states[w->buf].path, g->states[w->buf].bytes);
        break;
    case BUF_SCRATCH:
        fprintf(f, "  v%d_b%d [shape=ellipse, label=\"scratch @%zu\\n%zu bytes\"];\n", vi, w->buf,
                v->tr.scratch[w->buf].offset, v->tr.scratch[w->buf].bytes);
        break;
    }
}

static void buffer_id(char *buf, size_t n, int vi, const fe_view *w) {
    switch (w->kind) {
    case BUF_INPUT: snprintf(buf, n, "v%d_in%d", vi, w->buf); break;
    case BUF_WEIGHT: snprintf(buf, n, "w%d", w->buf); break;
    case BUF_STATE: snprintf(buf, n, "s%d", w->buf); break;
    case BUF_SCRATCH: snprintf(buf, n, "v%d_b%d", vi, w->buf); break;
    }
}

fe_status fe_graph_dot(const fe_graph *g, FILE *f) {
    fprintf(f, "digraph \"%s\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n",
            g->name);
    for (int var = 0; var < g->n_vars; var++)
        fprintf(f, "  var%d [shape=diamond, style=filled, fillcolor=lightyellow, label=\"%s\\n(%s)\"];\n",
                var, g->vars[var].name,
                g->vars[var].kind == VAR_SCRATCHPAD ? "scratchpad"
                : g->vars[var].kind == VAR_CARRIED  ? "carried" : "dispatch-time");
    for (int vi = 0; vi < g->n_versions; vi++) {
        const fe_version *v = g->versions[vi];
        const fe_trace *t = &v->tr;
        fprintf(f, "  subgraph cluster_v%d {\n    label=\"version %d: %d steps, %s, scratch %zu bytes\";\n",
                vi, vi, v->n_steps, v->each_step ? "each_step" : "fused", v->scratch_bytes);
        for (int s = 0; s < t->n_steps; s++) {
            const fe_design *d = fe_kernel_design(v->kernels[s]);
            fprintf(f, "    v%d_s%d [shape=box, style=rounded, label=\"%s\\n%s, width %d\\nkey %016llx\"];\n",
                    vi, s, t->steps[s].label, fe_isa_name(d->isa), fe_kernel_width(v->kernels[s]),
                    (unsigned long long)d->key);
        }
        fprintf(f, "  }\n");
        for (int s = 0; s < t->n_steps; s++) {
            const fe_tstep *st = &t->steps[s];
            for (int i = 0; i < st->op->n_operands; i++) {
                if (!st->operand[i]) continue;
                const fe_view *w = fe_trace_view(t, (fe_h){st->operand[i]});
                char id[48];
                buffer_id(id, sizeof id, vi, w);
                buffer_node(f, g, v, vi, w);
                if (st->op->operands[i].role == FE_IN)
                    fprintf(f, "  %s -> v%d_s%d [label=\"%s\"];\n", id, vi, s, st->op->operands[i].name);
                else
                    fprintf(f, "  v%d_s%d -> %s [label=\"%s\"];\n", vi, s, id, st->op->operands[i].name);
                for (int a = 0; a < w->rank; a++)
                    if (w->has_bound[a] && w->bound[a].var >= 0)
                        fprintf(f, "  var%d -> v%d_s%d [style=dashed, label=\"bounds %s[%d]\"];\n",
                                w->bound[a].var, vi, s, st->op->operands[i].name, a);
                for (int k = 0; k < w->n_dyn; k++)
                    if (w->dyn[k].var >= 0)
                        fprintf(f, "  var%d -> v%d_s%d [style=dashed, label=\"offsets %s\"];\n",
                                w->dyn[k].var, vi, s, st->op->operands[i].name);
            }
            for (int i = 0; i < st->op->n_values; i++)
                if (st->value_given[i] && st->value[i].var >= 0)
                    fprintf(f, "  var%d -> v%d_s%d [style=dashed, label=\"%s\"];\n",
                            st->value[i].var, vi, s, st->op->values[i].name);
        }
    }
    fprintf(f, "}\n");
    return ferror(f) ? FE_E_IO : FE_OK;
}
