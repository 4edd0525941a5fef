/* ops/gather/gather.c: Gather, rows of a table by ids (an embedding lookup): out[r] =
 * table[ids[r]] widened to f32, for the first rows ids. The table may be f32, bf16, f16 or a
 * GGUF block type (q8_0, q4_0, q4_1, q5_0: D a multiple of 32; q4_k, q6_k: of 256); ids are i32, host- or graph-made.
 * check() refuses any id outside [0, V) among the first rows ids before any work; one that
 * gets past it (ids a graph step makes after the call was checked) makes its row NaN and is
 * never used to read. The reference is fe_dequant_row on each row; the kernels match it bit
 * for bit (tolerance 0). */
#include <stdio.h>
#include <string.h>

#include "ops/gather/gather.h"
#include "core/quant.h"

/* tile: elements one vector step widens */
FE_KERNELS(gather, 1, 8, 16);

#define TABLE_DTYPES                                                                       \
    (FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_BF16) | FE_DT(FE_DTYPE_F16) | FE_DT(FE_DTYPE_I32) | \
     FE_DT(FE_DTYPE_Q8_0) | FE_DT(FE_DTYPE_Q4_0) | FE_DT(FE_DTYPE_Q4_1) |                     \
     FE_DT(FE_DTYPE_Q5_0) | FE_DT(FE_DTYPE_Q4_K) | FE_DT(FE_DTYPE_Q6_K))

static const fe_tunable_decl tunables[] = {
    [GATHER_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [GATHER_CPI] = {"cols_per_item", {.kind = FE_DOMAIN_CHOICES, .choices = {128, 512, 2048},
                                      .n_choices = 3}, 512, true,
                    "columns per work item: workers split the bounded rows x column blocks "
                    "(smaller blocks spread one id over more workers)"},
};

/* ids are drawn in [0, 1023] by the tests (every case's table has at least 1024 rows), and
 * below V wherever the table is smaller (a model's, under the tuner) */
static const fe_operand_decl operands[] = {
    {"table", FE_IN, TABLE_DTYPES, 2, 2},
    {"ids", FE_IN, FE_DT(FE_DTYPE_I32), 1, 1, .draw_lo = 0, .draw_hi = 1023,
     .draw_below = "V"},
    {"out", FE_OUT, FE_DT(FE_DTYPE_F32) | FE_DT(FE_DTYPE_I32), 2, 2}, /* i32 for an i32 table */
};

static const char *const extents[] = {[GATHER_V] = "V", [GATHER_D] = "D", [GATHER_N] = "n"};

static const fe_value_decl values[] = {
    [GATHER_V_ROWS] = {"rows", "n", 0, "ids to look up: the first rows (later rows of out "
                       "are untouched)", 1, 0, FE_MAP_BOUND, 1},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *t = &c->operands[0], *ids = &c->operands[1], *out = &c->operands[2];
    int64_t V = t->shape[0], D = t->shape[1], n = ids->shape[0];
    const fe_dtype_traits *tr = fe_dtype_info(t->dtype);
    if (D % tr->block != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "table is %s with rows of %lld; %s rows must be a "
                            "multiple of %d long (whole blocks)", tr->name, (long long)D,
                            tr->name, tr->block);
    if (out->shape[0] != n || out->shape[1] != D)
        return fe_op_refuse(c, FE_E_SHAPE, "out is (%lld, %lld); it must be (n, D) = (%lld, "
                            "%lld): one table row per id", (long long)out->shape[0],
                            (long long)out->shape[1], (long long)n, (long long)D);
    fe_dtype want = t->dtype == FE_DTYPE_I32 ? FE_DTYPE_I32 : FE_DTYPE_F32;
    if (out->dtype != want)
        return fe_op_refuse(c, FE_E_DTYPE, "out is %s; a %s table gathers into %s", fe_dtype_info(out->dtype)->name,
                            tr->name, fe_dtype_info(want)->name);
    c->ext[GATHER_V] = V;
    c->ext[GATHER_D] = D;
    c->ext[GATHER_N] = n;
    return FE_OK;
}

/* out = (n, D) f32 from table (V, D) and ids (n) */
static void shape_out(fe_op_ctx *c) {
    const fe_tensor *t = &c->operands[0], *ids = &c->operands[1];
    if (t->rank != 2 || ids->rank != 1) return; /* infer names the rule */
    int64_t shape[2] = {ids->shape[0], t->shape[1]};
    c->operands[2] = fe_tensor_contiguous(NULL, t->dtype == FE_DTYPE_I32 ? FE_DTYPE_I32 : FE_DTYPE_F32, 2, shape);
}

static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    (void)d;
    const int32_t *ids = a->t[1].data;
    int64_t V = a->ext[GATHER_V];
    for (int64_t r = 0; r < a->v[GATHER_V_ROWS]; r++) {
        if (ids[r] >= 0 && ids[r] < V) continue;
        snprintf(why, why_n, "ids[%lld] = %lld is %s; every id among the first rows = %lld "
                 "must lie in [0, V) = [0, %lld): fix the id (a tokenizer or vocabulary "
                 "mismatch?)", (long long)r, (long long)ids[r],
                 ids[r] < 0 ? "negative" : "past the table's rows", (long long)a->v[GATHER_V_ROWS],
                 (long long)V);
        return FE_E_BOUNDS;
    }
    return FE_OK;
}

