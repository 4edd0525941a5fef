/* graph/run.c: calling a graph. Finds (or compiles once) the version for the inputs'
 * signature, writes the per-call words, checks every per-call offset and bound against its
 * view, binds every step's operands and values (refusing before any work), dispatches
 * (fused: once; each_step: once a step), and feeds carried values to the next call. The
 * reference path binds the same steps to host copies of the states and runs each
 * operator's reference instead. Nothing here allocates except compiling a new version and
 * the reference's first use of its states. */
#include <string.h>

#include "core/alloc.h"
#include "device/counters.h"
#include "graph/internal.h"

static int64_t word(const fe_graph *g, int var, bool reference) {
    return reference ? g->vars[var].ref_word : g->vars[var].word;
}

static int64_t fe_val_eval(const fe_graph *g, fe_val v, bool reference) {
    int64_t x = v.add;
    if (v.var >= 0) x += v.mul * word(g, v.var, reference);
    if (v.var2 >= 0) x += v.mul2 * word(g, v.var2, reference);
    return x;
}

static fe_status set_words(fe_graph *g, const fe_word *words, int n, bool reference) {
    for (int w = 0; w < n; w++) {
        int i = -1;
        for (int k = 0; words[w].name && k < g->n_vars && i < 0; k++)
            if (strcmp(g->vars[k].name, words[w].name) == 0) i = k;
        if (i < 0) {
            char list[256] = "";
            size_t len = 0;
            for (int k = 0; k < g->n_vars && len < sizeof list; k++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "",
                                        g->vars[k].name);
            return fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\" has no per-call value \"%s\"; "
                                "it has: %s", g->name, words[w].name ? words[w].name : "(null)",
                                g->n_vars ? list : "none");
        }
        if (reference) g->vars[i].ref_word = words[w].value;
        else g->vars[i].word = words[w].value;
    }
    return FE_OK;
}

static void *base_of(fe_graph *g, const fe_named_tensor *in, const fe_view *v, bool reference) {
    switch (v->kind) {
    case BUF_INPUT: return in[v->buf].t.data;
    case BUF_WEIGHT: return g->weights[v->buf].t.data;
    case BUF_STATE: return reference ? g->states[v->buf].ref_mem : g->states[v->buf].mem;
    case BUF_SCRATCH: return reference ? g->ref_scratch : g->scratch;
    }
    return NULL;
}

static fe_tensor tensor_of(fe_graph *g, const fe_version *ver, const fe_named_tensor *in,
                           const fe_view *v, bool reference) {
    int64_t off = v->offset;
    for (int k = 0; k < v->n_dyn; k++) off += fe_val_eval(g, v->dyn[k], reference);
    char *base = base_of(g, in, v, reference);
    if (v->kind == BUF_SCRATCH) base += ver->tr.scratch[v->buf].offset;
    fe_tensor t = {.data = base ? base + fe_dtype_bytes(v->dtype, off) : NULL,
                   .dtype = v->dtype, .rank = v->rank};
    memcpy(t.shape, v->shape, sizeof t.shape);
    memcpy(t.stride, v->stride, sizeof t.stride);
    return t;
}

/* Every per-call offset and bound inside its view, before any work. */
static fe_status check_words(fe_graph *g, const fe_version *v, bool reference) {
    for (int c = 0; c < v->tr.n_checks; c++) {
        const fe_check *k = &v->tr.checks[c];
        int64_t x = fe_val_eval(g, k->v, reference), x2 = fe_val_eval(g, k->v2, reference);
        bool ok = x >= 0 && x2 >= 0 && x + x2 + k->len <= k->dim;
        if (!ok)
            return fe_error_set(&g->err, FE_E_BOUNDS, "graph \"%s\": %s is %lld, past its view "
                                "(it must keep within 0..%lld); nothing ran", g->name, k->what,
                                (long long)(x + x2 + k->len), (long long)k->dim);
    }
    return FE_OK;
}

