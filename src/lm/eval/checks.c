/* lm/eval/checks.c: KL, top-1 and logit-difference figures (see checks.h). */
#include "lm/eval/checks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

fe_status fe_kl_compare(const float *ref, const float *got, int n, int64_t V, fe_kl_stats *s) {
    memset(s, 0, sizeof *s);
    if (n < 1) return FE_OK;
    double *kl = fe_malloc((size_t)n * sizeof *kl);
    if (!kl) return FE_E_NOMEM;
    s->positions = n;
    for (int i = 0; i < n; i++) {
        const float *p = ref + (int64_t)i * V, *q = got + (int64_t)i * V;
        double mp = -INFINITY, mq = -INFINITY, lo = INFINITY;
        int64_t ap = 0, aq = 0;
        for (int64_t v = 0; v < V; v++) {
            if (p[v] > mp) mp = p[v], ap = v;
            if (q[v] > mq) mq = q[v], aq = v;
            if (p[v] < lo) lo = p[v];
            double d = fabs((double)p[v] - (double)q[v]);
            if (d > s->max_abs_diff) s->max_abs_diff = d;
        }
        if (mp - lo > s->spread) s->spread = mp - lo;
        double zp = 0, zq = 0;
        for (int64_t v = 0; v < V; v++) {
            zp += exp(p[v] - mp);
            zq += exp(q[v] - mq);
        }
        double lzp = mp + log(zp), lzq = mq + log(zq), k = 0;
        for (int64_t v = 0; v < V; v++) {
            double lp = p[v] - lzp;
            k += exp(lp) * (lp - (q[v] - lzq));
        }
        kl[i] = k < 0 ? 0 : k;
        s->mean += kl[i] / n;
        s->top1_mismatches += ap != aq;
    }
    qsort(kl, (size_t)n, sizeof *kl, cmp_double);
    s->p90 = kl[(int)(0.9 * (n - 1))];
    s->max = kl[n - 1];
    fe_free(kl);
    return FE_OK;
}
