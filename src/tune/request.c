/* tune/request.c: a tune request's names made into a shape. The request names extents
 * (N=2048), params, the dtype and the catalog case to start from, so `ferrum tune` takes what
 * `ferrum ops` prints; the op's own test cases build the operands (operands_for), and which
 * case dim gives which extent is found by making kernels with each dim doubled. */
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "tune/tune.h"

fe_status fe_tune_shape_kernel(fe_device *dev, const fe_tune_shape *s, const fe_setting *extra,
                               int n_extra, fe_kernel **k, fe_error *err) {
    fe_setting tun[FE_MAX_TUNABLES + FE_TUNE_MAX_JOINT];
    int n = 0;
    for (int i = 0; i < s->c.n_tunables; i++) tun[n++] = s->c.tunables[i];
    for (int e = 0; extra && e < n_extra && e < FE_TUNE_MAX_JOINT; e++) {
        int at = n;
        for (int i = 0; i < n; i++)
            if (strcmp(tun[i].name, extra[e].name) == 0) at = i;
        tun[at] = extra[e];
        if (at == n) n++;
    }
    fe_op_request req = {.op = s->op->name, .operands = s->desc, .n_operands = s->op->n_operands,
                         .params = s->c.params, .n_params = s->c.n_params,
                         .tunables = n ? tun : NULL, .n_tunables = n, .profile = s->profile};
    return fe_kernel_create(dev, &req, k, err);
}

/* The extents of a kernel made for case c; false when the op refuses the case. */
static bool case_extents(fe_device *dev, fe_tune_shape *s, int64_t *ext) {
    fe_tensor desc[FE_MAX_OPERANDS] = {0};
    double p[FE_MAX_PARAMS] = {0};
    s->op->operands_for(&s->c, p, desc);
    memcpy(s->desc, desc, sizeof desc);
    fe_kernel *k = NULL;
    fe_error e;
    if (fe_tune_shape_kernel(dev, s, NULL, 0, &k, &e) != FE_OK) return false;
    memcpy(ext, fe_kernel_extents(k), FE_MAX_EXTENTS * sizeof *ext);
    fe_kernel_destroy(k);
    return true;
}

/* dim_of[e]: the case dim whose doubling doubles extent e (-1: none does). */
static void map_extents(fe_device *dev, fe_tune_shape *s, const int64_t *base, int *dim_of) {
    for (int e = 0; e < FE_MAX_EXTENTS; e++) dim_of[e] = -1;
    for (int d = 0; d < s->c.n_dims; d++) {
        fe_tune_shape t = *s;
        t.c.name = t.case_name;
        t.c.dims[d] *= 2;
        int64_t ext[FE_MAX_EXTENTS];
        if (!case_extents(dev, &t, ext)) continue;
        for (int e = 0; e < s->op->n_extents; e++)
            if (dim_of[e] < 0 && base[e] > 0 && ext[e] == 2 * base[e]) dim_of[e] = d;
    }
}

