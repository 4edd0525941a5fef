/* tune/tune_op.c: `ferrum tune OP`: every setting of one operator at one shape, gated and
 * measured. The settings are the default; one tunable at a time, each other value of every
 * searched tunable's domain; and, for each pair of searched design tunables (not WIDTH) whose
 * domains are small (at most FE_TUNE_JOINT_COMBOS combinations besides the default's rows
 * and columns), every combination of their other values together, since one tunable's best
 * may follow another's (GEMV rows_per_step and prefetch). The default stays the best unless
 * beaten beyond the noise. A setting that resolves to a design already listed is shown once; one whose
 * output fails the gate is listed with the reason and not timed. Costs come from the cost
 * cache when it holds a figure for the key (design, per-call values, input hash), else are
 * measured alone on the pool and stored (an unreliable figure too, marked so: a later run
 * reuses it, saying "cached (unreliable: spread X%)", unless --remeasure). */
#include <inttypes.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "tune/tune.h"

enum { LADDER_STEPS = 4 };

fe_tune_options fe_tune_options_default(void) {
    return (fe_tune_options){.budget_ms = 300, .max_spread = 0.25, .attempts = 3,
                             .seed = 0x5eed7e57u, .warmup = 3, .min_samples = 5};
}

/* Row i's layouts of the shape's constant inputs (fe_tune_result.layout_format). */
static void record_layouts(const fe_kernel *k, const fe_tune_shape *s, fe_tune_result *r, int i) {
    for (int op = 0; op < FE_MAX_OPERANDS; op++) {
        uint64_t format = 0;
        size_t bytes = s->constant[op] ? fe_kernel_layout_bytes(k, op, &format) : 0;
        r->layout_format[i][op] = bytes ? format : 0;
        r->layout_bytes[i][op] = (double)bytes;
    }
}

/* The layouts of every set of inputs (layouts_make): one region from the OS in huge pages,
 * as a model's layout store gives them, so a probe reads its layouts as a call does. */
typedef struct probe_layouts {
    void *(*set)[FE_MAX_OPERANDS]; /* per set: its inputs' layouts, into mem */
    char *mem;
    size_t bytes;
} probe_layouts;

/* What one run of a kernel sees, for the probes. */
typedef struct run_ctx {
    fe_kernel *k;
    fe_tune_buffers *b; /* each run takes its next set of inputs */
    const probe_layouts *lay; /* or NULL */
    int n_t;
    const int64_t *values;
    int n_values;
} run_ctx;

static void run_kernel(void *ctx) {
    run_ctx *r = ctx;
    int set = r->b->n_sets > 1 ? r->b->next_set : 0;
    const fe_tensor *t = fe_tune_buffers_next(r->b);
    fe_kernel_run_layouts(r->k, t, r->n_t, r->lay ? (const void *const *)r->lay->set[set] : NULL,
                          r->values, r->n_values);
}

/* Whether k reads some constant input of the shape from a layout of its own. */
static bool reads_layouts(const fe_kernel *k, const fe_tune_shape *s) {
    bool any = false;
    for (int i = 0; i < s->op->n_operands; i++)
        any |= s->constant[i] && fe_kernel_layout_bytes(k, i, NULL) > 0;
    return any;
}

static void layouts_free(probe_layouts *lay) {
    if (!lay) return;
    fe_pages_free(lay->mem, lay->bytes);
    fe_free(lay->set);
    fe_free(lay);
}

/* The layouts k reads its constant inputs from, made once for every set of b's inputs (as
 * a plan makes them for its weights). */
static fe_status layouts_make(fe_kernel *k, const fe_tune_shape *s, const fe_tune_buffers *b,
                              probe_layouts **out, fe_error *err) {
    *out = NULL;
    int sets = b->n_sets > 1 ? b->n_sets : 1;
    size_t each = 0;
    for (int i = 0; i < s->op->n_operands; i++)
        if (s->constant[i]) each += (fe_kernel_layout_bytes(k, i, NULL) + 63) & ~(size_t)63;
    probe_layouts *lay = fe_calloc(1, sizeof *lay);
    if (lay) lay->set = fe_calloc((size_t)sets, sizeof *lay->set);
    if (lay && lay->set && each) {
        lay->bytes = each * (size_t)sets;
        lay->mem = fe_pages_alloc_huge(lay->bytes);
    }
    if (!lay || !lay->set || (each && !lay->mem)) {
        layouts_free(lay);
        return fe_error_set(err, FE_E_NOMEM, "tune: out of memory for %d sets of layouts "
                            "(%zu bytes each)", sets, each);
    }
    char *mem = lay->mem;
    for (int c = 0; c < sets; c++)
        for (int i = 0; i < s->op->n_operands; i++) {
            size_t bytes = s->constant[i] ? fe_kernel_layout_bytes(k, i, NULL) : 0;
            if (!bytes) continue;
            const fe_tensor *t = b->n_sets > 1 ? &b->sets[c][i] : &b->t[i];
            lay->set[c][i] = mem;
            mem += (bytes + 63) & ~(size_t)63;
            fe_status st = fe_kernel_make_layout(k, i, t, lay->set[c][i]);
            if (st != FE_OK) {
                fe_error_set(err, st, "tune: %s", fe_kernel_message(k));
                layouts_free(lay);
                return st;
            }
        }
    *out = lay;
    return FE_OK;
}

