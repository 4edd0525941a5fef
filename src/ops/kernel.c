/* ops/kernel.c: making an operator into a kernel (check, infer, resolve, pick, identify) and
 * running it (check the call, bind, dispatch). Knows no operator by name.
 *
 * Precedence for each tunable: the call site, then the profile, then the op's resolve(dev),
 * then the declared default. The design key is taken after resolution and leaves extents
 * out, so one design serves every extent. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "ops/kernel.h"
#include "device/cpu/step_barrier.h"

struct fe_kernel {
    fe_design design;
    const fe_kernel_decl *kernel;
    fe_device *dev;
    fe_tensor operands[FE_MAX_OPERANDS]; /* compiled shapes and dtypes */
    int64_t ext[FE_MAX_EXTENTS];
    int width;
    int source[FE_MAX_TUNABLES]; /* where each tunable came from (fe_tunable_source) */
    void *ws;       /* the op's workspace, sized at create for the full extents */
    size_t ws_bytes;
    fe_step_barrier *barrier; /* between phases of a step (fe_args.barrier), zeroed */
    fe_args args; /* bound per run; kept here so a run allocates nothing */
    fe_error err;
};

#define MAX_DIM ((int64_t)1 << 40)

static const char *const source_names[] = {"the call site", "the profile", "resolve(dev)",
                                           "the declared default"};

static fe_status check_operand_decl(fe_op_ctx *c, int i, const fe_tensor *t) {
    const fe_operand_decl *od = &c->op->operands[i];
    if (t->rank == 0) {
        if (od->optional) return FE_OK;
        return fe_op_refuse(c, FE_E_INVALID, "operand %s is required (rank 0 marks it absent)",
                            od->name);
    }
    if (t->rank < od->min_rank || t->rank > od->max_rank)
        return fe_op_refuse(c, FE_E_SHAPE, "operand %s has rank %d; it takes rank %d..%d",
                            od->name, t->rank, od->min_rank, od->max_rank);
    if ((unsigned)t->dtype >= FE_DTYPE_COUNT)
        return fe_op_refuse(c, FE_E_DTYPE, "operand %s has no valid dtype (%d)", od->name,
                            (int)t->dtype);
    if (!(od->dtypes & FE_DT(t->dtype))) {
        char list[80] = "";
        size_t k = 0;
        for (int d = 0; d < FE_DTYPE_COUNT; d++)
            if (od->dtypes & FE_DT(d))
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "",
                                      fe_dtype_info((fe_dtype)d)->name);
        return fe_op_refuse(c, FE_E_DTYPE, "operand %s is %s; it takes %s", od->name,
                            fe_dtype_info(t->dtype)->name, list);
    }
    for (int d = 0; d < t->rank; d++)
        if (t->shape[d] < 1 || t->shape[d] > MAX_DIM)
            return fe_op_refuse(c, FE_E_SHAPE, "operand %s has size %lld on axis %d; sizes "
                                "are 1..2^40", od->name, (long long)t->shape[d], d);
    return FE_OK;
}