static void reference(const fe_args *a, const fe_design *d) {
    const fe_dtype dt = d->dtypes[0];
    const int64_t D = a->ext[GATHER_D];
    const unsigned char *table = a->t[0].data;
    const int32_t *ids = a->t[1].data;
    for (int64_t r = 0; r < a->v[GATHER_V_ROWS]; r++) {
        float *row = (float *)a->t[2].data + r * D;
        if (ids[r] < 0 || ids[r] >= a->ext[GATHER_V]) fe_gather_bad_row(row, D);
        else if (dt == FE_DTYPE_I32) memcpy(row, table + (size_t)ids[r] * (size_t)D * 4, (size_t)D * 4);
        else fe_dequant_row(dt, table + fe_gather_bytes(dt, (int64_t)ids[r] * D), row, D);
    }
}

/* per row: the table row's bytes, the id, the f32 row written; a multiply per element for
 * block types */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    double rows = (double)a->v[GATHER_V_ROWS], D = (double)a->ext[GATHER_D];
    out->flops = fe_dtype_info(d->dtypes[0])->block > 1 ? rows * D : 0.0;
    out->bytes = rows * ((double)fe_gather_bytes(d->dtypes[0], a->ext[GATHER_D]) + 4.0 + 4.0 * D);
}

/* dims = {n, V, D}, dims[3] = the table's dtype (the last dim, D, is what the catalog
 * varies; the first case is f32 so any D is valid) */
static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    int64_t ts[2] = {c->dims[1], c->dims[2]}, os[2] = {c->dims[0], c->dims[2]};
    out[0] = fe_tensor_contiguous(NULL, (fe_dtype)c->dims[3], 2, ts);
    out[1] = fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, &c->dims[0]);
    out[2] = fe_tensor_contiguous(NULL, c->dims[3] == FE_DTYPE_I32 ? FE_DTYPE_I32 : FE_DTYPE_F32, 2, os);
}

static const fe_case cases[] = {
    {.name = "f32", .dims = {5, 1024, 40, FE_DTYPE_F32}, .n_dims = 3},
    {.name = "bf16", .dims = {7, 1024, 100, FE_DTYPE_BF16}, .n_dims = 3},
    {.name = "f16", .dims = {6, 1030, 77, FE_DTYPE_F16}, .n_dims = 3},
    {.name = "q8_0", .dims = {5, 1024, 64, FE_DTYPE_Q8_0}, .n_dims = 3},
    {.name = "q4_0", .dims = {4, 1100, 96, FE_DTYPE_Q4_0}, .n_dims = 3},
    {.name = "q4_1", .dims = {9, 1024, 160, FE_DTYPE_Q4_1}, .n_dims = 3},
    {.name = "q5_0", .dims = {5, 1024, 96, FE_DTYPE_Q5_0}, .n_dims = 3},
    {.name = "q4_k", .dims = {5, 1024, 512, FE_DTYPE_Q4_K}, .n_dims = 3},
    {.name = "q6_k", .dims = {7, 1024, 768, FE_DTYPE_Q6_K}, .n_dims = 3},
    {.name = "wide_q6_k", .dims = {2, 1024, 2304, FE_DTYPE_Q6_K}, .n_dims = 3},
    {.name = "i32", .dims = {6, 1024, 3, FE_DTYPE_I32}, .n_dims = 3},
    {.name = "one_id_wide_bf16", .dims = {1, 1024, 1100, FE_DTYPE_BF16}, .n_dims = 3},
    {.name = "wide_f16", .dims = {2, 1024, 1061, FE_DTYPE_F16}, .n_dims = 3},
    {.name = "wide_q4_1", .dims = {3, 1024, 1056, FE_DTYPE_Q4_1}, .n_dims = 3},
    {.name = "wide_q8_0", .dims = {2, 1024, 1088, FE_DTYPE_Q8_0}, .n_dims = 3},
    {.name = "512_of_128256x2048_bf16", .dims = {512, 128256, 2048, FE_DTYPE_BF16}, .n_dims = 3,
     .extensive = true, .bench = true},
};

FE_OP_DEFINE(gather) {
    .name = "Gather",
    .summary = "out[r] = table[ids[r]] as f32 (embedding lookup; f32/bf16/f16/q8_0/q4_0/q4_1/q5_0/q4_k/q6_k table)",
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .shape_out = shape_out,
    .reference = reference,
    .kernels = gather_kernels, .n_kernels = FE_COUNT(gather_kernels),
    .cost = cost,
    .check = check,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 0, .atol = 0,
    .roof = FE_ROOF_READ,
};