/* The layouts of one search, shared by its settings: layouts of an operand with equal
 * formats are the same bytes (op.h), and a GEMM's MC, NC or KC leave B's panels as they are,
 * so each is made once a search where each setting had made its own (a cold tune of the
 * Llama 3.2 1B shape made some forty copies of a weight's panels for each of thirty
 * settings). The least recently used is freed past SHARED_LAYOUTS (a setting and the
 * default, priced in turn, hold the two most recent). */
enum { SHARED_LAYOUTS = 4 };
typedef struct shared_layouts {
    struct {
        uint64_t format[FE_MAX_OPERANDS];
        size_t bytes[FE_MAX_OPERANDS];
        probe_layouts *lay;
        uint64_t used;
        bool shareable;
    } e[SHARED_LAYOUTS];
    int n;
    uint64_t clock;
} shared_layouts;

static void shared_layouts_free(shared_layouts *sl) {
    for (int i = 0; i < sl->n; i++) layouts_free(sl->e[i].lay);
    sl->n = 0;
}

/* k's layouts of the shape's constant inputs over every set of b: one made before with the
 * same formats and sizes (a format of 0 names none: never shared), else made now. */
static fe_status layouts_for(shared_layouts *sl, fe_kernel *k, const fe_tune_shape *s,
                             const fe_tune_buffers *b, probe_layouts **out, fe_error *err) {
    uint64_t format[FE_MAX_OPERANDS] = {0};
    size_t bytes[FE_MAX_OPERANDS] = {0};
    bool shareable = true;
    for (int i = 0; i < s->op->n_operands; i++)
        if (s->constant[i]) {
            bytes[i] = fe_kernel_layout_bytes(k, i, &format[i]);
            shareable = shareable && (bytes[i] == 0 || format[i] != 0);
        }
    for (int i = 0; shareable && i < sl->n; i++)
        if (sl->e[i].shareable && !memcmp(sl->e[i].format, format, sizeof format) &&
            !memcmp(sl->e[i].bytes, bytes, sizeof bytes)) {
            sl->e[i].used = ++sl->clock;
            *out = sl->e[i].lay;
            return FE_OK;
        }
    int slot = sl->n;
    if (slot == SHARED_LAYOUTS) { /* the least recently used goes */
        slot = 0;
        for (int i = 1; i < sl->n; i++)
            if (sl->e[i].used < sl->e[slot].used) slot = i;
        layouts_free(sl->e[slot].lay);
    } else {
        sl->n++;
    }
    fe_status st = layouts_make(k, s, b, &sl->e[slot].lay, err);
    if (st != FE_OK) { /* the slot's entry is gone: the last one takes its place */
        sl->e[slot] = sl->e[--sl->n];
        return st;
    }
    memcpy(sl->e[slot].format, format, sizeof format);
    memcpy(sl->e[slot].bytes, bytes, sizeof bytes);
    sl->e[slot].shareable = shareable;
    sl->e[slot].used = ++sl->clock;
    *out = sl->e[slot].lay;
    return FE_OK;
}

static void empty_step(void *ctx, int ith, int nth) {
    (void)ctx, (void)ith, (void)nth;
}

static void run_empty(void *ctx) {
    fe_device *dev = ctx;
    fe_step s = {.fn = empty_step, .width = fe_device_get_info(dev)->n_workers};
    fe_device_dispatch(dev, &s, 1);
}

static void note(fe_tune_result *r, const char *msg) {
    size_t k = strlen(r->notes);
    snprintf(r->notes + k, sizeof r->notes - k, "%s\n", msg);
}

/* The per-call values of a row: ladder point `step` of LADDER_STEPS (the midpoints of equal
 * slices of [min, extent]) for the ladder value, the request's or the default elsewhere. */
static void values_at(const fe_tune_shape *s, const int64_t *ext, int step, int64_t *out) {
    const fe_op *op = s->op;
    if (s->n_points > 0) {
        memcpy(out, s->points[step < s->n_points ? step : s->n_points - 1],
               (size_t)op->n_values * sizeof *out);
        return;
    }
    for (int i = 0; i < op->n_values; i++) {
        const fe_value_decl *vd = &op->values[i];
        int64_t hi = ext[fe_op_extent_index(op, vd->extent)];
        int64_t v = s->values[i] >= 0 ? s->values[i] : vd->map == FE_MAP_NONE ? vd->min : hi;
        if (i == s->ladder) {
            v = vd->min + (hi - vd->min) * (2 * step + 1) / (2 * LADDER_STEPS);
            if (v < 1 && hi >= 1) v = 1;
        }
        out[i] = v;
    }
}

static void setting_text(const fe_kernel *k, char *buf, size_t n) {
    const fe_design *d = fe_kernel_design(k);
    size_t at = 0;
    for (int i = 0; i < d->op->n_tunables && at < n; i++)
        if (d->op->tunables[i].design)
            at += (size_t)snprintf(buf + at, n - at, "%s%s=%lld", at ? " " : "",
                                   d->op->tunables[i].name, (long long)d->tunables[i]);
}

void fe_tune_unreliable_cached(const fe_cost_figure *f, char *why, size_t n) {
    double spread = f->median_ns > 0 ? (f->p90_ns - f->p10_ns) / f->median_ns : 0;
    snprintf(why, n, "cached (unreliable: spread %.0f%%)", 100 * spread);
}