static fe_status set_params(fe_op_ctx *c, const fe_op_request *req) {
    const fe_op *op = c->op;
    for (int i = 0; i < op->n_params; i++) c->params[i] = op->params[i].def;
    for (int s = 0; s < req->n_params; s++) {
        const fe_setting *st = &req->params[s];
        int i = st->name ? fe_op_param_index(op, st->name) : -1;
        if (i < 0) {
            char list[200] = "";
            size_t k = 0;
            for (int p = 0; p < op->n_params; p++)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", p ? ", " : "",
                                      op->params[p].name);
            return fe_op_refuse(c, FE_E_INVALID, "no param named \"%s\"; it has: %s",
                                st->name ? st->name : "(null)", op->n_params ? list : "none");
        }
        const fe_param_decl *pd = &op->params[i];
        double v;
        char why[320];
        if (fe_op_setting_value(op, st, &v, why, sizeof why) != FE_OK)
            return fe_op_refuse(c, FE_E_INVALID, "%s", why);
        if (!isfinite(v))
            return fe_op_refuse(c, FE_E_INVALID, "param %s = %g; give a finite number",
                                pd->name, v);
        if ((pd->type == FE_PARAM_INT || pd->type == FE_PARAM_CHOICE) && v != floor(v))
            return fe_op_refuse(c, FE_E_INVALID, "param %s = %g; give an integer", pd->name, v);
        if (pd->type == FE_PARAM_BOOL && v != 0 && v != 1)
            return fe_op_refuse(c, FE_E_INVALID, "param %s = %g; give 0 or 1", pd->name, v);
        if (pd->type == FE_PARAM_CHOICE) {
            int n = 0;
            while (pd->choices[n]) n++;
            if (v < 0 || v >= n)
                return fe_op_refuse(c, FE_E_INVALID, "param %s = %g; give 0..%d (%s..%s)",
                                    pd->name, v, n - 1, pd->choices[0], pd->choices[n - 1]);
        }
        if (pd->lo <= pd->hi && (v < pd->lo || v > pd->hi))
            return fe_op_refuse(c, FE_E_INVALID, "param %s = %g; give a value in [%g, %g]",
                                pd->name, v, pd->lo, pd->hi);
        c->params[i] = v;
    }
    return FE_OK;
}

static fe_status set_call_site_tunables(fe_op_ctx *c, const fe_op_request *req) {
    for (int s = 0; s < req->n_tunables; s++) {
        const fe_setting *st = &req->tunables[s];
        int i = st->name ? fe_op_tunable_index(c->op, st->name) : -1;
        if (i < 0)
            return fe_op_refuse(c, FE_E_INVALID, "no tunable named \"%s\" (`ferrum ops %s` "
                                "lists its tunables)", st->name ? st->name : "(null)",
                                c->op->name);
        if (st->choice)
            return fe_op_refuse(c, FE_E_INVALID, "tunable %s is given the choice \"%s\"; "
                                "tunables take numbers (choice names are for CHOICE params)",
                                st->name, st->choice);
        if (st->value != floor(st->value) || fabs(st->value) > 1e15)
            return fe_op_refuse(c, FE_E_INVALID, "tunable %s = %g; give an integer",
                                st->name, st->value);
        c->tunables[i] = (int64_t)st->value;
        c->tunable_set[i] = true;
    }
    return FE_OK;
}

/* Fills every tunable by precedence and checks each against its domain. */
static fe_status resolve_tunables(fe_op_ctx *c, const fe_op_request *req,
                                  int source[FE_MAX_TUNABLES]) {
    const fe_op *op = c->op;
    fe_status st = set_call_site_tunables(c, req);
    if (st != FE_OK) return st;
    for (int i = 0; i < op->n_tunables; i++) source[i] = c->tunable_set[i] ? 0 : -1;
    if (req->profile) {
        st = fe_profile_apply(req->profile, c);
        if (st != FE_OK) return st;
        for (int i = 0; i < op->n_tunables; i++)
            if (source[i] < 0 && c->tunable_set[i]) source[i] = 1;
    }
    if (op->resolve) op->resolve(c);
    for (int i = 0; i < op->n_tunables; i++) {
        if (source[i] < 0 && c->tunable_set[i]) source[i] = 2;
        if (source[i] < 0) {
            const fe_tunable_decl *td = &op->tunables[i];
            c->tunables[i] = td->domain.kind == FE_DOMAIN_WIDTH && td->def == 0
                                 ? (int64_t)c->dev->n_workers : td->def;
            source[i] = 3;
        }
        char why[240];
        if (!fe_domain_contains(op, &op->tunables[i].domain, c->ext, c->dev->n_workers,
                                c->tunables[i], why, sizeof why))
            return fe_op_refuse(c, FE_E_INVALID, "tunable %s = %lld (from %s) is outside its "
                                "domain: %s", op->tunables[i].name, (long long)c->tunables[i],
                                source_names[source[i]], why);
    }
    return FE_OK;
}

