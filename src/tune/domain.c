/* tune/domain.c: what the tuner searches. A tunable's declared domain enumerated at the
 * extents and worker count at hand; the resolved default is always among the values, and a
 * tunable the call site or a profile gave (or a derived one) is held, not searched. */
#include "tune/tune.h"

static int add_sorted(int64_t *out, int n, int64_t v) {
    for (int i = 0; i < n; i++)
        if (out[i] == v) return n;
    if (n >= FE_TUNE_MAX_DOMAIN) return n;
    int at = n;
    while (at > 0 && out[at - 1] > v) {
        out[at] = out[at - 1];
        at--;
    }
    out[at] = v;
    return n + 1;
}

int fe_tune_domain_values(const fe_op *op, const fe_domain *d, const int64_t *ext,
                          int n_workers, int64_t def, int64_t *out) {
    int n = 0;
    switch (d->kind) {
    case FE_DOMAIN_WIDTH:
        for (int64_t w = 1; w <= n_workers; w *= 2) n = add_sorted(out, n, w);
        n = add_sorted(out, n, n_workers);
        break;
    case FE_DOMAIN_DIVISORS: {
        int e = fe_op_extent_index(op, d->of);
        int64_t of = e >= 0 ? ext[e] : 0, step = d->step > 0 ? d->step : 1;
        for (int64_t v = step; v <= d->cap && v <= of; v += step)
            if (of % v == 0) n = add_sorted(out, n, v);
        break;
    }
    case FE_DOMAIN_CHOICES:
        for (int i = 0; i < d->n_choices; i++) n = add_sorted(out, n, d->choices[i]);
        break;
    }
    /* the default is searched even when a full domain would not fit the table */
    if (n == FE_TUNE_MAX_DOMAIN) n--;
    return add_sorted(out, n, def);
}

bool fe_tune_searched(const fe_kernel *k, int i) {
    const fe_design *d = fe_kernel_design(k);
    fe_tunable_source src = fe_kernel_tunable_source(k, i);
    return d->op->tunables[i].design && src != FE_TUNABLE_FROM_CALL_SITE &&
           src != FE_TUNABLE_FROM_PROFILE;
}
