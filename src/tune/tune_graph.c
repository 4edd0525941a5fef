/* tune/tune_graph.c: a compiled graph's cost table. Each call (a version and its call
 * points) is walked step by step through the graph's own view of its steps
 * (graph/inspect.h): the step's operands, params and held tunables make a tune shape, its
 * values at every call point the points it is priced at. Steps whose default design,
 * operand shapes and values agree are one design of the table, searched once (every setting
 * gated and priced as fe_tune_op does, costs through the cost cache); a design an earlier
 * table holds under the same key is taken from it (an unreliable figure too, said so), as
 * are its dispatch and barrier figures; else the dispatch and barrier probes. The calls as
 * they run are measured once per graph: a call's figure is kept in the cost cache under the
 * call's signature (every step's work key), so a warm run reuses it. Progress: a bar on a
 * terminal, else a line per design. */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "graph/inspect.h"
#include "tune/cost_table.h"

enum { BARRIER_STEPS = 33, MAX_OUTPUTS = 16, OVERHEAD_TRIES = 4, PAIRED_ROUNDS = 3 };

/* The key of a step's work: what the table's design key says (cost_table.h). */
static uint64_t work_key(const fe_step_info *points, int n_points, uint64_t seed) {
    fe_hasher h;
    if (fe_hasher_init(&h) != 0) return 0;
    const fe_step_info *s = &points[0];
    fe_hasher_str(&h, fe_op_name(s->op));
    fe_hasher_i64(&h, (int64_t)fe_kernel_design_key(s->kernel));
    for (int i = 0; i < FE_MAX_OPERANDS; i++) {
        fe_hasher_i64(&h, s->operands[i].rank);
        fe_hasher_i64(&h, s->operands[i].dtype);
        for (int d = 0; d < s->operands[i].rank; d++) {
            fe_hasher_i64(&h, s->operands[i].shape[d]);
            fe_hasher_i64(&h, s->operands[i].stride[d]);
        }
    }
    for (int i = 0; i < s->n_params; i++) {
        fe_hasher_str(&h, s->params[i].name);
        fe_hasher_bytes(&h, &s->params[i].value, sizeof s->params[i].value);
    }
    for (int p = 0; p < n_points; p++)
        for (int v = 0; v < FE_MAX_VALUES; v++) fe_hasher_i64(&h, points[p].values[v]);
    fe_hasher_i64(&h, (int64_t)seed);
    return fe_hasher_done(&h);
}

/* The design of the table made from a search's result. */
static fe_status design_from(const fe_tune_result *r, const char *op, fe_table_design *d,
                             fe_error *err) {
    snprintf(d->op, sizeof d->op, "%s", op);
    snprintf(d->shape, sizeof d->shape, "%s", r->shape);
    for (char *p = d->shape; *p; p++)
        if (*p == '\n') *p = ';';
    for (int i = 0; i < r->n_when && d->n_when < FE_TABLE_MAX_WHEN; i++) {
        fe_table_when *w = &d->when[d->n_when++];
        snprintf(w->name, sizeof w->name, "%s", r->when[i].name);
        w->value = r->when[i].value;
        if (r->when[i].choice) snprintf(w->choice, sizeof w->choice, "%s", r->when[i].choice);
    }
    d->options = fe_calloc((size_t)r->n, sizeof *d->options);
    if (!d->options) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    d->reused = true;
    for (int i = 0; i < r->n; i++) {
        const fe_tune_row *row = &r->rows[i];
        fe_table_option *o = &d->options[d->n_options++];
        snprintf(o->setting, sizeof o->setting, "%s", row->setting);
        snprintf(o->reason, sizeof o->reason, "%s", row->reason);
        o->verdict = row->verdict;
        o->cost = row->cost;
        o->bytes = row->bytes;
        if (row->verdict == FE_TUNE_CANDIDATE && !row->cached) d->reused = false;
        if (row->verdict != FE_TUNE_CANDIDATE) continue;
        memcpy(o->layout_format, r->layout_format[i], sizeof o->layout_format);
        memcpy(o->layout_bytes, r->layout_bytes[i], sizeof o->layout_bytes);
        o->layouts_known = true;
        for (int k = 0; k < r->op->n_tunables; k++)
            if (r->op->tunables[k].design) {
                snprintf(o->tunables[o->n_tunables], sizeof o->tunables[0], "%s",
                         r->op->tunables[k].name);
                o->values[o->n_tunables++] = r->tunables[i][k];
            }
    }
    return FE_OK;
}

/* The design of `previous` under key (its unreliable figures too: reused, said so); not one
 * whose candidates' layouts are unknown (a table written before they were kept: searched
 * again, its figures from the cost cache). */
static const fe_table_design *reusable(const fe_cost_table *previous, uint64_t key) {
    for (int i = 0; previous && i < previous->n_designs; i++) {
        const fe_table_design *d = &previous->designs[i];
        if (d->key != key) continue;
        for (int k = 0; k < d->n_options; k++)
            if (d->options[k].verdict == FE_TUNE_CANDIDATE && !d->options[k].layouts_known)
                return NULL;
        return d;
    }
    return NULL;
}