/* The read level of a figure priced over points: their levels weighted by their times (the
 * points a level is known at). */
typedef struct level_mean {
    double gbps_ns, ns;
} level_mean;

static void add_level(level_mean *m, fe_cost_figure f) {
    if (f.read_gbps > 0) m->gbps_ns += f.read_gbps * f.median_ns, m->ns += f.median_ns;
}

/* A setting whose runs take FAR_FACTOR times the default's is out of the race: its figure
 * stops at two samples past that (fe_tune_probe_below). The bound is the default's mean over
 * the shape's points times FAR_FACTOR times the spread of a ladder's points about their mean
 * (its deepest point, the last of four equal slices' midpoints, is 7/4 of the mean), so a
 * setting as fast as the default at its costliest point never meets it. 0 (no bound): the
 * default's own row, or no default figure yet. */
#define FAR_FACTOR 2.5
static double far_bound(const fe_tune_row *def_row, const fe_tune_row *row, int steps) {
    if (!def_row || def_row == row || def_row->cost.median_ns <= 0) return 0;
    return FAR_FACTOR * def_row->cost.median_ns * (steps > 1 ? 1.75 : 1.0);
}

/* Prices row (kernel k) at the shape's points: a figure per point from the cache, else
 * measured alone and stored. With `def_k` (the default's kernel, its row def_row), the row
 * is the setting o->recheck_setting names: at every point both are measured again, in turn
 * (fe_tune_probe_pair), both figures stored and both rows priced at them, so that the
 * setting's lead over the default is the one they show in the same stretch of time. */
