/* lm/model/rope_table.h: building RoPE's cos/sin table on the host (not an operator).
 *
 * Row p of the (P, D) table holds cos(p * f_i) for i in [0, D/2), then sin(p * f_i), with
 * f_i = theta^(-2i/D) the inverse frequencies, optionally rescaled as Llama 3.1 / 3.2 do
 * (Hugging Face transformers' _compute_llama3_parameters):
 *   wavelen_i = 2 pi / f_i; low = original / low_freq_factor; high = original / high_freq_factor
 *   wavelen_i < high:            f_i unchanged (high frequencies)
 *   wavelen_i > low:             f_i / factor   (low frequencies)
 *   otherwise, s = (original / wavelen_i - low_freq_factor) / (high_freq_factor - low_freq_factor),
 *                                f_i = (1 - s) f_i / factor + s f_i
 * Everything is computed in double and rounded to f32 once, so the table is the exact one
 * to f32 precision; transformers computes in f32, and its angles at large p differ from
 * these by up to an f32 ulp of p * f_i. */
#ifndef FE_LM_MODEL_ROPE_TABLE_H
#define FE_LM_MODEL_ROPE_TABLE_H

#include <stdint.h>

#include "ferrum/core.h"
#include "lm/model/weights.h"

typedef struct fe_rope_scaling {
    double factor;                             /* > 0; e.g. 32 (Llama 3.2), 8 (Llama 3.1) */
    double low_freq_factor, high_freq_factor;  /* 0 < low < high; e.g. 1 and 4 */
    int64_t original_max_position_embeddings;  /* > 0; e.g. 8192 */
} fe_rope_scaling;

/* Fills out[P * D] (caller-owned, row-major (P, D)) with the table for head size D (even,
 * >= 2), base theta (> 0, finite) and scaling (NULL: none). Returns FE_E_INVALID, writing
 * nothing, when an argument breaks its rule. */
fe_status fe_rope_table(float *out, int64_t P, int64_t D, double theta,
                        const fe_rope_scaling *scaling);

/* The D/2 inverse frequencies f_i (after scaling) into out[D/2]; same rules. */
fe_status fe_rope_inv_freq(double *out, int64_t D, double theta, const fe_rope_scaling *scaling);

/* The table a Llama-family model's config asks for, for positions [0, P): its base and Llama 3
 * scaling, or (FE_LM_ROPE_FREQS_TENSOR) the base's frequencies divided by w->rope_freqs, the
 * per-frequency divisors llama.cpp's checkpoints carry. `who` starts the messages. */
fe_status fe_lm_rope_table(float *out, int64_t P, const fe_llama_weights *w, const char *who,
                           fe_error *err);

#endif
