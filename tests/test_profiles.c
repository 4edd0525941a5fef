/* tests/test_profiles.c: profiles as data. An entry written from a tune survives save and load
 * and is the one found for its shape and dtypes, replacing its own shape's entry and keeping
 * the rest;
 * the most specific entry wins over a general one; a tune with no reliable best writes
 * nothing and says why; a file that is not a profile is refused, not overwritten; `ferrum
 * tune --write-profile=FILE` writes or says why not. On the causal LM: a profile reaches the
 * graph's steps (a design key changes) while the logits stay the same bytes, no step pins a
 * tunable a profile gives, and `ferrum generate` names the profile it loads, ignores it on
 * --no-tuning and refuses a malformed one with its path and the fix. Nothing here times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../apps/ferrum/generate.h"
#include "graph/internal.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/cli_run.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"
#include "support/tiny_llama.h"
#include "tune/tune.h"

static char root[64], model_dir[64], path[256];

static int setup(void **state) {
    snprintf(root, sizeof root, "/tmp/ferrum-profiles-XXXXXX");
    if (!mkdtemp(root)) return 1;
    setenv("FERRUM_CACHE_HOME", root, 1); /* never the user's own profile */
    snprintf(path, sizeof path, "%s/p.json", root);
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 4, &w, &err) != FE_OK) return 1;
    bool ok = lmfix_tmpdir(model_dir, sizeof model_dir) &&
              fe_llama_weights_write_safetensors(&w, model_dir, &err) == FE_OK &&
              lmfix_byte_tokenizer(model_dir, false, 64);
    fe_llama_weights_free(&w);
    return ok ? test_device_setup(state) : 1;
}

static int teardown(void **state) {
    lmfix_rmtree(model_dir);
    lmfix_rmtree(root);
    return test_device_teardown(state);
}

static void write_text(const char *p, const char *text) {
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A Softmax over (rows, cols) f32 made with profile p; its tunable `name`. */
static int64_t softmax_tunable(const fe_profile *p, int64_t rows, int64_t cols, const char *name) {
    int64_t sh[2] = {rows, cols};
    fe_tensor t[2] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, sh),
                      fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, sh)};
    fe_op_request req = {.op = "Softmax", .operands = t, .n_operands = 2, .profile = p};
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_kernel_create(test_dev, &req, &k, &err) != FE_OK) fail_msg("%s", err.message);
    int64_t v = fe_kernel_tunable(k, name);
    fe_kernel_destroy(k);
    return v;
}

static fe_tune_result *tune_softmax(int64_t cols, double max_spread) {
    fe_setting set[] = {{"cols", (double)cols}};
    fe_tune_request req = {.op = "Softmax", .settings = set, .n_settings = 1};
    fe_tune_options o = fe_tune_options_default();
    o.budget_ms = 1;
    o.attempts = 1;
    o.max_spread = max_spread;
    o.remeasure = max_spread < 0; /* a reliable figure cached by an earlier test would count */
    fe_tune_result *r = NULL;
    fe_error err;
    if (fe_tune_op(test_dev, &req, &o, &r, &err) != FE_OK) fail_msg("%s", err.message);
    return r;
}

static int row_of(const fe_tune_result *r, const char *setting) {
    for (int i = 0; i < fe_tune_result_count(r); i++)
        if (strcmp(fe_tune_result_row(r, i)->setting, setting) == 0) return i;
    fail_msg("no row %s", setting);
    return -1;
}

/* Which row is best depends on the machine's load, so the test writes a chosen candidate
 * through the same writer fe_tune_write_profile hands the best to. */
