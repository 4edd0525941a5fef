/* ops/mha/mha.c: MHA, scaled-dot-product attention of query rows over a KV cache:
 * out[i, h] = softmax_j(scale * q[i, h] . k[j, h / group]) . v[j, h / group] over the keys j
 * row i attends (mha.h: causal, sliding window, only the first kv_valid keys), with
 * grouped-query heads. Per-call values bound the work: kv_valid keys, q_rows rows at
 * positions q_offset.., so a decode step over a 32768-position cache holding 512 keys reads
 * 512 keys. The declaration, its double-precision reference, cost, checks and test cases. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "ops/mha/mha.h"

static const fe_param_decl params[] = {
    [MHA_P_CAUSAL] = {"causal", FE_PARAM_BOOL, 1, 0, 1, NULL,
                      "1: a query at position p attends keys <= p; 0: every valid key"},
    [MHA_P_WINDOW] = {"window", FE_PARAM_INT, 0, 0, 1e9, NULL,
                      "sliding window w (0 = none): a query at p attends keys in (p - w, p] "
                      "(bidirectional: (p - w, p + w))"},
    [MHA_P_SCALE] = {"scale", FE_PARAM_FLOAT, 0, 1, 0, NULL,
                     "the factor on q . k; 0 means 1 / sqrt(head_dim)"},
};

static const fe_tunable_decl tunables[] = {
    [MHA_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [MHA_BQ] = {"B_q", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 4, 8, 16, 32, 64, 128}, .n_choices = 7},
                16, true,
                "query rows per work item: each key/value block read is reused by B_q rows "
                "times the group's q heads; workers take (row block, kv head) items "
                "(row_block 2: 128 unless given, and fewer where a call's rows would leave "
                "under four items a worker)"},
    [MHA_BKV] = {"B_kv", {.kind = FE_DOMAIN_CHOICES, .choices = {16, 32, 64, 128, 256},
                          .n_choices = 5}, 64, true,
                 "keys per block: scores of one block live in the workspace; causal and window "
                 "ranges skip whole blocks (row_block 2: 32 unless given)"},
    [MHA_ROWS] = {"row_block", {.kind = FE_DOMAIN_CHOICES, .choices = {0, 1, 2}, .n_choices = 3},
                  0, true,
                  "1: an item of >= 4 rows runs a vector of rows at a time, one lane a row "
                  "(scores by broadcasting keys against q^T, softmax down the keys, no sums "
                  "across lanes); 2: the same on AMX-BF16 tiles over an f16 cache, 16 rows a "
                  "tile, k and v in two bf16 parts (exactly), q and p in three, five tile "
                  "products a product (the f32 paths' tolerance); 0: one row at a time "
                  "(resolve: 1 where bidirectional or Sq >= 16: prefill chunks, 2 there where "
                  "the device has AMX-BF16 and the cache is f16; a given 2 is 1 elsewhere)"},
    [MHA_SPLIT] = {"kv_split", FE_MHA_SPLIT_DOMAIN, 0, true,
                   "S >= 1: the keys cut into S segments of whole B_kv blocks, a work item one "
                   "segment over every kv head (a block's rows, all heads side by side, read "
                   "front to back once), the segments' softmax states combined after a barrier "
                   "(fewer segments where the keys span fewer blocks; one: as 0); 0: items of "
                   "one kv head over all its keys. resolve: the workers (the next choice up) where "
                   "Sq <= B_q, the rows take the one-row path (decode) and the workers do not "
                   "divide the kv heads, else 0; a given 1, or any where Sq > B_q, is 0"},
};

/* row_block: the row-blocked path where attention is bidirectional, as SegmentedMHA's
 * (fe_mha_resolve_rows), and for causal steps of at least a vector of rows, the prefill
 * chunks: one worker, CPU time, a 256-row chunk at q_offset 256 of a 512-key cache, D 64, it
 * took 0.57x (SmolLM2's heads, 9 / 3) and 0.66x (Llama 3.2 1B's, 32 / 8) the time of the
 * one-row path on AVX-512 and 0.73x on AVX2. A decode step's items are one row, which the
 * row-blocked path leaves to the one-row path anyway; a few rows fill few of a vector's lanes
 * (4 rows: 1.6x the time), hence the bound. The greedy answers the tests pin hold with it.
 * Where the device has AMX-BF16 the same path runs on the tiles (row_block = 2, amx.inc):
 * the Llama 3.2 1B shape's last 512-row chunk of a 2048-token prompt (32 / 8 heads, f16
 * cache), 2 workers of the Xeon, 31.9-32.3 ms on the f32 path, 21.8-22.1 on the tiles. */