static fe_status price(fe_device *dev, const fe_tune_shape *s, fe_kernel *k, fe_kernel *def_k,
                       fe_tune_buffers *b, shared_layouts *sl, fe_cost_cache *cache,
                       const fe_tune_options *o, fe_tune_row *row, fe_tune_row *def_row,
                       fe_tune_result *r, fe_error *err) {
    const fe_op *op = s->op;
    int steps = s->n_points > 0 ? s->n_points : s->ladder >= 0 ? LADDER_STEPS : 1;
    fe_cost_figure sum = {.reliable = true}, def_sum = {.reliable = true};
    level_mean level = {0}, def_level = {0};
    row->cached = true;
    row->flops = row->bytes = 0;
    char label[300], def_label[300];
    snprintf(label, sizeof label, "%s %s", op->name, row->setting);
    snprintf(def_label, sizeof def_label, "%s default", op->name);
    int64_t seen[FE_TUNE_MAX_POINTS + LADDER_STEPS][FE_MAX_VALUES];
    probe_layouts *lay = NULL, *def_lay = NULL; /* taken at the first point measured */
    /* a design read from layouts costs other than the same design packing per call */
    const uint64_t laid = reads_layouts(k, s) ? 0x1a7d0a75ull : 0;
    const uint64_t def_laid = def_k && reads_layouts(def_k, s) ? 0x1a7d0a75ull : 0;
    fe_cost_figure seen_fig[sizeof seen / sizeof seen[0]], seen_def[sizeof seen / sizeof seen[0]];
    fe_status st = FE_OK;
    for (int step = 0; st == FE_OK && step < steps; step++) {
        int64_t vals[FE_MAX_VALUES] = {0};
        values_at(s, fe_kernel_extents(k), step, vals);
        memcpy(seen[step], vals, sizeof vals);
        fe_cost_key key = {.design = fe_kernel_design_key(k), .n_values = op->n_values,
                           .input_hash = b->input_hash ^ laid};
        memcpy(key.values, vals, (size_t)op->n_values * sizeof *vals);
        fe_cost_key def_key = key;
        if (def_k) def_key.design = fe_kernel_design_key(def_k), def_key.input_hash = b->input_hash ^ def_laid;
        fe_cost_figure f, df = {0}, before = {0};
        bool hit = false, recheck = false, fresh = false;
        fe_error cerr;
        /* a point whose values an earlier point had (work that does not follow the call's
         * words) costs what that point cost: measured once */
        for (int e = 0; e < step && !hit; e++)
            if (memcmp(seen[e], vals, sizeof vals) == 0) {
                f = seen_fig[e], df = seen_def[e];
                hit = true;
            }
        if (!hit && !o->remeasure && !def_k) {
            st = fe_cost_cache_get(cache, &key, &f, &hit, &cerr);
            if (st == FE_E_FORMAT || st == FE_E_IO) note(r, cerr.message), st = FE_OK;
            else if (st != FE_OK) {
                st = fe_error_set(err, st, "%s", cerr.message);
                break;
            }
            if (hit && o->recheck_setting && strcmp(row->setting, o->recheck_setting) == 0) {
                hit = false, fresh = true; /* measured again below, that figure kept */
            } else if (hit && !f.reliable && o->recheck_unreliable &&
                strcmp(row->setting, "default") == 0) { /* measured again below */
                before = f;
                hit = false, recheck = true;
            } else if (hit && !f.reliable) { /* reused, said so: --remeasure measures it again */
                fe_tune_unreliable_cached(&f, row->reason, sizeof row->reason);
            }
        }
        if (!hit) {
            row->cached = false;
            if (o->progress)
                fprintf(o->progress, "tune %s: measuring %s%s%s\n", op->name, row->setting,
                        def_k ? " in turn with the default" : "", steps > 1 ? " (ladder)" : "");
            if (laid && !lay) st = layouts_for(sl, k, s, b, &lay, err);
            if (st == FE_OK && def_laid && !def_lay) st = layouts_for(sl, def_k, s, b, &def_lay, err);
            if (st != FE_OK) break;
            run_ctx rc = {.k = k, .b = b, .lay = lay, .n_t = op->n_operands, .values = vals,
                          .n_values = op->n_values};
            run_ctx dc = {.k = def_k, .b = b, .lay = def_lay, .n_t = op->n_operands,
                          .values = vals, .n_values = op->n_values};
            char why[200];
            if (def_k)
                fe_tune_probe_pair(run_kernel, &dc, run_kernel, &rc, fe_kernel_width(k), dev, o,
                                   &df, &f, why, sizeof why);
            else
                f = fe_tune_probe_below(run_kernel, &rc, fe_kernel_width(k), dev, o,
                                        far_bound(def_row, row, steps), why, sizeof why);
            if (recheck && !f.reliable && before.median_ns < f.median_ns) f = before;
            if (def_k)
                snprintf(row->reason, sizeof row->reason, "measured again in turn with the "
                         "default%s%s", f.reliable ? "" : "; unreliable: ", f.reliable ? "" : why);
            else if (fresh)
                snprintf(row->reason, sizeof row->reason, "measured again as the fastest%s%s",
                         f.reliable ? "" : "; unreliable: ", f.reliable ? "" : why);
            else if (recheck && !f.reliable)
                snprintf(row->reason, sizeof row->reason, "unreliable, measured twice: %s", why);
            else if (!f.reliable)
                snprintf(row->reason, sizeof row->reason, "unreliable: %s", why);
            if (fe_cost_cache_put(cache, &key, &f, label, &cerr) != FE_OK) note(r, cerr.message);
            if (def_k && fe_cost_cache_put(cache, &def_key, &df, def_label, &cerr) != FE_OK)
                note(r, cerr.message);
        }
        seen_fig[step] = f, seen_def[step] = df;
        double fl, by;
        fe_kernel_cost(k, vals, op->n_values, &fl, &by);
        sum.median_ns += f.median_ns / steps;
        sum.p10_ns += f.p10_ns / steps;
        sum.p90_ns += f.p90_ns / steps;
        sum.samples += f.samples;
        sum.reliable = sum.reliable && f.reliable;
        sum.in_turn = (step == 0 || sum.in_turn) && f.in_turn;
        def_sum.median_ns += df.median_ns / steps;
        def_sum.p10_ns += df.p10_ns / steps;
        def_sum.p90_ns += df.p90_ns / steps;
        def_sum.samples += df.samples;
        def_sum.reliable = def_sum.reliable && df.reliable;
        def_sum.in_turn = (step == 0 || def_sum.in_turn) && df.in_turn;
        row->flops += fl / steps;
        row->bytes += by / steps;
        add_level(&level, f), add_level(&def_level, df);
    }
    if (st != FE_OK) return st;
    sum.read_gbps = level.ns > 0 ? level.gbps_ns / level.ns : 0;
    def_sum.read_gbps = def_level.ns > 0 ? def_level.gbps_ns / def_level.ns : 0;
    row->cost = sum;
    row->in_turn = sum.in_turn; /* measured so now, or in a run before */
    if (def_k) {
        def_row->cost = def_sum;
        def_row->cached = false;
        snprintf(def_row->reason, sizeof def_row->reason, "measured again in turn with \"%s\"",
                 row->setting);
    }
    return FE_OK;
}

/* Runs k on b's inputs (outputs cleared first) and keeps its outputs. */
static fe_status run_outputs(fe_kernel *k, const fe_tune_shape *s, fe_tune_buffers *b,
                             bool reference, void *out[FE_MAX_OPERANDS], fe_error *err) {
    const fe_op *op = s->op;
    int64_t vals[FE_MAX_VALUES];
    values_at(s, fe_kernel_extents(k), s->n_points > 0 ? s->n_points - 1 : LADDER_STEPS - 1, vals);
    if (s->n_points == 0 && s->ladder >= 0) vals[s->ladder] = fe_kernel_extents(k)[fe_op_extent_index(op, op->values[s->ladder].extent)];
    fe_tune_buffers_clear_outputs(op, b);
    fe_status st = reference ? fe_kernel_run_reference(k, b->t, op->n_operands, vals, op->n_values)
                             : fe_kernel_run(k, b->t, op->n_operands, vals, op->n_values);
    if (st != FE_OK) return fe_error_set(err, st, "%s", fe_kernel_message(k));
    if (fe_tune_buffers_save_outputs(op, b, out) != FE_OK)
        return fe_error_set(err, FE_E_NOMEM, "tune: out of memory keeping outputs");
    return FE_OK;
}

static void free_outputs(void *o[FE_MAX_OPERANDS]) {
    for (int i = 0; i < FE_MAX_OPERANDS; i++) {
        fe_free(o[i]);
        o[i] = NULL;
    }
}

/* The gate for one candidate's outputs; the default's and the reference's outputs are made
 * once, when first needed (a search whose verdicts are all known runs neither). */
