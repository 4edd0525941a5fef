/* ops/mha/slots.c: what KVWrite (kv_write.c) and SlotMHA (slot_mha.c) share: the checks of a
 * slotted KV cache and the rows that name their slots and positions (infer), the per-call
 * check of those slots and positions, and the test shapes. mha.h describes the layout. */
#include <stdio.h>

#include <string.h>

#include "ops/mha/mha.h"

fe_status fe_slot_infer(fe_op_ctx *c, int x, int kv, int slots, int positions, int table) {
    const fe_tensor *xt = &c->operands[x], *kt = &c->operands[kv];
    const int64_t B = xt->shape[0], D = xt->shape[2];
    if (kt->shape[0] % 2 != 0)
        return fe_op_refuse(c, FE_E_SHAPE, "kv is (%lld, %lld, %lld, %lld): it must be (2N, S, "
                            "Hkv, D), the keys of N slots then their values; give an even first "
                            "axis", (long long)kt->shape[0], (long long)kt->shape[1],
                            (long long)kt->shape[2], (long long)kt->shape[3]);
    if (kt->shape[3] != D)
        return fe_op_refuse(c, FE_E_SHAPE, "kv has head_dim %lld but %s has %lld; give them one "
                            "head_dim", (long long)kt->shape[3], c->op->operands[x].name,
                            (long long)D);
    const int idx[2] = {slots, positions};
    for (int i = 0; i < 2; i++)
        if (c->operands[idx[i]].shape[0] != B)
            return fe_op_refuse(c, FE_E_SHAPE, "%s has %lld entries but %s has %lld rows; give "
                                "one a row", c->op->operands[idx[i]].name,
                                (long long)c->operands[idx[i]].shape[0], c->op->operands[x].name,
                                (long long)B);
    int64_t L = kt->shape[1];
    if (c->present[table]) {
        const fe_tensor *t = &c->operands[table];
        if (D % 2 != 0 || t->shape[1] != D)
            return fe_op_refuse(c, FE_E_SHAPE, "table is (%lld, %lld) for head_dim %lld: RoPE "
                                "turns D/2 pairs, so D must be even and the table (P, D), one "
                                "row of D/2 cos then D/2 sin a position", (long long)t->shape[0],
                                (long long)t->shape[1], (long long)D);
        if (t->shape[0] < L) L = t->shape[0];
    }
    c->ext[SLOT_B] = B;
    c->ext[SLOT_N] = kt->shape[0] / 2;
    c->ext[SLOT_L] = L;
    c->ext[SLOT_D] = D;
    return FE_OK;
}

fe_status fe_slot_rows_check(const fe_args *a, int slots, int positions, char *why,
                             size_t why_n) {
    const int32_t *s = a->t[slots].data, *p = a->t[positions].data;
    const int64_t N = a->ext[SLOT_N], L = a->ext[SLOT_L];
    for (int64_t r = 0; r < a->v[SLOT_V_ROWS]; r++) {
        if (s[r] < 0 || s[r] >= N) {
            snprintf(why, why_n, "row %lld: slot %d is outside the cache's %lld slots; give "
                     "slots in 0..%lld", (long long)r, s[r], (long long)N, (long long)(N - 1));
            return FE_E_BOUNDS;
        }
        if (p[r] < 0 || p[r] >= L) {
            snprintf(why, why_n, "row %lld: position %d is outside the %lld positions the cache "
                     "(and the RoPE table) hold; give positions in 0..%lld, or a larger cache "
                     "and table", (long long)r, p[r], (long long)L, (long long)(L - 1));
            return FE_E_BOUNDS;
        }
    }
    return FE_OK;
}

void fe_slot_operands(const fe_case *c, int x, int kv, int slots, int positions, int table,
                      bool x_is_q, fe_tensor *out) {
    const int64_t B = c->dims[0], N = c->dims[1] / 1000000, Hkv = c->dims[1] % 1000;
    const int64_t heads = x_is_q ? c->dims[1] / 1000 % 1000 : Hkv;
    const int64_t S = c->dims[2] / 10000, P = c->dims[2] % 10000, D = 2 * c->dims[3];
    int64_t xs[3] = {B, heads, D}, kvs[4] = {2 * N, S, Hkv, D}, ts[2] = {P, D};
    out[x] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 3, xs);
    const fe_dtype kvt = strncmp(c->name, "f16/", 4) == 0 ? FE_DTYPE_F16 : FE_DTYPE_F32;
    out[kv] = fe_tensor_contiguous(NULL, kvt, 4, kvs);
    out[slots] = out[positions] = fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, &B);
    out[table] = P ? fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, ts) : (fe_tensor){0};
}