static void resolve(fe_op_ctx *c) {
    /* the tiles take an f16 cache, whose values two bf16 parts hold exactly */
    const bool tiles = c->dev->isa >= FE_ISA_AVX512 && c->dev->features.amx_bf16 &&
                       c->operands[1].dtype == FE_DTYPE_F16;
    if (!c->tunable_set[MHA_ROWS]) {
        const bool rows = c->params[MHA_P_CAUSAL] == 0 || c->ext[MHA_SQ] >= FE_MHA_LANES;
        c->tunables[MHA_ROWS] = rows ? (tiles ? 2 : 1) : 0;
        c->tunable_set[MHA_ROWS] = true;
    }
    if (c->tunables[MHA_ROWS] == 2 && !tiles) c->tunables[MHA_ROWS] = 1;
    /* the tiles convert each key block once an item, for B_q rows: 128 and B_kv 32 where
     * not given (the Llama 3.2 1B shape's last chunk of a 2048-token prompt, 2 workers of the
     * Xeon, ms: B_q 32 25.6, 64 23.0-23.3, 128 21.8 at B_kv 32; B_q 128 at B_kv 16 30.0, at
     * 64 23.4-23.8). The kernel takes fewer rows an item where a call's rows would leave
     * fewer than four items a worker (amx.inc). */
    if (c->tunables[MHA_ROWS] == 2) {
        if (!c->tunable_set[MHA_BQ]) c->tunables[MHA_BQ] = 128, c->tunable_set[MHA_BQ] = true;
        if (!c->tunable_set[MHA_BKV]) c->tunables[MHA_BKV] = 32, c->tunable_set[MHA_BKV] = true;
    }
    /* kv_split: a decode step (one row block) has one item per kv head, which reads that
     * head's slice of every key row (a stride of the whole row apart, as the memory serves
     * it worst) and leaves workers idle wherever they do not divide the kv heads (SmolLM2's
     * 3 on 2, a Gemma 3's 1). Segments of the keys split the work evenly and walk them block
     * by block, the next block's whole rows fetched ahead. One decode MHA step of the Llama
     * 3.2 1B shape (32 / 8 heads, D 64), 2 workers of the Zen 4, `ferrum tune MHA
     * case=llama1b_4k causal=1 --value kv_valid=K`, alternated 3-4 times: 4000 keys 829-866
     * us split against 1512-1650 by kv head, 1024 keys 87-108 against 178-244; 128 keys
     * 15-16 against 10-16 (the combine and its barrier). SmolLM2's shape at 4000 keys, split:
     * 274-342 us with the fetch ahead against 310-623 without. */
    const int64_t bq = c->tunable_set[MHA_BQ] ? c->tunables[MHA_BQ] : c->op->tunables[MHA_BQ].def;
    /* a given kv_split that cannot apply is 0, the design it runs: one segment is no cut,
     * and a step of several row blocks (a prefill chunk) has items enough; so the tuner
     * finds those settings the default's design and does not time them */
    if (c->tunable_set[MHA_SPLIT] && (c->tunables[MHA_SPLIT] == 1 || c->ext[MHA_SQ] > bq))
        c->tunables[MHA_SPLIT] = 0;
    if (!c->tunable_set[MHA_SPLIT]) {
        const bool one_row = !c->tunables[MHA_ROWS] || c->ext[MHA_SQ] < 4;
        const int64_t w = c->tunable_set[MHA_WIDTH] ? c->tunables[MHA_WIDTH] : c->dev->n_workers;
        c->tunables[MHA_SPLIT] =
            c->ext[MHA_SQ] <= bq && one_row
                ? fe_mha_split_default(&c->op->tunables[MHA_SPLIT].domain, w)
                : 0;
        c->tunable_set[MHA_SPLIT] = true;
    }
}