static fe_status bind_step(fe_graph *g, fe_version *v, int s, const fe_named_tensor *in,
                           bool reference, fe_args *out, bool *empty) {
    const fe_tstep *st = &v->tr.steps[s];
    const fe_op *op = st->op;
    fe_tensor ops[FE_MAX_OPERANDS] = {0};
    const fe_view *views[FE_MAX_OPERANDS] = {0};
    for (int i = 0; i < op->n_operands; i++) {
        if (!st->operand[i]) continue;
        views[i] = fe_trace_view(&v->tr, (fe_h){st->operand[i]});
        ops[i] = tensor_of(g, v, in, views[i], reference);
    }
    int64_t vals[FE_MAX_VALUES], words[FE_MAX_VARS];
    for (int i = 0; i < g->n_vars; i++) words[i] = word(g, i, reference);
    fe_step_values(v, s, words, vals, empty, NULL);
    fe_status rc = fe_kernel_bind(v->kernels[s], ops, op->n_operands, vals, op->n_values, out);
    if (rc != FE_OK)
        return fe_error_set(&g->err, rc, "graph \"%s\", step %s: %s", g->name, st->label,
                            fe_kernel_message(v->kernels[s]));
    for (int i = 0; !reference && i < op->n_operands; i++)
        out->layout[i] = v->layouts[s * FE_MAX_OPERANDS + i];
    int wb = v->ws_buf[s];
    out->ws = wb >= 0 ? (char *)g->scratch + v->tr.scratch[wb].offset : NULL;
    out->ws_bytes = wb >= 0 ? v->tr.scratch[wb].bytes : 0;
    return FE_OK;
}

static void outputs_of(fe_graph *g, const fe_version *v, const fe_named_tensor *in,
                       bool reference, fe_tensor *outputs, int max, int *n) {
    for (int o = 0; o < v->tr.n_outputs && o < max; o++)
        outputs[o] = tensor_of(g, v, in, fe_trace_view(&v->tr, (fe_h){v->tr.outputs[o]}), reference);
    if (n) *n = v->tr.n_outputs;
}

static void advance_carried(fe_graph *g, const fe_version *v, bool reference) {
    int64_t next[FE_MAX_CARRIES];
    for (int c = 0; c < v->tr.n_carries; c++)
        if (v->tr.carries[c].var >= 0) next[c] = fe_val_eval(g, v->tr.carries[c].next, reference);
    for (int c = 0; c < v->tr.n_carries; c++) {
        int var = v->tr.carries[c].var;
        if (var < 0) continue;
        if (reference) g->vars[var].ref_word = next[c];
        else g->vars[var].word = next[c];
    }
}

/* One call of version v with words already written. */
static fe_status call_version(fe_graph *g, fe_version *v, const fe_named_tensor *in) {
    fe_status rc = check_words(g, v, false);
    for (int s = 0; rc == FE_OK && s < v->n_steps; s++)
        rc = bind_step(g, v, s, in, false, &v->args[s], &v->empty[s]);
    if (rc != FE_OK) return rc;
    uint64_t before = fe_device_dispatch_count(g->dev);
    uint64_t *clock = g->profiling ? v->step_ns : NULL; /* NULL also when out of memory */
    if (!v->each_step) {
        fe_device_dispatch_timed(g->dev, v->runlist, v->n_steps, clock);
    } else {
        for (int s = 0; s < v->n_steps; s++)
            if (!(v->empty[s] && v->tr.dispatch_time))
                fe_device_dispatch_timed(g->dev, &v->runlist[s], 1, clock ? clock + s : NULL);
    }
    if (clock) v->profiled_calls++;
    g->stats.last_dispatches = fe_device_dispatch_count(g->dev) - before;
    g->stats.last_steps = v->n_steps;
    g->stats.calls++;
    advance_carried(g, v, false);
    return FE_OK;
}

