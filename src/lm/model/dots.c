/* lm/model/dots.c: the prefill's dot products resolved (see dots.h). */
#include "lm/model/dots.h"

#include "core/error.h"
#include "lm/model/causal.h" /* FE_PREFILL_DOT_* */

static uint32_t bit(fe_dtype t) { return 1u << (unsigned)t; }

/* 2 workers on a Xeon with AMX, act_int8 (AMX-INT8 tiles for q8_0, VNNI for the K types)
 * against act_bf16 on the AMX-BF16 tiles: q8_0 512 x 8192 x 2048 with SiLU 19.3 -> 12.0-12.8
 * ms (`ferrum tune GEMM case=q8_0/deep M=512 N=8192 K=2048 act_int8=1|act_bf16=1
 * activation=1`), q4_k 512 x 2048 x 2048 6.24 -> 2.84 ms, q6_k 7.22 -> 3.54
 * (`case=q4_k/odd M=512 N=2048 K=2048`) */
uint32_t fe_prefill_bf16_blocks(const fe_device *dev) {
    const fe_device_info *d = fe_device_get_info(dev);
    if (d->isa < FE_ISA_AVX512 || !d->features.avx512bf16 || !d->features.amx_bf16) return 0;
    return bit(FE_DTYPE_Q8_0) | bit(FE_DTYPE_Q4_0) | bit(FE_DTYPE_Q4_1) | bit(FE_DTYPE_Q5_0) |
           bit(FE_DTYPE_Q4_K) | bit(FE_DTYPE_Q6_K);
}

fe_status fe_prefill_dots_resolve(int prefill_dot, const fe_llama_weights *w, const fe_device *dev,
                                  fe_prefill_dots *out, fe_error *err) {
    const fe_lm_config *c = &w->cfg;
    bool any_block = false; /* act_int8 needs some matrix in blocks */
    bool roundable = true;  /* bf16 needs every matrix in bf16 or blocks */
    uint32_t blocks = 0, bf16 = 0; /* the block dtypes present; bf16's bit where present */
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            const bool block = fe_dtype_info(ms[i]->dtype)->block > 1;
            any_block |= block;
            roundable &= block || ms[i]->dtype == FE_DTYPE_BF16;
            if (block) blocks |= bit(ms[i]->dtype);
            if (ms[i]->dtype == FE_DTYPE_BF16) bf16 = bit(FE_DTYPE_BF16);
        }
    }
    const char *dt = fe_dtype_info(w->layers[0].wq.dtype)->name;
    if (prefill_dot == FE_PREFILL_DOT_INT8 && !any_block)
        return fe_error_set(err, FE_E_DTYPE, "prefill dot products in int8 need layer matrices "
                            "in blocks (q8_0 .. q6_k); this model's are %s: use f32 dot products "
                            "(or bf16 for bf16 matrices)", dt);
    if (prefill_dot == FE_PREFILL_DOT_BF16 && !roundable)
        return fe_error_set(err, FE_E_DTYPE, "prefill dot products in bf16 need every layer matrix "
                            "in bf16 or in blocks (q8_0 .. q6_k, whose values then round to "
                            "bf16); this model's are %s: use f32 dot products (the default for "
                            "it)", dt);
    const bool automatic = prefill_dot == FE_PREFILL_DOT_AUTO;
    out->act_int8 = automatic || prefill_dot == FE_PREFILL_DOT_INT8;
    /* (bf16 matrices beside block ones: act_bf16 on those too, as on an all-bf16 model) */
    out->bf16_dtypes = prefill_dot == FE_PREFILL_DOT_BF16 ? bf16 | blocks
                     : automatic ? bf16 | (blocks & fe_prefill_bf16_blocks(dev))
                                 : 0;
    return FE_OK;
}
