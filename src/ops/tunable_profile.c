/* ops/tunable_profile.c: profiles, tunables as data (JSON). Validated whole at load against the
 * registry (every op, `when` name and tunable must exist), so applying one cannot fail on
 * a name; applying picks the most specific matching entry. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/json.h"
#include "ops/kernel.h"

struct fe_profile {
    json_t *entries; /* array, validated */
};

static fe_status check_entry(json_t *e, size_t idx, const char *what, fe_error *err) {
    if (!json_is_object(e))
        return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu] must be an object", what, idx);
    json_t *name = json_object_get(e, "op");
    if (!json_is_string(name))
        return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu] needs \"op\": a string naming "
                            "an operator", what, idx);
    const fe_op *op = fe_op_find(json_string_value(name));
    if (!op)
        return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu]: no operator named \"%s\" "
                            "(`ferrum ops` lists them)", what, idx, json_string_value(name));
    const char *key;
    json_t *v;
    json_t *when = json_object_get(e, "when");
    if (when && !json_is_object(when))
        return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].when must be an object", what, idx);
    json_object_foreach(when, key, v) {
        if (fe_op_param_index(op, key) < 0 && fe_op_extent_index(op, key) < 0)
            return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].when: %s has no param or "
                                "extent named \"%s\"", what, idx, op->name, key);
        if (!json_is_number(v))
            return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].when.%s must be a number",
                                what, idx, key);
    }
    json_t *tun = json_object_get(e, "tunables");
    if (!json_is_object(tun))
        return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu] needs \"tunables\": an object",
                            what, idx);
    json_object_foreach(tun, key, v) {
        if (fe_op_tunable_index(op, key) < 0)
            return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].tunables: %s has no "
                                "tunable named \"%s\"", what, idx, op->name, key);
        if (!json_is_integer(v))
            return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].tunables.%s must be an "
                                "integer", what, idx, key);
    }
    return FE_OK;
}

static fe_status from_json(json_t *root, const char *what, fe_profile **out, fe_error *err) {
    json_t *entries = json_is_object(root) ? json_object_get(root, "entries") : NULL;
    if (!json_is_array(entries))
        return fe_error_set(err, FE_E_FORMAT, "%s: a profile is an object with \"entries\": "
                            "an array", what);
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        fe_status st = check_entry(e, i, what, err);
        if (st != FE_OK) return st;
    }
    fe_profile *p = fe_malloc(sizeof *p);
    if (!p) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    p->entries = json_incref(entries);
    *out = p;
    return FE_OK;
}

fe_status fe_profile_parse(const char *text, size_t len, fe_profile **out, fe_error *err) {
    *out = NULL;
    json_t *root;
    fe_status st = fe_json_parse(text, len, "profile", &root, err);
    if (st != FE_OK) return st;
    st = from_json(root, "profile", out, err);
    json_decref(root);
    return st;
}

fe_status fe_profile_load(const char *path, fe_profile **out, fe_error *err) {
    *out = NULL;
    json_t *root;
    fe_status st = fe_json_load_file(path, &root, err);
    if (st != FE_OK) return st;
    st = from_json(root, path, out, err);
    json_decref(root);
    return st;
}

void fe_profile_destroy(fe_profile *p) {
    if (!p) return;
    json_decref(p->entries);
    fe_free(p);
}

/* The value a `when` name has in the request being made. */
static bool lookup(const fe_op_ctx *c, const char *name, double *v) {
    int i = fe_op_param_index(c->op, name);
    if (i >= 0) {
        *v = c->params[i];
        return true;
    }
    i = fe_op_extent_index(c->op, name);
    if (i >= 0) {
        *v = (double)c->ext[i];
        return true;
    }
    return false;
}

fe_status fe_profile_apply(const fe_profile *p, fe_op_ctx *c) {
    json_t *best = NULL, *e;
    int best_n = -1;
    size_t i;
    json_array_foreach(p->entries, i, e) {
        if (strcasecmp(json_string_value(json_object_get(e, "op")), c->op->name) != 0) continue;
        const char *key;
        json_t *v;
        int n = 0;
        bool match = true;
        json_object_foreach(json_object_get(e, "when"), key, v) {
            double have;
            if (!lookup(c, key, &have) || fabs(have - json_number_value(v)) > 1e-12 * fabs(have)) {
                match = false;
                break;
            }
            n++;
        }
        if (match && n > best_n) {
            best = e;
            best_n = n;
        }
    }
    if (!best) return FE_OK;
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(best, "tunables"), key, v) {
        int t = fe_op_tunable_index(c->op, key);
        if (!c->tunable_set[t]) {
            c->tunables[t] = (int64_t)json_integer_value(v);
            c->tunable_set[t] = true;
        }
    }
    return FE_OK;
}