static void a_tuned_entry_survives_save_and_load_and_is_found_for_its_shape(void **s) {
    (void)s;
    unlink(path);
    fe_tune_result *r = tune_softmax(48, 0.25);
    int i = row_of(r, "rows_per_item=4");
    assert_int_equal(fe_tune_result_row(r, i)->verdict, FE_TUNE_CANDIDATE); /* bit-identical */
    fe_error err;
    assert_int_equal(fe_tune_write_profile_row(r, i, path, &err), FE_OK);
    assert_int_equal(fe_tune_write_profile_row(r, i, path, &err), FE_OK); /* replaces itself */
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_load(path, &p, &err), FE_OK);
    assert_int_equal(fe_profile_count(p), 1);
    int64_t rows = 3; /* the case's rows: the shape tuned is (3, 48) */
    assert_int_equal(softmax_tunable(p, rows, 48, "rows_per_item"), 4);
    assert_int_equal(softmax_tunable(p, rows, 64, "rows_per_item"), 1); /* another shape */
    assert_int_equal(softmax_tunable(p, rows + 1, 48, "rows_per_item"), 1);
    fe_profile_destroy(p);
    /* the note keeps the medians; the file has no tunable at its default */
    FILE *f = fopen(path, "r");
    char text[4096] = {0};
    assert_non_null(f);
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(text, "\"note\": \"ferrum tune: rows_per_item=4, median "));
    assert_null(strstr(text, "WIDTH"));
    /* another shape's entry joins, the first is kept */
    fe_tune_result *r2 = tune_softmax(64, 0.25);
    assert_int_equal(fe_tune_write_profile_row(r2, row_of(r2, "rows_per_item=16"), path, &err),
                     FE_OK);
    assert_int_equal(fe_profile_load(path, &p, &err), FE_OK);
    assert_int_equal(fe_profile_count(p), 2);
    assert_int_equal(softmax_tunable(p, rows, 48, "rows_per_item"), 4);
    assert_int_equal(softmax_tunable(p, rows, 64, "rows_per_item"), 16);
    fe_profile_destroy(p);
    fe_tune_result_destroy(r2);
    fe_tune_result_destroy(r);
}

static void the_most_specific_entry_wins_over_a_general_one(void **s) {
    (void)s;
    static const char empty[] = "{\"entries\": []}";
    fe_profile *p = NULL;
    fe_error err;
    assert_int_equal(fe_profile_parse(empty, sizeof empty - 1, &p, &err), FE_OK);
    fe_setting general = {"rows_per_item", 16}, cols = {"cols", 48}, shape[2] = {{"rows", 3},
                                                                                {"cols", 48}};
    fe_setting four = {"rows_per_item", 4}, one = {"rows_per_item", 1};
    assert_int_equal(fe_profile_put(p, "Softmax", shape, 2, &one, 1, NULL, &err), FE_OK);
    assert_int_equal(fe_profile_put(p, "Softmax", NULL, 0, &general, 1, "all", &err), FE_OK);
    assert_int_equal(fe_profile_put(p, "Softmax", &cols, 1, &four, 1, NULL, &err), FE_OK);
    assert_int_equal(fe_profile_count(p), 3);
    assert_int_equal(softmax_tunable(p, 3, 48, "rows_per_item"), 1);  /* rows and cols */
    assert_int_equal(softmax_tunable(p, 5, 48, "rows_per_item"), 4);  /* cols */
    assert_int_equal(softmax_tunable(p, 5, 64, "rows_per_item"), 16); /* the general one */
    /* saved and loaded, the same answers */
    assert_int_equal(fe_profile_save(p, path, &err), FE_OK);
    fe_profile_destroy(p);
    assert_int_equal(fe_profile_load(path, &p, &err), FE_OK);
    assert_int_equal(softmax_tunable(p, 3, 48, "rows_per_item"), 1);
    assert_int_equal(softmax_tunable(p, 5, 48, "rows_per_item"), 4);
    assert_int_equal(softmax_tunable(p, 5, 64, "rows_per_item"), 16);
    /* an entry the loader would refuse is refused here too, naming the name */
    fe_setting bad = {"rows_per_itme", 4};
    assert_int_equal(fe_profile_put(p, "Softmax", NULL, 0, &bad, 1, NULL, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "no tunable named \"rows_per_itme\""));
    assert_int_equal(fe_profile_count(p), 3);
    fe_profile_destroy(p);
}

