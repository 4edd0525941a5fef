/* tune/cost_table.c: the cost table as JSON, and its checks. The file
 * (${FERRUM_CACHE_HOME}/tables/<device id>/NAME.PACKAGING.json):
 *   {"format": "ferrum cost table", "version": 1, "name": "llama-3.2-1b",
 *    "device": "<16 hex>", "packaging": "fused",
 *    "dispatch": FIGURE, "barrier": FIGURE,
 *    "designs": [{"key": "<16 hex>", "op": "GEMV", "shape": "GEMV w (2048, 2048) ...",
 *                 "when": {"N": 2048, "K": 2048, "w.dtype": "bf16"},
 *                 "options": [{"setting": "default", "verdict": "candidate", "reason": "",
 *                              "tunables": {"WIDTH": 2, "rows_per_step": 4},
 *                              "cost": FIGURE, "layouts": [[1, 514, 4456448]]}, ...]}],
 *    "calls": [{"name": "decode step", "each_step": false, "measured": FIGURE or null,
 *               "steps": [{"label": "GEMV#3", "design": 0, "weights": [[1, 1099511627776]]},
 *                         ...]}]}
 * FIGURE is {"median_ns": .., "p10_ns": .., "p90_ns": .., "samples": N, "reliable": bool},
 * "in_turn": true where it was measured in turn with the default (optional), and
 * "read_gbps": the memory's read rate around it (optional, 0 when absent). An option's
 * "bytes" (optional, 0 when absent) is its op's cost model at the call points: what
 * fe_cost_table_at_level reads a figure's share bound by memory from. The table's
 * "read_gbps" (optional) is the level its options' figures are priced at, where they were
 * put at one (fe_cost_table_at_level); a call's "measured" keeps its own. A candidate's
 * "layouts" lists [operand, format, bytes] for each constant input it reads from a layout
 * of its own (fe_op.layout; [] for none; absent in a table written before they were kept),
 * and a step's "weights" (optional) [operand, id] for each operand that is one of the
 * graph's weights: with them narrowing sees a setting that reads a weight in a layout the
 * defaults do not make (a second copy of it in memory).
 * A table that breaks any rule is refused whole, the message naming the field and the fix:
 * narrowing never runs on a table it cannot trust. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "tune/cost_table.h"

static const char *const verdicts[] = {"candidate", "gated out", "same design", "refused"};

fe_status fe_cost_table_create(fe_cost_table **out, fe_error *err) {
    *out = fe_calloc(1, sizeof **out);
    if (!*out) return fe_error_set(err, FE_E_NOMEM, "cost table: out of memory");
    snprintf((*out)->packaging, sizeof (*out)->packaging, "fused");
    return FE_OK;
}

fe_table_design *fe_cost_table_add_design(fe_cost_table *t) {
    if (t->n_designs == t->cap_designs) {
        int cap = t->cap_designs ? 2 * t->cap_designs : 16;
        void *p = fe_realloc(t->designs, (size_t)cap * sizeof *t->designs);
        if (!p) return NULL;
        t->designs = p;
        t->cap_designs = cap;
    }
    fe_table_design *d = &t->designs[t->n_designs++];
    memset(d, 0, sizeof *d);
    return d;
}

void fe_cost_table_destroy(fe_cost_table *t) {
    if (!t) return;
    for (int i = 0; i < t->n_designs; i++) fe_free(t->designs[i].options);
    for (int i = 0; i < t->n_calls; i++) fe_free(t->calls[i].steps);
    fe_free(t->designs);
    fe_free(t->calls);
    fe_free(t);
}

int fe_cost_table_designs(const fe_cost_table *t) { return t->n_designs; }
int fe_cost_table_calls(const fe_cost_table *t) { return t->n_calls; }
int fe_cost_table_reused(const fe_cost_table *t) {
    int n = 0;
    for (int i = 0; i < t->n_designs; i++) n += t->designs[i].reused;
    return n;
}

void fe_cost_table_second_pass(const fe_cost_table *t, int *again, int *in_turn,
                               double *seconds) {
    *again = t->again, *in_turn = t->again_in_turn, *seconds = t->again_s;
}

fe_cost_figure fe_cost_table_dispatch(const fe_cost_table *t) { return t->dispatch; }
fe_cost_figure fe_cost_table_barrier(const fe_cost_table *t) { return t->barrier; }

fe_status fe_cost_table_path(const fe_device *dev, const char *root, const char *name,
                             const char *packaging, char *buf, size_t n, fe_error *err) {
    char base[900], id[17];
    fe_status st = fe_tune_cache_root(root, base, sizeof base, err);
    if (st != FE_OK) return st;
    fe_tune_device_id(dev, id);
    if (snprintf(buf, n, "%s/tables/%s/%s.%s.json", base, id, name, packaging) >= (int)n)
        return fe_error_set(err, FE_E_INVALID, "tune: the cost table path under %s is too "
                            "long; set FERRUM_CACHE_HOME to a shorter directory", base);
    return FE_OK;
}

/* ---- writing ---- */

