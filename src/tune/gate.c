/* tune/gate.c: the candidate gate. A setting may replace the default only when it computes
 * the same thing: its outputs bit-identical to the default's, or, where the operator declares
 * a tolerance, both within it of the reference. A tolerance of 0 asks for identical bits. */
#include <math.h>
#include <string.h>

#include "tune/tune.h"

static double load(const void *p, fe_dtype dt, size_t i) {
    const unsigned char *b = p;
    uint16_t h;
    float f;
    switch (dt) {
    case FE_DTYPE_F32: memcpy(&f, b + 4 * i, 4); return f;
    case FE_DTYPE_BF16: memcpy(&h, b + 2 * i, 2); return fe_bf16_to_f32(h);
    case FE_DTYPE_F16: memcpy(&h, b + 2 * i, 2); return fe_f16_to_f32(h);
    default: return b[i];
    }
}

static bool plain_float(fe_dtype dt) {
    return dt == FE_DTYPE_F32 || dt == FE_DTYPE_BF16 || dt == FE_DTYPE_F16;
}

/* The largest |a - b| and whether every element is within atol + rtol |ref| of ref. */
static double max_diff(const void *a, const void *ref, size_t n, fe_dtype dt, double rtol,
                       double atol, bool *within) {
    double m = 0;
    *within = true;
    for (size_t i = 0; i < n; i++) {
        double x = load(a, dt, i), r = load(ref, dt, i);
        if (isnan(x) && isnan(r)) continue;
        double e = fabs(x - r);
        if (!(e <= atol + rtol * fabs(r))) *within = false;
        if (e > m || isnan(e)) m = isnan(e) ? INFINITY : e;
    }
    return m;
}

bool fe_tune_gate(const fe_op *op, const fe_gate_output *outs, int n, char *why, size_t why_n) {
    bool tol = op->rtol > 0 || op->atol > 0;
    for (int o = 0; o < n; o++) {
        const fe_gate_output *g = &outs[o];
        if (memcmp(g->def, g->cand, g->bytes) == 0) continue;
        const char *name = "output";
        for (int i = 0, k = 0; i < op->n_operands; i++)
            if (op->operands[i].role == FE_OUT && k++ == o) name = op->operands[i].name;
        if (!plain_float(g->dt)) {
            snprintf(why, why_n, "%s: its %s bytes differ from the default's (bit-identical "
                     "required)", name, fe_dtype_info(g->dt)->name);
            return false;
        }
        size_t elems = g->bytes / fe_dtype_info(g->dt)->size;
        bool in_def, in_cand;
        double d = max_diff(g->cand, g->def, elems, g->dt, 0, 0, &in_def);
        if (!tol) {
            snprintf(why, why_n, "%s: max |diff| %.3g from the default > tol 0 (bit-identical "
                     "required)", name, d);
            return false;
        }
        double dc = max_diff(g->cand, g->ref, elems, g->dt, op->rtol, op->atol, &in_cand);
        double dd = max_diff(g->def, g->ref, elems, g->dt, op->rtol, op->atol, &in_def);
        if (!in_cand || !in_def) {
            snprintf(why, why_n, "%s: max |diff| from the reference %.3g (the default's %.3g) "
                     "> tol %.3g + %.3g |ref|", name, dc, dd, op->atol, op->rtol);
            return false;
        }
    }
    return true;
}
