/* graph/values.c: per-call values evaluated at a set of words: an affine form, and the values
 * a step's kernel reads (given explicitly at the call site, or derived from the bounds its
 * operand views carry). A call (run.c) and the tuner's view of a version (inspect.c) share
 * it, so what the tuner prices at a set of words is what a call at those words runs. */
#include "graph/internal.h"

int64_t fe_val_at(fe_val v, const int64_t *words) {
    int64_t x = v.add;
    if (v.var >= 0) x += v.mul * words[v.var];
    if (v.var2 >= 0) x += v.mul2 * words[v.var2];
    return x;
}

void fe_step_values(const fe_version *ver, int s, const int64_t *words, int64_t *vals,
                    bool *empty, bool *follows_words) {
    const fe_tstep *st = &ver->tr.steps[s];
    const fe_op *op = st->op;
    const int64_t *ext = fe_kernel_extents(ver->kernels[s]);
    *empty = false;
    if (follows_words) *follows_words = false;
    for (int i = 0; i < op->n_values; i++) {
        const fe_value_decl *vd = &op->values[i];
        vals[i] = vd->map == FE_MAP_NONE ? vd->min : ext[fe_op_extent_index(op, vd->extent)];
        if (st->value_given[i]) {
            vals[i] = fe_val_at(st->value[i], words);
            if (follows_words && (st->value[i].var >= 0 || st->value[i].var2 >= 0))
                *follows_words = true;
            continue;
        }
        int operand = vd->operand;
        if (vd->map == FE_MAP_NONE || !st->operand[operand]) continue;
        const fe_view *w = fe_trace_view(&ver->tr, (fe_h){st->operand[operand]});
        int axis = vd->axis < 0 ? w->rank + vd->axis : vd->axis;
        if (axis < 0 || axis >= w->rank || !w->has_bound[axis]) continue;
        int64_t b = fe_val_at(w->bound[axis], words);
        for (int d = axis + 1; vd->map == FE_MAP_FLAT && d < w->rank; d++) b *= w->shape[d];
        vals[i] = b;
        if (b == 0) *empty = true;
        if (follows_words && (w->bound[axis].var >= 0 || w->bound[axis].var2 >= 0))
            *follows_words = true;
    }
}