/* A GEMV made at the tune request's shape (settings by name, as `ferrum tune` takes them). */
static int64_t gemv_tunable(const fe_profile *p, const char *dtype, const char *name) {
    fe_setting set[] = {{"N", 64}, {"K", 64}, {"B", 1}, {.name = "dtype", .choice = dtype}};
    fe_tune_request req = {.op = "GEMV", .settings = set, .n_settings = 4};
    fe_tune_shape sh;
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_tune_shape_init(test_dev, &req, &sh, &err) != FE_OK) fail_msg("%s", err.message);
    sh.profile = p;
    if (fe_tune_shape_kernel(test_dev, &sh, NULL, 0, &k, &err) != FE_OK) fail_msg("%s", err.message);
    int64_t v = fe_kernel_tunable(k, name);
    fe_kernel_destroy(k);
    return v;
}

/* The key names the operands' dtypes: a q8_0 GEMV's entry is not a bf16 one's. */
static void a_tuned_entry_applies_to_its_dtypes_only(void **s) {
    (void)s;
    unlink(path);
    fe_setting set[] = {{"N", 64}, {"K", 64}, {"B", 1}, {.name = "dtype", .choice = "q8_0"}};
    fe_tune_request req = {.op = "GEMV", .settings = set, .n_settings = 4};
    fe_tune_options o = fe_tune_options_default();
    o.budget_ms = 1;
    o.attempts = 1;
    fe_tune_result *r = NULL;
    fe_error err;
    if (fe_tune_op(test_dev, &req, &o, &r, &err) != FE_OK) fail_msg("%s", err.message);
    int i = row_of(r, "prefetch=0");
    assert_int_equal(fe_tune_result_row(r, i)->verdict, FE_TUNE_CANDIDATE);
    assert_int_equal(fe_tune_write_profile_row(r, i, path, &err), FE_OK);
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_load(path, &p, &err), FE_OK);
    assert_int_equal(gemv_tunable(p, "q8_0", "prefetch"), 0);
    assert_int_equal(gemv_tunable(p, "bf16", "prefetch"), gemv_tunable(NULL, "bf16", "prefetch"));
    assert_int_not_equal(gemv_tunable(NULL, "q8_0", "prefetch"), 0); /* the profile did it */
    fe_profile_destroy(p);
    fe_tune_result_destroy(r);
    /* OPERAND.dtype names an operand and a dtype */
    static const char *const bad[] = {
        "{\"entries\": [{\"op\": \"GEMV\", \"when\": {\"w.dtype\": 3}, \"tunables\": {}}]}",
        "{\"entries\": [{\"op\": \"GEMV\", \"when\": {\"w.dtype\": \"q9\"}, \"tunables\": {}}]}",
        "{\"entries\": [{\"op\": \"GEMV\", \"when\": {\"q.dtype\": \"f32\"}, \"tunables\": {}}]}",
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        assert_int_equal(fe_profile_parse(bad[b], strlen(bad[b]), &p, &err), FE_E_FORMAT);
        assert_non_null(strstr(err.message, "dtype"));
    }
}

/* max_spread -1 refuses every figure measured (and the cache is not read): no best, whatever
 * the machine's load. */
static void a_tune_without_a_reliable_best_writes_nothing_and_says_why(void **s) {
    (void)s;
    unlink(path);
    fe_tune_result *r = tune_softmax(48, -1);
    fe_error err;
    assert_int_equal(fe_tune_write_profile(r, path, &err), FE_E_STATE);
    assert_non_null(strstr(err.message, "no reliable best"));
    assert_non_null(strstr(err.message, path));
    assert_int_equal(access(path, F_OK), -1);
    /* a file that is not a profile is refused by name and left as it was */
    write_text(path, "{\"entries\": 3}");
    assert_int_not_equal(fe_tune_write_profile_row(r, 0, path, &err), FE_OK);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "left as it was"));
    FILE *f = fopen(path, "r");
    char text[64] = {0};
    assert_non_null(f);
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    assert_string_equal(text, "{\"entries\": 3}");
    fe_tune_result_destroy(r);
}

/* `ferrum tune --write-profile=FILE`: an entry when the machine gave a reliable best, else
 * nothing and the reason (which of the two depends on the load, so either is accepted, each
 * checked whole). */
