/* ops/sample/sample.c: Sample, the next token from logits: token[b] drawn from
 * softmax(logits[b] / temperature) cut to top_k and top_p, for the first rows rows; the
 * declaration, its plain double reference and its test cases.
 *
 * The rule (kernels and reference follow it to the bit; tolerance 0):
 *  - NaN logits count as -inf. m = the row's max.
 *  - temperature 0, top_k 1, or an infinite m (no finite logit, or a +inf one): the token is
 *    the first index holding m (0 when every logit is NaN). Greedy, lowest index on ties.
 *  - Otherwise token i weighs w_i = exp(((double)l_i - (double)m) / temperature) (libm, in
 *    double; NaN: 0): softmax up to its normaliser, which is never formed.
 *  - The order: logit descending, then index ascending (equal logits are equal
 *    probabilities; the index breaks the tie). top_k > 0 keeps the first min(top_k, V).
 *  - top_p < 1: W_A = the kept weights summed in index order; keep the shortest prefix (in
 *    the order) whose running sum, taken along the order, is >= top_p * W_A.
 *  - The draw: u = fe_sample_draw(seed, pos, b) in [0, 1); W = the kept weights summed in
 *    index order; the token is the first kept index (in index order) where the running sum
 *    passes u * W (> ); if rounding lets none pass, the last kept index of positive weight.
 * Sums are in double and in a fixed order, and the weights are the same libm calls, so the
 * kernel's choice equals the reference's by construction, not within a tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/sample/sample.h"

/* tile: logits one vector step of the max / argmax / filter passes reads */
FE_KERNELS(sample, 1, 32, 64);

static const fe_param_decl params[] = {
    [SAMPLE_TEMP] = {"temperature", FE_PARAM_FLOAT, 1.0, 0, 1e6, NULL,
                     "divides the logits; 0 = greedy (argmax, lowest index on ties)"},
    [SAMPLE_TOPK] = {"top_k", FE_PARAM_INT, 0, 0, 2147483647.0, NULL,
                     "keep the k most likely tokens; 0 = off"},
    [SAMPLE_TOPP] = {"top_p", FE_PARAM_FLOAT, 1.0, 0, 1, NULL,
                     "keep the fewest most likely tokens holding this much mass, in (0, 1]; "
                     "1 = off"},
    [SAMPLE_SEED] = {"seed", FE_PARAM_INT, 0, 0, 9007199254740992.0, NULL,
                     "the draw for row b is a function of (seed, pos, b) only"},
};

static const fe_tunable_decl tunables[] = {
    [SAMPLE_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [SAMPLE_RPI] = {"rows_per_item", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 4, 16},
                                      .n_choices = 3}, 1, true,
                    "rows per work item: workers split the bounded rows in whole items"},
};

static const fe_operand_decl operands[] = {
    {"logits", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2},
    {"token", FE_OUT, FE_DT(FE_DTYPE_I32), 1, 1},
};

static const char *const extents[] = {[SAMPLE_B] = "B", [SAMPLE_V] = "V",
                                      [SAMPLE_MAXPOS] = "max_pos"};

static const fe_value_decl values[] = {
    [SAMPLE_V_ROWS] = {"rows", "B", 0, "rows to sample: the first rows (later tokens are "
                       "untouched)", 0, 0, FE_MAP_BOUND, 1},
    [SAMPLE_V_POS] = {"pos", "max_pos", 0, "the position being generated: with seed and the "
                      "row, all the draw depends on", 0, 0, FE_MAP_NONE},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *l = &c->operands[0], *t = &c->operands[1];
    if (!(c->params[SAMPLE_TOPP] > 0))
        return fe_op_refuse(c, FE_E_INVALID, "top_p = %g; it must be in (0, 1] (1 turns it "
                            "off)", c->params[SAMPLE_TOPP]);
    if (l->shape[1] > 2147483647)
        return fe_op_refuse(c, FE_E_SHAPE, "logits have %lld columns; tokens are i32, so V "
                            "must be < 2^31", (long long)l->shape[1]);
    if (t->shape[0] != l->shape[0])
        return fe_op_refuse(c, FE_E_SHAPE, "token is (%lld); it must be (B) = (%lld), one "
                            "token per row of logits", (long long)t->shape[0],
                            (long long)l->shape[0]);
    c->ext[SAMPLE_B] = l->shape[0];
    c->ext[SAMPLE_V] = l->shape[1];
    c->ext[SAMPLE_MAXPOS] = FE_SAMPLE_MAX_POS;
    return FE_OK;
}

/* token = (B) i32 from logits (B, V) */
static void shape_out(fe_op_ctx *c) {
    if (c->operands[0].rank != 2) return; /* infer names the rule */
    c->operands[1] = fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, &c->operands[0].shape[0]);
}

static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    (void)d;
    return (size_t)nth * fe_sample_ws_per_worker(a->ext[SAMPLE_V]);
}

/* ---- the reference: the rule above, plainly (a full sort, membership flags) ---- */

