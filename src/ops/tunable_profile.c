/* ops/tunable_profile.c: profiles, tunables as data (JSON), and the fold decisions the graph's
 * fold pass reads (kept as data here: a site key and keep). Validated whole at load against the
 * registry (every op, `when` name and tunable must exist), so applying one cannot fail on
 * a name; applying picks the most specific matching entry. An entry's other keys (the
 * tuner's "note") are kept and never read. fe_profile_put validates an entry the same way
 * before it joins, so a profile in memory is always one fe_profile_load would accept. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/json.h"
#include "ops/kernel.h"

struct fe_profile {
    json_t *entries; /* array, validated */
    json_t *folds;   /* array of {"site": KEY, "keep": bool}, validated; the graph's fold
                      * pass reads them (ferrum/graph.h fe_fold_site.key), this file never */
};

/* The operand a `when` name "OPERAND.dtype" (e.g. "w.dtype") names; -1 for any other name. */
static int dtype_operand(const fe_op *op, const char *key) {
    size_t n = strlen(key);
    if (n <= 6 || strcmp(key + n - 6, ".dtype") != 0) return -1;
    for (int i = 0; i < op->n_operands; i++)
        if (strlen(op->operands[i].name) == n - 6 && strncmp(op->operands[i].name, key, n - 6) == 0)
            return i;
    return -1;
}

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
        fe_dtype dt;
        if (dtype_operand(op, key) >= 0) {
            if (!json_is_string(v) || fe_dtype_from_name(json_string_value(v), &dt) != FE_OK)
                return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].when.%s must name a "
                                    "dtype (\"q8_0\", \"bf16\"...)", what, idx, key);
            continue;
        }
        if (fe_op_param_index(op, key) < 0 && fe_op_extent_index(op, key) < 0)
            return fe_error_set(err, FE_E_FORMAT, "%s: entries[%zu].when: %s has no param, "
                                "extent or OPERAND.dtype named \"%s\"", what, idx, op->name, key);
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

static fe_status check_fold(json_t *f, size_t idx, const char *what, fe_error *err) {
    json_t *site = json_is_object(f) ? json_object_get(f, "site") : NULL;
    if (!json_is_string(site) || !json_string_length(site))
        return fe_error_set(err, FE_E_FORMAT, "%s: folds[%zu] needs \"site\": a fold's key "
                            "(\"epilogue SiLU into GEMV ...\", as `ferrum tune` writes it)",
                            what, idx);
    if (!json_is_boolean(json_object_get(f, "keep")))
        return fe_error_set(err, FE_E_FORMAT, "%s: folds[%zu] needs \"keep\": true or false",
                            what, idx);
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
    json_t *folds = json_object_get(root, "folds");
    if (folds && !json_is_array(folds))
        return fe_error_set(err, FE_E_FORMAT, "%s: \"folds\" must be an array", what);
    json_array_foreach(folds, i, e) {
        fe_status st = check_fold(e, i, what, err);
        if (st != FE_OK) return st;
    }
    fe_profile *p = fe_malloc(sizeof *p);
    json_t *own = folds ? json_incref(folds) : json_array();
    if (!p || !own) {
        fe_free(p);
        json_decref(own);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    }
    p->entries = json_incref(entries);
    p->folds = own;
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
    json_decref(p->folds);
    fe_free(p);
}

int fe_profile_count(const fe_profile *p) { return p ? (int)json_array_size(p->entries) : 0; }

int fe_profile_folds(const fe_profile *p) { return p ? (int)json_array_size(p->folds) : 0; }

int fe_profile_fold(const fe_profile *p, const char *site) {
    size_t i;
    json_t *f;
    if (p && site)
        json_array_foreach(p->folds, i, f)
            if (strcmp(json_string_value(json_object_get(f, "site")), site) == 0)
                return json_is_true(json_object_get(f, "keep")) ? 1 : 0;
    return -1;
}

