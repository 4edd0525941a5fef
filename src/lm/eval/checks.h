/* lm/eval/checks.h: accuracy figures for a model against a reference, used by `ferrum generate
 * --check-accuracy` and the tests: per-position KL(reference || model) computed in float64
 * log-softmax, its mean, p90 and max, top-1 agreement, and the largest logit difference
 * beside the reference logits' spread. */
#ifndef FE_LM_CHECKS_H
#define FE_LM_CHECKS_H

#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_kl_stats {
    int positions;
    double mean, p90, max;  /* KL(reference || model), nats */
    int top1_mismatches;
    double max_abs_diff;    /* largest |reference - model| logit */
    double spread;          /* largest max - min of a reference row */
} fe_kl_stats;

/* ref and got are n rows of V logits. FE_E_NOMEM or FE_OK. */
fe_status fe_kl_compare(const float *ref, const float *got, int n, int64_t V, fe_kl_stats *out);

#endif
