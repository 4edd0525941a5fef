/* ops/layout/shared.c: what Copy and Transpose share outside the kernels: the test-case
 * encoding, shape printing for refusals, and the normalised copy plan. */
#include <stdio.h>

#include "ops/layout/layout.h"

static int64_t case_variant(const fe_case *c) {
    if (c->n_dims >= FE_MAX_RANK) return 0;
    int64_t v = c->dims[FE_MAX_RANK - 1];
    return v > 0 ? v : 0;
}

fe_dtype fe_layout_case_dtype(const fe_case *c) {
    int64_t dt = case_variant(c) % 8;
    return dt < FE_DTYPE_COUNT ? (fe_dtype)dt : FE_DTYPE_F32;
}

int fe_layout_case_layout(const fe_case *c) { return (int)(case_variant(c) / 8); }

void fe_copy_plan_make(const fe_args *a, fe_copy_plan *p) {
    const fe_tensor *x = &a->t[0], *y = &a->t[1];
    int64_t s[FE_MAX_RANK], xs[FE_MAX_RANK], ys[FE_MAX_RANK];
    int n = 0;
    *p = (fe_copy_plan){.es = (int64_t)fe_dtype_info(x->dtype)->size};
    for (int i = 0; i < x->rank; i++) {
        int64_t len = i == 0 ? a->v[0] : x->shape[i];
        if (len <= 0) return; /* rows = 0: nothing to copy */
        if (len == 1) continue;
        s[n] = len;
        xs[n] = x->stride[i];
        ys[n] = y->stride[i];
        n++;
    }
    if (n == 0) { /* a single element */
        s[0] = 1;
        xs[0] = ys[0] = 1;
        n = 1;
    }
    /* order by y stride, largest first (ties: x stride); insertion sort, stable */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (ys[j - 1] < ys[j] || (ys[j - 1] == ys[j] && xs[j - 1] < xs[j]));
             j--) {
            int64_t t;
            t = s[j], s[j] = s[j - 1], s[j - 1] = t;
            t = xs[j], xs[j] = xs[j - 1], xs[j - 1] = t;
            t = ys[j], ys[j] = ys[j - 1], ys[j - 1] = t;
        }
    /* merge neighbours that are one run on both sides */
    int m = 0;
    for (int i = 1; i < n; i++) {
        if (xs[m] == s[i] * xs[i] && ys[m] == s[i] * ys[i]) {
            s[m] *= s[i];
            xs[m] = xs[i];
            ys[m] = ys[i];
        } else {
            m++;
            s[m] = s[i];
            xs[m] = xs[i];
            ys[m] = ys[i];
        }
    }
    n = m + 1;
    p->n_outer = n - 1;
    p->rows = 1;
    for (int k = 0; k < n - 1; k++) {
        p->outer[k] = s[k];
        p->xo[k] = xs[k] * p->es;
        p->yo[k] = ys[k] * p->es;
        p->rows *= s[k];
    }
    p->n = s[n - 1];
    p->xi = xs[n - 1];
    p->yi = ys[n - 1];
}