static size_t list_names(const fe_op *op, const int *dim_of, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "extents:");
    for (int e = 0; e < op->n_extents && k < n; e++)
        if (dim_of[e] >= 0) k += (size_t)snprintf(buf + k, n - k, " %s", op->extents[e]);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "; params:");
    for (int i = 0; i < op->n_params && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", op->params[i].name);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "; tunables (held):");
    for (int i = 0; i < op->n_tunables && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", op->tunables[i].name);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "; per-call values (--value):");
    for (int i = 0; i < op->n_values && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", op->values[i].name);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "; and case=NAME%s", "");
    return k;
}

static bool dtype_prefixed(const char *name, char *prefix, size_t n) {
    size_t len = strcspn(name, "/");
    fe_dtype dt;
    if (len >= n) return false;
    memcpy(prefix, name, len);
    prefix[len] = 0;
    return fe_dtype_from_name(prefix, &dt) == FE_OK && name[len] == '/';
}

static fe_status set_param(fe_tune_shape *s, const fe_setting *st, fe_error *err) {
    double v;
    char why[320];
    if (fe_op_setting_value(s->op, st, &v, why, sizeof why) != FE_OK)
        return fe_error_set(err, FE_E_INVALID, "%s: %s", s->op->name, why);
    int at = s->c.n_params;
    for (int i = 0; i < s->c.n_params; i++)
        if (strcmp(s->c.params[i].name, st->name) == 0) at = i;
    if (at >= FE_MAX_PARAMS)
        return fe_error_set(err, FE_E_INVALID, "%s: more than %d params", s->op->name,
                            FE_MAX_PARAMS);
    s->c.params[at] = (fe_setting){.name = s->op->params[fe_op_param_index(s->op, st->name)].name,
                                   .value = v};
    if (at == s->c.n_params) s->c.n_params++;
    return FE_OK;
}

static fe_status set_tunable(fe_tune_shape *s, const fe_setting *st, fe_error *err) {
    int i = fe_op_tunable_index(s->op, st->name);
    if (st->choice)
        return fe_error_set(err, FE_E_INVALID, "%s: tunable %s takes a number, not \"%s\"",
                            s->op->name, st->name, st->choice);
    int at = s->c.n_tunables;
    for (int j = 0; j < s->c.n_tunables; j++)
        if (strcmp(s->c.tunables[j].name, st->name) == 0) at = j;
    s->c.tunables[at] = (fe_setting){.name = s->op->tunables[i].name, .value = st->value};
    if (at == s->c.n_tunables) s->c.n_tunables++;
    return FE_OK;
}

static fe_status pick_case(const fe_tune_request *req, fe_tune_shape *s, fe_error *err) {
    const fe_op *op = s->op;
    const fe_case *pick = &op->cases[0];
    for (int i = 0; i < req->n_settings; i++) {
        const fe_setting *st = &req->settings[i];
        if (!st->name || strcmp(st->name, "case") != 0) continue;
        pick = NULL;
        for (int c = 0; c < op->n_cases && !pick; c++)
            if (st->choice && strcmp(op->cases[c].name, st->choice) == 0) pick = &op->cases[c];
        if (!pick) {
            char list[600];
            size_t k = 0;
            for (int c = 0; c < op->n_cases && k < sizeof list; c++)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", c ? ", " : "",
                                      op->cases[c].name);
            return fe_error_set(err, FE_E_INVALID, "%s has no case \"%s\"; give one of: %s",
                                op->name, st->choice ? st->choice : "(a number)", list);
        }
    }
    s->c = *pick;
    snprintf(s->case_name, sizeof s->case_name, "%s", pick->name);
    s->c.name = s->case_name;
    return FE_OK;
}

fe_status fe_tune_shape_init(fe_device *dev, const fe_tune_request *req, fe_tune_shape *s,
                             fe_error *err) {
    memset(s, 0, sizeof *s);
    s->ladder = -1;
    s->profile = req->profile;
    s->op = req->op ? fe_op_find(req->op) : NULL;
    if (!s->op)
        return fe_error_set(err, FE_E_NOTFOUND, "no operator named \"%s\"; `ferrum ops --names` "
                            "lists them", req->op ? req->op : "(null)");
    const fe_op *op = s->op;
    if (!op->operands_for || op->n_cases == 0)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s declares no test cases, so the tuner "
                            "cannot build its operands; declare cases", op->name);
    fe_status st = pick_case(req, s, err);
    if (st != FE_OK) return st;
    for (int i = 0; i < op->n_values; i++) s->values[i] = -1;
    /* which dim gives which extent, on the case as declared (the user's dtype or params
     * may not build at the case's own dims: q8_0 at K = 100) */
    int64_t base[FE_MAX_EXTENTS];
    if (!case_extents(dev, s, base)) {
        fe_kernel *k = NULL;
        return fe_tune_shape_kernel(dev, s, NULL, 0, &k, err); /* names the op's refusal */
    }
    int dim_of[FE_MAX_EXTENTS];
    map_extents(dev, s, base, dim_of);
    /* dtype and params first: they change the operands the extents are probed on */
    for (int i = 0; i < req->n_settings; i++) {
        const fe_setting *set = &req->settings[i];
        if (!set->name) return fe_error_set(err, FE_E_INVALID, "tune: a setting has no name");
        if (strcmp(set->name, "dtype") == 0) {
            char prefix[16];
            fe_dtype dt;
            if (!dtype_prefixed(s->c.name, prefix, sizeof prefix))
                return fe_error_set(err, FE_E_INVALID, "%s's case %s does not name a dtype; "
                                    "choose one by case=NAME (`ferrum ops %s` describes it)",
                                    op->name, s->c.name, op->name);
            if (!set->choice || fe_dtype_from_name(set->choice, &dt) != FE_OK)
                return fe_error_set(err, FE_E_INVALID, "dtype=%s is not a dtype; give one of "
                                    "the operand's dtypes `ferrum ops %s` lists (f32, bf16, "
                                    "q8_0...)", set->choice ? set->choice : "(a number)",
                                    op->name);
            char rest[64];
            snprintf(rest, sizeof rest, "%s", s->c.name + strlen(prefix));
            snprintf(s->case_name, sizeof s->case_name, "%s%s", set->choice, rest);
        } else if (fe_op_param_index(op, set->name) >= 0) {
            st = set_param(s, set, err);
            if (st != FE_OK) return st;
        }
    }
    for (int i = 0; i < req->n_settings; i++) {
        const fe_setting *set = &req->settings[i];
        int e = fe_op_extent_index(op, set->name);
        if (strcmp(set->name, "dtype") == 0 || strcmp(set->name, "case") == 0 ||
            fe_op_param_index(op, set->name) >= 0)
            continue;
        if (fe_op_tunable_index(op, set->name) >= 0) {
            st = set_tunable(s, set, err);
            if (st != FE_OK) return st;
            continue;
        }
        if (e < 0 || dim_of[e] < 0) {
            char names[700];
            list_names(op, dim_of, names, sizeof names);
            return fe_error_set(err, FE_E_INVALID, "%s has no %s named \"%s\"; it takes %s "
                                "(`ferrum ops %s` describes them)", op->name,
                                e >= 0 ? "extent the tuner can set (its cases derive it)"
                                       : "extent, param or tunable",
                                set->name, names, op->name);
        }
        int d = dim_of[e];
        int64_t v = (int64_t)set->value;
        if (set->choice || set->value != (double)v || v < 1 || v > ((int64_t)1 << 32) ||
            (v * s->c.dims[d]) % base[e] != 0)
            return fe_error_set(err, FE_E_INVALID, "%s=%s%g: give a positive integer%s",
                                set->name, set->choice ? set->choice : "",
                                set->choice ? 0.0 : set->value,
                                base[e] != s->c.dims[d] ? " the case's dims can express" : "");
        s->c.dims[d] = v * s->c.dims[d] / base[e];
    }
    double p[FE_MAX_PARAMS] = {0};
    op->operands_for(&s->c, p, s->desc);
    for (int i = 0; i < op->n_operands; i++) s->constant[i] = op->operands[i].role == FE_IN;
    for (int i = 0; i < req->n_values; i++) {
        const fe_setting *set = &req->values[i];
        int vi = -1;
        for (int j = 0; j < op->n_values && set->name; j++)
            if (strcmp(op->values[j].name, set->name) == 0) vi = j;
        if (vi < 0 || set->choice || set->value != (double)(int64_t)set->value) {
            char names[700], given[64];
            list_names(op, dim_of, names, sizeof names);
            if (set->choice) snprintf(given, sizeof given, "%s", set->choice);
            else snprintf(given, sizeof given, "%g", set->value);
            return fe_error_set(err, FE_E_INVALID, "--value %s=%s: %s has no per-call value of "
                                "that name, or it is not an integer; it takes %s",
                                set->name ? set->name : "(null)", given, op->name, names);
        }
        s->values[vi] = (int64_t)set->value;
    }
    if (req->ladder) {
        for (int j = 0; j < op->n_values; j++)
            if (strcmp(op->values[j].name, req->ladder) == 0 && op->values[j].map != FE_MAP_NONE)
                s->ladder = j;
        if (s->ladder < 0)
            return fe_error_set(err, FE_E_INVALID, "--ladder %s: %s has no bounded per-call "
                                "value of that name (a position or offset is not priced over a "
                                "ladder); `ferrum ops %s` lists its values", req->ladder,
                                op->name, op->name);
    }
    return FE_OK;
}
