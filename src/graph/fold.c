/* graph/fold.c: the fold pass, on a version's trace before its kernels are made. It finds
 * the three folds of a plainly written body and rewrites the steps:
 *   epilogue  a step into its producer's epilogue: SiLU or GELU into a GEMM (activation
 *             silu, gelu or gelu_erf by the GELU's form) or SiLU into a GEMV (epilogue silu),
 *             an ElementwiseAdd into a GEMM or GEMV as its residual, an ElementwiseMul into
 *             a GEMM as its multiplier (the later of a gated product's two GEMMs: the up
 *             GEMM times the gate's activation); chains fold one after another (GEMM -> SiLU
 *             -> Add is one GEMM); and the gated product of two GEMVs
 *             of one input, act(x Wg) * (x Wu) with act SiLU or GELU tanh, into the gate's
 *             swiglu or geglu epilogue (the up GEMV goes, its matrix becomes the gate's up);
 *   prologue  an RMSNorm into the GEMVs that read it (prologue rmsnorm), when every reader
 *             is such a GEMV and none computes a graph output;
 *   drain     a Copy into a state into the step that produced its source (the producer
 *             writes the state's view itself).
 * A fold is taken only when the intermediate is read by the folded step alone (no other
 * step, no graph output, no carry) through the producer's own view, shapes agree, and the
 * producer's slot is free (no activation or residual yet). `priced` asks the caller's
 * function per fold (the tuner keeps one only where its modelled time drops); `all` takes
 * every admissible fold, except one the compile's profile turns off (its fold decisions,
 * keyed by the site's kind, ops and shapes: what `ferrum tune` wrote). The rewritten trace
 * is what compile resolves, plans and lowers; the reference runs the same rewritten steps. */
#include <string.h>

#include "core/alloc.h"
#include "graph/internal.h"

static int operand_named(const fe_op *op, const char *name) {
    for (int i = 0; i < op->n_operands; i++)
        if (strcmp(op->operands[i].name, name) == 0) return i;
    return -1;
}

static int first_output(const fe_op *op) {
    for (int i = 0; i < op->n_operands; i++)
        if (op->operands[i].role == FE_OUT) return i;
    return -1;
}

/* The step's value of a param (its given value, else the declared default). */
static double param(const fe_tstep *st, const char *name) {
    for (int p = 0; p < st->n_params; p++)
        if (strcmp(st->param_names[p], name) == 0) return st->params[p].value;
    int i = fe_op_param_index(st->op, name);
    return i >= 0 ? st->op->params[i].def : 0;
}

/* Sets a param by value, or a CHOICE param by its option's name (value < 0 then). */
static bool set_param(fe_tstep *st, const char *name, const char *choice, double value) {
    if (choice) {
        char why[320];
        if (fe_op_setting_value(st->op, &(fe_setting){.name = name, .choice = choice}, &value,
                                why, sizeof why) != FE_OK)
            return false;
    }
    int at = st->n_params;
    for (int p = 0; p < st->n_params; p++)
        if (strcmp(st->param_names[p], name) == 0) at = p;
    if (at == FE_MAX_PARAMS) return false;
    snprintf(st->param_names[at], sizeof st->param_names[at], "%s", name);
    st->params[at] = (fe_setting){st->param_names[at], value};
    if (at == st->n_params) st->n_params++;
    return true;
}

static bool is_option(const fe_tstep *st, const char *name, const char *option) {
    double v;
    char why[320];
    return fe_op_setting_value(st->op, &(fe_setting){.name = name, .choice = option}, &v, why,
                               sizeof why) == FE_OK && param(st, name) == v;
}

