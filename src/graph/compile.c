/* graph/compile.c: compiling a graph's version for one input signature, once: trace the
 * body -> fold (fold.c, as the options say) -> verify and resolve each step into a kernel
 * (fe_kernel_create: infer, precedence, ISA, design key) -> lay out the weights the kernels
 * read repacked (layouts.c) -> plan the scratch arena from
 * value lifetimes, largest first -> lower into a runlist of preallocated steps -> decide the packaging. A graph keeps every version
 * it compiled; fe_version_find returns the one for a signature. `verbose` prints the
 * packaging and how each per-call value lowers. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "graph/internal.h"

void fe_version_destroy(fe_version *v) {
    if (!v) return;
    for (int i = 0; v->kernels && i < v->n_steps; i++) fe_kernel_destroy(v->kernels[i]);
    fe_free(v->kernels);
    fe_free(v->args);
    fe_free(v->ctx);
    fe_free(v->runlist);
    fe_free(v->empty);
    fe_free(v->ws_buf);
    fe_free(v->layouts);
    fe_free(v->step_ns);
    fe_trace_deinit(&v->tr);
    fe_free(v);
}

/* Makes each step's kernel; refusals name the step. */
static fe_status make_kernels(fe_graph *g, fe_version *v) {
    fe_trace *t = &v->tr;
    for (int s = 0; s < t->n_steps; s++) {
        const fe_tstep *st = &t->steps[s];
        const fe_op *op = st->op;
        fe_tensor ops[FE_MAX_OPERANDS] = {0};
        for (int i = 0; i < op->n_operands; i++) {
            if (!st->operand[i]) continue;
            const fe_view *w = fe_trace_view(t, (fe_h){st->operand[i]});
            ops[i] = (fe_tensor){.dtype = w->dtype, .rank = w->rank};
            memcpy(ops[i].shape, w->shape, sizeof w->shape);
            memcpy(ops[i].stride, w->stride, sizeof w->stride);
            if (!op->operands[i].strided && !fe_view_is_contiguous(w))
                return fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\", step %s: operand %s is "
                                    "a strided view but %s needs it contiguous; copy it first "
                                    "(fe_apply \"Copy\")", g->name, st->label,
                                    op->operands[i].name, op->name);
        }
        /* names point into the step itself, stable now that tracing is over */
        fe_setting params[FE_MAX_PARAMS];
        for (int p = 0; p < st->n_params; p++)
            params[p] = (fe_setting){st->param_names[p], st->params[p].value};
        fe_op_request req = {.op = op->name, .operands = ops, .n_operands = op->n_operands,
                             .params = params, .n_params = st->n_params,
                             .profile = g->opts.profile, .shared_workspace = true};
        fe_error e = {0};
        fe_status rc = fe_kernel_create(g->dev, &req, &v->kernels[s], &e);
        if (rc != FE_OK)
            return fe_error_set(&g->err, rc, "graph \"%s\", step %s: %s", g->name, st->label,
                                e.message);
        /* the op's workspace is one more scratch buffer, alive during this step only, so
         * the arena planner lays it over buffers that are dead by then */
        size_t ws = fe_kernel_workspace_bytes(v->kernels[s]);
        v->ws_buf[s] = -1;
        if (ws) {
            int b = fe_trace_new_scratch(t, ws);
            if (b < 0) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory planning a workspace");
            t->scratch[b].first = t->scratch[b].last = s;
            v->ws_buf[s] = b;
        }
    }
    return FE_OK;
}

static fe_trace *sort_ctx;
static int by_size_desc(const void *a, const void *b) {
    size_t x = sort_ctx->scratch[*(const int *)a].bytes, y = sort_ctx->scratch[*(const int *)b].bytes;
    return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

/* Scratch offsets from lifetimes, largest first: each buffer goes at the lowest 64-byte
 * aligned offset that overlaps no placed buffer alive at the same time. */
static fe_status plan_memory(fe_graph *g, fe_version *v) {
    fe_trace *t = &v->tr;
    int n = t->n_scratch;
    int *order = fe_malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory planning the arena");
    for (int i = 0; i < n; i++) order[i] = i;
    sort_ctx = t;
    qsort(order, (size_t)n, sizeof *order, by_size_desc);
    size_t top = 0;
    for (int k = 0; k < n; k++) {
        fe_scratch_buf *b = &t->scratch[order[k]];
        size_t size = (b->bytes + 63) & ~(size_t)63, off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int j = 0; j < k; j++) {
                const fe_scratch_buf *p = &t->scratch[order[j]];
                bool alive = p->first <= b->last && b->first <= p->last;
                size_t pend = p->offset + ((p->bytes + 63) & ~(size_t)63);
                if (alive && off < pend && p->offset < off + size) {
                    off = pend;
                    moved = true;
                }
            }
        }
        b->offset = off;
        if (off + size > top) top = off + size;
    }
    fe_free(order);
    v->scratch_bytes = top;
    if (top > g->scratch_bytes) {
        void *p = fe_aligned_alloc(64, top);
        if (!p) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory for a %zu-byte arena", top);
        fe_free(g->scratch);
        g->scratch = p;
        g->scratch_bytes = top;
    }
    return FE_OK;
}

