/* graph/draw_collapse.h: which steps of a compiled version the DOT drawing folds into one
 * node, so that a model's picture is one layer, not thirty (see draw_collapse.c). */
#ifndef FE_GRAPH_DRAW_COLLAPSE_H
#define FE_GRAPH_DRAW_COLLAPSE_H

#include "graph/internal.h"

/* A run of consecutive layers first..last, each the same steps as layer `like`, drawn once. */
typedef struct fe_fold_run {
    int first, last, like, steps_each;
} fe_fold_run;

typedef struct fe_fold {
    int *run;         /* per step: the index of the run it is folded into, or -1 (drawn) */
    fe_fold_run *runs;
    int n_runs;
} fe_fold;

/* Finds v's repeated layers. Without memory (or layers) nothing is folded: f->run stays NULL
 * and every step is drawn. Release with fe_fold_free. */
void fe_fold_find(const fe_graph *g, const fe_version *v, fe_fold *f);
void fe_fold_free(fe_fold *f);

#endif