static void cli_tune_writes_the_best_or_says_why_not(void **s) {
    (void)s;
    unlink(path);
    char o[16384], e[8192], arg[300];
    int code;
    snprintf(arg, sizeof arg, "--write-profile=%s", path);
    CLI_RUN_INTO(code, o, e, "tune", "Softmax", "cols=32", "--budget-ms", "1", arg);
    if (code == 0) {
        assert_non_null(strstr(e, "wrote the entry for this shape to "));
        fe_profile *p = NULL;
        fe_error err;
        assert_int_equal(fe_profile_load(path, &p, &err), FE_OK);
        assert_int_equal(fe_profile_count(p), 1);
        fe_profile_destroy(p);
    } else {
        assert_int_equal(code, 1);
        assert_non_null(strstr(e, "no reliable best"));
        assert_int_equal(access(path, F_OK), -1);
    }
    CLI_RUN_INTO(code, o, e, "tune", "Softmax", "--write-profile=");
    assert_int_equal(code, 2);
    assert_non_null(strstr(e, "needs a value after the ="));
    CLI_RUN_INTO(code, o, e, "tune", "--help");
    assert_non_null(strstr(o, "--write-profile[=FILE]"));
    CLI_RUN_INTO(code, o, e, "generate", model_dir, "--tuning", path, "--no-tuning");
    assert_int_equal(code, 2);
    assert_non_null(strstr(e, "disagree"));
    /* a --tuning file that is not a profile is refused before the model loads */
    write_text(path, "[]");
    CLI_RUN_INTO(code, o, e, "generate", model_dir, "--tuning", path, "-p", "x");
    assert_int_equal(code, 2);
    assert_non_null(strstr(e, "the tuning profile "));
    assert_null(strstr(e, "ferrum: mapping"));
}

/* ---- the causal LM ---- */

