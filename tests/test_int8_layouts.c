/* tests/test_int8_layouts.c: one copy of each block weight for the prefill and the decode, on
 * the real SmolLM2 (q4_1 layers, q8_0 tied head). The decode's act_int8 GEMVs read each weight
 * as panels (ops/gemv/panel.h, GEMV panel = 1) and the prefill's act_int8 GEMMs pack their B
 * panels from the same layout (GEMM b_panels = 1; so do its act_bf16 GEMMs on AMX-BF16 tiles,
 * the default there, widening them to bf16), so on AVX2 and AVX-512 the model keeps the
 * layouts alone: once they are made, a prompt and a few decode steps never read the laid-out
 * matrices' rows as stored. The test has the CPU enforce it: the rows' whole pages are made
 * unreadable (PROT_NONE), and a read of one ends the run naming the address. (Counting the
 * process's mapped pages instead depends on the kernel: one that maps a whole large folio of
 * the page cache on a fault maps a norm's neighbours with it.) The prompt's logits from the
 * layout are the bytes of the logits packed from the rows as stored (a profile pinning
 * b_panels = 0). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* the guarded matrices, named for the message of a read of one */
enum { MAX_GUARDED = 1024 };
static const fe_tensor *guarded[MAX_GUARDED];
static char guarded_name[MAX_GUARDED][40];
static size_t n_guarded;

/* the whole pages inside matrix t's stored bytes (the pages it shares with its neighbours,
 * norms among them, stay readable), as fe_mapped_drop_pages drops them */
static void whole_pages(const fe_tensor *t, uintptr_t *from, uintptr_t *to) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)t->data;
    *from = (a + page - 1) / page * page;
    *to = (a + fe_dtype_bytes(t->dtype, fe_tensor_numel(t))) / page * page;
    if (*to < *from) *to = *from;
}

/* every guarded matrix's whole pages to protection prot */
static void guard(int prot) {
    for (size_t i = 0; i < n_guarded; i++) {
        uintptr_t from, to;
        whole_pages(guarded[i], &from, &to);
        if (to > from) assert_int_equal(mprotect((void *)from, to - from, prot), 0);
    }
}

/* SIGSEGV on a guarded page, from whichever thread read it: the message, and the run ends */
static void read_of_a_guarded_row(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)ctx;
    const char *name = "no guarded matrix";
    for (size_t i = 0; i < n_guarded; i++) {
        uintptr_t from, to;
        whole_pages(guarded[i], &from, &to);
        const uintptr_t at = (uintptr_t)info->si_addr;
        if (at >= from && at < to) name = guarded_name[i];
    }
    char msg[240];
    int n = snprintf(msg, sizeof msg, "ERROR: a laid-out weight's rows were read as stored "
                     "(%s, address %p): a step reads the rows, not the layout\n", name,
                     info->si_addr);
    if (n > 0) (void)!write(2, msg, (size_t)n);
    _exit(1);
}

static void add_guarded(const fe_tensor *t, const char *name, int64_t layer) {
    if (n_guarded == MAX_GUARDED) fail_msg("more than %d matrices to guard", MAX_GUARDED);
    snprintf(guarded_name[n_guarded], sizeof guarded_name[0], "layer %d %s", (int)layer, name);
    guarded[n_guarded++] = t;
}

static void block_weights_have_one_copy_for_prefill_and_decode(void **state) {
    (void)state;
    need_model();
    int32_t *ids = NULL;
    int64_t n = 0;
    prompt_ids(&ids, &n);
    free(prompt_logits(NULL, ids, n)); /* the layouts are made, once for the model */
    if (!panels_run()) { /* scalar: the row kernels read the stored form */
        free(ids);
        skip();
    }
    const fe_llama_weights *w = &model->w;
    static const char *const names[] = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"};
    size_t want = panel_bytes(&w->lm_head);
    n_guarded = 0;
    for (int64_t l = 0; l < w->cfg.n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            const size_t bytes = panel_bytes(ms[i]);
            want += bytes;
            if (bytes) add_guarded(ms[i], names[i], l);
        }
    }
    /* the head too where it has rows of its own (tied, the embedding's Gather reads them) */
    if (panel_bytes(&w->lm_head) && w->lm_head.data != w->embed.data)
        add_guarded(&w->lm_head, "head", -1);
    assert_true(want > 0 && n_guarded > 0);
    assert_int_equal(fe_lm_model_layout_bytes(model), want);
    guard(PROT_NONE);
    struct sigaction on_read = {.sa_sigaction = read_of_a_guarded_row, .sa_flags = SA_SIGINFO};
    struct sigaction old_segv, old_bus;
    sigemptyset(&on_read.sa_mask);
    sigaction(SIGSEGV, &on_read, &old_segv);
    sigaction(SIGBUS, &on_read, &old_bus);
    /* a new session (plans of its own) over the model's layouts: a prompt and 4 decode steps */
    free(prompt_logits(NULL, ids, n));
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    guard(PROT_READ);
    free(ids);
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