static fe_status copy_design(const fe_table_design *from, fe_table_design *to, fe_error *err) {
    *to = *from;
    to->options = fe_malloc((size_t)from->n_options * sizeof *to->options);
    if (!to->options) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    memcpy(to->options, from->options, (size_t)from->n_options * sizeof *to->options);
    for (int k = 0; k < to->n_options; k++) {
        fe_table_option *o = &to->options[k];
        if (o->verdict == FE_TUNE_CANDIDATE && !o->cost.reliable)
            fe_tune_unreliable_cached(&o->cost, o->reason, sizeof o->reason);
    }
    to->reused = true;
    return FE_OK;
}

static void progress(FILE *f, int done, int total, const char *what) {
    if (!f) return;
    if (isatty(fileno(f))) {
        char bar[31];
        int fill = total ? 30 * done / total : 30;
        for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(f, "\r\033[Ktune [%s] %d/%d designs  %.60s", bar, done, total, what);
        if (done == total) fputc('\n', f);
    } else {
        fprintf(f, "tune: design %d/%d %s\n", done, total, what);
    }
    fflush(f);
}

/* The step's shape for the search, its values at each point. */
static void shape_of(const fe_step_info *pts, int n_points, fe_tune_shape *s) {
    memset(s, 0, sizeof *s);
    const fe_step_info *st = &pts[0];
    s->op = st->op;
    snprintf(s->case_name, sizeof s->case_name, "graph step %s", st->label);
    s->c.name = s->case_name;
    memcpy(s->desc, st->operands, sizeof s->desc);
    memcpy(s->constant, st->weight, sizeof s->constant);
    for (int i = 0; i < st->n_params; i++) s->c.params[i] = st->params[i];
    s->c.n_params = st->n_params;
    for (int i = 0; i < st->n_held; i++) s->c.tunables[i] = st->held[i];
    s->c.n_tunables = st->n_held;
    s->ladder = -1;
    for (int i = 0; i < FE_MAX_VALUES; i++) s->values[i] = -1;
    s->n_points = n_points;
    for (int p = 0; p < n_points; p++) memcpy(s->points[p], pts[p].values, sizeof s->points[p]);
}

static void empty_step(void *ctx, int ith, int nth) {
    (void)ctx, (void)ith, (void)nth;
}

typedef struct empty_run {
    fe_device *dev;
    fe_step steps[BARRIER_STEPS];
    int n;
} empty_run;

static void run_empty(void *ctx) {
    empty_run *e = ctx;
    fe_device_dispatch(e->dev, e->steps, e->n);
}

/* A probe of n empty steps, measured again (up to OVERHEAD_TRIES) until reliable, else the
 * lowest median of the tries kept (unreliable): another process only adds to an empty
 * dispatch, and one figure taken while a worker was descheduled (a scheduler tick,
 * milliseconds) would price every step of a fused call at zero (the dispatch is taken off
 * each step's figure). */
static fe_cost_figure probe_empty(empty_run *e, int n, int width, const fe_tune_options *o) {
    char why[200];
    e->n = n;
    fe_cost_figure best = {0};
    for (int a = 0; a < OVERHEAD_TRIES; a++) {
        fe_cost_figure f = fe_tune_probe(run_empty, e, width, NULL, o, why, sizeof why);
        if (f.reliable) return f;
        if (a == 0 || f.median_ns < best.median_ns) best = f;
    }
    return best;
}

/* dispatch: one empty step at full width; barrier: each more step in the same dispatch */
static void probe_overheads(fe_device *dev, const fe_tune_options *o, fe_cost_table *t) {
    int width = fe_device_get_info(dev)->n_workers;
    empty_run e = {.dev = dev};
    for (int i = 0; i < BARRIER_STEPS; i++) e.steps[i] = (fe_step){.fn = empty_step, .width = width};
    t->dispatch = probe_empty(&e, 1, width, o);
    fe_cost_figure many = probe_empty(&e, BARRIER_STEPS, width, o);
    double per = (many.median_ns - t->dispatch.median_ns) / (BARRIER_STEPS - 1);
    t->barrier = (fe_cost_figure){
        .median_ns = per > 0 ? per : 0,
        .p10_ns = per > 0 ? per * many.p10_ns / (many.median_ns > 0 ? many.median_ns : 1) : 0,
        .p90_ns = per > 0 ? per * many.p90_ns / (many.median_ns > 0 ? many.median_ns : 1) : 0,
        .samples = many.samples, .reliable = many.reliable && t->dispatch.reliable};
}

