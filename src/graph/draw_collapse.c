/* graph/draw_collapse.c: a model's repeated layers, found in a compiled version so that
 * fe_graph_dot draws one layer and a node "layers 1..29: same as layer 0".
 *
 * A step is in layer L when one of its operands is a weight or state named "layers.L.*"; a
 * step that reads neither (RoPE over the shared table, a product of two scratch buffers) is
 * in the layer of the steps on both sides of it when those agree. Layer L is folded when its
 * steps are, in order, the same operators with the same design keys as an earlier layer
 * drawn in full; consecutive folded layers like the same layer form one run. */
#include "graph/draw_collapse.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

/* "layers.12.wq" -> 12; -1 for any other path */
static int layer_of_path(const char *path) {
    if (strncmp(path, "layers.", 7) != 0) return -1;
    char *end;
    long n = strtol(path + 7, &end, 10);
    return end != path + 7 && *end == '.' && n >= 0 && n < (1 << 20) ? (int)n : -1;
}

static int layer_of_step(const fe_graph *g, const fe_trace *t, int s) {
    const fe_tstep *st = &t->steps[s];
    for (int i = 0; i < st->op->n_operands; i++) {
        if (!st->operand[i]) continue;
        const fe_view *w = fe_trace_view(t, (fe_h){st->operand[i]});
        int l = w->kind == BUF_WEIGHT ? layer_of_path(g->weights[w->buf].path)
                : w->kind == BUF_STATE ? layer_of_path(g->states[w->buf].path)
                                       : -1;
        if (l >= 0) return l;
    }
    return -1;
}

/* Layer a's steps are layer b's: same count, operators and design keys, in order. */
static bool same_layer(const fe_version *v, const int *layer, int a, int b) {
    int sa = 0, sb = 0, n = v->tr.n_steps;
    for (;;) {
        while (sa < n && layer[sa] != a) sa++;
        while (sb < n && layer[sb] != b) sb++;
        if (sa == n || sb == n) return sa == n && sb == n;
        if (v->tr.steps[sa].op != v->tr.steps[sb].op ||
            fe_kernel_design(v->kernels[sa])->key != fe_kernel_design(v->kernels[sb])->key)
            return false;
        sa++, sb++;
    }
}

void fe_fold_find(const fe_graph *g, const fe_version *v, fe_fold *f) {
    memset(f, 0, sizeof *f);
    int n = v->tr.n_steps, max_layer = -1;
    int *layer = fe_malloc((size_t)(n ? n : 1) * sizeof *layer);
    if (!layer) return;
    for (int s = 0; s < n; s++) {
        layer[s] = layer_of_step(g, &v->tr, s);
        if (layer[s] > max_layer) max_layer = layer[s];
    }
    for (int s = 0, prev = -1; s < n; s++) { /* steps between two steps of one layer join it */
        if (layer[s] >= 0) {
            prev = layer[s];
            continue;
        }
        int next = s + 1;
        while (next < n && layer[next] < 0) next++;
        if (prev >= 0 && next < n && layer[next] == prev) layer[s] = prev;
    }
    int n_layers = max_layer + 1;
    int *like = fe_malloc((size_t)(n_layers ? n_layers : 1) * sizeof *like), *count = NULL;
    f->runs = fe_malloc((size_t)(n_layers ? n_layers : 1) * sizeof *f->runs);
    count = fe_calloc((size_t)(n_layers ? n_layers : 1), sizeof *count);
    if (!like || !f->runs || !count || n_layers < 2) goto done;
    for (int s = 0; s < n; s++)
        if (layer[s] >= 0) count[layer[s]]++;
    for (int l = 0; l < n_layers; l++) {
        like[l] = -1;
        for (int r = 0; r < l && like[l] < 0 && count[l]; r++)
            if (like[r] < 0 && count[r] == count[l] && same_layer(v, layer, l, r)) like[l] = r;
        if (like[l] < 0) continue;
        fe_fold_run *last = f->n_runs ? &f->runs[f->n_runs - 1] : NULL;
        if (last && last->last == l - 1 && last->like == like[l]) last->last = l;
        else f->runs[f->n_runs++] = (fe_fold_run){l, l, like[l], count[l]};
    }
    if (f->n_runs) {
        f->run = layer; /* reused: per step, its run or -1 */
        for (int s = 0; s < n; s++) {
            int l = layer[s], run = -1;
            for (int r = 0; l >= 0 && r < f->n_runs; r++)
                if (l >= f->runs[r].first && l <= f->runs[r].last) run = r;
            f->run[s] = run;
        }
        layer = NULL;
    }
done:
    fe_free(layer);
    fe_free(like);
    fe_free(count);
    if (!f->run) {
        fe_free(f->runs);
        f->runs = NULL;
        f->n_runs = 0;
    }
}

void fe_fold_free(fe_fold *f) {
    fe_free(f->run);
    fe_free(f->runs);
    memset(f, 0, sizeof *f);
}