static json_t *figure_json(const fe_cost_figure *f) {
    json_t *j = json_pack("{s:f, s:f, s:f, s:i, s:b}", "median_ns", f->median_ns, "p10_ns",
                          f->p10_ns, "p90_ns", f->p90_ns, "samples", f->samples, "reliable",
                          f->reliable);
    if (j && f->in_turn) json_object_set_new(j, "in_turn", json_true());
    if (j && f->read_gbps > 0) json_object_set_new(j, "read_gbps", json_real(f->read_gbps));
    return j;
}

static json_t *design_json(const fe_table_design *d) {
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, d->key);
    json_t *when = json_object(), *opts = json_array();
    for (int i = 0; when && i < d->n_when; i++)
        json_object_set_new(when, d->when[i].name, d->when[i].choice[0]
                            ? json_string(d->when[i].choice) : json_real(d->when[i].value));
    for (int i = 0; opts && i < d->n_options; i++) {
        const fe_table_option *o = &d->options[i];
        json_t *tun = json_object();
        for (int k = 0; tun && k < o->n_tunables; k++)
            json_object_set_new(tun, o->tunables[k], json_integer(o->values[k]));
        json_t *e = json_pack("{s:s, s:s, s:s, s:o?}", "setting", o->setting, "verdict",
                              verdicts[o->verdict], "reason", o->reason, "tunables", tun);
        if (e && o->verdict == FE_TUNE_CANDIDATE) {
            json_object_set_new(e, "cost", figure_json(&o->cost));
            if (o->bytes > 0) json_object_set_new(e, "bytes", json_real(o->bytes));
            json_t *lay = json_array();
            for (int k = 0; lay && k < FE_MAX_OPERANDS; k++)
                if (o->layout_format[k])
                    json_array_append_new(lay, json_pack("[i, I, f]", k,
                                                         (json_int_t)o->layout_format[k],
                                                         o->layout_bytes[k]));
            if (o->layouts_known) json_object_set_new(e, "layouts", lay);
            else json_decref(lay);
        }
        json_array_append_new(opts, e);
    }
    return json_pack("{s:s, s:s, s:s, s:o?, s:o?}", "key", hex, "op", d->op, "shape", d->shape,
                     "when", when, "options", opts);
}

static json_t *call_json(const fe_table_call *c) {
    json_t *steps = json_array();
    for (int i = 0; steps && i < c->n_steps; i++) {
        const fe_table_step *st = &c->steps[i];
        json_t *e = json_pack("{s:s, s:i}", "label", st->label, "design", st->design),
               *w = json_array();
        for (int k = 0; w && k < FE_MAX_OPERANDS; k++)
            if (st->weight[k])
                json_array_append_new(w, json_pack("[i, I]", k, (json_int_t)st->weight[k]));
        if (e && json_array_size(w) > 0) json_object_set_new(e, "weights", w);
        else json_decref(w);
        json_array_append_new(steps, e);
    }
    return json_pack("{s:s, s:b, s:o?, s:o?}", "name", c->name, "each_step", c->each_step,
                     "measured", c->has_measured ? figure_json(&c->measured) : json_null(),
                     "steps", steps);
}

