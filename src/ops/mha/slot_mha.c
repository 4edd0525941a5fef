/* ops/mha/slot_mha.c: SlotMHA, the attention of a batched decode step: each of B query rows
 * attends its own slot of a slotted KV cache (mha.h) up to its own position, causally:
 * out[r, h] = softmax_j(scale * q'[r, h] . k[j, h / group]) . v[j, h / group] over the keys j
 * <= p (and within the sliding window) of slot s, where s = slots[r], p = positions[r] and q'
 * is q turned by RoPE at p when a table is given. Slots and positions are operands (per call,
 * the graph's inputs): one step attends every row, where MHA takes a step per row (its
 * kv_valid and q_offset are a step's words). Each row runs MHA's item for that row alone
 * (kernels.inc), the operations and their order of a one-row MHA step, so a row's output is
 * bit-identical to MHA's at the same B_kv. The per-call value rows bounds the work; later
 * rows of out are untouched. The declaration, its double-precision reference, cost, checks
 * and test cases. */
#include <math.h>
#include <stdio.h>

#include "core/alloc.h"
#include "ops/mha/mha.h"

static const char *const forms[] = {"rotate_half", "interleaved", NULL};

static const fe_param_decl params[] = {
    [SLOT_P_WINDOW] = {"window", FE_PARAM_INT, 0, 0, 1e9, NULL,
                       "sliding window w (0 = none): a row at p attends keys in (p - w, p]"},
    [SLOT_P_SCALE] = {"scale", FE_PARAM_FLOAT, 0, 1, 0, NULL,
                      "the factor on q . k; 0 means 1 / sqrt(head_dim)"},
    [SLOT_P_FORM] = {"form", FE_PARAM_CHOICE, ROPE_ROTATE_HALF, 1, 0, forms,
                     "RoPE's pairs for q, as RoPE's form: rotate_half (i, i + D/2), "
                     "interleaved (2i, 2i + 1); unused without a table"},
};

/* B_kv as MHA's (same choices and default): a row matches MHA's output at the same B_kv */
static const fe_tunable_decl tunables[] = {
    [SLOT_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true,
                    "workers the step uses: they take (row, kv head) items round-robin"},
    [SLOT_BKV] = {"B_kv", {.kind = FE_DOMAIN_CHOICES, .choices = {16, 32, 64, 128, 256},
                           .n_choices = 5}, 64, true,
                  "keys per block, as MHA's: the scores of one block live in the workspace"},
    [SLOT_SPLIT] = {"kv_split", FE_MHA_SPLIT_DOMAIN, 0, true,
                    "as MHA's: S >= 1, each row's keys cut into S segments of whole B_kv "
                    "blocks, a work item one row's segment over every kv head, the states "
                    "combined after a barrier; 0: (row, kv head) items. resolve: as MHA's for a "
                    "decode step, so that a row keeps the bytes of that row's MHA step"},
};

/* kv_split as MHA resolves it for a decode step on the same workers */
static void resolve(fe_op_ctx *c) {
    if (c->tunable_set[SLOT_SPLIT]) { /* one segment is no cut: the design of 0 */
        if (c->tunables[SLOT_SPLIT] == 1) c->tunables[SLOT_SPLIT] = 0;
        return;
    }
    const int64_t w = c->tunable_set[SLOT_WIDTH] ? c->tunables[SLOT_WIDTH] : c->dev->n_workers;
    c->tunables[SLOT_SPLIT] = fe_mha_split_default(&c->op->tunables[SLOT_SPLIT].domain, w);
    c->tunable_set[SLOT_SPLIT] = true;
}

/* Tests draw slots in [0, 3] and positions in [0, 40] (cases give at least 4 slots of 41
 * positions); the tuner keeps them below N and L. */
static const fe_operand_decl operands[] = {
    [SLOT_Q] = {"q", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3},
    [SLOT_KV] = {"kv", FE_IN, FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_F16), 4, 4},
    [SLOT_SLOTS] = {"slots", FE_IN, FE_DT(FE_DTYPE_I32), 1, 1, .draw_lo = 0, .draw_hi = 3,
                    .draw_below = "N"},
    [SLOT_POSITIONS] = {"positions", FE_IN, FE_DT(FE_DTYPE_I32), 1, 1, .draw_lo = 0,
                        .draw_hi = 40, .draw_below = "L"},
    [SLOT_TABLE] = {"table", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .optional = true, .draw_lo = -1,
                    .draw_hi = 1},
    [SLOT_OUT] = {"out", FE_OUT, FE_DT(FE_DTYPE_F32), 3, 3},
};

static const char *const extents[] = {[SLOT_B] = "B", [SLOT_N] = "N", [SLOT_L] = "L",
                                       [SLOT_D] = "D"};