/* k and v: f32, or both f16 (a cache in half the bytes; every value widened exactly to f32
 * before it is used, so the arithmetic is the f32 cache's) */
static const fe_operand_decl operands[] = {
    {"q", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3},
    {"k", FE_IN, FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_F16), 3, 3},
    {"v", FE_IN, FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_F16), 3, 3},
    {"out", FE_OUT, FE_DT(FE_DTYPE_F32), 3, 3},
};

static const char *const extents[] = {
    [MHA_SQ] = "Sq", [MHA_S] = "S", [MHA_D] = "D", [MHA_LAST_OFFSET] = "last_offset",
};

/* q_offset lies in [0, last_offset = S - 1] and defaults to 0 (as every offset does);
 * check() refuses a causal query past the keys kv_valid gives. kv_valid 0 with q_rows 0 is an
 * empty step (an encoder's batch slot with no sentence in this call); check() refuses rows
 * with no key to attend. */
static const fe_value_decl values[] = {
    [MHA_V_KV] = {"kv_valid", "S", 0, "keys that exist: positions [0, kv_valid) of the cache",
                  1, 0, FE_MAP_BOUND},
    [MHA_V_ROWS] = {"q_rows", "Sq", 0, "query rows to compute: the first q_rows (later rows "
                    "of out are untouched)", 0, 0, FE_MAP_BOUND},
    [MHA_V_OFFSET] = {"q_offset", "last_offset", 0, "the position of query row 0 (row i sits "
                      "at q_offset + i), at most S - 1: decode gives pos, prefill the chunk's "
                      "start", 0, 0, FE_MAP_NONE},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *q = &c->operands[0], *k = &c->operands[1], *v = &c->operands[2];
    if (k->shape[2] != q->shape[2])
        return fe_op_refuse(c, FE_E_SHAPE, "k is (S, Hkv, D) = (%lld, %lld, %lld) but q has "
                            "head_dim %lld; give k and v the head_dim of q",
                            (long long)k->shape[0], (long long)k->shape[1],
                            (long long)k->shape[2], (long long)q->shape[2]);
    if (q->shape[1] % k->shape[1] != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "q has %lld heads and k %lld: the q heads must be a "
                            "multiple of the kv heads (q head h reads kv head h / group)",
                            (long long)q->shape[1], (long long)k->shape[1]);
    fe_status st = fe_op_same_shape(c, 1, 2);
    if (st == FE_OK) st = fe_op_same_shape(c, 0, 3);
    if (st != FE_OK) return st;
    if (k->dtype != v->dtype)
        return fe_op_refuse(c, FE_E_DTYPE, "k is %s but v is %s: the cache keeps keys and "
                            "values in one dtype; give both f32 or both f16",
                            fe_dtype_info(k->dtype)->name, fe_dtype_info(v->dtype)->name);
    c->ext[MHA_SQ] = q->shape[0];
    c->ext[MHA_S] = k->shape[0];
    c->ext[MHA_D] = q->shape[2];
    c->ext[MHA_LAST_OFFSET] = k->shape[0] - 1; /* check() refuses what kv_valid does not cover */
    return FE_OK;
}

/* Causal attention over a cache needs each query's own key: the last query position must
 * be a valid key. Caught here it is a caller that forgot to write the new position into the
 * cache or to count it in kv_valid; computed anyway it would quietly attend to the past. */