fe_status fe_cost_table_save(const fe_cost_table *t, const char *path, fe_error *err) {
    json_t *designs = json_array(), *calls = json_array();
    for (int i = 0; designs && i < t->n_designs; i++)
        json_array_append_new(designs, design_json(&t->designs[i]));
    for (int i = 0; calls && i < t->n_calls; i++)
        json_array_append_new(calls, call_json(&t->calls[i]));
    json_t *root = json_pack("{s:s, s:i, s:s, s:s, s:s, s:o?, s:o?, s:o?, s:o?}", "format",
                             "ferrum cost table", "version", 1, "name", t->name, "device",
                             t->device, "packaging", t->packaging, "dispatch",
                             figure_json(&t->dispatch), "barrier", figure_json(&t->barrier),
                             "designs", designs, "calls", calls);
    if (!root) return fe_error_set(err, FE_E_NOMEM, "cost table: out of memory");
    if (t->read_gbps > 0) json_object_set_new(root, "read_gbps", json_real(t->read_gbps));
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (fe_tune_mkdirs(dir) != 0) {
            json_decref(root);
            return fe_error_set(err, FE_E_IO, "cost table: cannot create %s: %s; set "
                                "FERRUM_CACHE_HOME to a writable directory", dir, strerror(errno));
        }
    }
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (json_dump_file(root, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        json_decref(root);
        return fe_error_set(err, FE_E_IO, "cost table: cannot write %s: %s", path,
                            strerror(errno));
    }
    json_decref(root);
    return FE_OK;
}

/* ---- reading ---- */

typedef struct reader {
    const char *what;
    fe_error *err;
    char where[160]; /* "designs[3].options[2]" */
} reader;

static fe_status refuse(reader *r, const char *field, const char *rule) {
    return fe_error_set(r->err, FE_E_FORMAT, "cost table %s: %s%s%s %s; it is refused whole "
                        "(tune the model again with --remeasure to write a new one)", r->what,
                        r->where, *r->where ? "." : "", field, rule);
}

static fe_status read_string(reader *r, json_t *obj, const char *field, char *out, size_t n) {
    json_t *s = json_object_get(obj, field);
    if (!json_is_string(s) || strlen(json_string_value(s)) >= n) {
        char rule[96];
        snprintf(rule, sizeof rule, "is not a string of at most %zu characters", n - 1);
        return refuse(r, field, rule);
    }
    snprintf(out, n, "%s", json_string_value(s));
    return FE_OK;
}

static fe_status read_hex(reader *r, json_t *obj, const char *field, uint64_t *out) {
    char hex[17], *end;
    if (read_string(r, obj, field, hex, sizeof hex) != FE_OK || strlen(hex) != 16)
        return refuse(r, field, "is not 16 hex digits");
    errno = 0;
    *out = strtoull(hex, &end, 16);
    if (*end || errno) return refuse(r, field, "is not 16 hex digits");
    return FE_OK;
}

/* An optional number in [0, hi] (0 when absent); FE_E_FORMAT, unset, when it is not one (the
 * caller refuses with the field's own words). */
static fe_status read_optional(json_t *obj, const char *field, double hi, double *out) {
    json_t *x = json_object_get(obj, field);
    if (!x) return FE_OK;
    double v = json_is_number(x) ? json_number_value(x) : -1;
    if (!(v >= 0 && v <= hi)) return FE_E_FORMAT;
    *out = v;
    return FE_OK;
}

static fe_status read_figure(reader *r, json_t *obj, const char *field, fe_cost_figure *f) {
    json_t *j = json_object_get(obj, field);
    if (!json_is_object(j)) return refuse(r, field, "is not a figure object {median_ns, p10_ns, "
                                                    "p90_ns, samples, reliable}");
    double v[3];
    static const char *const names[] = {"median_ns", "p10_ns", "p90_ns"};
    for (int i = 0; i < 3; i++) {
        json_t *x = json_object_get(j, names[i]);
        v[i] = json_is_number(x) ? json_number_value(x) : -1;
        if (!(v[i] >= 0 && v[i] <= 1e15))
            return refuse(r, field, "has a time (median_ns, p10_ns, p90_ns) that is not a "
                          "number in [0, 1e15]");
    }
    if (!(v[1] <= v[0] && v[0] <= v[2]))
        return refuse(r, field, "breaks p10_ns <= median_ns <= p90_ns");
    json_t *s = json_object_get(j, "samples"), *rel = json_object_get(j, "reliable");
    if (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > 1 << 30)
        return refuse(r, field, "has samples that are not an integer in [0, 2^30]");
    if (!json_is_boolean(rel)) return refuse(r, field, "has reliable that is not true or false");
    json_t *turn = json_object_get(j, "in_turn");
    if (turn && !json_is_boolean(turn))
        return refuse(r, field, "has in_turn that is not true or false");
    double gbps = 0;
    if (read_optional(j, "read_gbps", 1e6, &gbps) != FE_OK)
        return refuse(r, field, "has read_gbps that is not a number in [0, 1e6] (GB/s)");
    *f = (fe_cost_figure){v[0], v[1], v[2], (int)json_integer_value(s), json_is_true(rel)};
    f->in_turn = json_is_true(turn);
    f->read_gbps = gbps;
    return FE_OK;
}