static fe_status check_request(const fe_tune_graph_request *req, fe_error *err) {
    if (!req || !req->graph || !req->name || !req->calls || req->n_calls < 1 || req->n_calls > 64)
        return fe_error_set(err, FE_E_INVALID, "tune: a graph request needs a graph, a name "
                            "and 1..64 calls");
    if (strlen(req->name) >= FE_TABLE_NAME || strchr(req->name, '/'))
        return fe_error_set(err, FE_E_INVALID, "tune: the table's name \"%s\" must be under "
                            "%d characters without '/'", req->name, FE_TABLE_NAME);
    for (int c = 0; c < req->n_calls; c++) {
        const fe_tune_call *call = &req->calls[c];
        if (call->n_points < 1 || call->n_points > FE_TUNE_MAX_CALL_POINTS ||
            call->n_words < 0 || call->n_words > FE_TUNE_MAX_CALL_WORDS ||
            (call->n_words && !call->words) || !call->name)
            return fe_error_set(err, FE_E_INVALID, "tune: call %d needs a name, 1..%d points "
                                "and 0..%d words a point", c, FE_TUNE_MAX_CALL_POINTS,
                                FE_TUNE_MAX_CALL_WORDS);
    }
    return FE_OK;
}

/* Fills call c of t from the graph; new designs are appended with key only (searched later,
 * index >= first_new). */
static fe_status walk_call(const fe_tune_graph_request *req, int c, uint64_t seed,
                           fe_cost_table *t, fe_step_info *pts, fe_error *err) {
    const fe_tune_call *call = &req->calls[c];
    int v;
    if (fe_graph_version_index(req->graph, call->inputs, call->n_inputs, &v) != FE_OK)
        return fe_error_set(err, FE_E_INVALID, "tune: %s", fe_graph_message(req->graph));
    fe_table_call *tc = &t->calls[c];
    snprintf(tc->name, sizeof tc->name, "%s", call->name);
    tc->version = v;
    tc->each_step = fe_graph_version_each_step(req->graph, v);
    tc->n_steps = fe_graph_version_steps(req->graph, v);
    tc->steps = fe_calloc((size_t)(tc->n_steps ? tc->n_steps : 1), sizeof *tc->steps);
    if (!tc->steps) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    for (int s = 0; s < tc->n_steps; s++) {
        for (int p = 0; p < call->n_points; p++) {
            fe_status st = fe_graph_step_info(req->graph, v, s, call->words + p * call->n_words,
                                              call->n_words, &pts[p], err);
            if (st != FE_OK) return st;
        }
        snprintf(tc->steps[s].label, sizeof tc->steps[s].label, "%s", pts[0].label);
        memcpy(tc->steps[s].weight, pts[0].weight_id, sizeof tc->steps[s].weight);
        uint64_t key = work_key(pts, call->n_points, seed);
        int d = 0;
        while (d < t->n_designs && t->designs[d].key != key) d++;
        if (d == t->n_designs) {
            fe_table_design *nd = fe_cost_table_add_design(t);
            if (!nd) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
            nd->key = key;
            snprintf(nd->op, sizeof nd->op, "%s", fe_op_name(pts[0].op));
            snprintf(nd->shape, sizeof nd->shape, "%s", pts[0].label);
        }
        tc->steps[s].design = d;
    }
    return FE_OK;
}

/* The first step of call c using design d, at every point. */
static fe_status find_step(const fe_tune_graph_request *req, const fe_cost_table *t, int d,
                           fe_step_info *pts, int *n_points, fe_error *err) {
    for (int c = 0; c < t->n_calls; c++)
        for (int s = 0; s < t->calls[c].n_steps; s++) {
            if (t->calls[c].steps[s].design != d) continue;
            const fe_tune_call *call = &req->calls[c];
            int v;
            if (fe_graph_version_index(req->graph, call->inputs, call->n_inputs, &v) != FE_OK)
                return fe_error_set(err, FE_E_INVALID, "tune: %s", fe_graph_message(req->graph));
            for (int p = 0; p < call->n_points; p++) {
                fe_status st = fe_graph_step_info(req->graph, v, s, call->words + p * call->n_words,
                                                  call->n_words, &pts[p], err);
                if (st != FE_OK) return st;
            }
            *n_points = call->n_points;
            return FE_OK;
        }
    return fe_error_set(err, FE_E_INVALID, "tune: design %d has no step", d);
}

/* Searches design d of t under o (its step found in req's calls) and puts what it found in
 * the design's place, keeping its key. r, pts and shape are the caller's scratch. */
