/* tune/read_level.c: figures priced at one read level. A host whose memory level drifts over
 * minutes gives a memory-bound design different times in different minutes (the Zen 4 guest
 * of this project's sessions: the same decode GEMV at 1015 and 1980 us in one tune); each
 * figure carries the read gauge's rate around its runs (fe_cost_figure.read_gbps), and a
 * table's figures are moved to one level before they are compared or summed into a call. */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "tune/cost_table.h"

/* A level above LEVEL_CAP times the reference counts as that. Measured on the 2-vCPU Zen 4
 * guest, one GEMV design timed alone 36-56 times a minute apart, the gauge read before and
 * after each: in windows where the gauge stayed within 22.8-36 GB/s a bf16 GEMV's time
 * followed it (time ~ level^-0.91), and scaling each figure by its level cut their spread
 * (coefficient of variation) from 0.107 to 0.065; where the gauge jumped to 48-60 GB/s now
 * and then, a q8_0 GEMV gained only 15-25 % in those runs (time ~ level^-0.40), and scaling
 * by the level widened the spread (0.115 to 0.156), while scaling by it capped at 1.2 times
 * the median narrowed it (0.085; 0.138 to 0.089 in a second series, the bf16's 0.065
 * unchanged). Those jumps are the gauge finding its buffer partly in a cache the host's
 * other tenants left free, which a kernel's stream gains little from. */
static const double LEVEL_CAP = 1.2;

double fe_cost_level_factor(double ns, double bytes, double from, double to, double ref) {
    if (!(ns > 0 && bytes > 0 && from > 0 && to > 0 && ref > 0)) return 1;
    double memory = fmin(1, 2 * (bytes / ns) / from); /* bytes / ns: GB/s */
    from = fmin(from, LEVEL_CAP * ref), to = fmin(to, LEVEL_CAP * ref);
    return 1 - memory + memory * from / to;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fe_cost_table_read_level(const fe_cost_table *t, double *lo, double *hi, int *n) {
    int k = 0, cap = 0;
    for (int d = 0; d < t->n_designs; d++) cap += t->designs[d].n_options;
    double *levels = fe_malloc((size_t)(cap ? cap : 1) * sizeof *levels);
    if (lo) *lo = 0;
    if (hi) *hi = 0;
    if (n) *n = 0;
    if (!levels) return 0;
    for (int d = 0; d < t->n_designs; d++)
        for (int i = 0; i < t->designs[d].n_options; i++) {
            const fe_table_option *o = &t->designs[d].options[i];
            if (o->verdict == FE_TUNE_CANDIDATE && o->cost.read_gbps > 0)
                levels[k++] = o->cost.read_gbps;
        }
    double median = 0;
    if (k > 0) {
        qsort(levels, (size_t)k, sizeof *levels, cmp_double);
        median = k % 2 ? levels[k / 2] : (levels[k / 2 - 1] + levels[k / 2]) / 2;
        if (lo) *lo = levels[0];
        if (hi) *hi = levels[k - 1];
        if (n) *n = k;
    }
    fe_free(levels);
    return median;
}

void fe_cost_table_at_level(fe_cost_table *t, double gbps) {
    if (!(gbps > 0)) return;
    for (int d = 0; d < t->n_designs; d++)
        for (int i = 0; i < t->designs[d].n_options; i++) {
            fe_table_option *o = &t->designs[d].options[i];
            if (o->verdict != FE_TUNE_CANDIDATE || !(o->cost.read_gbps > 0)) continue;
            double k = fe_cost_level_factor(o->cost.median_ns, o->bytes, o->cost.read_gbps,
                                            gbps, gbps);
            o->cost.median_ns *= k, o->cost.p10_ns *= k, o->cost.p90_ns *= k;
            o->cost.read_gbps = gbps;
        }
    t->read_gbps = gbps;
}

double fe_cost_table_call_at_level(const fe_cost_table *t, int c, double ns, double gbps) {
    if (c < 0 || c >= t->n_calls || !(t->read_gbps > 0) || !(gbps > 0)) return ns;
    const fe_table_call *call = &t->calls[c];
    double moved = 0; /* what the steps' defaults add when moved */
    for (int s = 0; s < call->n_steps; s++) {
        const fe_table_option *o = &t->designs[call->steps[s].design].options[0];
        if (!(o->cost.read_gbps > 0)) continue;
        /* the step's share of the call as narrowing models it: less the dispatch when fused */
        double step = o->cost.median_ns - (call->each_step ? 0 : t->dispatch.median_ns);
        if (!(step > 0)) continue;
        double k = fe_cost_level_factor(o->cost.median_ns, o->bytes, o->cost.read_gbps, gbps,
                                        t->read_gbps);
        moved += step * (k - 1);
    }
    return ns + moved;
}
