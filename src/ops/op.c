/* ops/op.c: lookups into a declaration, search domains, shared infer checks, work splits. */
#include <stdarg.h>
#include <string.h>

#include "ops/op.h"

int fe_op_param_index(const fe_op *op, const char *name) {
    for (int i = 0; i < op->n_params; i++)
        if (strcmp(op->params[i].name, name) == 0) return i;
    return -1;
}

int fe_op_tunable_index(const fe_op *op, const char *name) {
    for (int i = 0; i < op->n_tunables; i++)
        if (strcmp(op->tunables[i].name, name) == 0) return i;
    return -1;
}

int fe_op_extent_index(const fe_op *op, const char *name) {
    for (int i = 0; i < op->n_extents; i++)
        if (strcmp(op->extents[i], name) == 0) return i;
    return -1;
}

void fe_domain_describe(const fe_domain *d, char *buf, size_t n) {
    switch (d->kind) {
    case FE_DOMAIN_WIDTH:
        snprintf(buf, n, "WIDTH");
        break;
    case FE_DOMAIN_DIVISORS:
        snprintf(buf, n, "DIVISORS(of=%s, step=%lld, cap=%lld)", d->of, (long long)d->step,
                 (long long)d->cap);
        break;
    case FE_DOMAIN_CHOICES: {
        size_t k = (size_t)snprintf(buf, n, "CHOICES(");
        for (int i = 0; i < d->n_choices && k < n; i++)
            k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)d->choices[i]);
        if (k < n) snprintf(buf + k, n - k, ")");
        break;
    }
    }
}

bool fe_domain_contains(const fe_op *op, const fe_domain *d, const int64_t *ext,
                        int n_workers, int64_t v, char *why, size_t why_n) {
    char desc[160];
    fe_domain_describe(d, desc, sizeof desc);
    switch (d->kind) {
    case FE_DOMAIN_WIDTH:
        if (v >= 1 && v <= n_workers) return true;
        snprintf(why, why_n, "WIDTH is 1..%d on this device (its worker count)", n_workers);
        return false;
    case FE_DOMAIN_DIVISORS: {
        int e = fe_op_extent_index(op, d->of);
        int64_t of = e >= 0 ? ext[e] : 0;
        if (v >= 1 && v <= d->cap && v % d->step == 0 && of % v == 0) return true;
        snprintf(why, why_n, "%s with %s = %lld: give a divisor of %lld that is a multiple of %lld "
                 "and at most %lld", desc, d->of, (long long)of, (long long)of,
                 (long long)d->step, (long long)d->cap);
        return false;
    }
    case FE_DOMAIN_CHOICES:
        for (int i = 0; i < d->n_choices; i++)
            if (d->choices[i] == v) return true;
        snprintf(why, why_n, "give one of %s", desc);
        return false;
    }
    return false;
}

fe_status fe_op_refuse(fe_op_ctx *c, fe_status s, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fe_error_set(c->err, s, "%s: %s", c->op->name, msg);
}

void fe_shape_format(int rank, const int64_t *shape, char *buf, size_t n) {
    if (!n) return;
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
}

static void shape_str(const fe_tensor *t, char *buf, size_t n) { fe_shape_format(t->rank, t->shape, buf, n); }

fe_status fe_op_same_shape(fe_op_ctx *c, int a, int b) {
    const fe_tensor *ta = &c->operands[a], *tb = &c->operands[b];
    bool same = ta->rank == tb->rank;
    for (int i = 0; same && i < ta->rank; i++) same = ta->shape[i] == tb->shape[i];
    if (same) return FE_OK;
    char sa[96], sb[96];
    shape_str(ta, sa, sizeof sa);
    shape_str(tb, sb, sizeof sb);
    return fe_op_refuse(c, FE_E_SHAPE, "%s has shape %s but %s has %s; they must be equal",
                        c->op->operands[a].name, sa, c->op->operands[b].name, sb);
}

fe_status fe_op_same_dtype(fe_op_ctx *c, int a, int b) {
    if (c->operands[a].dtype == c->operands[b].dtype) return FE_OK;
    return fe_op_refuse(c, FE_E_DTYPE, "%s is %s but %s is %s; they must be the same dtype",
                        c->op->operands[a].name, fe_dtype_info(c->operands[a].dtype)->name,
                        c->op->operands[b].name, fe_dtype_info(c->operands[b].dtype)->name);
}

fe_tensor fe_tensor_contiguous(void *data, fe_dtype dt, int rank, const int64_t *shape) {
    fe_tensor t = {.data = data, .dtype = dt, .rank = rank};
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.stride[i] = s;
        s *= shape[i];
    }
    return t;
}

int64_t fe_tensor_numel(const fe_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

fe_status fe_op_setting_value(const fe_op *op, const fe_setting *s, double *value, char *why,
                              size_t why_n) {
    *value = s->value;
    if (!s->choice) return FE_OK;
    int i = s->name ? fe_op_param_index(op, s->name) : -1;
    const fe_param_decl *pd = i >= 0 ? &op->params[i] : NULL;
    if (!pd || pd->type != FE_PARAM_CHOICE) {
        snprintf(why, why_n, "param \"%s\" is given the choice \"%s\" but %s",
                 s->name ? s->name : "(null)", s->choice,
                 pd ? "it is not a CHOICE param; give it a number" : "the op has no such param");
        return FE_E_INVALID;
    }
    for (int c = 0; pd->choices[c]; c++)
        if (strcmp(pd->choices[c], s->choice) == 0) {
            *value = c;
            return FE_OK;
        }
    size_t k = (size_t)snprintf(why, why_n, "param %s has no choice \"%s\"; give one of:",
                                pd->name, s->choice);
    for (int c = 0; pd->choices[c] && k < why_n; c++)
        k += (size_t)snprintf(why + k, why_n - k, "%s %s", c ? "," : "", pd->choices[c]);
    return FE_E_INVALID;
}
