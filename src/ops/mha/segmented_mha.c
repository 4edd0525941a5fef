/* ops/mha/segmented_mha.c: SegmentedMHA, attention over rows packed segment after segment
 * (the sentences of an encoder's batch): lengths[s] rows form segment s, the segments follow
 * one another from row 0, and a row attends only the keys of its own segment, at positions
 * counted from the segment's start (causal, sliding window and grouped-query heads as MHA,
 * mha.h). One step serves every sentence of a call, where MHA needs one step per sentence.
 * The per-call value rows bounds the work: segments are cut at it, and rows past the last
 * segment are untouched. q, k and v may be strided views whose rows lie further apart than
 * their heads (columns of one fused q|k|v projection); each row's heads stay adjacent. The declaration, its double-precision reference, cost, checks and
 * test cases; the kernel is MHA's item loop (kernels.inc) run per segment. */
#include <math.h>
#include <stdio.h>

#include "core/alloc.h"
#include "ops/mha/mha.h"

static const fe_param_decl params[] = {
    [MHA_P_CAUSAL] = {"causal", FE_PARAM_BOOL, 0, 0, 1, NULL,
                      "1: a row at position p of its segment attends the segment's keys <= p; "
                      "0: every key of its segment"},
    [MHA_P_WINDOW] = {"window", FE_PARAM_INT, 0, 0, 1e9, NULL,
                      "sliding window w (0 = none): keys within w - 1 positions of the row "
                      "(causal: (p - w, p]; bidirectional: (p - w, p + w)), in its segment"},
    [MHA_P_SCALE] = {"scale", FE_PARAM_FLOAT, 0, 1, 0, NULL,
                     "the factor on q . k; 0 means 1 / sqrt(head_dim)"},
};

static const fe_tunable_decl tunables[] = {
    [MHA_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [MHA_BQ] = {"B_q", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 4, 8, 16, 32}, .n_choices = 5},
                16, true,
                "query rows per work item, inside one segment: workers take (segment, row "
                "block, kv head) items"},
    [MHA_BKV] = {"B_kv", {.kind = FE_DOMAIN_CHOICES, .choices = {16, 32, 64, 128, 256},
                          .n_choices = 5}, 64, true,
                 "keys per block: scores of one block live in the workspace"},
    [MHA_ROWS] = {"row_block", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1}, .n_choices = 2},
                  0, true,
                  "1: an item of >= 4 rows runs a vector of rows at a time, one lane a row "
                  "(scores by broadcasting keys against q^T, softmax down the keys, no sums "
                  "across lanes); 0: one row at a time (resolve: 1 where bidirectional)"},
};

/* Tests and the tuner draw lengths in [0, 40]: empty, single-row and uneven segments, some
 * past the B_kv = 32 block; cases narrow the range (fe_case.int_lo/int_hi). */
static const fe_operand_decl operands[] = {
    {"q", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3, .strided = true},
    {"k", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3, .strided = true},
    {"v", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3, .strided = true},
    {"lengths", FE_IN, FE_DT(FE_DTYPE_I32), 1, 1, .draw_lo = 0, .draw_hi = 40},
    {"out", FE_OUT, FE_DT(FE_DTYPE_F32), 3, 3},
};

static const char *const extents[] = {[SMHA_R] = "R", [SMHA_D] = "D"};