/* An array of [operand, id] or [operand, format, bytes] entries (n 2 or 3), each operand
 * below the op's count and at most once, the id or format a positive integer; into ids and
 * bytes (may be NULL). */
static fe_status read_operand_list(reader *r, json_t *list, const char *field, int n_operands,
                                   int n, uint64_t *ids, double *bytes) {
    static const char *const rules[] = {
        "is not an array of [operand, id] pairs (each operand of the step's op at most once, "
        "the id a positive integer)",
        "is not an array of [operand, format, bytes] entries (each operand of the op at most "
        "once, the format a positive integer, the bytes a number in [1, 1e15])"};
    const char *rule = rules[n == 3];
    if (!json_is_array(list) || json_array_size(list) > FE_MAX_OPERANDS)
        return refuse(r, field, rule);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        json_t *k = json_array_get(e, 0), *v = json_array_get(e, 1), *b = json_array_get(e, 2);
        if (!json_is_array(e) || json_array_size(e) != (size_t)n || !json_is_integer(k) ||
            json_integer_value(k) < 0 || json_integer_value(k) >= n_operands ||
            !json_is_integer(v) || json_integer_value(v) <= 0 ||
            ids[json_integer_value(k)] != 0 ||
            (n == 3 && !(json_is_number(b) && json_number_value(b) >= 1 &&
                         json_number_value(b) <= 1e15)))
            return refuse(r, field, rule);
        ids[json_integer_value(k)] = (uint64_t)json_integer_value(v);
        if (bytes) bytes[json_integer_value(k)] = json_number_value(b);
    }
    return FE_OK;
}

static fe_status read_layouts(reader *r, const fe_op *op, json_t *j, fe_table_option *o) {
    json_t *lay = json_object_get(j, "layouts");
    if (!lay) return FE_OK; /* written before layouts were kept: unknown */
    o->layouts_known = true;
    return read_operand_list(r, lay, "layouts", op->n_operands, 3, o->layout_format,
                             o->layout_bytes);
}

static fe_status read_option(reader *r, const fe_op *op, json_t *j, fe_table_option *o) {
    if (!json_is_object(j)) return refuse(r, "", "is not an object");
    fe_status st = read_string(r, j, "setting", o->setting, sizeof o->setting);
    char verdict[32];
    if (st == FE_OK) st = read_string(r, j, "verdict", verdict, sizeof verdict);
    if (st == FE_OK) st = read_string(r, j, "reason", o->reason, sizeof o->reason);
    if (st != FE_OK) return st;
    int v = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(verdict, verdicts[i]) == 0) v = i;
    if (v < 0) return refuse(r, "verdict", "is not one of candidate, gated out, same design, "
                                           "refused");
    o->verdict = (fe_tune_verdict)v;
    json_t *tun = json_object_get(j, "tunables");
    if (!json_is_object(tun)) return refuse(r, "tunables", "is not an object");
    const char *name;
    json_t *val;
    json_object_foreach(tun, name, val) {
        if (o->n_tunables == FE_MAX_TUNABLES) return refuse(r, "tunables", "has too many entries");
        if (fe_op_tunable_index(op, name) < 0) {
            char rule[160];
            snprintf(rule, sizeof rule, "names \"%.40s\", which is not a tunable of %s", name,
                     fe_op_name(op));
            return refuse(r, "tunables", rule);
        }
        if (!json_is_integer(val)) return refuse(r, "tunables", "holds a value that is not an integer");
        snprintf(o->tunables[o->n_tunables], sizeof o->tunables[0], "%s", name);
        o->values[o->n_tunables++] = json_integer_value(val);
    }
    if (o->verdict != FE_TUNE_CANDIDATE) return FE_OK;
    if (read_optional(j, "bytes", 1e18, &o->bytes) != FE_OK)
        return refuse(r, "bytes", "is not a number in [0, 1e18] (the op's bytes at the call "
                                  "points)");
    st = read_layouts(r, op, j, o);
    return st == FE_OK ? read_figure(r, j, "cost", &o->cost) : st;
}

