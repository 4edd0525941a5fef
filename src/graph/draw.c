/* graph/draw.c: Graphviz DOT of a graph's compiled versions: one cluster per version, a box
 * per step (operator, design key, width), an ellipse per buffer (input, weight, state, or
 * scratch with its arena offset and size), a diamond per per-call value with dashed edges to
 * the steps that read it (bound, offset or value). A model's layers that repeat an earlier
 * one are one node, with the buffers flowing in and out of them (draw_collapse.c). */
#include <string.h>

#include "core/alloc.h"
#include "graph/draw_collapse.h"

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

/* Buffer slots for the edges of folded layers: scratch buffers, then inputs. Each holds the
 * step that last wrote it (or -2 - run for a folded run) and whether a run's edge to or from
 * it is drawn, so a run shows once what flows in and out of it. */
typedef struct fold_edges {
    int *writer, *into, *from;
    int n_scratch;
} fold_edges;

static int slot_of(const fold_edges *e, const fe_view *w) {
    return w->kind == BUF_SCRATCH ? w->buf : w->kind == BUF_INPUT ? e->n_scratch + w->buf : -1;
}

/* The edges of step s, folded into run r: only what flows in from outside the run. */
static void folded_step_edges(FILE *f, const fe_graph *g, const fe_version *v, int vi, int s, int r,
                              fold_edges *e) {
    const fe_tstep *st = &v->tr.steps[s];
    for (int i = 0; i < st->op->n_operands; i++) {
        if (!st->operand[i]) continue;
        const fe_view *w = fe_trace_view(&v->tr, (fe_h){st->operand[i]});
        int k = slot_of(e, w);
        if (k < 0) continue;
        if (st->op->operands[i].role != FE_IN) {
            e->writer[k] = -2 - r;
        } else if (e->writer[k] != -2 - r && e->into[k] != r + 1) {
            char id[48];
            buffer_id(id, sizeof id, vi, w);
            buffer_node(f, g, v, vi, w);
            fprintf(f, "  %s -> v%d_r%d;\n", id, vi, r);
            e->into[k] = r + 1;
        }
    }
}

/* Before a drawn step reads w: the edge from the folded run that wrote it, once. */
static void edge_from_run(FILE *f, int vi, const fe_view *w, const char *id, fold_edges *e) {
    int k = slot_of(e, w);
    if (k < 0 || e->writer[k] > -2 || e->from[k] == e->writer[k]) return;
    fprintf(f, "  v%d_r%d -> %s;\n", vi, -2 - e->writer[k], id);
    e->from[k] = e->writer[k];
}

fe_status fe_graph_dot(const fe_graph *g, FILE *f) {
    /* newrank: ranks over the whole graph, clusters included; without it Graphviz 2.43's
     * spline routing failed ("triangulation failed") on the causal graph once its f16 caches
     * put a Convert step after V's product and K's RoPE */
    fprintf(f, "digraph \"%s\" {\n  rankdir=TB;\n  newrank=true;\n"
            "  node [fontname=\"Helvetica\", fontsize=10];\n", g->name);
    for (int var = 0; var < g->n_vars; var++)
        fprintf(f, "  var%d [shape=diamond, style=filled, fillcolor=lightyellow, label=\"%s\\n(%s)\"];\n",
                var, g->vars[var].name,
                g->vars[var].kind == VAR_SCRATCHPAD ? "scratchpad"
                : g->vars[var].kind == VAR_CARRIED  ? "carried" : "dispatch-time");
    for (int vi = 0; vi < g->n_versions; vi++) {
        const fe_version *v = g->versions[vi];
        const fe_trace *t = &v->tr;
        fe_fold fold;
        fe_fold_find(g, v, &fold);
        int n_slots = t->n_scratch + 16;
        fold_edges e = {fe_malloc((size_t)n_slots * sizeof(int)), fe_calloc((size_t)n_slots, sizeof(int)),
                        fe_malloc((size_t)n_slots * sizeof(int)), t->n_scratch};
        if (!e.writer || !e.into || !e.from) fe_fold_free(&fold); /* no memory: draw every step */
        for (int k = 0; e.writer && e.from && k < n_slots; k++) e.writer[k] = e.from[k] = -1;
        fprintf(f, "  subgraph cluster_v%d {\n    label=\"version %d: %d steps, %s, scratch %zu bytes\";\n",
                vi, vi, v->n_steps, v->each_step ? "each_step" : "fused", v->scratch_bytes);
        for (int r = 0; r < fold.n_runs; r++) {
            const fe_fold_run *run = &fold.runs[r];
            char which[48];
            if (run->first == run->last) snprintf(which, sizeof which, "layer %d", run->first);
            else snprintf(which, sizeof which, "layers %d..%d", run->first, run->last);
            fprintf(f, "    v%d_r%d [shape=box3d, label=\"%s: same as layer %d\\n(%d steps%s)\"];\n",
                    vi, r, which, run->like, run->steps_each, run->first == run->last ? "" : " each");
        }
        for (int s = 0; s < t->n_steps; s++) {
            if (fold.run && fold.run[s] >= 0) continue;
            const fe_design *d = fe_kernel_design(v->kernels[s]);
            fprintf(f, "    v%d_s%d [shape=box, style=rounded, label=\"%s\\n%s, width %d\\nkey %016llx\"];\n",
                    vi, s, t->steps[s].label, fe_isa_name(d->isa), fe_kernel_width(v->kernels[s]),
                    (unsigned long long)d->key);
        }
        /* the steps in run order, top to bottom: buffers written in place (a residual
         * stream) make cycles that would otherwise flatten the picture into one row */
        for (int s = 1, prev_run = fold.run ? fold.run[0] : -1; s < t->n_steps; s++) {
            int run = fold.run ? fold.run[s] : -1;
            if (run >= 0 && run == prev_run) continue;
            char a[32], b[32];
            if (prev_run >= 0) snprintf(a, sizeof a, "v%d_r%d", vi, prev_run);
            else snprintf(a, sizeof a, "v%d_s%d", vi, s - 1);
            if (run >= 0) snprintf(b, sizeof b, "v%d_r%d", vi, run);
            else snprintf(b, sizeof b, "v%d_s%d", vi, s);
            fprintf(f, "    %s -> %s [style=invis, weight=100];\n", a, b);
            prev_run = run;
        }
        fprintf(f, "  }\n");
        for (int s = 0; s < t->n_steps; s++) {
            const fe_tstep *st = &t->steps[s];
            if (fold.run && fold.run[s] >= 0) {
                folded_step_edges(f, g, v, vi, s, fold.run[s], &e);
                continue;
            }
            for (int i = 0; i < st->op->n_operands; i++) {
                if (!st->operand[i]) continue;
                const fe_view *w = fe_trace_view(t, (fe_h){st->operand[i]});
                char id[48];
                buffer_id(id, sizeof id, vi, w);
                buffer_node(f, g, v, vi, w);
                if (fold.run && st->op->operands[i].role == FE_IN) edge_from_run(f, vi, w, id, &e);
                else if (fold.run && slot_of(&e, w) >= 0) e.writer[slot_of(&e, w)] = s;
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
        fe_fold_free(&fold);
        fe_free(e.writer), fe_free(e.into), fe_free(e.from);
    }
    fprintf(f, "}\n");
    return ferror(f) ? FE_E_IO : FE_OK;
}