static fe_status search_design(fe_device *dev, const fe_tune_graph_request *req,
                               const fe_tune_options *o, fe_cost_cache *cache, fe_cost_table *t,
                               int d, fe_tune_result *r, fe_step_info *pts,
                               fe_tune_shape *shape, fe_error *err) {
    int n_points = 0;
    fe_status st = find_step(req, t, d, pts, &n_points, err);
    if (st != FE_OK) return st;
    shape_of(pts, n_points, shape);
    memset(r, 0, sizeof *r);
    /* a design searched before (the second pass) keeps its settings' gate verdicts: only
     * the settings measured again run */
    const fe_table_design *was = &t->designs[d];
    fe_tune_known known[FE_TUNE_MAX_ROWS];
    int n_known = 0;
    for (int i = 0; i < was->n_options && n_known < FE_TUNE_MAX_ROWS; i++)
        known[n_known++] = (fe_tune_known){was->options[i].setting, was->options[i].verdict,
                                           was->options[i].reason};
    st = fe_tune_shape_search(dev, shape, o, known, n_known, cache, r, err);
    if (st != FE_OK) {
        fe_error inner = *err;
        return fe_error_set(err, st, "tune: step %s: %s", pts[0].label, inner.message);
    }
    fe_table_design *des = &t->designs[d];
    const uint64_t key = des->key;
    fe_free(des->options);
    memset(des, 0, sizeof *des);
    des->key = key;
    return design_from(r, fe_op_name(pts[0].op), des, err);
}