static void run_ctx_step(void *ctx, int ith, int nth) {
    const fe_step_ctx *c = ctx;
    c->fn(c->args, c->design, ith, nth);
}

static fe_status lower(fe_graph *g, fe_version *v) {
    int n = v->n_steps;
    v->args = fe_calloc((size_t)(n ? n : 1), sizeof *v->args);
    v->ctx = fe_calloc((size_t)(n ? n : 1), sizeof *v->ctx);
    v->runlist = fe_calloc((size_t)(n ? n : 1), sizeof *v->runlist);
    v->empty = fe_calloc((size_t)(n ? n : 1), sizeof *v->empty);
    if (!v->args || !v->ctx || !v->runlist || !v->empty)
        return fe_error_set(&g->err, FE_E_NOMEM, "out of memory lowering the runlist");
    for (int s = 0; s < n; s++) {
        v->ctx[s] = (fe_step_ctx){fe_kernel_function(v->kernels[s]), &v->args[s],
                                  fe_kernel_design(v->kernels[s])};
        v->runlist[s] = (fe_step){run_ctx_step, &v->ctx[s], fe_kernel_width(v->kernels[s])};
    }
    return FE_OK;
}

/* verbose: the packaging, and for each per-call value the steps that read it and how */
static void describe(const fe_graph *g, const fe_version *v, FILE *f) {
    const fe_trace *t = &v->tr;
    fprintf(f, "graph \"%s\": version %d (", g->name, g->n_versions);
    for (int i = 0; i < v->n_sig; i++) {
        fprintf(f, "%s%s %s[", i ? ", " : "", v->sig[i].name, fe_dtype_info(v->sig[i].t.dtype)->name);
        for (int d = 0; d < v->sig[i].t.rank; d++)
            fprintf(f, "%s%lld", d ? "," : "", (long long)v->sig[i].t.shape[d]);
        fprintf(f, "]");
    }
    fprintf(f, "): %d steps, scratch %zu bytes\n", v->n_steps, v->scratch_bytes);
    int laid = 0;
    for (int i = 0; i < v->n_steps * FE_MAX_OPERANDS; i++) laid += v->layouts[i] != NULL;
    if (laid)
        fprintf(f, "  layouts: %d weight operands read repacked; the %s store holds %zu bytes "
                "beside the weights\n", laid, g->opts.layouts ? "shared" : "graph's",
                fe_layout_store_bytes(fe_graph_layout_store(g)));
    fprintf(f, "  packaging: %s\n", v->each_step
            ? (t->dispatch_time ? "each_step (a dispatch-time value re-derives the step list per call)"
                                : "each_step (one dispatch per step, as asked)")
            : "fused (one dispatch per call, a barrier between steps)");
    for (int var = 0; var < g->n_vars; var++) {
        fprintf(f, "  per-call value \"%s\" (%s):", g->vars[var].name,
                g->vars[var].kind == VAR_SCRATCHPAD ? "scratchpad"
                : g->vars[var].kind == VAR_CARRIED  ? "carried" : "dispatch-time");
        int uses = 0;
        for (int s = 0; s < t->n_steps; s++) {
            const fe_tstep *st = &t->steps[s];
            for (int i = 0; i < st->op->n_operands; i++) {
                const fe_view *w = st->operand[i] ? fe_trace_view(t, (fe_h){st->operand[i]}) : NULL;
                for (int d = 0; w && d < w->rank; d++)
                    if (w->has_bound[d] && (w->bound[d].var == var || w->bound[d].var2 == var)) {
                        fprintf(f, " %s bounds %s axis %d;", st->label, st->op->operands[i].name, d);
                        uses++;
                    }
                for (int k = 0; w && k < w->n_dyn; k++)
                    if ((w->dyn[k].var == var || w->dyn[k].var2 == var)) {
                        fprintf(f, " %s offsets %s;", st->label, st->op->operands[i].name);
                        uses++;
                    }
            }
            for (int i = 0; i < st->op->n_values; i++)
                if (st->value_given[i] && (st->value[i].var == var || st->value[i].var2 == var)) {
                    fprintf(f, " %s reads it as %s;", st->label, st->op->values[i].name);
                    uses++;
                }
        }
        for (int c = 0; c < t->n_carries; c++)
            if (t->carries[c].var == var) {
                fprintf(f, " carried to the next call;");
                uses++;
            }
        fprintf(f, "%s\n", uses ? "" : " not read by this version");
    }
}