typedef struct gate_state {
    void *def[FE_MAX_OPERANDS], *ref[FE_MAX_OPERANDS];
    bool have_def, have_ref;
} gate_state;

/* *ran_ns: how long the candidate's run took (its kernel's first run: a warm-up of it) */
static fe_status gate(fe_kernel *def_k, fe_kernel *k, const fe_tune_shape *s,
                      fe_tune_buffers *b, gate_state *g, fe_tune_row *row, double *ran_ns,
                      fe_error *err) {
    const fe_op *op = s->op;
    void *got[FE_MAX_OPERANDS];
    fe_error run_err;
    *ran_ns = 0;
    if (!g->have_def) {
        fe_status st = run_outputs(def_k, s, b, false, g->def, err);
        if (st != FE_OK) return st;
        g->have_def = true;
    }
    const uint64_t t0 = fe_time_ns();
    fe_status st = run_outputs(k, s, b, false, got, &run_err);
    *ran_ns = (double)(fe_time_ns() - t0);
    if (st == FE_E_NOMEM) return fe_error_set(err, st, "%s", run_err.message);
    if (st != FE_OK) { /* the kernel refuses to run at this shape: not a candidate */
        row->verdict = FE_TUNE_REFUSED;
        snprintf(row->reason, sizeof row->reason, "%s", run_err.message);
        return FE_OK;
    }
    bool same = true;
    for (int i = 0; i < op->n_operands; i++)
        if (got[i] && memcmp(got[i], g->def[i], b->bytes[i]) != 0) same = false;
    if (!same && !g->have_ref) {
        st = run_outputs(def_k, s, b, true, g->ref, err);
        g->have_ref = st == FE_OK;
    }
    if (!same && st == FE_OK) {
        fe_gate_output outs[FE_MAX_OPERANDS];
        int n = 0;
        for (int i = 0; i < op->n_operands; i++)
            if (got[i])
                outs[n++] = (fe_gate_output){g->def[i], got[i], g->ref[i], b->bytes[i],
                                             b->t[i].dtype};
        if (!fe_tune_gate(op, outs, n, row->reason, sizeof row->reason))
            row->verdict = FE_TUNE_GATED_OUT;
    }
    free_outputs(got);
    return st;
}

static void describe_shape(const fe_tune_shape *s, const int64_t *ext, fe_tune_result *r) {
    const fe_op *op = s->op;
    size_t k = (size_t)snprintf(r->shape, sizeof r->shape, "%s", op->name);
    for (int i = 0; i < op->n_operands && k < sizeof r->shape; i++) {
        if (s->desc[i].rank == 0) continue;
        char sh[96];
        fe_shape_format(s->desc[i].rank, s->desc[i].shape, sh, sizeof sh);
        k += (size_t)snprintf(r->shape + k, sizeof r->shape - k, "%s %s %s %s", i ? "," : "",
                              op->operands[i].name, sh, fe_dtype_info(s->desc[i].dtype)->name);
    }
    for (int i = 0; i < s->c.n_params && k < sizeof r->shape; i++)
        k += (size_t)snprintf(r->shape + k, sizeof r->shape - k, "%s %s=%g", i ? "" : ";",
                              s->c.params[i].name, s->c.params[i].value);
    int64_t vals[FE_MAX_VALUES];
    values_at(s, ext, 0, vals);
    for (int i = 0; i < op->n_values && k < sizeof r->shape; i++) {
        if (i == s->ladder)
            k += (size_t)snprintf(r->shape + k, sizeof r->shape - k, "%s %s=ladder of %d",
                                  i ? "" : "; values", op->values[i].name, LADDER_STEPS);
        else
            k += (size_t)snprintf(r->shape + k, sizeof r->shape - k, "%s %s=%lld",
                                  i ? "" : "; values", op->values[i].name, (long long)vals[i]);
    }
}

/* What a profile entry for this tune needs: the shape's key (every extent, param and operand
 * dtype) and
 * the pure default's tunables (no held tunable, no profile) that a row's are compared with.
 * When the pure default cannot be made, the default row stands for it. */
static void record_shape(fe_device *dev, const fe_tune_shape *s, const fe_kernel *def_k,
                         fe_tune_result *r) {
    const fe_design *d = fe_kernel_design(def_k);
    const fe_op *op = s->op;
    r->op = op;
    r->n_when = 0;
    for (int e = 0; e < op->n_extents; e++)
        r->when[r->n_when++] = (fe_setting){op->extents[e], (double)fe_kernel_extents(def_k)[e]};
    for (int p = 0; p < op->n_params; p++)
        r->when[r->n_when++] = (fe_setting){op->params[p].name, d->params[p]};
    for (int i = 0; i < op->n_operands; i++)
        if (s->desc[i].rank > 0) {
            snprintf(r->dtype_keys[i], sizeof r->dtype_keys[i], "%s.dtype", op->operands[i].name);
            r->when[r->n_when++] = (fe_setting){.name = r->dtype_keys[i],
                                                .choice = fe_dtype_info(s->desc[i].dtype)->name};
        }
    fe_tune_shape bare = *s;
    bare.c.name = bare.case_name;
    bare.c.n_tunables = 0;
    bare.profile = NULL;
    fe_kernel *k = NULL;
    fe_error ignored;
    if (fe_tune_shape_kernel(dev, &bare, NULL, 0, &k, &ignored) == FE_OK)
        memcpy(r->base, fe_kernel_design(k)->tunables, sizeof r->base);
    else
        memcpy(r->base, d->tunables, sizeof r->base);
    fe_kernel_destroy(k);
}