fe_status fe_tune_graph(fe_device *dev, const fe_tune_graph_request *req,
                        const fe_tune_options *opts, const fe_cost_table *previous,
                        fe_cost_table **out, fe_error *err) {
    *out = NULL;
    fe_status st = check_request(req, err);
    if (st != FE_OK) return st;
    fe_tune_options o = opts ? *opts : fe_tune_options_default();
    FILE *bar = o.progress;
    o.progress = NULL; /* the bar, not fe_tune_op's line per setting */
    /* one attempt a setting, the default's own as asked: a setting left unreliable never
     * wins narrowing, and the fastest is measured again below. A cold tune of the Llama 3.2
     * 1B shape (Q8_0, a noisy window) had 259 of its 1009 figures unreliable, each measured
     * three times: about 180 of its 645 s */
    if (o.setting_attempts == 0) o.setting_attempts = 1;
    fe_cost_table *t;
    if ((st = fe_cost_table_create(&t, err)) != FE_OK) return st;
    fe_cost_cache *cache = NULL;
    fe_tune_result *r = fe_calloc(1, sizeof *r);
    fe_step_info *pts = fe_calloc(FE_TUNE_MAX_CALL_POINTS, sizeof *pts);
    fe_tune_shape *shape = fe_calloc(1, sizeof *shape);
    t->calls = fe_calloc((size_t)req->n_calls, sizeof *t->calls);
    if (!r || !pts || !shape || !t->calls) {
        st = fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
        goto done;
    }
    snprintf(t->name, sizeof t->name, "%s", req->name);
    fe_tune_device_id(dev, t->device);
    for (int c = 0; st == FE_OK && c < req->n_calls; c++) {
        st = walk_call(req, c, o.seed, t, pts, err);
        t->n_calls++;
    }
    if (st == FE_OK) {
        snprintf(t->packaging, sizeof t->packaging, "%s", t->calls[0].each_step ? "each_step" : "fused");
        st = fe_cost_cache_open(dev, o.cache_root, &cache, err);
    }
    for (int d = 0; st == FE_OK && d < t->n_designs; d++) {
        fe_table_design *des = &t->designs[d];
        progress(bar, d, t->n_designs, des->shape);
        const fe_table_design *prev = o.remeasure ? NULL : reusable(previous, des->key);
        if (prev) {
            st = copy_design(prev, des, err);
            continue;
        }
        st = search_design(dev, req, &o, cache, t, d, r, pts, shape, err);
    }
    /* Once every design has run, a design measured now has figures measured again, in one
     * attempt each:
     * - its default's, when unreliable: what slowed it (another process, a transient of the
     *   host) has mostly passed by then, and the lower median of the two is kept
     *   (interference only adds time). On the Zen 3 a decode RoPE of 3 heads was once priced
     *   at 159 us a step (its next run: 0.4 us), 4.7 ms of a 16 ms model;
     * - its fastest other setting's, the new figure kept: the fastest of many noisy figures
     *   is biased low (a Llama 1B q8_0 GEMM won at KC = 2048 with 27 ms; alternated runs gave
     *   30-41 ms against the default's 29-31). The next fastest then may lead on a lucky
     *   figure in turn, so up to ROUNDS rounds: the fastest measured again until it is one
     *   already measured again, and narrowing picks on such figures.
     * The fastest is measured in turn with the default (a run of each a round, both new
     * figures kept: fe_tune_options.recheck_in_turn) where that costs little or is needed:
     * - a design whose default runs under PAIR_SHORT_NS (a decode's steps): its probe stops at
     *   the budget, which two in turn share, so the pair costs what one figure alone does;
     * - a design whose default figure is unreliable: its median may be far off either way,
     *   and a setting priced against it wins or loses on that (a cold 1B Q8_0 tune priced the
     *   gate GEMM's default at 814 ms a call against 452 for the same shape's up GEMM, and
     *   narrowing took the difference as the gain of MC = 128).
     * - a design whose fastest setting leads the default by more than 1 - PAIR_LEAD: a lead
     *   that large on a long design is rare and decides the call, and a default can be timed
     *   in a slow stretch of the host and still pass as reliable (a cold 1B Q8_0 tune timed
     *   the down GEMM's default at 55.8 ms, its spread low, and MC = 128 at 29.4; both
     *   measure 29-32 ms alone in a quiet minute, and the tuned prefill measured 0.97x).
     * Elsewhere (a prefill's long GEMMs with small leads, whose probes stop at the minimum
     * sample count, so that a pair takes twice as long) the fastest is measured alone:
     * pairing them all put a cold tune of the 1B BF16 shape past 13 minutes. An unreliable
     * default pairs in the first round only (the pair gives it a new figure). */
    fe_tune_options again = o;
    again.remeasure = false, again.attempts = 1;
    const int ROUNDS = o.second_pass_rounds > 0 ? o.second_pass_rounds : 3;
    const double PAIR_SHORT_NS = 5e6, PAIR_LEAD = 0.9;
    for (int d = 0; st == FE_OK && d < t->n_designs; d++) {
        fe_table_design *des = &t->designs[d];
        if (des->reused || des->n_options == 0) continue;
        /* settings measured again in this pass (a search's rows: n_options <= MAX_ROWS) */
        bool fresh[FE_TUNE_MAX_ROWS] = {false};
        for (int round = 0; st == FE_OK && round < ROUNDS; round++) {
            const fe_table_option *def = &des->options[0];
            int fastest = -1;
            for (int i = 1; def->verdict == FE_TUNE_CANDIDATE && i < des->n_options; i++) {
                const fe_table_option *x = &des->options[i];
                double bar_ns = fastest < 0 ? def->cost.median_ns
                                            : des->options[fastest].cost.median_ns;
                if (x->verdict == FE_TUNE_CANDIDATE && x->cost.median_ns < bar_ns) fastest = i;
            }
            /* the fastest already has a figure of its own: it won on that one */
            if (fastest >= 0 && fresh[fastest]) fastest = -1;
            const bool short_def = def->cost.median_ns < PAIR_SHORT_NS;
            const bool big_lead =
                fastest >= 0 && des->options[fastest].cost.median_ns < PAIR_LEAD * def->cost.median_ns;
            const bool in_turn = fastest >= 0 && (short_def || big_lead ||
                                                  (round == 0 && !def->cost.reliable));
            /* (a pair measures the default again too) */
            again.recheck_unreliable = round == 0 && !in_turn &&
                                       def->verdict == FE_TUNE_CANDIDATE && !def->cost.reliable;
            again.recheck_setting = fastest >= 0 ? des->options[fastest].setting : NULL;
            again.recheck_in_turn = in_turn;
            if (!again.recheck_unreliable && !again.recheck_setting) break;
            if (fastest >= 0) fresh[fastest] = true;
            progress(bar, d, t->n_designs, "measuring the default and the fastest again");
            const uint64_t t0 = fe_time_ns();
            st = search_design(dev, req, &again, cache, t, d, r, pts, shape, err);
            t->again_s += (double)(fe_time_ns() - t0) * 1e-9;
            t->again += fastest >= 0;
            t->again_in_turn += in_turn;
            des->reused = false; /* measured in this run */
        }
        /* a setting still faster than the default that the rounds did not reach won on its
         * first figure alone, the fastest of many noisy ones: narrowing must not pick it
         * (SmolLM2's 512 x 576 x 576 GEMM at MC = 384, b_panels = 0: 748 against 1208 us, in
         * a table whose three rounds had paired three other settings) */
        const fe_table_option *def = &des->options[0];
        for (int i = 1; st == FE_OK && !des->reused && i < des->n_options; i++) {
            fe_table_option *x = &des->options[i];
            if (fresh[i] || x->verdict != FE_TUNE_CANDIDATE || !x->cost.reliable ||
                !(x->cost.median_ns < def->cost.median_ns))
                continue;
            x->cost.reliable = false;
            snprintf(x->reason, sizeof x->reason, "faster than the default only as first "
                     "measured: not measured again (the second pass's %d rounds ran out)", ROUNDS);
        }
    }
    /* a warm run takes the last table's overheads as they are, as it takes its designs: the
     * same figures give the same decisions, so the calls' figures come from the cache */
    if (st == FE_OK && previous && !o.remeasure && previous->dispatch.median_ns > 0) {
        progress(bar, t->n_designs, t->n_designs, "dispatch and barrier from the last table");
        t->dispatch = previous->dispatch;
        t->barrier = previous->barrier;
    } else if (st == FE_OK) {
        progress(bar, t->n_designs, t->n_designs, "dispatch and barrier probes");
        probe_overheads(dev, &o, t);
    }
done:
    fe_cost_cache_close(cache);
    fe_free(r);
    fe_free(pts);
    fe_free(shape);
    if (st != FE_OK) {
        fe_cost_table_destroy(t);
        return st;
    }
    *out = t;
    return FE_OK;
}

/* ---- the calls as they run ---- */