static uint64_t design_key(const fe_design *d) {
    const fe_op *op = d->op;
    fe_hasher h;
    if (fe_hasher_init(&h) != 0) return 0;
    fe_hasher_str(&h, op->name);
    fe_hasher_i64(&h, d->isa);
    for (int i = 0; i < op->n_operands; i++) {
        fe_hasher_i64(&h, d->present[i]);
        fe_hasher_i64(&h, d->present[i] ? (int64_t)d->dtypes[i] : -1);
    }
    for (int i = 0; i < op->n_params; i++) fe_hasher_f64(&h, d->params[i]);
    for (int i = 0; i < op->n_tunables; i++)
        if (op->tunables[i].design) fe_hasher_i64(&h, d->tunables[i]);
    return fe_hasher_done(&h);
}

/* the kernel's operands and extents, values at their full extents (what the workspace and
 * a layout are sized for) */
static fe_args full_args(const fe_kernel *k) {
    const fe_op *op = k->design.op;
    fe_args a = {0};
    for (int i = 0; i < op->n_operands; i++) a.t[i] = k->operands[i];
    memcpy(a.ext, k->ext, sizeof a.ext);
    for (int i = 0; i < op->n_values; i++)
        a.v[i] = k->ext[fe_op_extent_index(op, op->values[i].extent)];
    return a;
}

fe_status fe_kernel_create(fe_device *dev, const fe_op_request *req, fe_kernel **out,
                           fe_error *err) {
    *out = NULL;
    if (!dev || !req || !req->op)
        return fe_error_set(err, FE_E_INVALID, "kernel: give a device and a request naming "
                            "an operator");
    const fe_op *op = fe_op_find(req->op);
    if (!op)
        return fe_error_set(err, FE_E_NOTFOUND, "no operator named \"%s\"; `ferrum ops` lists "
                            "them", req->op);
    fe_op_ctx c = {.op = op, .dev = fe_device_get_info(dev), .err = err};
    if (req->n_operands < 0 || req->n_operands > op->n_operands || (req->n_operands && !req->operands))
        return fe_op_refuse(&c, FE_E_INVALID, "given %d operands; it takes %d", req->n_operands,
                            op->n_operands);
    if (req->n_params < 0 || req->n_tunables < 0 || (req->n_params && !req->params) ||
        (req->n_tunables && !req->tunables))
        return fe_op_refuse(&c, FE_E_INVALID, "params or tunables given with a bad count");
    for (int i = 0; i < op->n_operands; i++) {
        fe_tensor t = i < req->n_operands ? req->operands[i] : (fe_tensor){.rank = 0};
        fe_status st = check_operand_decl(&c, i, &t);
        if (st != FE_OK) return st;
        c.operands[i] = t;
        c.present[i] = t.rank > 0;
    }
    int source[FE_MAX_TUNABLES] = {0};
    fe_status st = set_params(&c, req);
    if (st == FE_OK) st = op->infer(&c);
    if (st == FE_OK) st = resolve_tunables(&c, req, source);
    if (st != FE_OK) return st;

    const fe_kernel_decl *pick = NULL;
    for (int i = 0; i < op->n_kernels; i++)
        if (op->kernels[i].isa <= c.dev->isa && (!pick || op->kernels[i].isa > pick->isa))
            pick = &op->kernels[i];
    if (!pick)
        return fe_op_refuse(&c, FE_E_UNSUPPORTED, "no kernel for ISA %s or below",
                            fe_isa_name(c.dev->isa));

    fe_kernel *k = fe_calloc(1, sizeof *k);
    if (!k) return fe_op_refuse(&c, FE_E_NOMEM, "out of memory making the kernel");
    k->dev = dev;
    k->kernel = pick;
    fe_design *d = &k->design;
    d->op = op;
    d->isa = pick->isa;
    for (int i = 0; i < op->n_operands; i++) {
        d->present[i] = c.present[i];
        d->dtypes[i] = c.present[i] ? c.operands[i].dtype : FE_DTYPE_F32;
        k->operands[i] = c.operands[i];
    }
    memcpy(d->params, c.params, sizeof d->params);
    memcpy(d->tunables, c.tunables, sizeof d->tunables);
    memcpy(k->ext, c.ext, sizeof k->ext);
    memcpy(k->source, source, sizeof k->source);
    int wi = fe_op_tunable_index(op, "WIDTH");
    k->width = wi >= 0 ? (int)d->tunables[wi] : 1;
    d->key = design_key(d);
    if (d->key == 0) {
        fe_free(k);
        return fe_op_refuse(&c, FE_E_NOMEM, "out of memory hashing the design");
    }
    k->barrier = fe_aligned_alloc(64, sizeof *k->barrier);
    if (!k->barrier) {
        fe_free(k);
        return fe_op_refuse(&c, FE_E_NOMEM, "out of memory making the kernel");
    }
    memset(k->barrier, 0, sizeof *k->barrier);
    if (op->workspace) {
        fe_args full = full_args(k);
        k->ws_bytes = op->workspace(&full, d, k->width);
        k->ws = k->ws_bytes && !req->shared_workspace ? fe_aligned_alloc(64, k->ws_bytes) : NULL;
        if (k->ws_bytes && !k->ws && !req->shared_workspace) {
            fe_free(k->barrier);
            fe_free(k);
            return fe_op_refuse(&c, FE_E_NOMEM, "out of memory for a %zu-byte workspace",
                                k->ws_bytes);
        }
    }
    *out = k;
    return FE_OK;
}

