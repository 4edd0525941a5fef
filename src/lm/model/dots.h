/* lm/model/dots.h: the prefill's dot products as a causal LM or a batch resolves them from
 * the user's choice (fe_causal_options.prefill_dot), the layer matrices' dtypes and the
 * device: which chunk GEMMs round their operands to bf16 (GEMM act_bf16) and which quantise
 * the activations to int8 (act_int8). */
#ifndef FE_LM_DOTS_H
#define FE_LM_DOTS_H

#include "ferrum/device.h"
#include "lm/model/weights.h"

typedef struct fe_prefill_dots {
    bool act_int8;        /* GEMMs over block matrices quantise A to int8 (but bf16_dtypes') */
    uint32_t bf16_dtypes; /* bit t: GEMMs over matrices of dtype t take act_bf16: bf16 ones,
                           * and block ones (their values rounded to bf16 as well) in place of
                           * act_int8 */
} fe_prefill_dots;

/* The block dtypes AUTO multiplies in bf16 on dev: q8_0 .. q6_k where its
 * kernels are AVX-512 with AMX-BF16 (the tiles sum a K block without the int8 design's
 * per-block update), none elsewhere. */
uint32_t fe_prefill_bf16_blocks(const fe_device *dev);

/* out from prefill_dot (FE_PREFILL_DOT_*) over w's layer matrices on dev; FE_E_DTYPE naming
 * the rule where the choice cannot serve the matrices. */
fe_status fe_prefill_dots_resolve(int prefill_dot, const fe_llama_weights *w, const fe_device *dev,
                                  fe_prefill_dots *out, fe_error *err);

#endif