static fe_status read_design(reader *r, json_t *j, fe_table_design *d) {
    if (!json_is_object(j)) return refuse(r, "", "is not an object");
    fe_status st = read_hex(r, j, "key", &d->key);
    if (st == FE_OK) st = read_string(r, j, "op", d->op, sizeof d->op);
    if (st == FE_OK) st = read_string(r, j, "shape", d->shape, sizeof d->shape);
    if (st != FE_OK) return st;
    const fe_op *op = fe_op_find(d->op);
    if (!op) return refuse(r, "op", "names no operator (`ferrum ops --names` lists them)");
    json_t *when = json_object_get(j, "when");
    if (!json_is_object(when)) return refuse(r, "when", "is not an object");
    const char *name;
    json_t *val;
    json_object_foreach(when, name, val) {
        if (d->n_when == FE_TABLE_MAX_WHEN || strlen(name) >= FE_TABLE_KEY_NAME)
            return refuse(r, "when", "has too many names, or one too long");
        fe_table_when *w = &d->when[d->n_when++];
        snprintf(w->name, sizeof w->name, "%s", name);
        if (json_is_number(val) && isfinite(json_number_value(val)))
            w->value = json_number_value(val);
        else if (json_is_string(val) && strlen(json_string_value(val)) < sizeof w->choice)
            snprintf(w->choice, sizeof w->choice, "%s", json_string_value(val));
        else
            return refuse(r, "when", "holds a value that is neither a number nor a dtype name");
    }
    json_t *opts = json_object_get(j, "options");
    if (!json_is_array(opts) || json_array_size(opts) < 1 || json_array_size(opts) > FE_TUNE_MAX_ROWS)
        return refuse(r, "options", "is not an array of 1..385 settings");
    d->options = fe_calloc(json_array_size(opts), sizeof *d->options);
    if (!d->options) return fe_error_set(r->err, FE_E_NOMEM, "cost table: out of memory");
    size_t at = strlen(r->where);
    for (size_t i = 0; i < json_array_size(opts); i++) {
        snprintf(r->where + at, sizeof r->where - at, ".options[%zu]", i);
        st = read_option(r, op, json_array_get(opts, i), &d->options[i]);
        if (st != FE_OK) return st;
        d->n_options++;
    }
    r->where[at] = 0;
    if (strcmp(d->options[0].setting, "default") != 0 || d->options[0].verdict != FE_TUNE_CANDIDATE)
        return refuse(r, "options[0]", "is not the default as a candidate (the first setting "
                                       "of a design is its default, always measured)");
    return FE_OK;
}

static fe_status read_call(reader *r, json_t *j, const fe_table_design *designs, int n_designs,
                           fe_table_call *c) {
    if (!json_is_object(j)) return refuse(r, "", "is not an object");
    fe_status st = read_string(r, j, "name", c->name, sizeof c->name);
    if (st != FE_OK) return st;
    json_t *each = json_object_get(j, "each_step"), *meas = json_object_get(j, "measured");
    if (!json_is_boolean(each)) return refuse(r, "each_step", "is not true or false");
    c->each_step = json_is_true(each);
    if (meas && !json_is_null(meas)) {
        st = read_figure(r, j, "measured", &c->measured);
        if (st != FE_OK) return st;
        c->has_measured = true;
    }
    json_t *steps = json_object_get(j, "steps");
    if (!json_is_array(steps) || json_array_size(steps) < 1 || json_array_size(steps) > 1 << 20)
        return refuse(r, "steps", "is not an array of 1..2^20 steps");
    c->steps = fe_calloc(json_array_size(steps), sizeof *c->steps);
    if (!c->steps) return fe_error_set(r->err, FE_E_NOMEM, "cost table: out of memory");
    size_t at = strlen(r->where);
    for (size_t i = 0; i < json_array_size(steps); i++) {
        json_t *s = json_array_get(steps, i);
        snprintf(r->where + at, sizeof r->where - at, ".steps[%zu]", i);
        if (!json_is_object(s)) return refuse(r, "", "is not an object");
        st = read_string(r, s, "label", c->steps[i].label, sizeof c->steps[i].label);
        if (st != FE_OK) return st;
        json_t *d = json_object_get(s, "design");
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) >= n_designs)
            return refuse(r, "design", "is not the index of one of the table's designs");
        c->steps[i].design = (int)json_integer_value(d);
        json_t *w = json_object_get(s, "weights");
        if (w) {
            const fe_op *op = fe_op_find(designs[c->steps[i].design].op);
            st = read_operand_list(r, w, "weights", op ? op->n_operands : FE_MAX_OPERANDS, 2,
                                   c->steps[i].weight, NULL);
            if (st != FE_OK) return st;
        }
        c->n_steps++;
    }
    r->where[at] = 0;
    return FE_OK;
}