static const fe_value_decl values[] = {
    [SMHA_V_ROWS] = {"rows", "R", 0, "packed rows in this call: segments are cut at it, and "
                     "rows from it on are untouched", 0, 0, FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *q = &c->operands[0], *k = &c->operands[1];
    if (k->shape[2] != q->shape[2])
        return fe_op_refuse(c, FE_E_SHAPE, "k is (R, Hkv, D) = (%lld, %lld, %lld) but q has "
                            "head_dim %lld; give k and v the head_dim of q",
                            (long long)k->shape[0], (long long)k->shape[1],
                            (long long)k->shape[2], (long long)q->shape[2]);
    if (k->shape[0] != q->shape[0])
        return fe_op_refuse(c, FE_E_SHAPE, "q has %lld rows and k %lld: segmented attention "
                            "packs queries and keys alike (row i is both); give k and v the "
                            "rows of q", (long long)q->shape[0], (long long)k->shape[0]);
    if (q->shape[1] % k->shape[1] != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "q has %lld heads and k %lld: the q heads must be a "
                            "multiple of the kv heads (q head h reads kv head h / group)",
                            (long long)q->shape[1], (long long)k->shape[1]);
    fe_status st = fe_op_same_shape(c, 1, 2);
    if (st == FE_OK) st = fe_op_same_shape(c, 0, 4);
    if (st != FE_OK) return st;
    c->ext[SMHA_R] = q->shape[0];
    c->ext[SMHA_D] = q->shape[2];
    return FE_OK;
}

/* A negative length would put later segments before earlier ones. The kernel walks a row's
 * heads D floats apart and k's and v's rows alike. */
static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    (void)d;
    static const char *const names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        const fe_tensor *t = &a->t[i];
        if (t->stride[2] != 1 || t->stride[1] != t->shape[2] ||
            t->stride[0] < t->shape[1] * t->shape[2]) {
            snprintf(why, why_n, "%s has strides (%lld, %lld, %lld) for shape (%lld, %lld, %lld): "
                     "each row must hold its heads one after another, strides (>= %lld, %lld, 1); "
                     "copy it first", names[i], (long long)t->stride[0], (long long)t->stride[1],
                     (long long)t->stride[2], (long long)t->shape[0], (long long)t->shape[1],
                     (long long)t->shape[2], (long long)(t->shape[1] * t->shape[2]),
                     (long long)t->shape[2]);
            return FE_E_BOUNDS;
        }
    }
    if (a->t[1].stride[0] != a->t[2].stride[0]) {
        snprintf(why, why_n, "k rows are %lld floats apart and v rows %lld: give k and v the same "
                 "row stride", (long long)a->t[1].stride[0], (long long)a->t[2].stride[0]);
        return FE_E_BOUNDS;
    }
    const int32_t *len = a->t[3].data;
    for (int64_t s = 0; s < a->t[3].shape[0]; s++)
        if (len[s] < 0) {
            snprintf(why, why_n, "segment %lld has length %d: lengths count the rows of each "
                     "segment and are >= 0 (give 0 for an empty one)", (long long)s, len[s]);
            return FE_E_BOUNDS;
        }
    return FE_OK;
}

static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    return (size_t)nth *
           fe_mha_ws_per_worker(d, a->t[0].shape[1] / a->t[1].shape[1], a->ext[SMHA_D]);
}

/* Plain double, one (row, head) at a time, straight from the definition: the row's segment
 * is found by walking the lengths, the mask taken key by key. */
static void reference(const fe_args *a, const fe_design *d) {
    const float *q = a->t[0].data, *k = a->t[1].data, *v = a->t[2].data;
    const int32_t *len = a->t[3].data;
    float *out = a->t[4].data;
    const int64_t Hq = a->t[0].shape[1], Hkv = a->t[1].shape[1], D = a->ext[SMHA_D];
    const int64_t rows = a->v[SMHA_V_ROWS], n_seg = a->t[3].shape[0];
    const int64_t qs = a->t[0].stride[0], ks = a->t[1].stride[0], vs = a->t[2].stride[0];
    const int64_t w = (int64_t)d->params[MHA_P_WINDOW];
    const bool causal = d->params[MHA_P_CAUSAL] != 0;
    const double scale = fe_mha_scale(d, D);
    double *sc = fe_malloc((size_t)(rows > 0 ? rows : 1) * sizeof *sc);
    double *acc = fe_malloc((size_t)D * sizeof *acc);
    if (!sc || !acc) goto done;
    int64_t start = 0;
    for (int64_t s = 0; s < n_seg && start < rows; s++) {
        const int64_t end = start + len[s] < rows ? start + len[s] : rows;
        for (int64_t i = start; i < end; i++) {
            const int64_t p = i - start;
            for (int64_t h = 0; h < Hq; h++) {
                const float *qv = q + i * qs + h * D;
                const int64_t hk = h / (Hq / Hkv);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = start; j < end; j++) {
                    const int64_t pj = j - start;
                    bool in = (!causal || pj <= p) &&
                              (w == 0 || (pj > p - w && (causal || pj < p + w)));
                    sc[j - start] = -INFINITY;
                    if (!in) continue;
                    double dot = 0;
                    for (int64_t c = 0; c < D; c++) dot += (double)qv[c] * k[j * ks + hk * D + c];
                    sc[j - start] = scale * dot;
                    mx = fmax(mx, sc[j - start]);
                }
                for (int64_t c = 0; c < D; c++) acc[c] = 0;
                for (int64_t j = start; j < end; j++) {
                    if (sc[j - start] == -INFINITY) continue;
                    double e = exp(sc[j - start] - mx);
                    sum += e;
                    for (int64_t c = 0; c < D; c++) acc[c] += e * v[j * vs + hk * D + c];
                }
                for (int64_t c = 0; c < D; c++)
                    out[(i * Hq + h) * D + c] = sum > 0 ? (float)(acc[c] / sum) : 0.0f;
            }
        }
        start = end;
    }
done:
    fe_free(sc);
    fe_free(acc);
}

/* Attended keys of one segment of n rows (fe_mha_keys per row). */
static double segment_keys(const fe_design *d, int64_t n) {
    double keys = 0;
    int64_t lo, hi;
    for (int64_t i = 0; i < n; i++) {
        fe_mha_keys(d, n, i, &lo, &hi);
        if (hi > lo) keys += (double)(hi - lo);
    }
    return keys;
}

