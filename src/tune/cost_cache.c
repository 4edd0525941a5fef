/* tune/cost_cache.c: every design ever measured on this machine. One JSON file per design,
 * <root>/costs/<device id>/<design key>.json:
 *   {"design": "9f...", "label": "GEMV rows_per_step=2 ...",
 *    "entries": [{"values": [2048, 1], "input": "1c...", "median_ns": 81234.5,
 *                 "p10_ns": 80100, "p90_ns": 83000, "samples": 48, "reliable": true,
 *                 "in_turn": true, "read_gbps": 31.2}]}
 * ("in_turn", optional, false when absent: measured in turn with the default's design;
 * "read_gbps", optional, 0 when absent: the memory's read rate around the figure).
 * An entry is keyed on the per-call values and the inputs' hash. A file that is not that
 * shape is refused whole, with a message naming it; the next put replaces it. Files are
 * written to a temporary and renamed, so a reader never sees half of one. `ferrum tune OP`
 * and `ferrum tune MODEL` (each design of a graph's cost table) fill and read it through the
 * same key, so a design shared by two graphs, or by a graph and an op's tune, is measured
 * once. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "tune/tune.h"

struct fe_cost_cache {
    char dir[1024];
};

void fe_tune_device_id(const fe_device *dev, char out[17]) {
    const fe_device_info *in = fe_device_get_info(dev);
    fe_hasher h;
    uint64_t key = 0;
    if (fe_hasher_init(&h) == 0) {
        fe_hasher_str(&h, in->cpu_name);
        fe_hasher_i64(&h, in->isa);
        fe_hasher_i64(&h, in->best_isa);
        fe_hasher_i64(&h, in->n_workers);
        fe_hasher_i64(&h, (int64_t)in->l1d_bytes);
        fe_hasher_i64(&h, (int64_t)in->l2_bytes);
        fe_hasher_i64(&h, (int64_t)in->l3_bytes);
        if (in->avxvnni) fe_hasher_str(&h, "avxvnni"); /* (ids without it as they were) */
        key = fe_hasher_done(&h);
    }
    snprintf(out, 17, "%016" PRIx64, key);
}

fe_status fe_cost_cache_open(const fe_device *dev, const char *root, fe_cost_cache **out,
                             fe_error *err) {
    *out = NULL;
    char base[900];
    fe_status st = fe_tune_cache_root(root, base, sizeof base, err);
    if (st != FE_OK) return st;
    fe_cost_cache *c = fe_calloc(1, sizeof *c);
    if (!c) return fe_error_set(err, FE_E_NOMEM, "cost cache: out of memory");
    char id[17];
    fe_tune_device_id(dev, id);
    snprintf(c->dir, sizeof c->dir, "%s/costs/%s", base, id);
    *out = c;
    return FE_OK;
}

void fe_cost_cache_close(fe_cost_cache *c) { fe_free(c); }
const char *fe_cost_cache_dir(const fe_cost_cache *c) { return c->dir; }

static void design_path(const fe_cost_cache *c, uint64_t design, char *buf, size_t n) {
    snprintf(buf, n, "%s/%016" PRIx64 ".json", c->dir, design);
}

static bool hex_equal(json_t *j, uint64_t v) {
    char want[17];
    snprintf(want, sizeof want, "%016" PRIx64, v);
    return json_is_string(j) && strcmp(json_string_value(j), want) == 0;
}

static fe_status bad(fe_error *err, const char *path, const char *what, size_t i) {
    return fe_error_set(err, FE_E_FORMAT, "cost cache file %s is malformed: %s%s%zu%s; it is "
                        "ignored and replaced by the next measurement (or delete it)", path,
                        what, i != (size_t)-1 ? " (entry " : "", i, i != (size_t)-1 ? ")" : "");
}