static fe_status read_table(reader *r, json_t *root, fe_cost_table *t) {
    if (!json_is_object(root)) return refuse(r, "the top level", "is not an object");
    json_t *fmt = json_object_get(root, "format"), *ver = json_object_get(root, "version");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "ferrum cost table") != 0)
        return refuse(r, "format", "is not \"ferrum cost table\" (this is not a cost table)");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return refuse(r, "version", "is not 1, the version this ferrum reads");
    fe_status st = read_string(r, root, "name", t->name, sizeof t->name);
    if (st == FE_OK) st = read_string(r, root, "device", t->device, sizeof t->device);
    if (st == FE_OK) st = read_string(r, root, "packaging", t->packaging, sizeof t->packaging);
    if (st != FE_OK) return st;
    if (strcmp(t->packaging, "fused") != 0 && strcmp(t->packaging, "each_step") != 0)
        return refuse(r, "packaging", "is neither fused nor each_step");
    if (read_optional(root, "read_gbps", 1e6, &t->read_gbps) != FE_OK)
        return refuse(r, "read_gbps", "is not a number in [0, 1e6] (GB/s: the level the "
                                      "figures are priced at)");
    if ((st = read_figure(r, root, "dispatch", &t->dispatch)) != FE_OK) return st;
    if ((st = read_figure(r, root, "barrier", &t->barrier)) != FE_OK) return st;
    json_t *designs = json_object_get(root, "designs"), *calls = json_object_get(root, "calls");
    if (!json_is_array(designs) || json_array_size(designs) > 1 << 20)
        return refuse(r, "designs", "is not an array");
    if (!json_is_array(calls) || json_array_size(calls) < 1 || json_array_size(calls) > 64)
        return refuse(r, "calls", "is not an array of 1..64 calls");
    for (size_t i = 0; i < json_array_size(designs); i++) {
        fe_table_design *d = fe_cost_table_add_design(t);
        if (!d) return fe_error_set(r->err, FE_E_NOMEM, "cost table: out of memory");
        snprintf(r->where, sizeof r->where, "designs[%zu]", i);
        if ((st = read_design(r, json_array_get(designs, i), d)) != FE_OK) return st;
    }
    t->calls = fe_calloc(json_array_size(calls), sizeof *t->calls);
    if (!t->calls) return fe_error_set(r->err, FE_E_NOMEM, "cost table: out of memory");
    for (size_t i = 0; i < json_array_size(calls); i++) {
        snprintf(r->where, sizeof r->where, "calls[%zu]", i);
        st = read_call(r, json_array_get(calls, i), t->designs, t->n_designs, &t->calls[i]);
        t->calls[i].version = -1; /* not saved: which version ran it is the graph's */
        t->n_calls++;
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

fe_status fe_cost_table_parse(const char *text, size_t len, const char *what,
                              fe_cost_table **out, fe_error *err) {
    *out = NULL;
    json_t *root;
    fe_status st = fe_json_parse(text, len, what ? what : "cost table", &root, err);
    if (st != FE_OK) return st;
    fe_cost_table *t;
    st = fe_cost_table_create(&t, err);
    reader r = {.what = what ? what : "(text)", .err = err};
    if (st == FE_OK) st = read_table(&r, root, t);
    json_decref(root);
    if (st != FE_OK) {
        fe_cost_table_destroy(t);
        return st;
    }
    *out = t;
    return FE_OK;
}

fe_status fe_cost_table_load(const char *path, fe_cost_table **out, fe_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fe_error_set(err, FE_E_IO, "cost table %s cannot be read: %s", path,
                                strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            char *p = cap <= (size_t)1 << 30 ? fe_realloc(text, cap) : NULL;
            if (!p) {
                fe_free(text);
                fclose(f);
                return fe_error_set(err, FE_E_NOMEM, "cost table %s: out of memory (or over "
                                    "1 GiB)", path);
            }
            text = p;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    bool failed = ferror(f);
    fclose(f);
    fe_status st = failed ? fe_error_set(err, FE_E_IO, "cost table %s cannot be read", path)
                          : fe_cost_table_parse(text, len, path, out, err);
    fe_free(text);
    return st;
}