static const fe_value_decl values[] = {
    [SLOT_V_ROWS] = {"rows", "B", 0, "query rows to compute: the first rows (later rows of out "
                     "are untouched)", SLOT_Q, 0, FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *q = &c->operands[SLOT_Q], *kv = &c->operands[SLOT_KV];
    if (q->shape[1] % kv->shape[2] != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "q has %lld heads and kv %lld: the q heads must be a "
                            "multiple of the kv heads (q head h reads kv head h / group)",
                            (long long)q->shape[1], (long long)kv->shape[2]);
    fe_status st = fe_op_same_shape(c, SLOT_Q, SLOT_OUT);
    if (st != FE_OK) return st;
    return fe_slot_infer(c, SLOT_Q, SLOT_KV, SLOT_SLOTS, SLOT_POSITIONS, SLOT_TABLE);
}

static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    (void)d;
    return fe_slot_rows_check(a, SLOT_SLOTS, SLOT_POSITIONS, why, why_n);
}

static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    const fe_design item = fe_slot_mha_item_design(d);
    const int64_t Hq = a->t[SLOT_Q].shape[1], G = Hq / a->t[SLOT_KV].shape[2];
    return (size_t)nth * fe_slot_mha_ws_per_worker(&item, Hq, G, a->ext[SLOT_D]) +
           (size_t)(a->ext[SLOT_B] * d->tunables[SLOT_SPLIT]) *
               fe_mha_segment_bytes(1, Hq, a->ext[SLOT_D]);
}

/* Plain double, one (row, head) at a time, straight from the definition: q turned in double,
 * the mask taken key by key, independently of fe_mha_keys. */
static void reference(const fe_args *a, const fe_design *d) {
    const float *q = a->t[SLOT_Q].data, *table = a->t[SLOT_TABLE].data;
    const fe_tensor *kv = &a->t[SLOT_KV];
    const int32_t *slots = a->t[SLOT_SLOTS].data, *positions = a->t[SLOT_POSITIONS].data;
    float *out = a->t[SLOT_OUT].data;
    const int64_t Hq = a->t[SLOT_Q].shape[1], Hkv = a->t[SLOT_KV].shape[2], D = a->ext[SLOT_D];
    const int64_t N = a->ext[SLOT_N], cache = a->t[SLOT_KV].shape[1] * Hkv * D, half = D / 2;
    const int64_t w = (int64_t)d->params[SLOT_P_WINDOW];
    const bool interleaved = d->params[SLOT_P_FORM] == ROPE_INTERLEAVED;
    const double scale = d->params[SLOT_P_SCALE] != 0 ? d->params[SLOT_P_SCALE] : 1.0 / sqrt((double)D);
    double *sc = fe_malloc((size_t)a->ext[SLOT_L] * sizeof *sc);
    double *acc = fe_malloc((size_t)D * sizeof *acc), *qd = fe_malloc((size_t)D * sizeof *qd);
    if (!sc || !acc || !qd) goto done;
    for (int64_t r = 0; r < a->v[SLOT_V_ROWS]; r++) {
        const int64_t p = positions[r];
        const int64_t k = slots[r] * cache, v = (N + slots[r]) * cache; /* elements of kv */
        for (int64_t h = 0; h < Hq; h++) {
            const float *qv = q + (r * Hq + h) * D;
            for (int64_t c = 0; c < D; c++) qd[c] = qv[c];
            for (int64_t i = 0; table && i < half; i++) {
                int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
                double cs = table[p * D + i], sn = table[p * D + half + i];
                qd[i0] = (double)qv[i0] * cs - (double)qv[i1] * sn;
                qd[i1] = (double)qv[i1] * cs + (double)qv[i0] * sn;
            }
            const int64_t hk = h / (Hq / Hkv);
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j <= p; j++) {
                sc[j] = -INFINITY;
                if (w != 0 && j <= p - w) continue;
                double dot = 0;
                for (int64_t c = 0; c < D; c++)
                    dot += qd[c] * fe_mha_kv_at(kv, k + (j * Hkv + hk) * D + c);
                sc[j] = scale * dot;
                mx = fmax(mx, sc[j]);
            }
            for (int64_t c = 0; c < D; c++) acc[c] = 0;
            for (int64_t j = 0; j <= p; j++) {
                if (sc[j] == -INFINITY) continue;
                double e = exp(sc[j] - mx);
                sum += e;
                for (int64_t c = 0; c < D; c++)
                    acc[c] += e * fe_mha_kv_at(kv, v + (j * Hkv + hk) * D + c);
            }
            for (int64_t c = 0; c < D; c++) out[(r * Hq + h) * D + c] = (float)(acc[c] / sum);
        }
    }
done:
    fe_free(sc);
    fe_free(acc);
    fe_free(qd);
}