static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    int64_t kv = a->v[MHA_V_KV], rows = a->v[MHA_V_ROWS], off = a->v[MHA_V_OFFSET];
    if (kv == 0 && rows > 0) {
        snprintf(why, why_n, "%lld query rows but kv_valid = 0: a query needs at least one key "
                 "(give kv_valid >= 1, or q_rows 0 for an empty step)", (long long)rows);
        return FE_E_BOUNDS;
    }
    if (d->params[MHA_P_CAUSAL] != 0 && rows > 0 && off + rows > kv) {
        snprintf(why, why_n, "causal attention needs each query's own key: the last query "
                 "position q_offset + q_rows - 1 = %lld must be < kv_valid = %lld (write the "
                 "keys and values of positions up to %lld into the cache and give kv_valid = "
                 "%lld, or fewer rows)", (long long)(off + rows - 1), (long long)kv,
                 (long long)(off + rows - 1), (long long)(off + rows));
        return FE_E_BOUNDS;
    }
    return FE_OK;
}

static size_t workspace(const fe_args *a, const fe_design *d, int nth) {
    const int64_t Hq = a->t[0].shape[1], D = a->ext[MHA_D], split = d->tunables[MHA_SPLIT];
    return (size_t)nth * fe_mha_ws_per_worker(d, Hq / a->t[1].shape[1], D) +
           (size_t)split * fe_mha_segment_bytes(a->ext[MHA_SQ], Hq, D);
}

/* Plain double, one (row, head) at a time, straight from the definition: the mask is taken
 * key by key, independently of fe_mha_keys. */
static void reference(const fe_args *a, const fe_design *d) {
    const float *q = a->t[0].data;
    const fe_tensor *k = &a->t[1], *v = &a->t[2];
    float *out = a->t[3].data;
    const int64_t Hq = a->t[0].shape[1], Hkv = a->t[1].shape[1], D = a->ext[MHA_D];
    const int64_t kv = a->v[MHA_V_KV], off = a->v[MHA_V_OFFSET];
    const int64_t w = (int64_t)d->params[MHA_P_WINDOW];
    const bool causal = d->params[MHA_P_CAUSAL] != 0;
    const double scale = fe_mha_scale(d, D);
    double *sc = fe_malloc((size_t)kv * sizeof *sc), *acc = fe_malloc((size_t)D * sizeof *acc);
    if (!sc || !acc) goto done;
    for (int64_t i = 0; i < a->v[MHA_V_ROWS]; i++) {
        const int64_t p = off + i;
        for (int64_t h = 0; h < Hq; h++) {
            const float *qv = q + (i * Hq + h) * D;
            const int64_t hk = h / (Hq / Hkv);
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < kv; j++) {
                bool in = (!causal || j <= p) && (w == 0 || (j > p - w && (causal || j < p + w)));
                sc[j] = -INFINITY;
                if (!in) continue;
                double dot = 0;
                for (int64_t c = 0; c < D; c++)
                    dot += (double)qv[c] * fe_mha_kv_at(k, (j * Hkv + hk) * D + c);
                sc[j] = scale * dot;
                mx = fmax(mx, sc[j]);
            }
            for (int64_t c = 0; c < D; c++) acc[c] = 0;
            for (int64_t j = 0; j < kv; j++) {
                if (sc[j] == -INFINITY) continue;
                double e = exp(sc[j] - mx);
                sum += e;
                for (int64_t c = 0; c < D; c++)
                    acc[c] += e * fe_mha_kv_at(v, (j * Hkv + hk) * D + c);
            }
            for (int64_t c = 0; c < D; c++)
                out[(i * Hq + h) * D + c] = sum > 0 ? (float)(acc[c] / sum) : 0.0f;
        }
    }
done:
    fe_free(sc);
    fe_free(acc);
}

/* Per attended (row, head, key): q . k and p . v, 2D multiply-adds = 4D FLOPs, plus scale,
 * max, e^ (counted as one) and sum. Bytes: q and out rows once, and every k and v row any
 * query attends, once (the union of the rows' key ranges). */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    const int64_t Hq = a->t[0].shape[1], Hkv = a->t[1].shape[1], D = a->ext[MHA_D];
    const int64_t kv = a->v[MHA_V_KV], rows = a->v[MHA_V_ROWS], off = a->v[MHA_V_OFFSET];
    double keys = 0;
    int64_t first = 0, last = 0, lo, hi;
    for (int64_t i = 0; i < rows; i++) {
        fe_mha_keys(d, kv, off + i, &lo, &hi);
        if (hi > lo) keys += (double)(hi - lo);
        if (i == 0) first = lo;
        last = hi;
    }
    double union_keys = rows > 0 && last > first ? (double)(last - first) : 0;
    const double kvb = (double)fe_dtype_info(d->dtypes[1])->size;
    out->flops = keys * (double)Hq * (4.0 * (double)D + 4.0);
    out->bytes = 4.0 * 2.0 * (double)rows * (double)Hq * (double)D +
                 kvb * 2.0 * union_keys * (double)Hkv * (double)D;
}