/* Per attended (row, head, key) as MHA: 4D + 4 FLOPs. Bytes: q, k, v and out rows once each
 * (a segment's keys are its own rows). With the lengths' contents (a call) the keys are
 * counted segment by segment; without them (planning from shapes) the bound is one segment
 * of all the rows, the most any lengths can give. */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    const int64_t Hq = a->t[0].shape[1], Hkv = a->t[1].shape[1], D = a->ext[SMHA_D];
    const int64_t rows = a->v[SMHA_V_ROWS];
    const int32_t *len = a->t[3].data;
    double keys = 0;
    if (len) {
        int64_t start = 0;
        for (int64_t s = 0; s < a->t[3].shape[0] && start < rows; s++) {
            int64_t n = len[s] < 0 ? 0 : len[s] < rows - start ? len[s] : rows - start;
            keys += segment_keys(d, n);
            start += n;
        }
    } else {
        keys = segment_keys(d, rows);
    }
    out->flops = keys * (double)Hq * (4.0 * (double)D + 4.0);
    out->bytes = 4.0 * (2.0 * (double)rows * (double)Hq * (double)D +
                        2.0 * (double)rows * (double)Hkv * (double)D);
}

/* Test shapes: dims = {R, segments, SMHA_HEADS(Hq, Hkv), D}; D last, so the catalog's tile
 * edges vary the head_dim. SMHA_FUSED added to the heads: q, k and v rows lie (Hq + 2 Hkv) D
 * floats apart, as views into one fused q|k|v projection are. */
#define SMHA_HEADS(hq, hkv) ((hq) * 1000 + (hkv))
#define SMHA_FUSED 1000000

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    const bool fused = c->dims[2] >= SMHA_FUSED;
    int64_t hq = c->dims[2] % SMHA_FUSED / 1000, hkv = c->dims[2] % 1000;
    int64_t qs[3] = {c->dims[0], hq, c->dims[3]}, ks[3] = {c->dims[0], hkv, c->dims[3]};
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs);
    out[1] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, ks);
    out[2] = out[1];
    if (fused)
        for (int i = 0; i < 3; i++) out[i].stride[0] = (hq + 2 * hkv) * c->dims[3];
    out[3] = fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, &c->dims[1]);
    out[4] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs);
}

FE_KERNELS(segmented_mha, 4, 32, 64);

#define CASE(nm, r, segs, hq, hkv, d) .name = nm, .dims = {r, segs, SMHA_HEADS(hq, hkv), d}, .n_dims = 4

static const fe_case cases[] = {
    /* uneven lengths 0..40 over 90 rows: the rows value cuts the last segments */
    {CASE("uneven", 90, 5, 4, 2, 64)},
    {CASE("single_rows", 12, 16, 4, 4, 32), .int_lo = 1, .int_hi = 1},
    {CASE("one_segment", 70, 1, 2, 1, 64), .int_lo = 70, .int_hi = 70},
    {CASE("two_long", 160, 2, 2, 2, 64), .int_lo = 65, .int_hi = 80,
     .tunables = {{"B_kv", 32}}, .n_tunables = 1},
    {CASE("empty_and_short", 40, 12, 4, 1, 48), .int_lo = 0, .int_hi = 3},
    {CASE("causal", 64, 4, 4, 2, 64), .params = {{"causal", 1}}, .n_params = 1},
    {CASE("causal_row_block", 64, 4, 4, 2, 64), .params = {{"causal", 1}}, .n_params = 1,
     .tunables = {{"row_block", 1}}, .n_tunables = 1},
    {CASE("one_row", 90, 5, 4, 2, 48), .tunables = {{"row_block", 0}}, .n_tunables = 1},
    {CASE("window", 96, 3, 4, 1, 32), .params = {{"window", 5}}, .n_params = 1,
     .int_lo = 20, .int_hi = 40},
    /* all-MiniLM-L6-v2: 12 heads of 32, a batch of 8 sentences of up to 40 tokens, q, k and v
     * columns of the fused projection */
    {CASE("minilm", 256, 8, SMHA_FUSED / 1000 + 12, 12, 32), .int_lo = 8, .int_hi = 40},
    {CASE("fused_gqa", 60, 4, SMHA_FUSED / 1000 + 4, 2, 48)},
};

FE_OP_DEFINE(segmented_mha) {
    .name = "SegmentedMHA",
    .summary = "out = softmax(scale * q k^T) v over packed segments (lengths), each row "
               "attending its own segment's keys: causal or not, sliding window, grouped-query "
               "heads; the first rows rows",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .reference = reference,
    .kernels = segmented_mha_kernels, .n_kernels = FE_COUNT(segmented_mha_kernels),
    .resolve = fe_mha_resolve_rows,
    .cost = cost,
    .workspace = workspace,
    .check = check,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-4, .atol = 2e-5,
    .roof = FE_ROOF_READ,
};