/* Per attended (row, head, key) as MHA: 4D + 4 FLOPs; RoPE's 3 an element of q with a table.
 * Bytes: q and out rows once, every attended k and v row once (rows in different slots share
 * none), a table row a row. With the positions' contents (a call) each row's keys are counted;
 * without them (planning from shapes) the bound: every row at the last position L - 1. */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    const fe_design item = fe_slot_mha_item_design(d);
    const int64_t Hq = a->t[SLOT_Q].shape[1], Hkv = a->t[SLOT_KV].shape[2], D = a->ext[SLOT_D];
    const int64_t rows = a->v[SLOT_V_ROWS], L = a->ext[SLOT_L];
    const int32_t *positions = a->t[SLOT_POSITIONS].data;
    double keys = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t p = positions ? positions[r] : L - 1, lo, hi;
        p = p < 0 ? 0 : p >= L ? L - 1 : p;
        fe_mha_keys(&item, p + 1, p, &lo, &hi);
        keys += (double)(hi - lo);
    }
    const double turned = a->t[SLOT_TABLE].rank ? 1 : 0;
    out->flops = keys * (double)Hq * (4.0 * (double)D + 4.0) + turned * 3.0 * (double)(rows * Hq * D);
    const double kvb = (double)fe_dtype_info(d->dtypes[SLOT_KV])->size;
    out->bytes = 4.0 * (2.0 * (double)(rows * Hq * D) + turned * (double)(rows * D)) +
                 kvb * 2.0 * keys * (double)(Hkv * D);
}

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_slot_operands(c, SLOT_Q, SLOT_KV, SLOT_SLOTS, SLOT_POSITIONS, SLOT_TABLE, true, out);
    out[SLOT_OUT] = out[SLOT_Q];
}

/* tile: MHA's (floats of D a vector step takes), in pairs of D */
FE_KERNELS(slot_mha, 2, 16, 32);

#define CASE(nm, b, hq, n, hkv, s, p, d) \
    .name = nm, .dims = {b, SLOT_CASE_HEADS(n, hq, hkv), SLOT_CASE_CACHE(s, p), (d) / 2}, \
    .n_dims = 4
#define INTERLEAVED {"form", ROPE_INTERLEAVED}

/* Positions are drawn in [0, 40]: the cases pin B_kv 16 or 32 to cross key blocks there */
static const fe_case cases[] = {
    /* more rows than slots: rows share a slot at their own positions; group 4 */
    {CASE("decode_gqa4", 8, 8, 4, 2, 48, 48, 64), .tunables = {{"B_kv", 16}}, .n_tunables = 1},
    {CASE("no_table", 5, 4, 4, 4, 41, 0, 32)},
    {CASE("interleaved", 6, 6, 4, 2, 41, 64, 48), .params = {INTERLEAVED}, .n_params = 1,
     .tunables = {{"B_kv", 32}}, .n_tunables = 1},
    {CASE("window", 7, 8, 4, 1, 64, 64, 64), .params = {{"window", 9}}, .n_params = 1,
     .tunables = {{"B_kv", 16}}, .n_tunables = 1},
    {CASE("scaled", 3, 2, 4, 1, 41, 41, 40), .params = {{"scale", 0.5}}, .n_params = 1,
     .lo = -4, .hi = 4},
    {CASE("one_row_d128", 1, 16, 4, 2, 41, 50, 128)},
    /* SmolLM2 (9 heads, 3 kv heads of 64) at 12 rows; Llama 3.2 1B (32, 8) */
    {CASE("smollm2_12", 12, 9, 13, 3, 64, 64, 64), .tunables = {{"B_kv", 16}}, .n_tunables = 1},
    /* kv_split pinned: rows whose keys span up to three 16-key blocks cut into segments
     * (more segments than blocks for the early rows), a window; and 0 where resolve splits */
    {CASE("split_b16", 9, 9, 4, 3, 48, 48, 64), .tunables = {{"B_kv", 16}, {"kv_split", 4}},
     .n_tunables = 2},
    {CASE("split_window", 6, 8, 4, 1, 64, 64, 32), .params = {{"window", 20}}, .n_params = 1,
     .tunables = {{"B_kv", 16}, {"kv_split", 2}}, .n_tunables = 2},
    {CASE("split_off", 5, 9, 4, 3, 41, 41, 64), .tunables = {{"B_kv", 16}, {"kv_split", 0}},
     .n_tunables = 2},
    /* an f16 cache: the one-row items and the segments read it widened */
    {CASE("f16/decode_gqa4", 8, 8, 4, 2, 48, 48, 64), .tunables = {{"B_kv", 16}}, .n_tunables = 1},
    {CASE("f16/split_b16", 9, 9, 4, 3, 48, 48, 64), .tunables = {{"B_kv", 16}, {"kv_split", 4}},
     .n_tunables = 2},
    {CASE("f16/window_d40", 7, 8, 4, 1, 64, 64, 40), .params = {{"window", 9}}, .n_params = 1,
     .tunables = {{"B_kv", 16}, {"kv_split", 2}}, .n_tunables = 2},
    {CASE("llama1b_12", 12, 32, 13, 8, 512, 512, 64), .extensive = true, .bench = true},
};

FE_OP_DEFINE(slot_mha) {
    .name = "SlotMHA",
    .summary = "out = softmax(scale * RoPE(q) k^T) v for each row over its own slot of a "
               "slotted KV cache up to its own position (per-call operands): one step for "
               "every row; causal, sliding window, grouped-query heads; the first rows rows",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .reference = reference,
    .kernels = slot_mha_kernels, .n_kernels = FE_COUNT(slot_mha_kernels),
    .resolve = resolve,
    .cost = cost,
    .workspace = workspace,
    .check = check,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-4, .atol = 2e-5,
    .roof = FE_ROOF_READ,
};