/* Test shapes: dims = {Sq, S, MHA_HEADS(Hq, Hkv), D}; D last, so the catalog's tile edges
 * vary the head_dim. The catalog runs kv_valid and q_rows full, about halved and minimal,
 * with q_offset 0: S and the halves of S land kv_valid on and beside the B_kv = 64 edges.
 * A name starting "f16/" gives k and v in f16. */
#define MHA_HEADS(hq, hkv) ((hq) * 1000 + (hkv))

static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    int64_t hq = c->dims[2] / 1000, hkv = c->dims[2] % 1000;
    int64_t qs[3] = {c->dims[0], hq, c->dims[3]}, ks[3] = {c->dims[1], hkv, c->dims[3]};
    const fe_dtype kvt = strncmp(c->name, "f16/", 4) == 0 ? FE_DTYPE_F16 : FE_DTYPE_F32;
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, qs);
    out[1] = fe_tensor_contiguous(NULL, kvt, 3, ks);
    out[2] = out[1];
    out[3] = out[0];
}

FE_KERNELS(mha, 4, 32, 64);

#define CASE(nm, sq, s, hq, hkv, d) .name = nm, .dims = {sq, s, MHA_HEADS(hq, hkv), d}, .n_dims = 4
#define BIDIR {"causal", 0}

