/* graph/step_timing.c: step timing (fe_graph_set_profiling, fe_graph_write_profile). The device
 * adds each step's wall time to the version's clock during a call (fe_device_dispatch_timed);
 * this file owns the clocks and turns them into a table: steps grouped by operator and the
 * weight they read, layer numbers folded, so a decode step reads as "GEMV layers.*.w_down:
 * 31 %" rather than 200 lines. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "graph/internal.h"

void fe_version_clock(fe_version *v) {
    if (!v->step_ns) v->step_ns = fe_calloc((size_t)(v->n_steps ? v->n_steps : 1), sizeof *v->step_ns);
    else memset(v->step_ns, 0, (size_t)v->n_steps * sizeof *v->step_ns);
    v->profiled_calls = 0;
}

void fe_graph_set_profiling(fe_graph *g, bool on) {
    if (on && !g->profiling)
        for (int i = 0; i < g->n_versions; i++) fe_version_clock(g->versions[i]);
    g->profiling = on;
}

typedef struct group {
    char key[128];
    int steps;
    uint64_t ns;
} group;

/* "GEMV layers.*.wq": the op, and the first weight operand's path with digit runs as '*' */
static void group_key(const fe_graph *g, const fe_version *v, int s, char *key, size_t n) {
    const fe_tstep *st = &v->tr.steps[s];
    const char *path = NULL;
    for (int i = 0; i < FE_MAX_OPERANDS && !path; i++) {
        int id = st->operand[i];
        if (id > 0 && v->tr.views[id - 1].kind == BUF_WEIGHT) path = g->weights[v->tr.views[id - 1].buf].path;
    }
    size_t k = (size_t)snprintf(key, n, "%s%s", st->op->name, path ? " " : "");
    for (const char *p = path; p && *p && k + 1 < n;) {
        if (isdigit((unsigned char)*p)) {
            key[k++] = '*';
            while (isdigit((unsigned char)*p)) p++;
        } else {
            key[k++] = *p++;
        }
    }
    key[k < n ? k : n - 1] = '\0';
}

static int by_time(const void *a, const void *b) {
    const group *x = a, *y = b;
    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->key, y->key);
}

static void write_version(const fe_graph *g, const fe_version *v, int index, FILE *out, group *gs) {
    int n = 0;
    uint64_t total = 0;
    for (int s = 0; s < v->n_steps; s++) {
        char key[128];
        group_key(g, v, s, key, sizeof key);
        int i = 0;
        while (i < n && strcmp(gs[i].key, key) != 0) i++;
        if (i == n) gs[n++] = (group){.steps = 0};
        snprintf(gs[i].key, sizeof gs[i].key, "%s", key);
        gs[i].steps++;
        gs[i].ns += v->step_ns[s];
        total += v->step_ns[s];
    }
    qsort(gs, (size_t)n, sizeof *gs, by_time);
    double calls = (double)v->profiled_calls;
    fprintf(out, "graph \"%s\" version %d (", g->name, index + 1);
    for (int i = 0; i < v->n_sig; i++) fprintf(out, "%s%s", i ? ", " : "", v->sig[i].name);
    fprintf(out, "%s): %llu calls, %.1f us a call, %d steps (%s)\n", v->n_sig ? "" : "no inputs",
            (unsigned long long)v->profiled_calls, (double)total / calls / 1e3, v->n_steps,
            v->each_step ? "each_step" : "fused");
    fprintf(out, "  %-40s %6s %12s %7s\n", "operator and weight", "steps", "us a call", "share");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-40s %6d %12.1f %6.1f%%\n", gs[i].key, gs[i].steps,
                (double)gs[i].ns / calls / 1e3, total ? 100.0 * (double)gs[i].ns / (double)total : 0.0);
}

fe_status fe_graph_write_profile(const fe_graph *g, FILE *out) {
    int most = 1;
    for (int i = 0; i < g->n_versions; i++)
        if (g->versions[i]->n_steps > most) most = g->versions[i]->n_steps;
    group *gs = fe_malloc((size_t)most * sizeof *gs);
    if (!gs) return FE_E_NOMEM;
    int written = 0;
    for (int i = 0; i < g->n_versions; i++) {
        const fe_version *v = g->versions[i];
        if (!v->step_ns || !v->profiled_calls) continue;
        write_version(g, v, i, out, gs);
        written++;
    }
    if (!written) fprintf(out, "graph \"%s\": no profiled calls (fe_graph_set_profiling)\n", g->name);
    fe_free(gs);
    return FE_OK;
}