/* A setting of the search: one tunable, or a pair set together. */
typedef struct plan {
    fe_setting set[FE_TUNE_MAX_JOINT];
    int n;
} plan;

/* Settings to try besides the default: each other domain value of each searched tunable,
 * then the joint pairs (see the top). */
static int plan_settings(const fe_kernel *def_k, const fe_device_info *dev, plan *out, int max) {
    const fe_design *d = fe_kernel_design(def_k);
    const fe_op *op = d->op;
    int64_t vals[FE_MAX_TUNABLES][FE_TUNE_MAX_DOMAIN];
    int nv[FE_MAX_TUNABLES] = {0}, n = 0;
    for (int i = 0; i < op->n_tunables; i++) {
        if (!fe_tune_searched(def_k, i)) continue;
        int all = fe_tune_domain_values(op, &op->tunables[i].domain, fe_kernel_extents(def_k),
                                        dev->n_workers, d->tunables[i], vals[i]);
        for (int v = 0; v < all; v++) /* the values other than the default's */
            if (vals[i][v] != d->tunables[i]) vals[i][nv[i]++] = vals[i][v];
        for (int v = 0; v < nv[i] && n < max; v++)
            out[n++] = (plan){{{.name = op->tunables[i].name, .value = (double)vals[i][v]}}, 1};
    }
    for (int i = 0; i < op->n_tunables; i++)
        for (int j = i + 1; j < op->n_tunables; j++) {
            if (op->tunables[i].domain.kind == FE_DOMAIN_WIDTH ||
                op->tunables[j].domain.kind == FE_DOMAIN_WIDTH || nv[i] == 0 || nv[j] == 0 ||
                nv[i] * nv[j] > FE_TUNE_JOINT_COMBOS)
                continue;
            for (int a = 0; a < nv[i]; a++)
                for (int b = 0; b < nv[j] && n < max; b++)
                    out[n++] = (plan){{{.name = op->tunables[i].name, .value = (double)vals[i][a]},
                                       {.name = op->tunables[j].name, .value = (double)vals[j][b]}},
                                      2};
        }
    return n;
}

/* Whether figure a is faster than b beyond their noise: by more than half of each one's
 * p10..p90 range, so a setting that wins by less than the spread it was measured with does
 * not displace the default. */
static bool faster_beyond_noise(const fe_cost_figure *a, const fe_cost_figure *b) {
    double margin = ((a->p90_ns - a->p10_ns) + (b->p90_ns - b->p10_ns)) / 2;
    return a->median_ns + margin < b->median_ns;
}

/* The best is the fastest reliable candidate among the default and the settings measured in
 * turn with it (a figure measured alone minutes from the default's is no evidence against it
 * on a host whose memory level drifts), and only when no unreliable figure is faster: a
 * setting whose figure was refused might be the real best, so none is named then. The
 * default (row 0) stays the best unless the fastest beats it beyond their noise. */
void fe_tune_mark_best(fe_tune_result *r) {
    int best = -1;
    for (int i = 0; i < r->n; i++) {
        const fe_tune_row *row = &r->rows[i];
        if (row->verdict == FE_TUNE_CANDIDATE && row->cost.reliable && (i == 0 || row->in_turn) &&
            (best < 0 || row->cost.median_ns < r->rows[best].cost.median_ns))
            best = i;
    }
    for (int i = 0; best >= 0 && i < r->n; i++)
        if (r->rows[i].verdict == FE_TUNE_CANDIDATE && !r->rows[i].cost.reliable &&
            r->rows[i].cost.median_ns < r->rows[best].cost.median_ns)
            best = -1;
    const fe_tune_row *def = r->n > 0 ? &r->rows[0] : NULL;
    if (best > 0 && def->verdict == FE_TUNE_CANDIDATE && def->cost.reliable &&
        !faster_beyond_noise(&r->rows[best].cost, &def->cost))
        best = 0;
    if (best >= 0) r->rows[best].best = true;
}

/* A known verdict for setting, or NULL. */
static const fe_tune_known *known_verdict(const fe_tune_known *known, int n, const char *setting) {
    for (int i = 0; i < n; i++)
        if (known[i].setting && strcmp(known[i].setting, setting) == 0) return &known[i];
    return NULL;
}

/* Whether the shape's work is bound by its arithmetic: at least COMPUTE_BOUND flops a byte
 * the op's cost model moves (its last point's values), where the memory's rate decides
 * little (a prefill GEMM: hundreds; a decode GEMV or attention step: about 2). */
#define COMPUTE_BOUND 64.0
static bool compute_bound(const fe_kernel *k, const fe_tune_shape *s) {
    int64_t vals[FE_MAX_VALUES] = {0};
    values_at(s, fe_kernel_extents(k), s->n_points > 0 ? s->n_points - 1 : LADDER_STEPS - 1, vals);
    double flops = 0, bytes = 0;
    fe_kernel_cost(k, vals, s->op->n_values, &flops, &bytes);
    return bytes > 0 && flops >= COMPUTE_BOUND * bytes;
}

