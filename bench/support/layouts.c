/* bench/support/layouts.c: weight layouts made once for a bench's kernel (layouts.h). */
#include "layouts.h"

#include "core/alloc.h"
#include "ops/kernel.h"

int bench_layouts_make(fe_kernel *k, const fe_tensor *ops, int n_ops, void **lay) {
    int made = 0;
    for (int i = 0; i < n_ops; i++) lay[i] = NULL;
    for (int i = 0; i < n_ops; i++) {
        const size_t bytes = ops[i].data ? fe_kernel_layout_bytes(k, i, NULL) : 0;
        if (!bytes) continue;
        lay[i] = fe_aligned_alloc(64, bytes);
        if (!lay[i] || fe_kernel_make_layout(k, i, &ops[i], lay[i]) != FE_OK) return -1;
        made++;
    }
    return made;
}

void bench_layouts_free(void **lay, int n_ops) {
    for (int i = 0; i < n_ops; i++) {
        fe_free(lay[i]);
        lay[i] = NULL;
    }
}