static const fe_case cases[] = {
    /* prefill chunk at an offset, group 4; the catalog varies D around each tile here */
    {CASE("prefill_gqa4", 5, 48, 4, 1, 64)},
    {CASE("decode_mha", 1, 40, 4, 4, 64)},
    {CASE("decode_gqa8_d128", 1, 64, 16, 2, 128)},
    {CASE("prefill_gqa8_d256", 3, 40, 8, 1, 256)},
    {CASE("prefill_d32", 9, 70, 4, 2, 32)},
    {CASE("kv_valid_1", 1, 1, 4, 2, 64)},
    {CASE("kv_tile_edge", 3, 128, 4, 2, 64)},
    {CASE("rows_past_block", 33, 130, 2, 1, 64)},
    {CASE("window", 7, 96, 4, 2, 64), .params = {{"window", 16}}, .n_params = 1},
    {CASE("window_decode", 1, 200, 8, 1, 64), .params = {{"window", 33}}, .n_params = 1},
    {CASE("bidirectional", 6, 63, 4, 2, 48), .params = {BIDIR}, .n_params = 1},
    {CASE("bidir_kv_edge", 4, 65, 2, 1, 64), .params = {BIDIR}, .n_params = 1},
    {CASE("bidir_window", 5, 70, 4, 1, 32), .params = {BIDIR, {"window", 8}}, .n_params = 2},
    {CASE("encoder", 16, 16, 2, 2, 64), .params = {BIDIR}, .n_params = 1},
    {CASE("scaled_sharp", 3, 20, 2, 1, 40), .params = {{"scale", 0.5}}, .n_params = 1,
     .lo = -4, .hi = 4},
    /* the row-blocked path (items of >= 4 rows, a vector of rows at a time; resolve's choice
     * where bidirectional) pinned for causal rows: rows past a vector and a short last group,
     * head_dim off the vector width, grouped heads; windows both sides; and the one-row path
     * pinned where resolve would take the other */
    {CASE("rows_d40", 20, 60, 3, 3, 40), .tunables = {{"row_block", 1}}, .n_tunables = 1},
    {CASE("rows_gqa3_sharp", 12, 30, 6, 2, 64), .params = {{"scale", 0.5}}, .n_params = 1,
     .lo = -4, .hi = 4, .tunables = {{"row_block", 1}}, .n_tunables = 1},
    {CASE("rows_bidir_window", 18, 50, 2, 2, 24), .params = {BIDIR, {"window", 6}},
     .n_params = 2},
    /* row_block = 2, the AMX tiles over an f16 cache (1 where the device has none, or the
     * cache is f32: the row-blocked path): an item past one tile of 16 rows and a short last
     * tile, B_q's tiles of 64 rows with a causal diagonal inside a tile, head_dims off the 32
     * values a tile step takes (40, 24) and past two value tiles (D 128, 256), blocks of 16
     * keys (shorter than a tile of keys), of 128 and 256, windows both sides, grouped heads by
     * three and four, sharp scores, rows with few keys; and an f32 cache given 2 */
    {CASE("f16/tiles_rows_past_tile", 20, 60, 4, 1, 64), .tunables = {{"row_block", 2}},
     .n_tunables = 1},
    {CASE("f16/tiles_chunk", 70, 150, 6, 2, 64), .tunables = {{"row_block", 2}, {"B_q", 64}},
     .n_tunables = 2},
    {CASE("f16/tiles_d40_gqa3", 33, 90, 9, 3, 40), .tunables = {{"row_block", 2}},
     .n_tunables = 1},
    {CASE("f16/tiles_d24_bidir_window", 18, 50, 2, 2, 24), .params = {BIDIR, {"window", 6}},
     .n_params = 2, .tunables = {{"row_block", 2}}, .n_tunables = 1},
    {CASE("f16/tiles_d128_bkv16", 17, 70, 4, 2, 128),
     .tunables = {{"row_block", 2}, {"B_kv", 16}}, .n_tunables = 2},
    {CASE("f16/tiles_d256_bkv256", 24, 300, 4, 1, 256), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"row_block", 2}, {"B_kv", 256}, {"B_q", 32}}, .n_tunables = 3},
    {CASE("f16/tiles_bkv128_window", 40, 200, 4, 2, 64), .params = {{"window", 50}},
     .n_params = 1, .tunables = {{"row_block", 2}, {"B_kv", 128}, {"B_q", 64}},
     .n_tunables = 3},
    {CASE("f16/tiles_sharp", 16, 40, 4, 4, 32), .params = {{"scale", 0.5}}, .n_params = 1,
     .lo = -4, .hi = 4, .tunables = {{"row_block", 2}}, .n_tunables = 1},
    {CASE("f16/tiles_d40_bidir", 21, 45, 3, 1, 40), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"row_block", 2}}, .n_tunables = 1},
    {CASE("tiles_f32_cache", 20, 60, 4, 1, 64), .tunables = {{"row_block", 2}},
     .n_tunables = 1},
    /* resolve's tiles defaults (B_q 128, B_kv 32): eight row tiles an item, a last item of
     * 4 rows; and a call whose rows leave too few items, so the kernel takes fewer a time */
    {CASE("f16/tiles_bq128", 260, 300, 8, 4, 64)},
    {CASE("f16/tiles_few_items", 40, 100, 4, 1, 64), .tunables = {{"row_block", 2}},
     .n_tunables = 1},
    /* kv_split: key segments over every kv head, combined after the step's barrier. The
     * catalog's values keep q_offset at 0, where a causal decode row attends one key, so the
     * one-row cases are bidirectional (the one query attends every key, a decode step's work
     * at the cache's end): keys over more blocks than segments, over fewer (the segments cut
     * to the blocks), a window; causal rows whose ranges end in different segments (some rows
     * with none in the last); several bidirectional rows; and 0 pinned (items by kv head)
     * where resolve would split */
    {CASE("split_decode_gqa3", 1, 300, 9, 3, 64), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"kv_split", 2}}, .n_tunables = 1},
    {CASE("split_8_short", 1, 100, 4, 1, 32), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"kv_split", 8}}, .n_tunables = 1},
    {CASE("split_window", 1, 400, 8, 2, 64), .params = {BIDIR, {"window", 150}}, .n_params = 2,
     .tunables = {{"kv_split", 4}, {"B_kv", 32}}, .n_tunables = 2},
    {CASE("split_rows_causal", 30, 30, 4, 2, 48),
     .tunables = {{"kv_split", 2}, {"B_kv", 16}, {"B_q", 32}, {"row_block", 0}}, .n_tunables = 4},
    {CASE("split_bidir_rows", 3, 150, 6, 3, 40), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"kv_split", 4}, {"row_block", 0}}, .n_tunables = 2},
    {CASE("split_off", 1, 256, 9, 3, 64), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"kv_split", 0}}, .n_tunables = 1},
    {CASE("one_row_bidir", 9, 40, 4, 2, 32), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"row_block", 0}}, .n_tunables = 1},
    {CASE("one_row_causal", 33, 130, 9, 3, 64), .tunables = {{"row_block", 0}},
     .n_tunables = 1},
    /* K and V in f16 (the cache's half-width form): each path widens a block's rows of one
     * kv head into the workspace first. The row-blocked path (a causal chunk, a bidirectional
     * window, a head_dim off the vector), the one-row items (grouped heads by four and by
     * one, several rows), the segments of a decode step (blocks past the segments, a
     * window), and a head_dim with a tail */
    {CASE("f16/prefill_gqa4", 5, 48, 4, 1, 64)},
    {CASE("f16/rows_causal", 20, 70, 8, 2, 40), .tunables = {{"row_block", 1}}, .n_tunables = 1},
    {CASE("f16/rows_bidir_window", 18, 50, 2, 2, 24), .params = {BIDIR, {"window", 6}},
     .n_params = 2},
    {CASE("f16/one_row_gqa4", 9, 70, 8, 2, 64), .tunables = {{"row_block", 0}}, .n_tunables = 1},
    {CASE("f16/one_row_mha", 12, 40, 3, 3, 33), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"row_block", 0}}, .n_tunables = 1},
    {CASE("f16/split_decode_gqa3", 1, 300, 9, 3, 64), .params = {BIDIR}, .n_params = 1,
     .tunables = {{"kv_split", 2}}, .n_tunables = 1},
    {CASE("f16/split_window", 1, 400, 8, 2, 64), .params = {BIDIR, {"window", 150}},
     .n_params = 2, .tunables = {{"kv_split", 4}, {"B_kv", 32}}, .n_tunables = 2},
    {CASE("f16/split_rows_causal", 30, 30, 4, 2, 48),
     .tunables = {{"kv_split", 2}, {"B_kv", 16}, {"B_q", 32}, {"row_block", 0}}, .n_tunables = 4},
    /* Llama 3.2 1B decode (Hq 32, Hkv 8, D 64) over a full cache. Benchmarks run values at
     * their defaults, where q_offset is 0; bidirectional, the one query attends every key,
     * the same work as a causal decode step at the cache's last position. bench_mha times
     * the causal step itself. */
    {CASE("llama1b_512", 1, 512, 32, 8, 64), .params = {BIDIR}, .n_params = 1,
     .extensive = true, .bench = true},
    {CASE("llama1b_4k", 1, 4096, 32, 8, 64), .params = {BIDIR}, .n_params = 1,
     .extensive = true, .bench = true},
    {CASE("llama1b_32k", 1, 32768, 32, 8, 64), .params = {BIDIR}, .n_params = 1,
     .extensive = true, .bench = true},
    {CASE("f16/llama1b_4k", 1, 4096, 32, 8, 64), .params = {BIDIR}, .n_params = 1,
     .extensive = true, .bench = true},
    {CASE("llama1b_prefill", 65, 1024, 32, 8, 64), .extensive = true},
};

FE_OP_DEFINE(mha) {
    .name = "MHA",
    .summary = "out = softmax(scale * q k^T) v over a KV cache: causal or not, sliding window, "
               "grouped-query heads; the first kv_valid keys, q_rows rows at q_offset",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .reference = reference,
    .kernels = mha_kernels, .n_kernels = FE_COUNT(mha_kernels),
    .resolve = resolve,
    .cost = cost,
    .workspace = workspace,
    .check = check,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-4, .atol = 2e-5,
    .roof = FE_ROOF_READ,
};