fe_status fe_tune_shape_search(fe_device *dev, const fe_tune_shape *sp, const fe_tune_options *opts,
                               const fe_tune_known *known, int n_known, fe_cost_cache *cache,
                               fe_tune_result *r, fe_error *err) {
    fe_tune_shape s = *sp; /* c.name points into the copy */
    s.c.name = s.case_name;
    fe_tune_options o = *opts;
    fe_kernel *def_k = NULL;
    fe_status st = fe_tune_shape_kernel(dev, &s, NULL, 0, &def_k, err);
    if (st != FE_OK) return st;
    fe_tune_buffers b = {0};
    gate_state g = {0};
    shared_layouts sl = {0};
    fe_kernel *k = NULL;
    describe_shape(&s, fe_kernel_extents(def_k), r);
    double lo = s.c.lo < s.c.hi ? s.c.lo : -3, hi = s.c.lo < s.c.hi ? s.c.hi : 3;
    st = fe_tune_buffers_init(&b, s.op, s.desc, fe_kernel_extents(def_k), lo, hi,
                              o.seed, err);
    /* timed runs read their inputs from memory, as a model's steps read their weights: the
     * copies span twice the last-level cache (the gate runs on the first). Work bound by its
     * arithmetic takes two: it reads its inputs at a small share of the memory's rate, from
     * wherever they are, and forty copies of a prefill GEMM's weight (a 480 MiB L3 as a
     * Xeon guest reports it), each laid out again per setting, had cost more than its runs */
    size_t llc = fe_device_get_info(dev)->l3_bytes;
    const bool by_compute = compute_bound(def_k, &s);
    if (st == FE_OK)
        st = fe_tune_buffers_spread(&b, s.op, by_compute ? 1 : 2 * (llc ? llc : (size_t)32 << 20),
                                    err);
    if (st != FE_OK) goto done;
    if (by_compute) b.input_hash ^= 0xc0de0b0c2ull; /* other copies: other figures */

    fe_tune_row *row = &r->rows[r->n++];
    char text[140];
    setting_text(def_k, text, sizeof text);
    snprintf(row->setting, sizeof row->setting, "default");
    size_t at = strlen(r->shape);
    snprintf(r->shape + at, sizeof r->shape - at, "\ndefault setting: %s", text);
    row->design = fe_kernel_design_key(def_k);
    r->input_hash = b.input_hash;
    record_shape(dev, &s, def_k, r);
    memcpy(r->tunables[0], fe_kernel_design(def_k)->tunables, sizeof r->tunables[0]);
    record_layouts(def_k, &s, r, 0);
    if (o.progress) fprintf(o.progress, "tune %s: %s\n", s.op->name, r->shape);
    st = price(dev, &s, def_k, NULL, &b, &sl, cache, &o, row, NULL, r, err);

    plan *settings = st == FE_OK ? fe_malloc(FE_TUNE_MAX_ROWS * sizeof *settings) : NULL;
    if (st == FE_OK && !settings) st = fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    int n_set = settings && !o.default_only
                    ? plan_settings(def_k, fe_device_get_info(dev), settings, FE_TUNE_MAX_ROWS - 1)
                    : 0;
    for (int i = 0; st == FE_OK && i < n_set; i++) {
        row = &r->rows[r->n++];
        size_t w = 0;
        for (int e = 0; e < settings[i].n && w < sizeof row->setting; e++)
            w += (size_t)snprintf(row->setting + w, sizeof row->setting - w, "%s%s=%lld",
                                  e ? " " : "", settings[i].set[e].name,
                                  (long long)settings[i].set[e].value);
        fe_error kerr;
        if (fe_tune_shape_kernel(dev, &s, settings[i].set, settings[i].n, &k, &kerr) != FE_OK) {
            row->verdict = FE_TUNE_REFUSED;
            snprintf(row->reason, sizeof row->reason, "%s", kerr.message);
            continue;
        }
        row->design = fe_kernel_design_key(k);
        memcpy(r->tunables[r->n - 1], fe_kernel_design(k)->tunables, sizeof r->tunables[0]);
        record_layouts(k, &s, r, r->n - 1);
        for (int j = 0; j < r->n - 1; j++)
            if (r->rows[j].design == row->design) {
                row->verdict = FE_TUNE_SAME_DESIGN;
                char other[sizeof row->setting];
                memcpy(other, r->rows[j].setting, sizeof other);
                setting_text(k, text, sizeof text);
                snprintf(row->reason, sizeof row->reason, "resolves to the design of \"%s\" "
                         "(%s)", other, text);
                break;
            }
        const fe_tune_known *kv = row->verdict == FE_TUNE_CANDIDATE
                                      ? known_verdict(known, n_known, row->setting) : NULL;
        double ran_ns = 0;
        if (kv) { /* gated before, on the same inputs */
            row->verdict = kv->verdict;
            if (kv->verdict != FE_TUNE_CANDIDATE)
                snprintf(row->reason, sizeof row->reason, "%s", kv->reason ? kv->reason : "");
        } else if (row->verdict == FE_TUNE_CANDIDATE) {
            st = gate(def_k, k, &s, &b, &g, row, &ran_ns, err);
        }
        /* the setting named to be measured again is measured in turn with the default */
        const bool in_turn = o.recheck_setting && o.recheck_in_turn &&
                             strcmp(row->setting, o.recheck_setting) == 0;
        fe_tune_options so = o; /* a setting's attempts (the default keeps its own) */
        if (o.setting_attempts > 0 && !in_turn) so.attempts = o.setting_attempts;
        if (ran_ns >= FE_TUNE_WARM_NS && !in_turn) so.warmup = 0; /* the gate warmed it */
        if (st == FE_OK && row->verdict == FE_TUNE_CANDIDATE)
            st = price(dev, &s, k, in_turn ? def_k : NULL, &b, &sl, cache, &so, row, &r->rows[0],
                       r, err);
        fe_kernel_destroy(k);
        k = NULL;
    }
    fe_free(settings);
    if (st == FE_OK) fe_tune_mark_best(r);
done:
    free_outputs(g.def);
    free_outputs(g.ref);
    shared_layouts_free(&sl);
    fe_tune_buffers_deinit(&b);
    fe_kernel_destroy(def_k);
    return st;
}