static fe_lm_model *open_model(void) {
    fe_lm_open_options o = fe_lm_open_options_default();
    o.threads = 1; /* as generate's args() below: the same device id */
    fe_lm_model *m = NULL;
    fe_error err;
    if (fe_lm_model_open(model_dir, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    return m;
}

/* The session's graph as DOT (each step's design key) and its logits after a prefill. */
static void session_run(fe_lm_model *m, const fe_profile *p, char *dot, size_t n, float *logits,
                        int64_t V) {
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = 64;
    so.chunk = 8;
    so.prefill_dot = FE_LM_PREFILL_DOT_F32;
    so.profile = p;
    fe_lm_session *s = NULL;
    fe_error err;
    if (fe_lm_session_create(m, &so, &s, &err) != FE_OK) fail_msg("%s", err.message);
    int32_t ids[5] = {1, 7, 30, 2, 9};
    const float *l = NULL;
    assert_int_equal(fe_lm_session_prefill(s, ids, 5, &l), FE_OK);
    memcpy(logits, l, (size_t)V * sizeof *logits);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fe_graph_dot(fe_lm_session_graph(s), f), FE_OK);
    rewind(f);
    size_t got = fread(dot, 1, n - 1, f);
    dot[got] = 0;
    fclose(f);
    fe_lm_session_destroy(s);
}

/* The graph passes no tunable at its call sites (fe_apply takes params only), so whatever a
 * profile gives reaches the steps: rows_per_item, bit-identical by design, changes the
 * RMSNorm steps' design keys and not one byte of the logits. */
static void a_profile_changes_the_design_key_of_a_step_and_not_the_logits(void **s) {
    (void)s;
    fe_lm_model *m = open_model();
    fe_lm_model_info info;
    fe_lm_model_get_info(m, &info);
    int64_t V = info.vocab;
    static const char empty[] = "{\"entries\": []}",
        rows4[] = "{\"entries\": [{\"op\": \"RMSNorm\", \"tunables\": {\"rows_per_item\": 4}}]}";
    fe_profile *pe = NULL, *p4 = NULL;
    fe_error err;
    assert_int_equal(fe_profile_parse(empty, sizeof empty - 1, &pe, &err), FE_OK);
    assert_int_equal(fe_profile_parse(rows4, sizeof rows4 - 1, &p4, &err), FE_OK);
    enum { DOT = 1 << 18 };
    char *dot0 = malloc(DOT), *dot_e = malloc(DOT), *dot4 = malloc(DOT);
    float *l0 = malloc((size_t)V * sizeof *l0), *le = malloc((size_t)V * sizeof *le),
          *l4 = malloc((size_t)V * sizeof *l4);
    assert_true(dot0 && dot_e && dot4 && l0 && le && l4);
    session_run(m, NULL, dot0, DOT, l0, V);
    session_run(m, pe, dot_e, DOT, le, V);
    session_run(m, p4, dot4, DOT, l4, V);
    assert_string_equal(dot0, dot_e); /* an empty profile is none */
    assert_string_not_equal(dot0, dot4);
    assert_memory_equal(l0, le, (size_t)V * sizeof *l0);
    assert_memory_equal(l0, l4, (size_t)V * sizeof *l0);
    free(dot0), free(dot_e), free(dot4), free(l0), free(le), free(l4);
    fe_profile_destroy(pe);
    fe_profile_destroy(p4);
    fe_lm_model_close(m);
}

/* The claim, "every tunable the Llama graph still passes is one a profile could not
 * supply", holds by construction today: fe_apply takes params only, so no step of the graph
 * is compiled with a call-site tunable and a profile reaches every one. Checked on WIDTH, the
 * tunable every operator of the graph has: a profile giving WIDTH 1 for every operator holds
 * in every step of both versions (prefill and decode) of a two-worker session. */
static void no_step_of_the_llama_graph_pins_a_tunable_a_profile_gives(void **s) {
    (void)s;
    fe_lm_open_options o = fe_lm_open_options_default();
    o.threads = 2;
    fe_lm_model *m = NULL;
    fe_error err;
    if (fe_lm_model_open(model_dir, &o, &m, &err) != FE_OK) skip(); /* one CPU: nothing to pin */
    char json[8192];
    size_t at = (size_t)snprintf(json, sizeof json, "{\"entries\": [");
    for (int i = 0; i < fe_op_count(); i++)
        if (fe_op_tunable_index(fe_op_at(i), "WIDTH") >= 0)
            at += (size_t)snprintf(json + at, sizeof json - at, "%s{\"op\": \"%s\", \"tunables\": "
                                   "{\"WIDTH\": 1}}", at > 13 ? ", " : "", fe_op_name(fe_op_at(i)));
    snprintf(json + at, sizeof json - at, "]}");
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_parse(json, strlen(json), &p, &err), FE_OK);
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = 64;
    so.chunk = 8;
    fe_lm_session *ss = NULL;
    /* without the profile some step takes both workers, else the check below proves nothing */
    if (fe_lm_session_create(m, &so, &ss, &err) != FE_OK) fail_msg("%s", err.message);
    const fe_graph *g = fe_lm_session_graph(ss);
    int wide = 0;
    for (int v = 0; v < g->n_versions; v++)
        for (int st = 0; st < g->versions[v]->n_steps; st++)
            wide += fe_kernel_tunable(g->versions[v]->kernels[st], "WIDTH") > 1;
    assert_true(wide > 0);
    fe_lm_session_destroy(ss);
    so.profile = p;
    if (fe_lm_session_create(m, &so, &ss, &err) != FE_OK) fail_msg("%s", err.message);
    g = fe_lm_session_graph(ss);
    int checked = 0;
    assert_int_equal(g->n_versions, 2);
    for (int v = 0; v < g->n_versions; v++)
        for (int st = 0; st < g->versions[v]->n_steps; st++) {
            const fe_kernel *k = g->versions[v]->kernels[st];
            if (fe_kernel_tunable(k, "WIDTH") < 0) continue;
            if (fe_kernel_tunable(k, "WIDTH") != 1)
                fail_msg("version %d step %s: WIDTH %lld, not the profile's 1", v,
                         g->versions[v]->tr.steps[st].label, (long long)fe_kernel_tunable(k, "WIDTH"));
            checked++;
        }
    assert_true(checked > 10);
    fe_lm_session_destroy(ss);
    fe_profile_destroy(p);
    fe_lm_model_close(m);
}

static char out[1 << 15], errs[1 << 15];

