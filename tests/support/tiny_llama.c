/* tests/support/tiny_llama.c: the shared tiny model config and token draw (see tiny_llama.h). */
#include "support/tiny_llama.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

fe_lm_config tiny_llama_config(bool tied, bool llama3) {
    fe_lm_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.architecture, sizeof c.architecture, "llama");
    snprintf(c.source, sizeof c.source, "tiny");
    c.vocab = 320;
    c.hidden = 64;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 16;
    c.ffn = 160;
    c.rms_eps = 1e-5;
    c.rope_theta = llama3 ? 500000 : 10000;
    if (llama3) {
        c.rope_scaling.type = FE_LM_ROPE_LLAMA3;
        c.rope_scaling.factor = 32;
        c.rope_scaling.low_freq_factor = 1;
        c.rope_scaling.high_freq_factor = 4;
        c.rope_scaling.original_max_position_embeddings = 64;
    }
    c.tied_embeddings = tied;
    c.max_context = 4096;
    c.bos_id = llama3 ? 1 : -1;
    if (llama3) c.eos_ids[0] = 2, c.eos_ids[1] = 7, c.n_eos = 2;
    return c;
}

int32_t *tiny_llama_tokens(int n, int64_t V, uint64_t seed) {
    int32_t *t = malloc((size_t)n * sizeof *t);
    for (int i = 0; t && i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (int32_t)((seed >> 33) % (uint64_t)V);
    }
    return t;
}

void tiny_llama_expect_same_config(const fe_lm_config *a, const fe_lm_config *b, double eps_tol) {
    assert_string_equal(a->architecture, b->architecture);
    assert_int_equal(a->vocab, b->vocab);
    assert_int_equal(a->hidden, b->hidden);
    assert_int_equal(a->n_layers, b->n_layers);
    assert_int_equal(a->n_heads, b->n_heads);
    assert_int_equal(a->n_kv_heads, b->n_kv_heads);
    assert_int_equal(a->head_dim, b->head_dim);
    assert_int_equal(a->ffn, b->ffn);
    assert_true(fabs(a->rms_eps - b->rms_eps) <= eps_tol);
    assert_true(a->rope_theta == b->rope_theta);
    assert_int_equal(a->rope_scaling.type, b->rope_scaling.type);
    assert_true(a->rope_scaling.factor == b->rope_scaling.factor);
    assert_true(a->rope_scaling.low_freq_factor == b->rope_scaling.low_freq_factor);
    assert_true(a->rope_scaling.high_freq_factor == b->rope_scaling.high_freq_factor);
    assert_int_equal(a->rope_scaling.original_max_position_embeddings,
                     b->rope_scaling.original_max_position_embeddings);
    assert_int_equal(a->tied_embeddings, b->tied_embeddings);
    assert_int_equal(a->max_context, b->max_context);
    assert_int_equal(a->bos_id, b->bos_id);
    assert_int_equal(a->n_eos, b->n_eos);
    for (int i = 0; i < a->n_eos; i++) assert_int_equal(a->eos_ids[i], b->eos_ids[i]);
}