/* Checks the whole file's shape; entries are then safe to read. */
static fe_status check_file(json_t *root, uint64_t design, const char *path, fe_error *err) {
    if (!json_is_object(root)) return bad(err, path, "the top level is not an object", (size_t)-1);
    if (!hex_equal(json_object_get(root, "design"), design))
        return bad(err, path, "\"design\" is not this file's design key", (size_t)-1);
    json_t *entries = json_object_get(root, "entries");
    if (!json_is_array(entries)) return bad(err, path, "\"entries\" is not an array", (size_t)-1);
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        if (!json_is_object(e)) return bad(err, path, "not an object", i);
        json_t *vals = json_object_get(e, "values"), *in = json_object_get(e, "input");
        if (!json_is_array(vals) || json_array_size(vals) > FE_COST_MAX_VALUES)
            return bad(err, path, "\"values\" is not an array of at most 4 integers", i);
        size_t k;
        json_t *v;
        json_array_foreach(vals, k, v) if (!json_is_integer(v))
            return bad(err, path, "\"values\" holds a non-integer", i);
        if (!json_is_string(in) || strlen(json_string_value(in)) != 16)
            return bad(err, path, "\"input\" is not a 16-digit hex hash", i);
        static const char *const nums[] = {"median_ns", "p10_ns", "p90_ns"};
        for (int n = 0; n < 3; n++) {
            json_t *x = json_object_get(e, nums[n]);
            if (!json_is_number(x) || !(json_number_value(x) >= 0) ||
                json_number_value(x) > 1e15)
                return bad(err, path, "a time (median_ns, p10_ns, p90_ns) is not a number in "
                           "[0, 1e15]", i);
        }
        json_t *s = json_object_get(e, "samples");
        if (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 1 << 30)
            return bad(err, path, "\"samples\" is not a positive integer", i);
        if (!json_is_boolean(json_object_get(e, "reliable")))
            return bad(err, path, "\"reliable\" is not true or false", i);
        json_t *turn = json_object_get(e, "in_turn");
        if (turn && !json_is_boolean(turn))
            return bad(err, path, "\"in_turn\" is not true or false", i);
        json_t *level = json_object_get(e, "read_gbps");
        if (level && !(json_is_number(level) && json_number_value(level) >= 0 &&
                       json_number_value(level) <= 1e6))
            return bad(err, path, "\"read_gbps\" is not a number in [0, 1e6] (GB/s)", i);
    }
    return FE_OK;
}

static bool entry_matches(json_t *e, const fe_cost_key *key) {
    json_t *vals = json_object_get(e, "values");
    if ((int)json_array_size(vals) != key->n_values) return false;
    for (int i = 0; i < key->n_values; i++)
        if (json_integer_value(json_array_get(vals, (size_t)i)) != key->values[i]) return false;
    return hex_equal(json_object_get(e, "input"), key->input_hash);
}

/* Reads the design's file: FE_OK with *root NULL when there is none. */
static fe_status load(const fe_cost_cache *c, uint64_t design, json_t **root, char *path,
                      size_t path_n, fe_error *err) {
    *root = NULL;
    design_path(c, design, path, path_n);
    if (access(path, F_OK) != 0) return FE_OK;
    fe_error jerr;
    fe_status st = fe_json_load_file(path, root, &jerr);
    if (st == FE_E_FORMAT)
        return fe_error_set(err, FE_E_FORMAT, "cost cache file %s is malformed: %s; it is "
                            "ignored and replaced by the next measurement (or delete it)",
                            path, jerr.message);
    if (st != FE_OK) return fe_error_set(err, st, "cost cache: %s", jerr.message);
    st = check_file(*root, design, path, err);
    if (st != FE_OK) {
        json_decref(*root);
        *root = NULL;
    }
    return st;
}

