/* ops/rope/rope.c: RoPE, rotary position embedding: y = x rotated pairwise by the angles of
 * positions pos .. pos + rows - 1, read from a precomputed cos/sin table (a model builds
 * one, with Llama 3 frequency scaling: lm/model/rope_table.h).
 *
 * x (S, H, D) f32, table (P, D) f32, y (S, H, D) f32 (may be x). Row r of x, every head,
 * takes table row pos + r: cos of its D/2 angles in columns [0, D/2), sin in [D/2, D). Pairs
 * are (i, i + D/2) for form rotate_half (Llama / GPT-NeoX) or (2i, 2i + 1) for interleaved
 * (GPT-J, Meta's original Llama); pair i turns by angle i. check() refuses pos + rows > P
 * before any work. The reference works in double. */
#include <stdio.h>

#include "ops/rope/rope.h"

/* tile: pairs one vector step rotates (rotate_half: VW pairs; interleaved VW / 2) */
FE_KERNELS(rope, 1, 8, 16);

static const char *const forms[] = {"rotate_half", "interleaved", NULL};

static const fe_param_decl params[] = {
    [ROPE_FORM] = {"form", FE_PARAM_CHOICE, ROPE_ROTATE_HALF, 1, 0, forms,
                   "which elements pair up: rotate_half (i, i + D/2), Llama's; interleaved "
                   "(2i, 2i + 1)"},
};

static const fe_tunable_decl tunables[] = {
    [ROPE_WIDTH] = {"WIDTH", {.kind = FE_DOMAIN_WIDTH}, 0, true, "workers the step uses"},
    [ROPE_HPI] = {"heads_per_item", {.kind = FE_DOMAIN_CHOICES, .choices = {1, 4, 16},
                                     .n_choices = 3}, 4, true,
                  "head vectors per work item: workers split the bounded rows x heads in "
                  "whole items (coarser items keep short heads of two workers off one line)"},
};

static const fe_operand_decl operands[] = {
    {"x", FE_IN, FE_DT(FE_DTYPE_F32), 3, 3},
    {"table", FE_IN, FE_DT(FE_DTYPE_F32), 2, 2, .draw_lo = -1, .draw_hi = 1},
    {"y", FE_OUT, FE_DT(FE_DTYPE_F32), 3, 3},
};

static const char *const extents[] = {[ROPE_S] = "S", [ROPE_H] = "H", [ROPE_D] = "D",
                                       [ROPE_LAST] = "last_pos"};

/* pos lies in [0, last_pos = P - 1] (an offset defaults to 0); check() refuses
 * pos + rows > P, so a chunk bounded to fewer rows may start near the table's end. */
static const fe_value_decl values[] = {
    [ROPE_V_ROWS] = {"rows", "S", 0, "rows of x to rotate: the first rows (all heads)", 0, 0,
                     FE_MAP_BOUND},
    [ROPE_V_POS] = {"pos", "last_pos", 0, "position of row 0: row r takes table row pos + r "
                     "(pos + rows <= P)", 1, 0,
                     FE_MAP_NONE},
};

static fe_status infer(fe_op_ctx *c) {
    const fe_tensor *x = &c->operands[0], *t = &c->operands[1];
    int64_t D = x->shape[2];
    if (D % 2 != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "x is (S, H, D) with D = %lld; D must be even (D/2 "
                            "pairs turn): give an even head size", (long long)D);
    if (t->shape[1] != D)
        return fe_op_refuse(c, FE_E_SHAPE, "table is (%lld, %lld); it must be (P, D) = (P, "
                            "%lld), one row of D/2 cos then D/2 sin per position: build it for "
                            "x's head size", (long long)t->shape[0], (long long)t->shape[1],
                            (long long)D);
    fe_status st = fe_op_same_shape(c, 0, 2);
    if (st != FE_OK) return st;
    c->ext[ROPE_S] = x->shape[0];
    c->ext[ROPE_H] = x->shape[1];
    c->ext[ROPE_D] = D;
    c->ext[ROPE_LAST] = t->shape[0] - 1;
    return FE_OK;
}