fe_status fe_tune_op(fe_device *dev, const fe_tune_request *req, const fe_tune_options *opts,
                     fe_tune_result **out, fe_error *err) {
    *out = NULL;
    fe_tune_options o = opts ? *opts : fe_tune_options_default();
    fe_tune_shape s;
    fe_status st = fe_tune_shape_init(dev, req, &s, err);
    if (st != FE_OK) return st;
    fe_tune_result *r = fe_calloc(1, sizeof *r);
    if (!r) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    fe_cost_cache *cache = NULL;
    st = fe_cost_cache_open(dev, o.cache_root, &cache, err);
    if (st == FE_OK) st = fe_tune_shape_search(dev, &s, &o, NULL, 0, cache, r, err);
    /* the fastest reliable setting, when faster than the default, measured again in turn
     * with it (figures measured minutes apart on a host whose memory level drifts are not
     * comparable): up to ROUNDS times, until the fastest is one measured so (its cached
     * figure says in_turn, from this run or one before) */
    enum { ROUNDS = 8 };
    fe_tune_result *again = st == FE_OK ? fe_calloc(1, sizeof *again) : NULL;
    fe_tune_known known[FE_TUNE_MAX_ROWS]; /* the first search's gates stand */
    for (int i = 0; i < r->n; i++)
        known[i] = (fe_tune_known){r->rows[i].setting, r->rows[i].verdict, r->rows[i].reason};
    for (int round = 0; again && round < ROUNDS; round++) {
        int fastest = -1;
        for (int i = 1; r->rows[0].verdict == FE_TUNE_CANDIDATE && i < r->n; i++)
            if (r->rows[i].verdict == FE_TUNE_CANDIDATE && r->rows[i].cost.reliable &&
                r->rows[i].cost.median_ns <
                    (fastest < 0 ? r->rows[0].cost.median_ns : r->rows[fastest].cost.median_ns))
                fastest = i;
        if (fastest < 0 || r->rows[fastest].in_turn) break;
        fe_tune_options in_turn = o;
        in_turn.remeasure = false;
        in_turn.recheck_setting = r->rows[fastest].setting;
        in_turn.recheck_in_turn = true;
        memset(again, 0, sizeof *again);
        st = fe_tune_shape_search(dev, &s, &in_turn, known, r->n, cache, again, err);
        if (st != FE_OK) break;
        /* the new rows (measured in this run stays measured), the first search's notes kept */
        for (int i = 0; i < again->n; i++) {
            const bool cached = again->rows[i].cached && r->rows[i].cached;
            r->rows[i] = again->rows[i];
            r->rows[i].cached = cached;
        }
        if (!strstr(r->notes, again->notes)) {
            size_t at = strlen(r->notes);
            snprintf(r->notes + at, sizeof r->notes - at, "%s", again->notes);
        }
    }
    fe_free(again);
    int apart = 0;
    for (int i = 1; st == FE_OK && i < r->n; i++)
        apart += r->rows[i].verdict == FE_TUNE_CANDIDATE && r->rows[i].cost.reliable &&
                 !r->rows[i].in_turn && r->rows[i].cost.median_ns < r->rows[0].cost.median_ns;
    if (apart > 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "%d setting%s faster than the default only as measured apart, "
                 "not in turn with it (the rounds ran out): not named best", apart,
                 apart > 1 ? "s" : "");
        note(r, msg);
    }
    if (st == FE_OK) {
        char why[200];
        r->dispatch = fe_tune_probe(run_empty, dev, fe_device_get_info(dev)->n_workers, NULL,
                                    &o, why, sizeof why);
    }
    fe_cost_cache_close(cache);
    if (st != FE_OK) {
        fe_free(r);
        return st;
    }
    *out = r;
    return FE_OK;
}

void fe_tune_result_destroy(fe_tune_result *r) { fe_free(r); }
int fe_tune_result_count(const fe_tune_result *r) { return r->n; }
const fe_tune_row *fe_tune_result_row(const fe_tune_result *r, int i) {
    return i >= 0 && i < r->n ? &r->rows[i] : NULL;
}
fe_cost_figure fe_tune_result_dispatch(const fe_tune_result *r) { return r->dispatch; }
const char *fe_tune_result_shape(const fe_tune_result *r) { return r->shape; }
const char *fe_tune_result_notes(const fe_tune_result *r) { return r->notes; }