fe_status fe_cost_cache_get(fe_cost_cache *c, const fe_cost_key *key, fe_cost_figure *out,
                            bool *hit, fe_error *err) {
    *hit = false;
    if (key->n_values < 0 || key->n_values > FE_COST_MAX_VALUES)
        return fe_error_set(err, FE_E_INVALID, "cost cache: a key has %d values; at most %d",
                            key->n_values, FE_COST_MAX_VALUES);
    char path[1100];
    json_t *root;
    fe_status st = load(c, key->design, &root, path, sizeof path, err);
    if (st != FE_OK || !root) return st;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "entries"), i, e) {
        if (!entry_matches(e, key)) continue;
        out->median_ns = json_number_value(json_object_get(e, "median_ns"));
        out->p10_ns = json_number_value(json_object_get(e, "p10_ns"));
        out->p90_ns = json_number_value(json_object_get(e, "p90_ns"));
        out->samples = (int)json_integer_value(json_object_get(e, "samples"));
        out->reliable = json_is_true(json_object_get(e, "reliable"));
        out->in_turn = json_is_true(json_object_get(e, "in_turn"));
        json_t *level = json_object_get(e, "read_gbps");
        out->read_gbps = level ? json_number_value(level) : 0;
        *hit = true;
        break;
    }
    json_decref(root);
    return FE_OK;
}

fe_status fe_tune_cache_root(const char *root, char *buf, size_t n, fe_error *err) {
    const char *env = getenv("FERRUM_CACHE_HOME"), *home = getenv("HOME");
    if (root && *root) snprintf(buf, n, "%s", root);
    else if (env && *env) snprintf(buf, n, "%s", env);
    else if (home && *home) snprintf(buf, n, "%s/.cache/ferrum", home);
    else
        return fe_error_set(err, FE_E_INVALID, "tune: neither FERRUM_CACHE_HOME nor HOME is "
                            "set; set FERRUM_CACHE_HOME to a directory for costs and profiles");
    return FE_OK;
}

int fe_tune_mkdirs(const char *dir) {
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

fe_status fe_cost_cache_put(fe_cost_cache *c, const fe_cost_key *key, const fe_cost_figure *fig,
                            const char *label, fe_error *err) {
    char path[1100], tmp[1200], hex[17];
    json_t *root = NULL;
    fe_error ignored;
    if (load(c, key->design, &root, path, sizeof path, &ignored) != FE_OK || !root) {
        root = json_object();
        snprintf(hex, sizeof hex, "%016" PRIx64, key->design);
        if (!root || json_object_set_new(root, "design", json_string(hex)) ||
            json_object_set_new(root, "entries", json_array()))
            goto nomem;
    }
    if (label && json_object_set_new(root, "label", json_string(label))) goto nomem;
    json_t *entries = json_object_get(root, "entries");
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) if (entry_matches(e, key)) {
        json_array_remove(entries, i);
        break;
    }
    json_t *vals = json_array();
    for (int v = 0; vals && v < key->n_values; v++)
        json_array_append_new(vals, json_integer(key->values[v]));
    snprintf(hex, sizeof hex, "%016" PRIx64, key->input_hash);
    e = json_pack("{s:o?, s:s, s:f, s:f, s:f, s:i, s:b, s:b}", "values", vals, "input", hex,
                  "median_ns", fig->median_ns, "p10_ns", fig->p10_ns, "p90_ns", fig->p90_ns,
                  "samples", fig->samples, "reliable", fig->reliable, "in_turn", fig->in_turn);
    if (e && fig->read_gbps > 0 && json_object_set_new(e, "read_gbps", json_real(fig->read_gbps)))
        goto nomem;
    if (!e || json_array_append_new(entries, e)) goto nomem;
    if (fe_tune_mkdirs(c->dir) != 0) {
        json_decref(root);
        return fe_error_set(err, FE_E_IO, "cost cache: cannot create %s: %s; set "
                            "FERRUM_CACHE_HOME to a writable directory", c->dir, strerror(errno));
    }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (json_dump_file(root, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        json_decref(root);
        return fe_error_set(err, FE_E_IO, "cost cache: cannot write %s: %s", path,
                            strerror(errno));
    }
    json_decref(root);
    return FE_OK;
nomem:
    json_decref(root);
    return fe_error_set(err, FE_E_NOMEM, "cost cache: out of memory");
}
