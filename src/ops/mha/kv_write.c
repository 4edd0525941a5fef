/* ops/mha/kv_write.c: KVWrite, the KV write of a batched decode step: each of B rows puts its
 * key (turned by RoPE at the row's position when a table is given) and its value into its own
 * slot of a slotted KV cache (mha.h), at its own position: kv[slots[r], positions[r]] = k[r]
 * and kv[N + slots[r], positions[r]] = v[r]. Slots and positions are operands (per call, the
 * graph's inputs), so one step writes every row, where a write through per-call offsets
 * (fe_at) takes a step per row. Rows are written in order: where two rows give the same slot
 * and position (the unused rows of a decode step, all in the sink slot), the later one's
 * values stay. Cache rows no row names are untouched. The declaration, its double-precision
 * reference, cost, checks and test cases; the kernel is in kernels.inc. */
#include <stdio.h>

#include "ops/mha/mha.h"

static const char *const forms[] = {"rotate_half", "interleaved", NULL};

static const fe_param_decl params[] = {
    [KVW_P_FORM] = {"form", FE_PARAM_CHOICE, ROPE_ROTATE_HALF, 1, 0, forms,
                    "RoPE's pairs, as RoPE's form: rotate_half (i, i + D/2), interleaved "
                    "(2i, 2i + 1); unused without a table"},
};

static const fe_tunable_decl tunables[] = {
    [0] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true,
           "workers the step uses: each takes whole kv heads, every row"},
};

/* Tests draw slots in [0, 3] and positions in [0, 40] (cases give at least 4 slots of 41
 * positions); the tuner keeps them below N and L. */
static const fe_operand_decl operands[] = {
    [KVW_K] = {"k", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3},
    [KVW_V] = {"v", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3},
    [KVW_SLOTS] = {"slots", FE_IN, FE_DT(FE_DTYPE_I32), 1, 1, .draw_lo = 0, .draw_hi = 3,
                   .draw_below = "N"},
    [KVW_POSITIONS] = {"positions", FE_IN, FE_DT(FE_DTYPE_I32), 1, 1, .draw_lo = 0,
                       .draw_hi = 40, .draw_below = "L"},
    [KVW_TABLE] = {"table", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .optional = true, .draw_lo = -1,
                   .draw_hi = 1},
    [KVW_KV] = {"kv", FE_OUT, FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_F16), 4, 4},
};

static const char *const extents[] = {[SLOT_B] = "B", [SLOT_N] = "N", [SLOT_L] = "L",
                                       [SLOT_D] = "D"};

static const fe_value_decl values[] = {
    [SLOT_V_ROWS] = {"rows", "B", 0, "rows to write: the first rows (later rows write nothing)",
                     KVW_K, 0, FE_MAP_BOUND},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *k = &c->operands[KVW_K], *kv = &c->operands[KVW_KV];
    fe_status st = fe_op_same_shape(c, KVW_K, KVW_V);
    if (st != FE_OK) return st;
    if (kv->shape[2] != k->shape[1])
        return fe_op_refuse(c, FE_E_SHAPE, "k has %lld heads but kv holds %lld; give the cache "
                            "the heads of k", (long long)k->shape[1], (long long)kv->shape[2]);
    return fe_slot_infer(c, KVW_K, KVW_KV, KVW_SLOTS, KVW_POSITIONS, KVW_TABLE);
}

/* kv's shape and dtype are the cache's, which the inputs do not give: a graph writes it into
 * its destination (fe_apply_into), whose shape infer then checks. */
static void shape_out(fe_op_ctx *c) { c->operands[KVW_KV] = (fe_tensor){.dtype = FE_DTYPE_COUNT}; }

/* In an f16 cache each value is the f32 result rounded to f16 once (to nearest even) */
static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    (void)d;
    return a->t[KVW_KV].dtype == FE_DTYPE_F16 ? (size_t)nth * fe_mha_lines(a->ext[SLOT_D]) : 0;
}

/* element i of kv (f32 or f16) = x */
static void kv_put(const fe_tensor *kv, int64_t i, float x) {
    if (kv->dtype == FE_DTYPE_F16) ((uint16_t *)kv->data)[i] = fe_f32_to_f16(x);
    else ((float *)kv->data)[i] = x;
}

static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    (void)d;
    return fe_slot_rows_check(a, KVW_SLOTS, KVW_POSITIONS, why, why_n);
}