typedef struct call_run {
    fe_graph *g;
    const fe_tune_call *call;
    int point;
    fe_status st;
    fe_tensor outs[MAX_OUTPUTS]; /* the last call's outputs */
    int n_outs;
} call_run;

static void run_call(void *ctx) {
    call_run *c = ctx;
    fe_status st = fe_graph_call(c->g, c->call->inputs, c->call->n_inputs,
                                 c->call->words + c->point * c->call->n_words, c->call->n_words,
                                 c->outs, MAX_OUTPUTS, &c->n_outs);
    if (c->st == FE_OK) c->st = st;
}

/* The error of a call that failed, naming it. */
static fe_status call_failed(const call_run *run, fe_error *err) {
    return fe_error_set(err, run->st, "tune: calling %s: %s", run->call->name,
                        fe_graph_message(run->g));
}

/* The signature of call c as the graph now runs it: every step's work key at every point
 * (design, operands, params, values), the packaging and the call's words; a different fold,
 * setting or position gives another. */
static fe_status call_signature(const fe_tune_graph_request *req, int c, uint64_t seed,
                                fe_step_info *pts, uint64_t *out, fe_error *err) {
    const fe_tune_call *call = &req->calls[c];
    int v;
    if (fe_graph_version_index(req->graph, call->inputs, call->n_inputs, &v) != FE_OK)
        return fe_error_set(err, FE_E_INVALID, "tune: %s", fe_graph_message(req->graph));
    fe_hasher h;
    if (fe_hasher_init(&h) != 0) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    fe_hasher_str(&h, "whole call");
    fe_hasher_str(&h, call->name);
    fe_hasher_i64(&h, fe_graph_version_each_step(req->graph, v));
    int n = fe_graph_version_steps(req->graph, v);
    fe_hasher_i64(&h, n);
    for (int s = 0; s < n; s++) {
        for (int p = 0; p < call->n_points; p++) {
            fe_status st = fe_graph_step_info(req->graph, v, s, call->words + p * call->n_words,
                                              call->n_words, &pts[p], err);
            if (st != FE_OK) {
                fe_hasher_done(&h);
                return st;
            }
        }
        fe_hasher_i64(&h, (int64_t)work_key(pts, call->n_points, seed));
    }
    for (int w = 0; w < call->n_points * call->n_words; w++) {
        fe_hasher_str(&h, call->words[w].name);
        fe_hasher_i64(&h, call->words[w].value);
    }
    *out = fe_hasher_done(&h);
    return FE_OK;
}

/* The mean over call c's points of each graph's median, graphs[0..n) measured in turn point
 * by point, up to `rounds` times; into sums[]. One round: the probes' figures as they are.
 * More: each probe takes one sample at least (warm-up only in the first round, and none
 * there when `warm`: the calls just ran at every point, long enough to have brought in what
 * the next run finds), and a graph's figure is the median of its rounds' means, p10..p90
 * their lowest and highest, reliable when every probe was and the rounds lie within
 * o->max_spread of it. Two rounds that agree within ROUNDS_AGREE for every graph end it: a
 * third moves the median by half that at most (an AVX2 prefill chunk of the Llama 3.2 1B
 * shape is 4.5-7 s a run, and its three rounds of two graphs at two starts were a sixth of
 * a cold tune). */