/* How many live steps read buffer b (through any view), and which one last. */
static int readers(const fe_trace *t, const bool *gone, int b, int *reader) {
    int n = 0;
    for (int s = 0; s < t->n_steps; s++) {
        if (gone[s]) continue;
        const fe_tstep *st = &t->steps[s];
        bool reads = false;
        for (int i = 0; i < st->op->n_operands; i++) {
            if (st->op->operands[i].role != FE_IN || !st->operand[i]) continue;
            const fe_view *v = fe_trace_view(t, (fe_h){st->operand[i]});
            reads = reads || (v->kind == BUF_SCRATCH && v->buf == b);
        }
        if (reads) {
            n++;
            *reader = s;
        }
    }
    return n;
}

static bool same_shape(const fe_view *a, const fe_view *b) {
    if (a->rank != b->rank || a->dtype != b->dtype) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* The producer of view id v (the live step whose output operand is v), or -1; an
 * intermediate the fold may remove: scratch, read by `consumer` alone, and not kept past
 * the call (an output or carried). */
static int sole_producer(const fe_trace *t, const bool *gone, int v, int consumer) {
    const fe_view *w = fe_trace_view(t, (fe_h){v});
    if (!w || w->kind != BUF_SCRATCH || t->scratch[w->buf].last >= (1 << 30)) return -1;
    int reader = -1;
    if (readers(t, gone, w->buf, &reader) != 1 || reader != consumer) return -1;
    for (int s = 0; s < consumer; s++) {
        if (gone[s]) continue;
        int o = first_output(t->steps[s].op);
        if (o >= 0 && t->steps[s].operand[o] == v) return s;
    }
    return -1;
}

/* Whether a live step from index `from` on writes the buffer view id v lies in (so that a
 * step at `from` cannot read it yet). */
static bool written_from(const fe_trace *t, const bool *gone, int v, int from) {
    const fe_view *w = fe_trace_view((fe_trace *)t, (fe_h){v});
    for (int s = from; s < t->n_steps; s++) {
        if (gone[s]) continue;
        const fe_tstep *st = &t->steps[s];
        for (int i = 0; i < st->op->n_operands; i++) {
            if (st->op->operands[i].role != FE_OUT || !st->operand[i]) continue;
            const fe_view *o = fe_trace_view((fe_trace *)t, (fe_h){st->operand[i]});
            if (o->kind == w->kind && o->buf == w->buf) return true;
        }
    }
    return false;
}

/* The consumer's output replaces the producer's; the consumer goes. */
static void take_output(fe_trace *t, bool *gone, int producer, int consumer) {
    fe_tstep *p = &t->steps[producer], *c = &t->steps[consumer];
    p->operand[first_output(p->op)] = c->operand[first_output(c->op)];
    gone[consumer] = true;
}

/* SiLU, GELU, ElementwiseAdd or ElementwiseMul at c into its producer's epilogue. */
static bool fold_epilogue(fe_trace *t, bool *gone, int c, fe_fold_site *site) {
    fe_tstep *cs = &t->steps[c];
    bool gelu = strcmp(cs->op->name, "GELU") == 0;
    bool silu = gelu || strcmp(cs->op->name, "SiLU") == 0;
    bool mul = strcmp(cs->op->name, "ElementwiseMul") == 0;
    bool add = mul || strcmp(cs->op->name, "ElementwiseAdd") == 0; /* two sides */
    if (!silu && !add) return false;
    /* the GEMM activation that computes the step: silu, or gelu / gelu_erf by GELU's form */
    const char *act = !gelu ? "silu" : is_option(cs, "form", "erf") ? "gelu_erf" : "gelu";
    for (int side = 0; side < (add ? 2 : 1); side++) {
        int p = sole_producer(t, gone, cs->operand[side], c);
        if (p < 0) continue;
        fe_tstep *ps = &t->steps[p];
        bool gemm = strcmp(ps->op->name, "GEMM") == 0, gemv = strcmp(ps->op->name, "GEMV") == 0;
        if (!gemm && !gemv) continue;
        const fe_view *out = fe_trace_view(t, (fe_h){ps->operand[first_output(ps->op)]});
        const fe_view *cout = fe_trace_view(t, (fe_h){cs->operand[first_output(cs->op)]});
        if (!same_shape(out, cout)) continue;
        int res = operand_named(ps->op, "residual"), by = operand_named(ps->op, "multiplier");
        const bool has_res = res >= 0 && ps->operand[res], has_by = by >= 0 && ps->operand[by];
        if (silu) {
            if (gemm ? !is_option(ps, "activation", "none") || has_res || has_by
                     : gelu || !is_option(ps, "epilogue", "none")) /* a GEMV has no gelu alone */
                continue;
            if (!set_param(ps, gemm ? "activation" : "epilogue", act, 0)) continue;
        } else if (mul) {
            /* the GEMM applies its multiplier after the activation and before the residual
             * and the clamp, so neither may be there yet; the other side must be written
             * before the GEMM runs (a gated product: the GEMM of the two that runs later),
             * and be another buffer than the GEMM's new output (c holds partial sums) */
            const int o = cs->operand[1 - side];
            const fe_view *r = fe_trace_view(t, (fe_h){o});
            if (!gemm || by < 0 || has_by || has_res ||
                param(ps, "clamp_min") < param(ps, "clamp_max") || !same_shape(r, out) ||
                !fe_view_is_contiguous(r) || written_from(t, gone, o, p) ||
                (r->kind == cout->kind && r->buf == cout->buf))
                continue;
            ps->operand[by] = o;
        } else {
            const fe_view *r = fe_trace_view(t, (fe_h){cs->operand[1 - side]});
            if (res < 0 || ps->operand[res] || !same_shape(r, out) || !fe_view_is_contiguous(r) ||
                (gemv && !is_option(ps, "epilogue", "none")))
                continue;
            if (gemv && !set_param(ps, "epilogue", "residual", 0)) continue;
            ps->operand[res] = cs->operand[1 - side];
        }
        take_output(t, gone, p, c);
        site->kind = FE_FOLD_EPILOGUE;
        site->into[site->n_into++] = ps->label;
        return true;
    }
    return false;
}

/* Whether GEMVs a and b take the same input the same way: one x view, the same prologue
 * (norm weight and eps), activation design and matrix shape and dtype; b's epilogue none. */
static bool same_gemv_input(const fe_trace *t, const fe_tstep *a, const fe_tstep *b) {
    int x = operand_named(a->op, "x"), w = operand_named(a->op, "w");
    int nw = operand_named(a->op, "norm_weight"), up = operand_named(a->op, "up");
    int res = operand_named(a->op, "residual");
    if (x < 0 || w < 0 || nw < 0 || up < 0 || res < 0) return false;
    if (a->operand[x] != b->operand[x] || a->operand[nw] != b->operand[nw] || b->operand[up] ||
        b->operand[res] || !is_option(b, "epilogue", "none"))
        return false;
    const char *same[] = {"prologue", "eps", "act_int8"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (param(a, same[i]) != param(b, same[i])) return false;
    return same_shape(fe_trace_view(t, (fe_h){a->operand[w]}), fe_trace_view(t, (fe_h){b->operand[w]}));
}

/* The gated product at c, ElementwiseMul(act(x Wg), x Wu), into the gate GEMV's swiglu
 * (act SiLU, already in the gate's epilogue or a step of its own) or geglu (act GELU tanh,
 * a step of its own) epilogue; the up GEMV and the activation step go. */
static bool fold_gated(fe_trace *t, bool *gone, int c, fe_fold_site *site) {
    fe_tstep *cs = &t->steps[c];
    if (strcmp(cs->op->name, "ElementwiseMul") != 0) return false;
    for (int side = 0; side < 2; side++) {
        int g = sole_producer(t, gone, cs->operand[side], c);
        int u = sole_producer(t, gone, cs->operand[1 - side], c);
        if (g < 0 || u < 0 || strcmp(t->steps[u].op->name, "GEMV") != 0) continue;
        int act = -1; /* the activation step between the gate GEMV and the product, if any */
        const char *epi = "swiglu";
        if (strcmp(t->steps[g].op->name, "SiLU") == 0 ||
            (strcmp(t->steps[g].op->name, "GELU") == 0 && is_option(&t->steps[g], "form", "tanh"))) {
            epi = strcmp(t->steps[g].op->name, "SiLU") == 0 ? "swiglu" : "geglu";
            act = g;
            g = sole_producer(t, gone, t->steps[act].operand[0], act);
            if (g < 0 || strcmp(t->steps[g].op->name, "GEMV") != 0 ||
                !is_option(&t->steps[g], "epilogue", "none"))
                continue;
        } else if (strcmp(t->steps[g].op->name, "GEMV") != 0 ||
                   !is_option(&t->steps[g], "epilogue", "silu")) {
            continue;
        }
        fe_tstep *gs = &t->steps[g], *us = &t->steps[u];
        const fe_view *gout = fe_trace_view(t, (fe_h){gs->operand[first_output(gs->op)]});
        const fe_view *cout = fe_trace_view(t, (fe_h){cs->operand[first_output(cs->op)]});
        if (g == u || !same_gemv_input(t, gs, us) || !same_shape(gout, cout)) continue;
        if (!set_param(gs, "epilogue", epi, 0)) continue;
        gs->operand[operand_named(gs->op, "up")] = us->operand[operand_named(us->op, "w")];
        take_output(t, gone, g, c);
        gone[u] = true;
        site->kind = FE_FOLD_EPILOGUE;
        site->into[site->n_into++] = gs->label;
        site->also[site->n_also++] = us->label;
        if (act >= 0) {
            gone[act] = true;
            site->also[site->n_also++] = t->steps[act].label;
        }
        return true;
    }
    return false;
}

/* Whether step st's output is kept past the call (a graph output or carried). */
static bool lives_past_call(const fe_trace *t, const fe_tstep *st) {
    const fe_view *v = fe_trace_view(t, (fe_h){st->operand[first_output(st->op)]});
    return v->kind != BUF_SCRATCH || t->scratch[v->buf].last >= (1 << 30);
}

/* RMSNorm at c into the prologue of every GEMV reading it (each must be one that can). Not
 * into a GEMV whose result outlives the call (the head's logits): the prologue sums the
 * squares in another order than RMSNorm's kernels, and the outputs stay as the bodies
 * written by hand gave them, bit for bit (a norm and a head GEMV cost one barrier more). */
static bool fold_prologue(fe_trace *t, bool *gone, int c, fe_fold_site *site) {
    fe_tstep *ns = &t->steps[c];
    int wi = operand_named(ns->op, "weight");
    if (strcmp(ns->op->name, "RMSNorm") != 0 || wi < 0 || !ns->operand[wi]) return false;
    int out = ns->operand[first_output(ns->op)];
    const fe_view *ov = fe_trace_view(t, (fe_h){out});
    if (ov->kind != BUF_SCRATCH || t->scratch[ov->buf].last >= (1 << 30)) return false;
    int n = 0;
    for (int s = c + 1; s < t->n_steps; s++) {
        if (gone[s]) continue;
        const fe_tstep *st = &t->steps[s];
        for (int i = 0; i < st->op->n_operands; i++) {
            if (st->op->operands[i].role != FE_IN || !st->operand[i]) continue;
            const fe_view *v = fe_trace_view(t, (fe_h){st->operand[i]});
            if (v->kind != BUF_SCRATCH || v->buf != ov->buf) continue;
            int x = operand_named(st->op, "x"), nw = operand_named(st->op, "norm_weight");
            if (strcmp(st->op->name, "GEMV") != 0 || i != x || st->operand[i] != out ||
                !is_option(st, "prologue", "none") || nw < 0 || lives_past_call(t, st))
                return false;
            n++;
        }
    }
    if (n == 0 || n > FE_FOLD_MAX_INTO) return false;
    for (int s = c + 1; s < t->n_steps; s++) {
        fe_tstep *st = &t->steps[s];
        int x = operand_named(st->op, "x");
        if (gone[s] || strcmp(st->op->name, "GEMV") != 0 || st->operand[x] != out) continue;
        if (!set_param(st, "prologue", "rmsnorm", 0) || !set_param(st, "eps", NULL, param(ns, "eps")))
            return false; /* no room for the params: leave the trace as the pass found it */
        st->operand[x] = ns->operand[0];
        st->operand[operand_named(st->op, "norm_weight")] = ns->operand[wi];
        site->into[site->n_into++] = st->label;
    }
    gone[c] = true;
    site->kind = FE_FOLD_PROLOGUE;
    return true;
}

/* A Copy at c into a state, into the drain of its source's producer. */
static bool fold_drain(fe_trace *t, bool *gone, int c, fe_fold_site *site) {
    fe_tstep *cs = &t->steps[c];
    if (strcmp(cs->op->name, "Copy") != 0) return false;
    const fe_view *dst = fe_trace_view(t, (fe_h){cs->operand[first_output(cs->op)]});
    if (dst->kind != BUF_STATE) return false;
    int p = sole_producer(t, gone, cs->operand[0], c);
    if (p < 0) return false;
    fe_tstep *ps = &t->steps[p];
    int o = first_output(ps->op);
    const fe_view *src = fe_trace_view(t, (fe_h){ps->operand[o]});
    if (!same_shape(src, dst) || (!ps->op->operands[o].strided && !fe_view_is_contiguous(dst)))
        return false;
    take_output(t, gone, p, c);
    site->kind = FE_FOLD_DRAIN;
    site->into[site->n_into++] = ps->label;
    return true;
}

/* Scratch lifetimes from the steps as they now are (outputs and carries keep theirs). */
static void relive(fe_trace *t) {
    for (int b = 0; b < t->n_scratch; b++)
        if (t->scratch[b].last < (1 << 30)) t->scratch[b].first = t->scratch[b].last = -1;
    for (int s = 0; s < t->n_steps; s++) {
        const fe_tstep *st = &t->steps[s];
        for (int i = 0; i < st->op->n_operands; i++) {
            const fe_view *v = st->operand[i] ? fe_trace_view(t, (fe_h){st->operand[i]}) : NULL;
            if (!v || v->kind != BUF_SCRATCH) continue;
            fe_scratch_buf *b = &t->scratch[v->buf];
            if (b->first < 0 || s < b->first) b->first = s;
            if (b->last < s) b->last = s;
        }
    }
    for (int b = 0; b < t->n_scratch; b++)
        if (t->scratch[b].first < 0) { /* no step touches it now: nothing to place */
            t->scratch[b].first = t->scratch[b].last = 0;
            t->scratch[b].bytes = 0;
        }
}

static const char *const kind_names[FE_FOLD_KINDS] = {"epilogue", "prologue", "drain"};

/* The step labelled `label` among steps[0..n) (the trace before the fold), or NULL. */
static const fe_tstep *step_labelled(const fe_tstep *steps, int n, const char *label) {
    for (int i = 0; i < n; i++)
        if (strcmp(steps[i].label, label) == 0) return &steps[i];
    return NULL;
}

/* The site's key, from the steps before the fold: its kind, the op of the step that goes,
 * the ops it goes into, and the operands (dtype and shape) of the first of them, e.g.
 * "epilogue SiLU into GEMV: w bf16 1536x576, x f32 1x576, y f32 1x1536". Every layer of a
 * model shares it; the decode step's and the prefill chunk's differ (their shapes). */
static void site_key(const fe_trace *t, const fe_tstep *before, const fe_fold_site *site,
                     char *key, size_t n) {
    const fe_tstep *st = step_labelled(before, t->n_steps, site->step);
    size_t w = (size_t)snprintf(key, n, "%s %s into", kind_names[site->kind],
                                st ? st->op->name : "?");
    for (int i = 0; i < site->n_into && w < n; i++) {
        const fe_tstep *in = step_labelled(before, t->n_steps, site->into[i]);
        w += (size_t)snprintf(key + w, n - w, "%s%s", i ? "," : " ", in ? in->op->name : "?");
    }
    const fe_tstep *in = site->n_into ? step_labelled(before, t->n_steps, site->into[0]) : NULL;
    for (int i = 0, shown = 0; in && i < in->op->n_operands && w < n; i++) {
        if (!in->operand[i]) continue;
        const fe_view *v = fe_trace_view((fe_trace *)t, (fe_h){in->operand[i]});
        w += (size_t)snprintf(key + w, n - w, "%s %s %s ", shown++ ? "," : ":",
                              in->op->operands[i].name, fe_dtype_info(v->dtype)->name);
        for (int d = 0; d < v->rank && w < n; d++)
            w += (size_t)snprintf(key + w, n - w, "%s%lld", d ? "x" : "", (long long)v->shape[d]);
    }
}

fe_status fe_fold_steps(fe_trace *t, const fe_compile_options *o, int counts[FE_FOLD_KINDS]) {
    for (int k = 0; k < FE_FOLD_KINDS; k++) counts[k] = 0;
    if (o->fold == FE_FOLD_NONE || t->n_steps == 0) return FE_OK;
    if (o->fold == FE_FOLD_PRICED && !o->fold_price)
        return fe_trace_fail(t, FE_E_INVALID, "fold = priced needs a price for each fold "
                             "(fe_compile_options.fold_price, which the tuner gives); compile "
                             "with fold = all or none");
    /* each fold is asked of the price (priced), or of the profile's fold decisions (all,
     * with a profile that has some): the steps are saved before it, to undo a refused one */
    bool ask = o->fold == FE_FOLD_PRICED || fe_profile_folds(o->profile) > 0;
    bool *gone = fe_calloc((size_t)t->n_steps, sizeof *gone);
    bool *gone_saved = fe_calloc((size_t)t->n_steps, sizeof *gone_saved);
    fe_tstep *saved = ask ? fe_malloc((size_t)t->n_steps * sizeof *saved) : fe_malloc(1);
    if (!gone || !gone_saved || !saved) {
        fe_free(gone);
        fe_free(gone_saved);
        fe_free(saved);
        return fe_trace_fail(t, FE_E_NOMEM, "out of memory folding");
    }
    char key[FE_FOLD_KEY_LEN];
    for (bool again = true; again;) {
        again = false;
        for (int s = 0; s < t->n_steps; s++) {
            if (gone[s]) continue;
            if (ask) {
                memcpy(saved, t->steps, (size_t)t->n_steps * sizeof *saved);
                memcpy(gone_saved, gone, (size_t)t->n_steps * sizeof *gone);
            }
            fe_fold_site site = {.version = t->g->n_versions, .step = t->steps[s].label};
            bool done = fold_epilogue(t, gone, s, &site) || fold_gated(t, gone, s, &site) ||
                        fold_prologue(t, gone, s, &site) || fold_drain(t, gone, s, &site);
            if (!done) continue;
            bool keep = true;
            if (ask) {
                site_key(t, saved, &site, key, sizeof key);
                site.key = key;
                keep = o->fold == FE_FOLD_PRICED ? o->fold_price(o->fold_user, &site)
                                                 : fe_profile_fold(o->profile, key) != 0;
            }
            if (!keep) {
                memcpy(t->steps, saved, (size_t)t->n_steps * sizeof *saved); /* not taken */
                memcpy(gone, gone_saved, (size_t)t->n_steps * sizeof *gone);
                continue;
            }
            counts[site.kind]++;
            again = true;
        }
    }
    int n = 0;
    for (int s = 0; s < t->n_steps; s++)
        if (!gone[s]) t->steps[n++] = t->steps[s];
    t->n_steps = n;
    fe_free(gone);
    fe_free(gone_saved);
    fe_free(saved);
    relive(t);
    return FE_OK;
}