static int ref_cmp(const void *pa, const void *pb) {
    const fe_sample_ent *a = pa, *b = pb;
    if (a->k != b->k) return a->k > b->k ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int32_t ref_row(const float *l, int64_t V, const fe_design *d, double u, double *w,
                       fe_sample_ent *all, unsigned char *in) {
    const double T = d->params[SAMPLE_TEMP], p = d->params[SAMPLE_TOPP];
    const int64_t top_k = (int64_t)d->params[SAMPLE_TOPK];
    float m = -INFINITY;
    for (int64_t i = 0; i < V; i++)
        if (l[i] > m) m = l[i];
    if (T == 0 || top_k == 1 || isinf(m)) {
        for (int64_t i = 0; i < V; i++)
            if (l[i] == m) return (int32_t)i;
        return 0;
    }
    for (int64_t i = 0; i < V; i++) {
        w[i] = isnan(l[i]) ? 0.0 : exp(((double)l[i] - (double)m) / T);
        all[i] = (fe_sample_ent){isnan(l[i]) ? -INFINITY : l[i], (int32_t)i};
    }
    qsort(all, (size_t)V, sizeof *all, ref_cmp);
    int64_t keep = top_k > 0 && top_k < V ? top_k : V;
    if (p < 1) {
        memset(in, 0, (size_t)V);
        for (int64_t j = 0; j < keep; j++) in[all[j].i] = 1;
        double WA = 0, run = 0;
        for (int64_t i = 0; i < V; i++)
            if (in[i]) WA += w[i];
        for (int64_t j = 0; j < keep; j++) {
            run += w[all[j].i];
            if (run >= p * WA) {
                keep = j + 1;
                break;
            }
        }
    }
    memset(in, 0, (size_t)V);
    for (int64_t j = 0; j < keep; j++) in[all[j].i] = 1;
    double W = 0, run = 0;
    for (int64_t i = 0; i < V; i++)
        if (in[i]) W += w[i];
    int32_t last = -1;
    for (int64_t i = 0; i < V; i++) {
        if (!in[i]) continue;
        run += w[i];
        if (w[i] > 0) last = (int32_t)i;
        if (run > u * W) return (int32_t)i;
    }
    return last;
}

static void reference(const fe_args *a, const fe_design *d) {
    const int64_t V = a->ext[SAMPLE_V];
    double *w = fe_sample_ws_w(a->ws, V, 0);
    fe_sample_ent *all = fe_sample_ws_ent(a->ws, V, 0);
    unsigned char *in = fe_sample_ws_rest(a->ws, V, 0);
    for (int64_t b = 0; b < a->v[SAMPLE_V_ROWS]; b++) {
        double u = fe_sample_draw((uint64_t)d->params[SAMPLE_SEED], a->v[SAMPLE_V_POS], b);
        ((int32_t *)a->t[1].data)[b] =
            ref_row((const float *)a->t[0].data + b * V, V, d, u, w, all, in);
    }
}

/* per logit: the max pass, and without top_k a weight (an exp counted as 10) and two adds */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double rows = (double)a->v[SAMPLE_V_ROWS], V = (double)a->ext[SAMPLE_V];
    bool all = d->params[SAMPLE_TEMP] != 0 && d->params[SAMPLE_TOPK] != 1 &&
               (d->params[SAMPLE_TOPK] == 0 || d->params[SAMPLE_TOPK] >= V);
    out->flops = rows * V * (all ? 14.0 : 2.0);
    out->bytes = rows * (V * 4.0 + 4.0);
}

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, c->dims);
    out[1] = fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, c->dims);
}

#define P1(a, x) .params = {{a, x}}, .n_params = 1
#define P2(a, x, b, y) .params = {{a, x}, {b, y}}, .n_params = 2
#define P3(a, x, b, y, c, z) .params = {{a, x}, {b, y}, {c, z}}, .n_params = 3
static const fe_case cases[] = {
    {.name = "plain", .dims = {3, 100}, .n_dims = 2},
    {.name = "greedy", .dims = {4, 333}, .n_dims = 2, P1("temperature", 0)},
    {.name = "top_k", .dims = {5, 1000}, .n_dims = 2, P2("top_k", 40, "temperature", 0.8)},
    {.name = "top_k_1", .dims = {2, 77}, .n_dims = 2, P1("top_k", 1)},
    {.name = "top_p", .dims = {3, 500}, .n_dims = 2, P2("top_p", 0.9, "seed", 7)},
    {.name = "top_k_top_p", .dims = {4, 2000}, .n_dims = 2,
     P3("top_k", 50, "top_p", 0.8, "temperature", 0.7)},
    {.name = "large_k_sorts_all", .dims = {2, 300}, .n_dims = 2, P2("top_k", 200, "top_p", 0.95)},
    {.name = "sharp", .dims = {3, 700}, .n_dims = 2, P2("temperature", 0.05, "seed", 3),
     .lo = -10, .hi = 10},
    {.name = "flat_top_p_past_sort_max", .dims = {2, 10000}, .n_dims = 2,
     P2("temperature", 20, "top_p", 0.9)},
    {.name = "k_past_sort_max", .dims = {1, 9000}, .n_dims = 2, P2("top_k", 6000, "seed", 11)},
    {.name = "llama_vocab_top40", .dims = {1, 128256}, .n_dims = 2,
     P3("top_k", 40, "top_p", 0.95, "temperature", 0.8), .lo = -8, .hi = 12, .extensive = true,
     .bench = true},
    {.name = "llama_vocab_plain", .dims = {1, 128256}, .n_dims = 2, .lo = -8, .hi = 12,
     .extensive = true, .bench = true},
};

FE_OP_DEFINE(sample) {
    .name = "Sample",
    .summary = "token[b] drawn from softmax(logits[b] / temperature) cut to top_k, top_p; "
               "reproducible from (seed, pos, b)",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .shape_out = shape_out,
    .reference = reference,
    .kernels = sample_kernels, .n_kernels = FE_COUNT(sample_kernels),
    .cost = cost,
    .workspace = workspace,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 0, .atol = 0,
    .roof = FE_ROOF_READ,
};
