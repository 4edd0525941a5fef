/* tests/test_int8_layouts.c: one copy of each block weight for the prefill and the decode, on
 * the real SmolLM2 (q4_1 layers, q8_0 tied head). The decode's act_int8 GEMVs read each weight
 * as panels (ops/gemv/panel.h, GEMV panel = 1) and the prefill's act_int8 GEMMs pack their B
 * panels from the same layout (GEMM b_panels = 1), so on AVX2 and AVX-512 the model keeps the
 * layouts alone: after a prompt and a few decode steps, the mapped file's pages of those
 * matrices stay dropped (only the norms and the embedding rows looked up are resident). The
 * prompt's logits from the layout are the bytes of the logits packed from the rows as stored
 * (a profile pinning b_panels = 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "lm/api/api.h"
#include "ops/gemv/panel.h"
#include "support/lm_fixtures.h"

static fe_lm_model *model;

static int setup(void **state) {
    (void)state;
    const char *path = lmfix_smollm2_path();
    if (!path || fe_lm_model_open(path, NULL, &model, NULL) != FE_OK) model = NULL;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    fe_lm_model_close(model);
    return 0;
}

static void need_model(void) {
    if (model) return;
    lmfix_need_smollm2(); /* fails under CI=true */
    skip();
}

static bool panels_run(void) { return fe_device_get_info(model->dev)->isa >= FE_ISA_AVX2; }

/* the panel layout's bytes of matrix t, when the decode reads it as panels by default */
static size_t panel_bytes(const fe_tensor *t) {
    if (!fe_gemv_panel_serves(t->dtype) ||
        !fe_gemv_panel_default(t->dtype, fe_device_get_info(model->dev)->isa))
        return 0;
    return fe_gemv_panel_matrix_bytes(t->dtype, t->shape[0], t->shape[1]);
}

/* the stored bytes of matrix t when both ops read its rows as stored (no layout) */
static size_t row_bytes(const fe_tensor *t) {
    return panel_bytes(t) ? 0 : fe_dtype_bytes(t->dtype, t->shape[0] * t->shape[1]);
}

/* A prompt's logits (a copy) from a fresh session with profile p (NULL: none). */
static float *prompt_logits(const fe_profile *p, const int32_t *ids, int64_t n) {
    fe_lm_session_options o = fe_lm_session_options_default();
    o.max_seq_len = 128;
    o.chunk = 64;
    o.profile = p;
    fe_lm_session *s = NULL;
    fe_error err = {0};
    if (fe_lm_session_create(model, &o, &s, &err) != FE_OK) fail_msg("%s", err.message);
    if (fe_lm_session_prefill(s, ids, n, NULL) != FE_OK) fail_msg("%s", fe_lm_session_message(s));
    const int64_t vocab = model->w.cfg.vocab;
    float *out = malloc((size_t)vocab * sizeof *out);
    assert_non_null(out);
    memcpy(out, fe_lm_session_logits(s), (size_t)vocab * sizeof *out);
    int32_t tok = ids[n - 1];
    for (int i = 0; i < 4; i++) /* a few decode steps: the GEMVs read the same layouts */
        if (fe_lm_session_decode(s, tok, NULL) != FE_OK) fail_msg("%s", fe_lm_session_message(s));
    fe_lm_session_destroy(s);
    return out;
}

static void prompt_ids(int32_t **ids, int64_t *n) {
    static const char text[] = "The panels of a weight are made once, and the prompt and the "
                               "decode read the same copy of them, so nothing else stays.";
    size_t len = 0;
    assert_int_equal(fe_lm_tokenize(model, text, strlen(text), true, false, ids, &len), FE_OK);
    *n = (int64_t)len;
}

static void block_weights_have_one_copy_for_prefill_and_decode(void **state) {
    (void)state;
    need_model();
    int32_t *ids = NULL;
    int64_t n = 0;
    prompt_ids(&ids, &n);
    float *logits = prompt_logits(NULL, ids, n);
    free(logits);
    free(ids);
    if (!panels_run()) skip(); /* scalar: the row kernels read the stored form */
    size_t want = 0, as_stored = 0;
    const fe_llama_weights *w = &model->w;
    for (int64_t l = 0; l < w->cfg.n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) want += panel_bytes(ms[i]);
    }
    want += panel_bytes(&w->lm_head);
    as_stored += row_bytes(&w->lm_head); /* the q8_0 head on AVX2: read as stored */
    assert_true(want > 0);
    assert_int_equal(fe_lm_model_layout_bytes(model), want);
    /* the prefill read its B panels from the layouts, so the laid-out matrices' file pages
     * were not faulted back: what stays resident is the norms, the few embedding rows looked
     * up, and a matrix both ops read as stored */
    fe_lm_model_info info;
    assert_int_equal(fe_lm_model_get_info(model, &info), FE_OK);
    const size_t resident = fe_lm_model_resident_bytes(model);
    if (resident >= info.weight_bytes / 4 + as_stored)
        fail_msg("%zu of %zu weight bytes resident after a prompt and 4 decode steps (%zu read "
                 "as stored)", resident, info.weight_bytes, as_stored);
}

static void prompt_logits_from_the_layout_are_those_from_the_rows(void **state) {
    (void)state;
    need_model();
    static const char rows[] = "{\"entries\": [{\"op\": \"GEMM\", "
                               "\"tunables\": {\"b_panels\": 0}}]}";
    fe_profile *p = NULL;
    fe_error err = {0};
    if (fe_profile_parse(rows, strlen(rows), &p, &err) != FE_OK) fail_msg("%s", err.message);
    int32_t *ids = NULL;
    int64_t n = 0;
    prompt_ids(&ids, &n);
    float *a = prompt_logits(NULL, ids, n), *b = prompt_logits(p, ids, n);
    assert_memory_equal(a, b, (size_t)model->w.cfg.vocab * sizeof *a);
    free(a);
    free(b);
    free(ids);
    fe_profile_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(block_weights_have_one_copy_for_prefill_and_decode),
        cmocka_unit_test(prompt_logits_from_the_layout_are_those_from_the_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
