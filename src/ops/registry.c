/* ops/registry.c: the operator registry, built from the X-macro list in ops.inc. */
#include <strings.h>

#include "ops/op.h"

#define FE_OP(id) extern const fe_op fe_op_##id;
#include "ops/ops.inc"
#undef FE_OP

static const fe_op *const registry[] = {
#define FE_OP(id) &fe_op_##id,
#include "ops/ops.inc"
#undef FE_OP
};

int fe_op_count(void) { return FE_COUNT(registry); }

const fe_op *fe_op_at(int i) { return i >= 0 && i < FE_COUNT(registry) ? registry[i] : NULL; }

const fe_op *fe_op_find(const char *name) {
    for (int i = 0; name && i < FE_COUNT(registry); i++)
        if (strcasecmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const char *fe_op_name(const fe_op *op) { return op->name; }
const char *fe_op_summary(const fe_op *op) { return op->summary; }