void fe_kernel_destroy(fe_kernel *k) {
    if (!k) return;
    fe_free(k->ws);
    fe_free(k->barrier);
    fe_free(k);
}

static fe_status refuse_run(fe_kernel *k, fe_status s, const char *fmt, ...) FE_PRINTF(3, 4);
static fe_status refuse_run(fe_kernel *k, fe_status s, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fe_error_set(&k->err, s, "%s: %s", k->design.op->name, msg);
}

static bool is_contiguous(const fe_tensor *t) {
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] > 1 && t->stride[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

fe_status fe_kernel_bind(fe_kernel *k, const fe_tensor *operands, int n_operands,
                         const int64_t *values, int n_values, fe_args *a) {
    const fe_op *op = k->design.op;
    fe_error_clear(&k->err);
    if (n_operands < 0 || n_operands > op->n_operands || (n_operands && !operands))
        return refuse_run(k, FE_E_INVALID, "given %d operands; it takes %d", n_operands,
                          op->n_operands);
    if (n_values < 0 || n_values > op->n_values || (n_values && !values))
        return refuse_run(k, FE_E_INVALID, "given %d per-call values; it takes %d", n_values,
                          op->n_values);
    memset(a, 0, sizeof *a);
    for (int i = 0; i < op->n_operands; i++) {
        const fe_operand_decl *od = &op->operands[i];
        const fe_tensor *want = &k->operands[i];
        fe_tensor t = i < n_operands ? operands[i] : (fe_tensor){.rank = 0};
        if (!k->design.present[i]) {
            if (t.rank != 0)
                return refuse_run(k, FE_E_INVALID, "operand %s was absent at create; pass it "
                                  "with rank 0", od->name);
            continue;
        }
        if (t.rank != want->rank || t.dtype != want->dtype)
            return refuse_run(k, FE_E_SHAPE, "operand %s is rank %d %s; the kernel was made "
                              "for rank %d %s", od->name, t.rank,
                              fe_dtype_info(t.dtype) ? fe_dtype_info(t.dtype)->name : "?",
                              want->rank, fe_dtype_info(want->dtype)->name);
        for (int d = 0; d < t.rank; d++)
            if (t.shape[d] != want->shape[d])
                return refuse_run(k, FE_E_SHAPE, "operand %s has size %lld on axis %d; the "
                                  "kernel was made for %lld (make one for this shape, or bound "
                                  "the work with a per-call value)", od->name,
                                  (long long)t.shape[d], d, (long long)want->shape[d]);
        if (!t.data) return refuse_run(k, FE_E_INVALID, "operand %s has no data", od->name);
        if (od->strided) {
            for (int d = 0; d < t.rank; d++)
                if (t.stride[d] < 0)
                    return refuse_run(k, FE_E_INVALID, "operand %s has stride %lld on axis "
                                      "%d; strides must be >= 0", od->name,
                                      (long long)t.stride[d], d);
        } else if (!is_contiguous(&t)) {
            return refuse_run(k, FE_E_INVALID, "operand %s must be contiguous (row-major); "
                              "copy it first with Copy", od->name);
        }
        a->t[i] = t;
    }
    memcpy(a->ext, k->ext, sizeof a->ext);
    for (int i = 0; i < op->n_values; i++) {
        const fe_value_decl *vd = &op->values[i];
        int64_t hi = k->ext[fe_op_extent_index(op, vd->extent)];
        int64_t def = vd->map == FE_MAP_NONE ? vd->min : hi; /* an offset defaults to its min */
        int64_t v = i < n_values ? values[i] : def;
        if (v < vd->min || v > hi)
            return refuse_run(k, FE_E_BOUNDS, "per-call value %s = %lld is past its view: it "
                              "must lie in [%lld, %s = %lld]; nothing ran", vd->name,
                              (long long)v, (long long)vd->min, vd->extent, (long long)hi);
        a->v[i] = v;
    }
    a->ws = k->ws;
    a->ws_bytes = k->ws_bytes;
    a->barrier = k->barrier;
    if (op->check) {
        char why[320] = "";
        fe_status st = op->check(a, &k->design, why, sizeof why);
        if (st != FE_OK) return refuse_run(k, st, "%s (a per-call value past its view); nothing ran", why);
    }
    return FE_OK;
}

typedef struct {
    fe_kernel_fn fn;
    const fe_args *a;
    const fe_design *d;
} step_ctx;

static void run_step(void *ctx, int ith, int nth) {
    const step_ctx *s = ctx;
    s->fn(s->a, s->d, ith, nth);
}

fe_status fe_kernel_run_layouts(fe_kernel *k, const fe_tensor *operands, int n_operands,
                                const void *const *layouts, const int64_t *values,
                                int n_values) {
    fe_status st = fe_kernel_bind(k, operands, n_operands, values, n_values, &k->args);
    if (st != FE_OK) return st;
    for (int i = 0; i < k->design.op->n_operands; i++) /* as many as operands given */
        k->args.layout[i] = layouts && i < n_operands ? layouts[i] : NULL;
    step_ctx sc = {.fn = k->kernel->fn, .a = &k->args, .d = &k->design};
    fe_step step = {.fn = run_step, .ctx = &sc, .width = k->width};
    fe_device_dispatch(k->dev, &step, 1);
    return FE_OK;
}

fe_status fe_kernel_run(fe_kernel *k, const fe_tensor *operands, int n_operands,
                        const int64_t *values, int n_values) {
    return fe_kernel_run_layouts(k, operands, n_operands, NULL, values, n_values);
}

size_t fe_kernel_layout_bytes(const fe_kernel *k, int operand, uint64_t *format) {
    const fe_op *op = k->design.op;
    uint64_t f = 0;
    size_t bytes = 0;
    if (op->layout && op->layout_make && operand >= 0 && operand < op->n_operands &&
        k->design.present[operand] && op->operands[operand].role == FE_IN) {
        fe_args a = full_args(k);
        bytes = op->layout(&a, &k->design, operand, &f);
    }
    if (format) *format = bytes ? f : 0;
    return bytes;
}

typedef struct {
    const fe_op *op;
    const fe_args *a;
    const fe_design *d;
    int operand;
    void *dst;
} layout_ctx;

static void run_layout(void *ctx, int ith, int nth) {
    const layout_ctx *c = ctx;
    c->op->layout_make(c->a, c->d, c->operand, c->dst, ith, nth);
}

fe_status fe_kernel_make_layout(fe_kernel *k, int operand, const fe_tensor *t, void *dst) {
    const fe_op *op = k->design.op;
    fe_error_clear(&k->err);
    if (!fe_kernel_layout_bytes(k, operand, NULL))
        return refuse_run(k, FE_E_INVALID, "the design has no layout of operand %d; read it as "
                          "stored", operand);
    const fe_tensor *want = &k->operands[operand];
    bool same = t && t->data && t->rank == want->rank && t->dtype == want->dtype &&
                is_contiguous(t);
    for (int d = 0; same && d < t->rank; d++) same = t->shape[d] == want->shape[d];
    if (!same || !dst)
        return refuse_run(k, FE_E_INVALID, "a layout of %s needs the operand as the kernel was "
                          "made for (contiguous, with data) and a destination",
                          op->operands[operand].name);
    fe_args a = full_args(k);
    a.t[operand] = *t;
    layout_ctx c = {op, &a, &k->design, operand, dst};
    fe_step step = {.fn = run_layout, .ctx = &c, .width = k->width};
    fe_device_dispatch(k->dev, &step, 1);
    return FE_OK;
}

fe_status fe_kernel_run_reference(fe_kernel *k, const fe_tensor *operands, int n_operands,
                                  const int64_t *values, int n_values) {
    fe_args a;
    fe_status st = fe_kernel_bind(k, operands, n_operands, values, n_values, &a);
    if (st != FE_OK) return st;
    k->design.op->reference(&a, &k->design);
    return FE_OK;
}

const char *fe_kernel_message(const fe_kernel *k) { return k->err.message; }
fe_kernel_fn fe_kernel_function(const fe_kernel *k) { return k->kernel->fn; }
int fe_kernel_width(const fe_kernel *k) { return k->width; }
size_t fe_kernel_workspace_bytes(const fe_kernel *k) { return k->ws_bytes; }
uint64_t fe_kernel_design_key(const fe_kernel *k) { return k->design.key; }
fe_isa fe_kernel_isa(const fe_kernel *k) { return k->design.isa; }
const fe_design *fe_kernel_design(const fe_kernel *k) { return &k->design; }
const int64_t *fe_kernel_extents(const fe_kernel *k) { return k->ext; }

fe_tunable_source fe_kernel_tunable_source(const fe_kernel *k, int i) {
    return (fe_tunable_source)k->source[i];
}

int64_t fe_kernel_tunable(const fe_kernel *k, const char *name) {
    int i = fe_op_tunable_index(k->design.op, name);
    return i >= 0 ? k->design.tunables[i] : -1;
}

void fe_kernel_cost(const fe_kernel *k, const int64_t *values, int n_values, double *flops,
                    double *bytes) {
    const fe_op *op = k->design.op;
    fe_args a = {0};
    for (int i = 0; i < op->n_operands; i++) a.t[i] = k->operands[i];
    memcpy(a.ext, k->ext, sizeof a.ext);
    for (int i = 0; i < op->n_values; i++) {
        int64_t hi = k->ext[fe_op_extent_index(op, op->values[i].extent)];
        int64_t def = op->values[i].map == FE_MAP_NONE ? op->values[i].min : hi;
        int64_t v = values && i < n_values ? values[i] : def;
        a.v[i] = v < op->values[i].min ? op->values[i].min : v > hi ? hi : v;
    }
    fe_cost c = {0, 0};
    op->cost(&a, &k->design, &c);
    if (flops) *flops = c.flops;
    if (bytes) *bytes = c.bytes;
}