fe_status fe_profile_put_fold(fe_profile *p, const char *site, bool keep, const char *note,
                              fe_error *err) {
    if (!p || !site || !*site)
        return fe_error_set(err, FE_E_INVALID, "profile: a fold needs a profile and a site key");
    json_t *f = json_pack("{s:s, s:b}", "site", site, "keep", keep);
    if (f && note && json_object_set_new(f, "note", json_string(note)) != 0) {
        json_decref(f);
        f = NULL;
    }
    if (!f) return fe_error_set(err, FE_E_NOMEM, "profile: out of memory");
    size_t i, at = json_array_size(p->folds);
    json_t *old;
    json_array_foreach(p->folds, i, old)
        if (strcmp(json_string_value(json_object_get(old, "site")), site) == 0) at = i;
    if ((at < json_array_size(p->folds) ? json_array_set_new(p->folds, at, f)
                                        : json_array_append_new(p->folds, f)) != 0)
        return fe_error_set(err, FE_E_NOMEM, "profile: out of memory");
    return FE_OK;
}

/* A number as JSON: an integer when it is one (so a file reads 2048, not 2048.0). */
static json_t *number(double v) {
    return v == floor(v) && fabs(v) < 9e15 ? json_integer((json_int_t)v) : json_real(v);
}

/* Whether two `when` objects name the same values (the same shape: an entry to replace). */
static bool same_when(json_t *a, json_t *b) {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *key;
    json_t *v;
    json_object_foreach(a, key, v) {
        json_t *w = json_object_get(b, key);
        if (!w || json_number_value(w) != json_number_value(v) ||
            (json_is_string(v) && !json_equal(v, w)))
            return false;
    }
    return true;
}

fe_status fe_profile_put(fe_profile *p, const char *op, const fe_setting *when, int n_when,
                         const fe_setting *tunables, int n_tunables, const char *note,
                         fe_error *err) {
    json_t *w = json_object(), *tun = json_object();
    json_t *e = json_pack("{s:s?, s:o, s:o}", "op", op, "when", w, "tunables", tun);
    if (!e) return fe_error_set(err, FE_E_NOMEM, "profile: out of memory");
    bool ok = true;
    for (int i = 0; ok && i < n_when; i++)
        ok = json_object_set_new(w, when[i].name, when[i].choice ? json_string(when[i].choice)
                                                                 : number(when[i].value)) == 0;
    for (int i = 0; ok && i < n_tunables; i++)
        ok = json_object_set_new(tun, tunables[i].name, json_integer((json_int_t)tunables[i].value)) == 0;
    if (ok && note) ok = json_object_set_new(e, "note", json_string(note)) == 0;
    if (!ok) {
        json_decref(e);
        return fe_error_set(err, FE_E_NOMEM, "profile: out of memory");
    }
    size_t at = json_array_size(p->entries);
    fe_status st = check_entry(e, at, "profile", err);
    if (st != FE_OK) {
        json_decref(e);
        if (st == FE_E_FORMAT && err) err->status = FE_E_INVALID;
        return st == FE_E_FORMAT ? FE_E_INVALID : st;
    }
    size_t i;
    json_t *old;
    json_array_foreach(p->entries, i, old)
        if (strcasecmp(json_string_value(json_object_get(old, "op")), op) == 0 &&
            same_when(json_object_get(old, "when"), w)) {
            at = i;
            break;
        }
    if ((at < json_array_size(p->entries) ? json_array_set_new(p->entries, at, e)
                                          : json_array_append_new(p->entries, e)) != 0)
        return fe_error_set(err, FE_E_NOMEM, "profile: out of memory");
    return FE_OK;
}

fe_status fe_profile_save(const fe_profile *p, const char *path, fe_error *err) {
    char tmp[1100];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return fe_error_set(err, FE_E_INVALID, "profile: the path %s is too long", path);
    json_t *root = json_array_size(p->folds)
                       ? json_pack("{s:O, s:O}", "entries", p->entries, "folds", p->folds)
                       : json_pack("{s:O}", "entries", p->entries);
    if (!root) return fe_error_set(err, FE_E_NOMEM, "profile: out of memory");
    int bad = json_dump_file(root, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0;
    json_decref(root);
    if (bad) {
        int e = errno;
        unlink(tmp);
        return fe_error_set(err, FE_E_IO, "profile: cannot write %s: %s; give a writable path",
                            path, strerror(e));
    }
    return FE_OK;
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
            int o = dtype_operand(c->op, key);
            fe_dtype dt;
            if (o >= 0 ? !c->present[o] || fe_dtype_from_name(json_string_value(v), &dt) != FE_OK ||
                             c->operands[o].dtype != dt
                       : !lookup(c, key, &have) ||
                             fabs(have - json_number_value(v)) > 1e-12 * fabs(have)) {
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