static fe_status check(const fe_args *a, const fe_design *d, char *why, size_t why_n) {
    (void)d;
    int64_t pos = a->v[ROPE_V_POS], rows = a->v[ROPE_V_ROWS], P = a->t[1].shape[0];
    if (pos + rows > P) {
        snprintf(why, why_n, "pos + rows = %lld + %lld = %lld is past the table's %lld "
                 "positions: row r takes table row pos + r, so pos + rows must be <= P; give "
                 "a table with more rows, or bound rows", (long long)pos, (long long)rows,
                 (long long)(pos + rows), (long long)P);
        return FE_E_BOUNDS;
    }
    return FE_OK;
}

static void reference(const fe_args *a, const fe_design *d) {
    const int64_t H = a->ext[ROPE_H], D = a->ext[ROPE_D], half = D / 2;
    const bool interleaved = d->params[ROPE_FORM] == ROPE_INTERLEAVED;
    const float *x = a->t[0].data, *table = a->t[1].data;
    float *y = a->t[2].data;
    for (int64_t r = 0; r < a->v[ROPE_V_ROWS]; r++) {
        const float *row = table + (a->v[ROPE_V_POS] + r) * D;
        for (int64_t h = 0; h < H; h++) {
            int64_t base = (r * H + h) * D;
            for (int64_t i = 0; i < half; i++) {
                int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
                double xa = x[base + i0], xb = x[base + i1], c = row[i], s = row[half + i];
                y[base + i0] = (float)(xa * c - xb * s);
                y[base + i1] = (float)(xb * c + xa * s);
            }
        }
    }
}

/* per element: two multiplies and an add (a pair's 6 flops); x read, y written, one table
 * row per row */
static void cost(const fe_args *a, const fe_design *d, fe_cost *out) {
    (void)d;
    double rows = (double)a->v[ROPE_V_ROWS], D = (double)a->ext[ROPE_D];
    double n = rows * (double)a->ext[ROPE_H] * D;
    out->flops = 3.0 * n;
    out->bytes = 8.0 * n + 4.0 * rows * D;
}

/* dims = {S, P, H, D/2}: the last dim (pairs per head) is the one the catalog varies */
static void operands_for(const fe_case *c, const double *p, fe_tensor *out) {
    (void)p;
    int64_t xs[3] = {c->dims[0], c->dims[2], 2 * c->dims[3]}, ts[2] = {c->dims[1], 2 * c->dims[3]};
    out[0] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, xs);
    out[1] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, ts);
    out[2] = out[0];
}

#define INTERLEAVED {{"form", ROPE_INTERLEAVED}}, .n_params = 1
static const fe_case cases[] = {
    {.name = "small", .dims = {5, 16, 3, 8}, .n_dims = 4},
    {.name = "interleaved", .dims = {4, 12, 2, 13}, .n_dims = 4, .params = INTERLEAVED},
    {.name = "head64", .dims = {3, 20, 4, 32}, .n_dims = 4},
    {.name = "head64_interleaved", .dims = {2, 9, 5, 32}, .n_dims = 4, .params = INTERLEAVED},
    {.name = "odd_pairs_interleaved", .dims = {3, 8, 3, 7}, .n_dims = 4, .params = INTERLEAVED},
    {.name = "decode_head128", .dims = {1, 7, 8, 64}, .n_dims = 4},
    {.name = "512x32x64", .dims = {512, 4096, 32, 32}, .n_dims = 4, .extensive = true,
     .bench = true},
};

FE_OP_DEFINE(rope) {
    .name = "RoPE",
    .summary = "y = x rotated pairwise by the angles of positions pos.. (cos/sin table rows)",
    .params = params, .n_params = FE_COUNT(params),
    .tunables = tunables, .n_tunables = FE_COUNT(tunables),
    .operands = operands, .n_operands = FE_COUNT(operands),
    .extents = extents, .n_extents = FE_COUNT(extents),
    .values = values, .n_values = FE_COUNT(values),
    .infer = infer,
    .reference = reference,
    .kernels = rope_kernels, .n_kernels = FE_COUNT(rope_kernels),
    .cost = cost,
    .check = check,
    .operands_for = operands_for,
    .cases = cases, .n_cases = FE_COUNT(cases),
    .rtol = 1e-6, .atol = 2e-6,
    .roof = FE_ROOF_READ,
};