#define ROUNDS_AGREE 0.02
static fe_status measure_rounds(fe_device *dev, const fe_tune_graph_request *const *reqs, int n,
                                int c, int rounds, bool warm, const fe_tune_options *o,
                                fe_cost_figure *sums, fe_error *err) {
    enum { MAX_ROUNDS = 5 };
    const fe_tune_call *call = &reqs[0]->calls[c];
    int width = fe_device_get_info(dev)->n_workers;
    double mean[2][MAX_ROUNDS] = {{0}};
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    for (int g = 0; g < n; g++) sums[g] = (fe_cost_figure){.reliable = true};
    int ran = 0;
    for (int r = 0; r < rounds; r++) {
        if (r == 2) { /* two rounds that agree say enough */
            bool agree = true;
            for (int g = 0; g < n; g++)
                agree = agree && fabs(mean[g][0] - mean[g][1]) <=
                                     ROUNDS_AGREE * fmin(mean[g][0], mean[g][1]);
            if (agree) break;
        }
        ran++;
        for (int p = 0; p < call->n_points; p++) {
            if (o->progress) {
                fprintf(o->progress, "tune: measuring the %s (point %d/%d:", call->name, p + 1,
                        call->n_points);
                for (int w = 0; w < call->n_words; w++)
                    fprintf(o->progress, " %s=%lld", call->words[p * call->n_words + w].name,
                            (long long)call->words[p * call->n_words + w].value);
                if (n > 1) fprintf(o->progress, "; round %d/%d, each graph in turn", r + 1, rounds);
                fprintf(o->progress, ")\n");
            }
            fe_tune_options po = *o;
            if (rounds > 1) {
                po.min_samples = 1;
                po.warmup = r == 0 ? o->warmup : 0;
            }
            if (warm) po.warmup = 0;
            for (int g = 0; g < n; g++) {
                call_run run = {reqs[g]->graph, &reqs[g]->calls[c], p, FE_OK};
                char why[200];
                fe_cost_figure f = fe_tune_probe(run_call, &run, width, dev, &po, why, sizeof why);
                if (run.st != FE_OK) return call_failed(&run, err);
                const double share = 1.0 / call->n_points;
                mean[g][r] += f.median_ns * share;
                sums[g].p10_ns += f.p10_ns * share;
                sums[g].p90_ns += f.p90_ns * share;
                sums[g].samples += f.samples;
                sums[g].cpus += f.cpus * share;
                sums[g].read_gbps += f.read_gbps * share;
                sums[g].reliable = sums[g].reliable && f.reliable;
            }
        }
    }
    rounds = ran;
    for (int g = 0; g < n; g++) { /* the rounds' mean of the per-round sums */
        sums[g].p10_ns /= rounds;
        sums[g].p90_ns /= rounds;
        sums[g].cpus /= rounds;
        sums[g].read_gbps /= rounds;
    }
    for (int g = 0; g < n; g++) { /* the median of the rounds' means (insertion sort) */
        for (int i = 1; i < rounds; i++)
            for (int j = i; j > 0 && mean[g][j] < mean[g][j - 1]; j--) {
                double x = mean[g][j];
                mean[g][j] = mean[g][j - 1], mean[g][j - 1] = x;
            }
        sums[g].median_ns = rounds % 2 ? mean[g][rounds / 2]
                                       : (mean[g][rounds / 2 - 1] + mean[g][rounds / 2]) / 2;
        if (rounds == 1) continue;
        sums[g].p10_ns = mean[g][0];
        sums[g].p90_ns = mean[g][rounds - 1];
        sums[g].reliable = sums[g].reliable &&
                           mean[g][rounds - 1] - mean[g][0] <= o->max_spread * sums[g].median_ns;
    }
    return FE_OK;
}

/* Every call of each graph once at each of its points, before anything is timed: the
 * states (a KV cache) then hold what the calls write, as in a model's use. A decode step
 * timed first read a cache no call had written yet: untouched pages, all the kernel's one
 * zero page, so its attention ran from L1 (SmolLM2's step measured 4.1 ms where `ferrum
 * generate` takes 6-9). shortest_ns[c]: call c's shortest run here (a call that ran
 * FE_TUNE_WARM_NS at every point needs no warm-up before its first round). */
static fe_status write_states(const fe_tune_graph_request *const *reqs, int n,
                              const fe_tune_options *o, double *shortest_ns, fe_error *err) {
    if (o->progress) fprintf(o->progress, "tune: every call once at each point (the states "
                             "written as the calls write them)\n");
    for (int g = 0; g < n; g++)
        for (int c = 0; c < reqs[g]->n_calls; c++)
            for (int p = 0; p < reqs[g]->calls[c].n_points; p++) {
                call_run run = {reqs[g]->graph, &reqs[g]->calls[c], p, FE_OK};
                const uint64_t t0 = fe_time_ns();
                run_call(&run);
                const double ns = (double)(fe_time_ns() - t0);
                if ((g == 0 && p == 0) || ns < shortest_ns[c]) shortest_ns[c] = ns;
                if (run.st != FE_OK) return call_failed(&run, err);
            }
    return FE_OK;
}

fe_status fe_tune_calls_same_outputs(const fe_tune_graph_request *a, const fe_tune_graph_request *b,
                                     bool *same, char *where, size_t where_n, fe_error *err) {
    *same = true;
    if (where_n) where[0] = 0;
    fe_status st = check_request(a, err);
    if (st == FE_OK) st = check_request(b, err);
    if (st != FE_OK) return st;
    if (a->n_calls != b->n_calls)
        return fe_error_set(err, FE_E_INVALID, "tune: two graphs are compared at the same "
                            "calls: give both requests the same calls");
    /* each call's first point (every point runs the same kernels), until one differs: the
     * first difference is the answer (a prefill chunk is seconds a run) */
    for (int c = 0; c < a->n_calls && *same; c++) {
        call_run run[2] = {{a->graph, &a->calls[c], 0, FE_OK}, {b->graph, &b->calls[c], 0, FE_OK}};
        for (int k = 0; k < 2; k++) {
            run_call(&run[k]);
            if (run[k].st != FE_OK) return call_failed(&run[k], err);
        }
        const fe_tensor *oa = run[0].outs, *ob = run[1].outs;
        bool eq = run[0].n_outs == run[1].n_outs;
        for (int i = 0; eq && i < run[0].n_outs; i++) { /* whole outputs: numel elements */
            const int64_t numel = fe_tensor_numel(&oa[i]);
            eq = oa[i].dtype == ob[i].dtype && numel == fe_tensor_numel(&ob[i]) &&
                 memcmp(oa[i].data, ob[i].data, fe_dtype_bytes(oa[i].dtype, numel)) == 0;
        }
        if (!eq) {
            *same = false;
            if (where_n) snprintf(where, where_n, "the %s at point 1", a->calls[c].name);
        }
    }
    return FE_OK;
}