static fe_status prepare(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                         const fe_word *words, int n_words, bool reference, fe_version **v) {
    fe_error_clear(&g->err);
    if (n_inputs < 0 || (n_inputs && !inputs) || n_words < 0 || (n_words && !words))
        return fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\": bad input or word counts", g->name);
    fe_status rc = fe_version_find(g, inputs, n_inputs, v);
    if (rc != FE_OK) return rc;
    for (int i = 0; i < n_inputs; i++)
        if (!inputs[i].t.data)
            return fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\": input \"%s\" has no data",
                                g->name, inputs[i].name);
    if ((*v)->unread_weight >= 0)
        return fe_error_set(&g->err, FE_E_STATE, "graph \"%s\": weight \"%s\" has no data "
                            "(unread weights: the graph traces, compiles and draws but "
                            "cannot be called); give the weights' data to call it",
                            g->name, g->weights[(*v)->unread_weight].path);
    return set_words(g, words, n_words, reference);
}

fe_status fe_graph_call(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                        const fe_word *words, int n_words, fe_tensor *outputs, int max_outputs,
                        int *n_outputs) {
    fe_version *v;
    fe_status rc = prepare(g, inputs, n_inputs, words, n_words, false, &v);
    if (rc == FE_OK) rc = call_version(g, v, inputs);
    if (rc == FE_OK) outputs_of(g, v, inputs, false, outputs, max_outputs, n_outputs);
    return rc;
}

fe_status fe_graph_loop(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                        const fe_word *words, int n_words, int n, fe_loop_fn on_step, void *user) {
    fe_version *v;
    fe_status rc = prepare(g, inputs, n_inputs, words, n_words, false, &v);
    fe_tensor outs[FE_MAX_OUTPUTS];
    for (int i = 0; rc == FE_OK && i < n; i++) {
        rc = call_version(g, v, inputs);
        if (rc == FE_OK && on_step) {
            int n_out = 0;
            outputs_of(g, v, inputs, false, outs, FE_MAX_OUTPUTS, &n_out);
            if (on_step(user, i, outs, n_out < FE_MAX_OUTPUTS ? n_out : FE_MAX_OUTPUTS)) break;
        }
    }
    return rc;
}

fe_status fe_graph_word(const fe_graph *g, const char *name, int64_t *value) {
    for (int i = 0; i < g->n_vars; i++)
        if (strcmp(g->vars[i].name, name) == 0) {
            *value = g->vars[i].word;
            return FE_OK;
        }
    return FE_E_NOTFOUND;
}

/* The reference's own states (zeroed like the real ones) and scratch, made on first use. */
static fe_status reference_memory(fe_graph *g) {
    for (int i = 0; i < g->n_states; i++) {
        fe_state_rec *s = &g->states[i];
        if (s->ref_mem) continue;
        s->ref_mem = fe_aligned_alloc(64, s->bytes);
        if (!s->ref_mem) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory for the reference");
        memset(s->ref_mem, 0, s->bytes);
    }
    if (g->ref_scratch_bytes < g->scratch_bytes) {
        void *p = fe_aligned_alloc(64, g->scratch_bytes);
        if (!p) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory for the reference");
        fe_free(g->ref_scratch);
        g->ref_scratch = p;
        g->ref_scratch_bytes = g->scratch_bytes;
    }
    return FE_OK;
}

fe_status fe_graph_reference(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                             const fe_word *words, int n_words, fe_tensor *outputs,
                             int max_outputs, int *n_outputs) {
    fe_version *v;
    fe_status rc = prepare(g, inputs, n_inputs, words, n_words, true, &v);
    if (rc == FE_OK) rc = reference_memory(g);
    if (rc == FE_OK) rc = check_words(g, v, true);
    for (int s = 0; rc == FE_OK && s < v->n_steps; s++) {
        fe_args a;
        bool empty;
        rc = bind_step(g, v, s, inputs, true, &a, &empty);
        if (rc == FE_OK) v->tr.steps[s].op->reference(&a, fe_kernel_design(v->kernels[s]));
    }
    if (rc != FE_OK) return rc;
    advance_carried(g, v, true);
    outputs_of(g, v, inputs, true, outputs, max_outputs, n_outputs);
    return FE_OK;
}