static void slurp(FILE *f, char *buf, size_t n) {
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

static int generate(const gen_args *a) {
    FILE *o = tmpfile(), *e = tmpfile();
    assert_non_null(o), assert_non_null(e);
    fe_cli_io io = {o, e, NULL};
    int code = fe_generate_run(a, &io);
    slurp(o, out, sizeof out);
    slurp(e, errs, sizeof errs);
    return code;
}

static void generate_names_its_profile_ignores_it_on_no_tuning_and_refuses_a_bad_one(void **s) {
    (void)s;
    gen_args a = {.open = model_args_default(), .num_tokens = 8,
                  .sampling = fe_lm_sampling_default(), .seed_given = true,
                  .prefill_dot = FE_LM_PREFILL_DOT_F32, .prompt_ids = "1,2,3"};
    a.open.model = model_dir;
    a.open.threads = 1;
    fe_lm_model *m = open_model();
    char def[1100];
    fe_error err;
    assert_int_equal(fe_tune_profile_path(fe_lm_model_device(m), NULL, def, sizeof def, &err),
                     FE_OK);
    fe_lm_model_close(m);
    unlink(def);
    /* none there: said, with how to make one */
    if (generate(&a) != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "ferrum: tuning: none (ferrum tune MODEL --write-profile makes one)"));
    char greedy[sizeof out];
    memcpy(greedy, out, sizeof out);
    /* this device's profile is loaded by itself and named; the tokens are the same */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/profiles", root);
    mkdir(dir, 0755);
    write_text(def, "{\"entries\": [{\"op\": \"RMSNorm\", \"tunables\": {\"rows_per_item\": 4}}]}");
    if (generate(&a) != 0) fail_msg("%s", errs);
    char want[1300];
    snprintf(want, sizeof want, "ferrum: tuning: %s (1 entry, 0 fold decisions)", def);
    assert_non_null(strstr(errs, want));
    assert_string_equal(out, greedy);
    /* malformed: an error naming the file and the fixes, no run */
    write_text(def, "{\"entries\": [{\"op\": \"RMSNorm\", \"tunables\": {\"nope\": 4}}]}");
    assert_int_equal(generate(&a), 2);
    assert_non_null(strstr(errs, def));
    assert_non_null(strstr(errs, "--no-tuning"));
    assert_string_equal(out, "");
    /* --no-tuning: the file is not read */
    a.tuning.none = true;
    if (generate(&a) != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "ferrum: tuning: none (--no-tuning)"));
    assert_string_equal(out, greedy);
    /* --tuning FILE: that one */
    a.tuning.none = false;
    write_text(path, "{\"entries\": []}");
    a.tuning.file = path;
    if (generate(&a) != 0) fail_msg("%s", errs);
    snprintf(want, sizeof want, "ferrum: tuning: %s (0 entries, 0 fold decisions)", path);
    assert_non_null(strstr(errs, want));
    assert_string_equal(out, greedy);
    /* fold decisions are counted (a key no fold of this model has changes nothing) */
    write_text(path, "{\"entries\": [], \"folds\": [{\"site\": \"drain Copy into X\", "
                     "\"keep\": false}]}");
    if (generate(&a) != 0) fail_msg("%s", errs);
    snprintf(want, sizeof want, "ferrum: tuning: %s (0 entries, 1 fold decision)", path);
    assert_non_null(strstr(errs, want));
    assert_string_equal(out, greedy);
    unlink(def);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_tuned_entry_survives_save_and_load_and_is_found_for_its_shape),
        cmocka_unit_test(the_most_specific_entry_wins_over_a_general_one),
        cmocka_unit_test(a_tuned_entry_applies_to_its_dtypes_only),
        cmocka_unit_test(a_tune_without_a_reliable_best_writes_nothing_and_says_why),
        cmocka_unit_test(cli_tune_writes_the_best_or_says_why_not),
        cmocka_unit_test(a_profile_changes_the_design_key_of_a_step_and_not_the_logits),
        cmocka_unit_test(no_step_of_the_llama_graph_pins_a_tunable_a_profile_gives),
        cmocka_unit_test(generate_names_its_profile_ignores_it_on_no_tuning_and_refuses_a_bad_one),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