/* fe_tune_measure_calls (n = 1) and fe_tune_measure_calls_paired (n = 2): each call's
 * figures through the cost cache, keyed by the graphs' signatures (a pair's by both). */
static fe_status measure_calls(fe_device *dev, const fe_tune_graph_request *const *reqs, int n,
                               const fe_tune_options *opts, fe_cost_table *t,
                               fe_cost_figure *const *measured, bool *cached, fe_error *err) {
    fe_status st = FE_OK;
    for (int g = 0; g < n && st == FE_OK; g++) st = check_request(reqs[g], err);
    if (st != FE_OK) return st;
    if (n == 2 && reqs[1]->n_calls != reqs[0]->n_calls)
        return fe_error_set(err, FE_E_INVALID, "tune: a pair of graphs is measured at the same "
                            "calls: give both requests the same calls");
    fe_tune_options o = opts ? *opts : fe_tune_options_default();
    fe_cost_cache *cache = NULL;
    fe_step_info *pts = fe_calloc(FE_TUNE_MAX_CALL_POINTS, sizeof *pts);
    if (!pts) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    if ((st = fe_cost_cache_open(dev, o.cache_root, &cache, err)) != FE_OK) {
        fe_free(pts);
        return st;
    }
    bool states_written = false;
    double shortest_ns[64] = {0}; /* per call: its shortest run writing the states */
    for (int c = 0; st == FE_OK && c < reqs[0]->n_calls; c++) {
        const fe_tune_call *call = &reqs[0]->calls[c];
        uint64_t sig[2] = {0, 0};
        for (int g = 0; g < n && st == FE_OK; g++)
            st = call_signature(reqs[g], c, o.seed, pts, &sig[g], err);
        if (st != FE_OK) break;
        fe_cost_key key[2];
        fe_cost_figure sum[2];
        bool hit = !o.remeasure;
        for (int g = 0; g < n; g++) {
            /* alone: the call's signature; in a pair: both, and which of the two */
            key[g] = (fe_cost_key){.n_values = 1, .values = {call->n_points},
                                   .input_hash = n == 1 ? 0xca11 : 0xca12 + (uint64_t)g,
                                   .design = n == 1 ? sig[0] : sig[g] ^ (sig[1 - g] * 31 + 7)};
            bool h = false;
            fe_error cerr;
            hit = hit && fe_cost_cache_get(cache, &key[g], &sum[g], &h, &cerr) == FE_OK && h;
        }
        if (hit) {
            if (o.progress) fprintf(o.progress, "tune: the %s from the cost cache\n", call->name);
        } else {
            if (!states_written) {
                st = write_states(reqs, n, &o, shortest_ns, err);
                states_written = true;
            }
            if (st == FE_OK)
                st = measure_rounds(dev, reqs, n, c, n == 1 ? 1 : PAIRED_ROUNDS,
                                    shortest_ns[c] >= FE_TUNE_WARM_NS, &o, sum, err);
            if (st != FE_OK) break;
            for (int g = 0; g < n; g++) {
                char label[96];
                fe_error cerr;
                snprintf(label, sizeof label, "whole call: %s%s", call->name,
                         n == 1 ? "" : g == 0 ? " (paired, first)" : " (paired, second)");
                if (fe_cost_cache_put(cache, &key[g], &sum[g], label, &cerr) != FE_OK && o.progress)
                    fprintf(o.progress, "tune: %s\n", cerr.message);
            }
        }
        if (cached) cached[c] = hit;
        for (int g = 0; g < n; g++) measured[g][c] = sum[g];
        if (t && c < t->n_calls) {
            t->calls[c].measured = sum[0];
            t->calls[c].has_measured = true;
        }
    }
    fe_cost_cache_close(cache);
    fe_free(pts);
    return st;
}

fe_status fe_tune_measure_calls(fe_device *dev, const fe_tune_graph_request *req,
                                const fe_tune_options *opts, fe_cost_table *t,
                                fe_cost_figure *measured, bool *cached, fe_error *err) {
    const fe_tune_graph_request *reqs[1] = {req};
    fe_cost_figure *out[1] = {measured};
    return measure_calls(dev, reqs, 1, opts, t, out, cached, err);
}

fe_status fe_tune_measure_calls_paired(fe_device *dev, const fe_tune_graph_request *a,
                                       const fe_tune_graph_request *b,
                                       const fe_tune_options *opts, fe_cost_table *t,
                                       fe_cost_figure *measured_a, fe_cost_figure *measured_b,
                                       bool *cached, fe_error *err) {
    const fe_tune_graph_request *reqs[2] = {a, b};
    fe_cost_figure *out[2] = {measured_a, measured_b};
    return measure_calls(dev, reqs, 2, opts, t, out, cached, err);
}