static fe_status build(fe_graph *g, const fe_named_tensor *sig, int n_sig, fe_version **out) {
    *out = NULL;
    if (n_sig < 0 || n_sig > FE_MAX_INPUTS || (n_sig && !sig))
        return fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\": give 0..%d named inputs "
                            "(FE_MAX_INPUTS in graph/internal.h)", g->name, FE_MAX_INPUTS);
    fe_version *v = fe_calloc(1, sizeof *v);
    if (!v) return fe_error_set(&g->err, FE_E_NOMEM, "out of memory compiling \"%s\"", g->name);
    v->n_sig = n_sig;
    for (int i = 0; i < n_sig; i++) {
        if (!sig[i].name || strlen(sig[i].name) >= FE_NAME_LEN || sig[i].t.rank < 1 ||
            sig[i].t.rank > FE_MAX_RANK || !fe_dtype_info(sig[i].t.dtype)) {
            fe_free(v);
            return fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\": input %d needs a name (< %d "
                                "characters), a dtype and rank 1..%d", g->name, i, FE_NAME_LEN,
                                FE_MAX_RANK);
        }
        snprintf(v->sig_names[i], sizeof v->sig_names[i], "%s", sig[i].name);
        v->sig[i] = (fe_named_tensor){v->sig_names[i], sig[i].t};
        v->sig[i].t.data = NULL;
    }
    fe_trace_init(&v->tr, g, v->sig, n_sig);
    fe_status st = g->body(&v->tr, g->model);
    if (v->tr.err.status != FE_OK) {
        g->err = v->tr.err;
        st = v->tr.err.status;
    } else if (st != FE_OK) {
        fe_error_set(&g->err, st, "graph \"%s\": the body returned %s", g->name, fe_status_str(st));
    } else if (v->tr.n_outputs == 0 && v->tr.n_carries == 0) {
        st = fe_error_set(&g->err, FE_E_INVALID, "graph \"%s\": the body marks no output; call "
                          "fe_output on what the graph returns", g->name);
    }
    int folds[FE_FOLD_KINDS] = {0};
    if (st == FE_OK && fe_fold_steps(&v->tr, &g->opts, folds) != FE_OK) {
        g->err = v->tr.err;
        st = v->tr.err.status;
    }
    v->n_steps = v->tr.n_steps;
    if (st == FE_OK) {
        v->kernels = fe_calloc((size_t)(v->n_steps ? v->n_steps : 1), sizeof *v->kernels);
        v->ws_buf = fe_calloc((size_t)(v->n_steps ? v->n_steps : 1), sizeof *v->ws_buf);
        st = v->kernels && v->ws_buf ? make_kernels(g, v) : fe_error_set(&g->err, FE_E_NOMEM, "out of memory");
    }
    v->unread_weight = -1;
    for (int i = 0; i < g->n_weights && v->unread_weight < 0; i++)
        if (!g->weights[i].t.data) v->unread_weight = i;
    if (st == FE_OK) st = fe_version_layouts(g, v);
    if (st == FE_OK) st = plan_memory(g, v);
    if (st == FE_OK) st = lower(g, v);
    if (st == FE_OK && g->n_versions == g->cap_versions) {
        int nc = g->cap_versions ? g->cap_versions * 2 : 4;
        void *p = fe_realloc(g->versions, (size_t)nc * sizeof *g->versions);
        if (p) {
            g->versions = p;
            g->cap_versions = nc;
        } else {
            st = fe_error_set(&g->err, FE_E_NOMEM, "out of memory");
        }
    }
    if (st != FE_OK) {
        fe_version_destroy(v);
        return st;
    }
    v->each_step = g->opts.packaging == FE_PACK_EACH_STEP || v->tr.dispatch_time;
    if (g->opts.verbose) describe(g, v, g->opts.log ? g->opts.log : stderr);
    g->versions[g->n_versions++] = v;
    if (g->profiling) fe_version_clock(v);
    g->stats.versions = g->n_versions;
    g->stats.compiles++;
    memcpy(g->stats.folds, folds, sizeof folds);
    *out = v;
    return FE_OK;
}

static bool same_signature(const fe_version *v, const fe_named_tensor *in, int n) {
    if (v->n_sig != n) return false;
    for (int i = 0; i < n; i++) {
        const fe_tensor *a = &v->sig[i].t, *b = &in[i].t;
        if (!in[i].name || strcmp(v->sig[i].name, in[i].name) != 0 || a->dtype != b->dtype ||
            a->rank != b->rank)
            return false;
        for (int d = 0; d < a->rank; d++)
            if (a->shape[d] != b->shape[d]) return false;
    }
    return true;
}

fe_status fe_version_find(fe_graph *g, const fe_named_tensor *in, int n, fe_version **out) {
    for (int i = 0; i < g->n_versions; i++)
        if (same_signature(g->versions[i], in, n)) {
            *out = g->versions[i];
            return FE_OK;
        }
    return build(g, in, n, out);
}

fe_status fe_graph_compile(fe_graph *g, const fe_named_tensor *inputs, int n_inputs,
                           const fe_compile_options *opts) {
    if (opts) g->opts = *opts;
    fe_version *v;
    return fe_version_find(g, inputs, n_inputs, &v);
}