/* Plain double, row by row in order, straight from the definition. */
static void reference(const fe_args *a, const fe_design *d) {
    const float *k = a->t[KVW_K].data, *v = a->t[KVW_V].data, *table = a->t[KVW_TABLE].data;
    const int32_t *slots = a->t[KVW_SLOTS].data, *positions = a->t[KVW_POSITIONS].data;
    const fe_tensor *kv = &a->t[KVW_KV];
    const int64_t H = a->t[KVW_K].shape[1], D = a->ext[SLOT_D], half = D / 2;
    const int64_t N = a->ext[SLOT_N], S = a->t[KVW_KV].shape[1];
    const bool interleaved = d->params[KVW_P_FORM] == ROPE_INTERLEAVED;
    for (int64_t r = 0; r < a->v[SLOT_V_ROWS]; r++) {
        const int64_t p = positions[r];
        for (int64_t h = 0; h < H; h++) {
            const float *kr = k + (r * H + h) * D, *vr = v + (r * H + h) * D;
            const int64_t kd = (((int64_t)slots[r] * S + p) * H + h) * D;
            const int64_t vd = (((N + slots[r]) * S + p) * H + h) * D;
            for (int64_t i = 0; i < D; i++) kv_put(kv, vd + i, vr[i]);
            if (!table) {
                for (int64_t i = 0; i < D; i++) kv_put(kv, kd + i, kr[i]);
                continue;
            }
            const float *c = table + p * D;
            for (int64_t i = 0; i < half; i++) {
                int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
                double xa = kr[i0], xb = kr[i1], cs = c[i], sn = c[half + i];
                kv_put(kv, kd + i0, (float)(xa * cs - xb * sn));
                kv_put(kv, kd + i1, (float)(xb * cs + xa * sn));
            }
        }
    }
}

/* Per row and kv head: D floats of k and of v read and written, RoPE's 3 flops an element of
 * k, and one table row a row. */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    const double rows = (double)a->v[SLOT_V_ROWS], D = (double)a->ext[SLOT_D];
    const double n = rows * (double)a->t[KVW_K].shape[1] * D, turned = a->t[KVW_TABLE].rank ? 1 : 0;
    const double kvb = (double)fe_dtype_info(d->dtypes[KVW_KV])->size;
    out->flops = 3.0 * n * turned;
    out->bytes = (8.0 + 2.0 * kvb) * n + 4.0 * rows * D * turned;
}

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    fe_slot_operands(c, KVW_K, KVW_KV, KVW_SLOTS, KVW_POSITIONS, KVW_TABLE, false, out);
    out[KVW_V] = out[KVW_K];
}

/* tile: pairs one vector step turns (as RoPE's) */
FE_KERNELS(kv_write, 1, 8, 16);

#define CASE(nm, b, n, hkv, s, p, d) \
    .name = nm, .dims = {b, SLOT_CASE_HEADS(n, hkv, hkv), SLOT_CASE_CACHE(s, p), (d) / 2}, .n_dims = 4
#define INTERLEAVED .params = {{"form", ROPE_INTERLEAVED}}, .n_params = 1

static const fe_case cases[] = {
    /* more rows than slots: some share a slot, some a slot and a position */
    {CASE("decode_rows", 8, 4, 2, 48, 48, 64)},
    {CASE("interleaved", 5, 4, 3, 41, 64, 32), INTERLEAVED},
    {CASE("no_table", 6, 5, 2, 41, 0, 48)},
    {CASE("table_shorter", 3, 4, 1, 64, 41, 64)},
    {CASE("one_row", 1, 4, 4, 41, 41, 16)},
    /* SmolLM2 (3 kv heads of 64) and Llama 3.2 1B (8 kv heads of 64), 12 rows */
    {CASE("smollm2_12", 12, 13, 3, 64, 64, 64)},
    /* an f16 cache: every value rounded once, keys after RoPE */
    {CASE("f16/decode_rows", 8, 4, 2, 48, 48, 64)},
    {CASE("f16/no_table_d40", 6, 5, 2, 41, 0, 40)},
    {CASE("f16/interleaved", 5, 4, 3, 41, 64, 32), INTERLEAVED},
    {CASE("llama1b_12", 12, 13, 8, 512, 512, 64), .extensive = true},
};

FE_OP_DEFINE(kv_write) {
    .name = "KVWrite",
    .summary = "kv[slot, pos] = RoPE(k) and kv[N + slot, pos] = v for each row, at its own slot "
               "and position (per-call operands) of a slotted KV cache: one step for every row",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .shape_out = shape_out,
    .reference = reference,
    .workspace = workspace,
    .kernels = kv_write_kernels, .n_kernels = FE_COUNT(kv_write_kernels),
    .cost = cost,
    .check = check,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-6, .atol = 2e-6,
    .roof = FE_ROOF_TRIAD,
};
