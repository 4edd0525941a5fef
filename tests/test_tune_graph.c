/* tests/test_tune_graph.c: the tuner over a graph. Joint narrowing on a synthetic cost table
 * picks the optimum computed by hand (a shared setting beating each design's own best), keeps
 * the default within the noise and ignores unreliable and gated-out settings, and its
 * ablations hold what they say; its choice, written as a profile, reaches the kernel; bad
 * cost tables are refused naming the field and the fix; a table survives save and load; a
 * small graph's table prices each distinct design once, at its call points, and a second run
 * takes every reliable design from the last table; and the Llama graph (both versions, the
 * 1B shape) holds no tunable at a call site, so a profile reaches every one. Nothing here
 * asserts a timing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferrum/graph.h"
#include "ferrum/lm.h"
#include "core/json.h"
#include "graph/inspect.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/cli_run.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"
#include "support/tiny_llama.h"
#include "tune/cost_table.h"

static char cache_root[64], model_dir[64];

static int setup(void **state) {
    snprintf(cache_root, sizeof cache_root, "/tmp/ferrum-tune-graph-XXXXXX");
    if (!mkdtemp(cache_root)) return -1;
    setenv("FERRUM_CACHE_HOME", cache_root, 1); /* never the user's own cache */
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 4, &w, &err) != FE_OK) return -1;
    bool ok = lmfix_tmpdir(model_dir, sizeof model_dir) &&
              fe_llama_weights_write_safetensors(&w, model_dir, &err) == FE_OK &&
              lmfix_byte_tokenizer(model_dir, false, 64);
    fe_llama_weights_free(&w);
    return ok ? test_device_setup(state) : -1;
}

static int teardown(void **state) {
    lmfix_rmtree(model_dir);
    lmfix_rmtree(cache_root);
    return test_device_teardown(state);
}

/* ---- a synthetic table ----
 * dispatch 1000 ns, barrier 200 ns; one fused call of five steps: GEMV d0, d0, d1 (d0 and d1
 * are one group: same op and shape key, priced at other points), RMSNorm d2, MHA d3.
 *   group GEMV, net of the dispatch: default 9000 + 9000 + 19000 = 37000
 *                                    WIDTH=1  5000 + 5000 + 29000 = 39000
 *                                    rows_per_step=4  6000 + 6000 + 14000 = 26000  <- chosen,
 *     though WIDTH=1 is d0's own best
 *   RMSNorm: WIDTH=1 2950 vs 3000 is inside the spreads (margin (300 + 200) / 2): default
 *   MHA: WIDTH=1 is faster but unreliable, B_q=8 gated out: default
 * modelled: 1000 + 4 * 200 + 26000 + 2000 + 4000 = 33800 (defaults: 44800). */
#define FIG(m, lo, hi, rel) \
    "{\"median_ns\": " #m ", \"p10_ns\": " #lo ", \"p90_ns\": " #hi ", \"samples\": 9, " \
    "\"reliable\": " #rel "}"
#define OPT(set, tun, fig) \
    "{\"setting\": \"" set "\", \"verdict\": \"candidate\", \"reason\": \"\", \"tunables\": " tun \
    ", \"cost\": " fig "}"
#define GEMV_DESIGN(key, d, w1, r4)                                                           \
    "{\"key\": \"" key "\", \"op\": \"GEMV\", \"shape\": \"GEMV 64x64\", "                   \
    "\"when\": {\"N\": 64, \"K\": 64}, \"options\": ["                                         \
    OPT("default", "{\"WIDTH\": 2, \"rows_per_step\": 2}", d) ", "                          \
    OPT("WIDTH=1", "{\"WIDTH\": 1, \"rows_per_step\": 2}", w1) ", "                         \
    OPT("rows_per_step=4", "{\"WIDTH\": 2, \"rows_per_step\": 4}", r4) "]}"

static const char synthetic[] =
    "{\"format\": \"ferrum cost table\", \"version\": 1, \"name\": \"synthetic\", "
    "\"device\": \"0123456789abcdef\", \"packaging\": \"fused\", "
    "\"dispatch\": " FIG(1000, 900, 1100, true) ", \"barrier\": " FIG(200, 190, 210, true) ", "
    "\"designs\": ["
    GEMV_DESIGN("00000000000000d0", FIG(10000, 9900, 10100, true), FIG(6000, 5900, 6100, true),
                FIG(7000, 6900, 7100, true)) ", "
    GEMV_DESIGN("00000000000000d1", FIG(20000, 19900, 20100, true), FIG(30000, 29900, 30100, true),
                FIG(15000, 14900, 15100, true)) ", "
    "{\"key\": \"00000000000000d2\", \"op\": \"RMSNorm\", \"shape\": \"RMSNorm\", "
    "\"when\": {\"rows\": 1, \"cols\": 64}, \"options\": ["
    OPT("default", "{\"WIDTH\": 2}", FIG(3000, 2900, 3100, true)) ", "
    OPT("WIDTH=1", "{\"WIDTH\": 1}", FIG(2950, 2800, 3100, true)) "]}, "
    "{\"key\": \"00000000000000d3\", \"op\": \"MHA\", \"shape\": \"MHA\", "
    "\"when\": {\"D\": 64}, \"options\": ["
    OPT("default", "{\"WIDTH\": 2}", FIG(5000, 4900, 5100, true)) ", "
    OPT("WIDTH=1", "{\"WIDTH\": 1}", FIG(1000, 900, 1100, false)) ", "
    "{\"setting\": \"B_q=8\", \"verdict\": \"gated out\", \"reason\": \"o: max |diff| 1e-3\", "
    "\"tunables\": {}}]}], "
    "\"calls\": [{\"name\": \"decode step\", \"each_step\": false, \"measured\": null, "
    "\"steps\": [{\"label\": \"GEMV#0\", \"design\": 0}, {\"label\": \"GEMV#1\", \"design\": 0}, "
    "{\"label\": \"GEMV#2\", \"design\": 1}, {\"label\": \"RMSNorm#3\", \"design\": 2}, "
    "{\"label\": \"MHA#4\", \"design\": 3}]}]}";

static fe_cost_table *parse_synthetic(void) {
    fe_cost_table *t = NULL;
    fe_error err;
    if (fe_cost_table_parse(synthetic, sizeof synthetic - 1, "synthetic", &t, &err) != FE_OK)
        fail_msg("%s", err.message);
    return t;
}

static void narrowing_on_a_synthetic_table_picks_the_optimum_computed_by_hand(void **s) {
    (void)s;
    fe_cost_table *t = parse_synthetic();
    fe_narrowing *n = NULL;
    fe_error err;
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &n, &err), FE_OK);
    assert_int_equal(fe_narrowing_groups(n), 3);
    assert_string_equal(fe_narrowing_choice(n, 0), "rows_per_step=4"); /* the group's best */
    assert_string_equal(fe_narrowing_choice(n, 1), "default");         /* within the noise */
    assert_string_equal(fe_narrowing_choice(n, 2), "default");         /* unreliable, gated */
    assert_float_equal(fe_narrowing_predicted_ns(n, 0), 33800, 1e-6);
    assert_float_equal(fe_narrowing_default_ns(n, 0), 44800, 1e-6);
    fe_narrowing_destroy(n);

    /* designs held: only WIDTH may change; the group's WIDTH=1 (39000) loses to 37000 */
    fe_narrow_kinds k = fe_narrow_kinds_all();
    k.designs = false;
    assert_int_equal(fe_narrow(t, k, &n, &err), FE_OK);
    assert_string_equal(fe_narrowing_choice(n, 0), "default");
    assert_float_equal(fe_narrowing_predicted_ns(n, 0), 44800, 1e-6);
    fe_narrowing_destroy(n);
    /* widths held: rows_per_step=4 still wins */
    k = fe_narrow_kinds_all();
    k.widths = false;
    assert_int_equal(fe_narrow(t, k, &n, &err), FE_OK);
    assert_string_equal(fe_narrowing_choice(n, 0), "rows_per_step=4");
    assert_float_equal(fe_narrowing_predicted_ns(n, 0), 33800, 1e-6);
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(t);
}

/* A call that measured slower tuned puts its groups back: the GEMV group's rows_per_step=4
 * goes, every group of the call is decided at its default (entries that pin it), and the
 * call is modelled at the defaults again. */
static void a_call_measured_slower_tuned_puts_its_groups_back(void **s) {
    (void)s;
    fe_cost_table *t = parse_synthetic();
    fe_narrowing *n = NULL;
    fe_error err;
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &n, &err), FE_OK);
    assert_int_equal(fe_narrowing_revert_call(n, 0), 1);
    for (int g = 0; g < fe_narrowing_groups(n); g++)
        assert_string_equal(fe_narrowing_choice(n, g), "default");
    assert_int_equal(fe_narrowing_decided(n), 3);
    assert_float_equal(fe_narrowing_predicted_ns(n, 0), 44800, 1e-6);
    assert_int_equal(fe_narrowing_revert_call(n, 0), 0); /* again: nothing left to change */
    assert_int_equal(fe_narrowing_revert_call(n, 1), 0); /* no such call */
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_parse("{\"entries\": []}", 15, &p, &err), FE_OK);
    assert_int_equal(fe_narrowing_to_profile(n, p, &err), FE_OK);
    assert_int_equal(fe_profile_count(p), 3);
    fe_profile_destroy(p);
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(t);
}

/* each_step: every step is its own dispatch, so nothing is taken off and no barrier added */
static void each_step_calls_are_modelled_as_a_dispatch_per_step(void **s) {
    (void)s;
    char *text = strdup(synthetic);
    char *at = strstr(text, "\"each_step\": false");
    memcpy(at, "\"each_step\": true ", strlen("\"each_step\": false"));
    fe_cost_table *t = NULL;
    fe_narrowing *n = NULL;
    fe_error err;
    assert_int_equal(fe_cost_table_parse(text, strlen(text), "each", &t, &err), FE_OK);
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &n, &err), FE_OK);
    /* 7000 + 7000 + 15000 + 3000 + 5000 */
    assert_float_equal(fe_narrowing_predicted_ns(n, 0), 37000, 1e-6);
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(t);
    free(text);
}

static void the_choice_written_as_a_profile_reaches_the_kernel(void **s) {
    (void)s;
    fe_cost_table *t = parse_synthetic();
    fe_narrowing *n = NULL;
    fe_error err;
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &n, &err), FE_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/profiles/synthetic.json", cache_root);
    assert_int_equal(fe_tune_write_narrowing(n, path, &err), FE_OK);
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_load(path, &p, &err), FE_OK);
    /* GEMV's choice and RMSNorm's default (kept against a reliable rival); none for MHA,
     * whose only rival is unreliable */
    assert_int_equal(fe_narrowing_decided(n), 2);
    assert_int_equal(fe_profile_count(p), 2);
    int64_t ws[2] = {64, 64}, xs[2] = {1, 64};
    fe_tensor ops[6] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, ws),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, xs)};
    ops[5] = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, (int64_t[2]){1, 64});
    fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6, .profile = p};
    fe_kernel *k = NULL;
    assert_int_equal(fe_kernel_create(test_dev, &req, &k, &err), FE_OK);
    assert_int_equal(fe_kernel_tunable(k, "rows_per_step"), 4);
    fe_kernel_destroy(k);
    fe_profile_destroy(p);
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(t);
}

static void a_table_survives_save_and_load(void **s) {
    (void)s;
    fe_cost_table *t = parse_synthetic(), *back = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/tables/x/synthetic.fused.json", cache_root);
    fe_error err;
    t->designs[0].options[1].cost.in_turn = true; /* saved only where true */
    assert_int_equal(fe_cost_table_save(t, path, &err), FE_OK);
    assert_int_equal(fe_cost_table_load(path, &back, &err), FE_OK);
    assert_int_equal(fe_cost_table_designs(back), 4);
    assert_true(back->designs[0].options[1].cost.in_turn);
    assert_false(back->designs[0].options[0].cost.in_turn);
    assert_int_equal(fe_cost_table_calls(back), 1);
    fe_narrowing *a = NULL, *b = NULL;
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &a, &err), FE_OK);
    assert_int_equal(fe_narrow(back, fe_narrow_kinds_all(), &b, &err), FE_OK);
    assert_float_equal(fe_narrowing_predicted_ns(a, 0), fe_narrowing_predicted_ns(b, 0), 1e-6);
    assert_string_equal(fe_narrowing_choice(b, 0), "rows_per_step=4");
    fe_narrowing_destroy(a);
    fe_narrowing_destroy(b);
    fe_cost_table_destroy(t);
    fe_cost_table_destroy(back);
}

/* ---- settings that would hold a second copy of a weight ----
 * Two GEMV groups read weight 7 (operand 0). The decode group's default reads it in layout
 * format 2 (4096 bytes); its rows_per_step=4 reads it as it is. The prefill group's default
 * reads it as it is, twice (two steps); its WIDTH=1 reads it in format 2 (the defaults make
 * that one: no copy), its rows_per_step=4, the fastest, in format 3 (8192 bytes: a copy, the
 * two steps' one weight counted once).
 *   decode:  default 5000, rows_per_step=4 4000                 -> rows_per_step=4
 *   prefill: default 2 x 10000, WIDTH=1 2 x 8000, rows_per_step=4 2 x 6000
 *            memory-neutral -> WIDTH=1 (rows_per_step=4 held out: 10 us over the steps less
 *            the dispatch, 8192 bytes); with copies -> rows_per_step=4 */
#define LAID_OPT(set, tun, fig, layouts) \
    "{\"setting\": \"" set "\", \"verdict\": \"candidate\", \"reason\": \"\", \"tunables\": " tun \
    ", \"cost\": " fig ", \"layouts\": " layouts "}"
static const char with_layouts[] =
    "{\"format\": \"ferrum cost table\", \"version\": 1, \"name\": \"copies\", "
    "\"device\": \"0123456789abcdef\", \"packaging\": \"fused\", "
    "\"dispatch\": " FIG(1000, 900, 1100, true) ", \"barrier\": " FIG(200, 190, 210, true) ", "
    "\"designs\": ["
    "{\"key\": \"00000000000000e0\", \"op\": \"GEMV\", \"shape\": \"decode\", "
    "\"when\": {\"rows\": 1}, \"options\": ["
    LAID_OPT("default", "{\"rows_per_step\": 2}", FIG(5000, 4990, 5010, true), "[[0, 2, 4096]]") ", "
    LAID_OPT("rows_per_step=4", "{\"rows_per_step\": 4}", FIG(4000, 3990, 4010, true), "[]")
    "]}, "
    "{\"key\": \"00000000000000e1\", \"op\": \"GEMV\", \"shape\": \"prefill\", "
    "\"when\": {\"rows\": 8}, \"options\": ["
    LAID_OPT("default", "{\"WIDTH\": 2, \"rows_per_step\": 2}", FIG(10000, 9990, 10010, true), "[]") ", "
    LAID_OPT("WIDTH=1", "{\"WIDTH\": 1, \"rows_per_step\": 2}", FIG(8000, 7990, 8010, true),
             "[[0, 2, 4096]]") ", "
    LAID_OPT("rows_per_step=4", "{\"WIDTH\": 2, \"rows_per_step\": 4}", FIG(6000, 5990, 6010, true),
             "[[0, 3, 8192]]") "]}], "
    "\"calls\": [{\"name\": \"decode step\", \"each_step\": false, \"measured\": null, "
    "\"steps\": [{\"label\": \"GEMV#0\", \"design\": 0, \"weights\": [[0, 7]]}]}, "
    "{\"name\": \"prefill chunk\", \"each_step\": false, \"measured\": null, "
    "\"steps\": [{\"label\": \"GEMV#0\", \"design\": 1, \"weights\": [[0, 7]]}, "
    "{\"label\": \"GEMV#1\", \"design\": 1, \"weights\": [[0, 7]]}]}]}";

static void narrowing_holds_out_a_setting_that_would_copy_a_weight(void **s) {
    (void)s;
    fe_cost_table *t = NULL, *back = NULL;
    fe_narrowing *n = NULL;
    fe_error err;
    if (fe_cost_table_parse(with_layouts, sizeof with_layouts - 1, "copies", &t, &err) != FE_OK)
        fail_msg("%s", err.message);
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &n, &err), FE_OK);
    assert_int_equal(fe_narrowing_groups(n), 2);
    assert_string_equal(fe_narrowing_choice(n, 0), "rows_per_step=4"); /* drops a layout */
    assert_string_equal(fe_narrowing_choice(n, 1), "WIDTH=1");         /* the defaults' one */
    assert_float_equal(fe_narrowing_copy_bytes(n, 1), 0, 0);
    double ns = 0, bytes = 0;
    assert_null(fe_narrowing_held_out(n, 0, &ns, &bytes));
    const char *held = fe_narrowing_held_out(n, 1, &ns, &bytes);
    assert_non_null(held);
    assert_string_equal(held, "rows_per_step=4");
    assert_float_equal(ns, 2 * (6000 - 1000), 1e-6);
    assert_float_equal(bytes, 8192, 0); /* the two steps' one weight: one copy */
    /* prefill modelled at WIDTH=1: 1000 + 200 + 2 x 7000 */
    assert_float_equal(fe_narrowing_predicted_ns(n, 1), 15200, 1e-6);
    fe_narrowing_destroy(n);
    /* asked to allow copies: the fastest, its copy said */
    fe_narrow_kinds k = fe_narrow_kinds_all();
    k.copies = true;
    assert_int_equal(fe_narrow(t, k, &n, &err), FE_OK);
    assert_string_equal(fe_narrowing_choice(n, 1), "rows_per_step=4");
    assert_float_equal(fe_narrowing_copy_bytes(n, 1), 8192, 0);
    assert_null(fe_narrowing_held_out(n, 1, NULL, NULL));
    fe_narrowing_destroy(n);
    /* the layouts and the steps' weights survive the file */
    char path[128];
    snprintf(path, sizeof path, "%s/tables/x/copies.fused.json", cache_root);
    assert_int_equal(fe_cost_table_save(t, path, &err), FE_OK);
    assert_int_equal(fe_cost_table_load(path, &back, &err), FE_OK);
    assert_true(back->designs[1].options[2].layouts_known);
    assert_int_equal(back->designs[1].options[2].layout_format[0], 3);
    assert_float_equal(back->designs[1].options[2].layout_bytes[0], 8192, 0);
    assert_int_equal(back->calls[1].steps[1].weight[0], 7);
    assert_int_equal(fe_narrow(back, fe_narrow_kinds_all(), &n, &err), FE_OK);
    assert_string_equal(fe_narrowing_choice(n, 1), "WIDTH=1");
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(back);
    fe_cost_table_destroy(t);
    /* a table written before layouts were kept: unknown (a graph tuner searches such a
     * design again rather than reuse it) */
    t = parse_synthetic();
    assert_false(t->designs[0].options[0].layouts_known);
    fe_cost_table_destroy(t);
}

/* Figures at one read level. In the synthetic table, design d0's default (10000 ns) gets
 * read level 20 GB/s and 100000 bytes (10 GB/s: half the gauge's rate, so all of it bound by
 * memory), d1's default (20000 ns) level 20 and 20000 bytes (1 GB/s: a tenth of it), the
 * RMSNorm's (3000 ns) level 60 and 90000 bytes (all memory), the rest no level. At 40 GB/s
 * (levels taken at most 1.2 x 40 = 48): d0's default takes 10000 * 20 / 40 = 5000 (p10 and
 * p90 alike), d1's 20000 * (0.9 + 0.1 * 0.5) = 19000, the RMSNorm's 3000 * 48 / 40 = 3600,
 * the others as they were. */
static void figures_at_one_read_level_move_by_their_share_bound_by_memory(void **s) {
    (void)s;
    fe_cost_table *t = parse_synthetic(), *back = NULL;
    fe_table_option *d0 = &t->designs[0].options[0], *d1 = &t->designs[1].options[0];
    fe_table_option *norm = &t->designs[2].options[0];
    d0->cost.read_gbps = 20, d0->bytes = 100000;
    d1->cost.read_gbps = 20, d1->bytes = 20000;
    norm->cost.read_gbps = 60, norm->bytes = 90000;
    t->designs[0].options[1].cost.read_gbps = 30; /* WIDTH=1 at 30, bytes unknown: kept */
    double lo, hi;
    int n;
    assert_float_equal(fe_cost_table_read_level(t, &lo, &hi, &n), 25, 1e-9); /* 20 20 30 60 */
    assert_int_equal(n, 4);
    assert_float_equal(lo, 20, 1e-9);
    assert_float_equal(hi, 60, 1e-9);
    fe_cost_table_at_level(t, 40);
    assert_float_equal(d0->cost.median_ns, 5000, 1e-6);
    assert_float_equal(d0->cost.p10_ns, 4950, 1e-6);
    assert_float_equal(d0->cost.p90_ns, 5050, 1e-6);
    assert_float_equal(d1->cost.median_ns, 19000, 1e-6);
    assert_float_equal(norm->cost.median_ns, 3600, 1e-6);
    assert_float_equal(t->designs[0].options[1].cost.median_ns, 6000, 1e-6);
    assert_float_equal(t->designs[3].options[0].cost.median_ns, 5000, 1e-6); /* no level */
    assert_float_equal(d0->cost.read_gbps, 40, 1e-9);
    assert_float_equal(t->designs[0].options[1].cost.read_gbps, 40, 1e-9);
    /* the decode call moved from 40 to 20, each step net of the dispatch (1000) as narrowing
     * models a fused step: d0 (5000 at 20 GB/s, all memory) x2 twice: +4000 each; d1 (19000
     * at 20000 / 19000 GB/s: a share of 2 * 1.0526 / 40) +18000 * that share; the RMSNorm
     * (3600 at 25 GB/s, all memory) x2: +2600; the MHA (no level) nothing */
    double share = 2 * (20000.0 / 19000) / 40;
    double moved = fe_cost_table_call_at_level(t, 0, 1e6, 20) - 1e6;
    assert_float_equal(moved, 2 * 4000 + 18000 * share + 2600, 1e-3);
    /* a call's level past 1.2 x the table's counts as 48 */
    assert_float_equal(fe_cost_table_call_at_level(t, 0, 1e6, 60),
                       fe_cost_table_call_at_level(t, 0, 1e6, 48), 1e-6);
    assert_true(fe_cost_table_call_at_level(t, 0, 1e6, 48) < 1e6);
    assert_float_equal(fe_cost_table_call_at_level(t, 0, 1e6, 0), 1e6, 0); /* unknown */
    /* the levels and bytes survive the file */
    char path[128];
    snprintf(path, sizeof path, "%s/tables/x/levels.fused.json", cache_root);
    fe_error err;
    assert_int_equal(fe_cost_table_save(t, path, &err), FE_OK);
    assert_int_equal(fe_cost_table_load(path, &back, &err), FE_OK);
    assert_float_equal(back->read_gbps, 40, 1e-9);
    assert_float_equal(back->designs[0].options[0].bytes, 100000, 1e-9);
    assert_float_equal(back->designs[0].options[0].cost.read_gbps, 40, 1e-9);
    assert_float_equal(back->designs[3].options[0].cost.read_gbps, 0, 0);
    fe_cost_table_destroy(back);
    /* a level of 0 changes nothing */
    fe_cost_table_at_level(t, 0);
    assert_float_equal(d0->cost.median_ns, 5000, 1e-6);
    fe_cost_table_destroy(t);
}

/* Replaces the first `from` of synthetic by `to`; the caller frees. */
static char *edited(const char *from, const char *to) {
    const char *at = strstr(synthetic, from);
    if (!at) fail_msg("the synthetic table has no \"%s\"", from);
    size_t n = strlen(synthetic) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    size_t head = (size_t)(at - synthetic);
    memcpy(out, synthetic, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    return out;
}

static void bad_cost_tables_are_refused_naming_the_field_and_the_fix(void **s) {
    (void)s;
    static const struct { const char *from, *to, *says; } bad[] = {
        {"\"ferrum cost table\"", "\"ferrum profile\"", "format"},
        {"\"version\": 1", "\"version\": 2", "version"},
        {"\"packaging\": \"fused\"", "\"packaging\": \"both\"", "packaging"},
        {"\"design\": 3}", "\"design\": 4}", "calls[0].steps[4].design"},
        {"\"design\": 3}", "\"design\": -1}", "design"},
        {"\"median_ns\": 10000, \"p10_ns\": 9900", "\"median_ns\": 10000, \"p10_ns\": 19900",
         "p10_ns <= median_ns <= p90_ns"},
        {"\"median_ns\": 1000,", "\"median_ns\": -5,", "dispatch"},
        {"\"op\": \"MHA\"", "\"op\": \"Nope\"", "designs[3].op"},
        {"\"rows_per_step\": 4", "\"rows_per_stp\": 4", "rows_per_stp"},
        {"\"setting\": \"default\"", "\"setting\": \"WIDTH=3\"", "options[0]"},
        {"\"key\": \"00000000000000d0\"", "\"key\": \"d0\"", "key"},
        {"\"calls\": [{", "\"calls\": [], \"x\": [{", "calls"},
        {"\"reliable\": true}", "\"reliable\": 1}", "reliable"},
        {"\"reliable\": true}", "\"reliable\": true, \"in_turn\": 1}", "in_turn"},
        {"\"N\": 64", "\"N\": [64]", "when"},
        {"\"verdict\": \"candidate\"", "\"verdict\": \"maybe\"", "verdict"},
        {"\"reliable\": true}", "\"reliable\": true, \"read_gbps\": -1}", "read_gbps"},
        {"\"reliable\": true}", "\"reliable\": true, \"read_gbps\": \"fast\"}", "read_gbps"},
        {"\"packaging\": \"fused\"", "\"packaging\": \"fused\", \"read_gbps\": [1]",
         "read_gbps"},
        {", \"cost\": {", ", \"bytes\": -64, \"cost\": {", "bytes"},
        {", \"cost\": {", ", \"layouts\": {}, \"cost\": {", "layouts"},
        {", \"cost\": {", ", \"layouts\": [[9, 2, 64]], \"cost\": {", "layouts"},
        {", \"cost\": {", ", \"layouts\": [[0, 2, 0]], \"cost\": {", "layouts"},
        {", \"cost\": {", ", \"layouts\": [[0, -2, 64]], \"cost\": {", "layouts"},
        {", \"cost\": {", ", \"layouts\": [[0, 2, 64], [0, 3, 64]], \"cost\": {", "layouts"},
        {", \"cost\": {", ", \"layouts\": [[0, 2]], \"cost\": {", "layouts"},
        {"\"design\": 3}", "\"design\": 3, \"weights\": [[0, 0]]}", "weights"},
        {"\"design\": 3}", "\"design\": 3, \"weights\": [[7, 1]]}", "weights"},
        {"\"design\": 3}", "\"design\": 3, \"weights\": 5}", "weights"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = edited(bad[i].from, bad[i].to);
        fe_cost_table *t = (fe_cost_table *)1;
        fe_error err = {0};
        fe_status st = fe_cost_table_parse(text, strlen(text), "t.json", &t, &err);
        if (st == FE_OK) fail_msg("case %zu (%s) was accepted", i, bad[i].to);
        assert_null(t);
        if (i > 0 && !strstr(err.message, bad[i].says))
            fail_msg("case %zu: \"%s\" does not name %s", i, err.message, bad[i].says);
        if (st == FE_E_FORMAT && !strstr(err.message, "t.json"))
            fail_msg("case %zu: \"%s\" does not name the file", i, err.message);
        free(text);
    }
    fe_cost_table *t = NULL;
    fe_error err;
    assert_int_equal(fe_cost_table_parse("{\"format\": ", 11, "cut.json", &t, &err), FE_E_FORMAT);
    assert_int_equal(fe_cost_table_parse("[1]", 3, "list.json", &t, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "the top level is not an object"));
    assert_int_equal(fe_cost_table_load("/nonexistent/t.json", &t, &err), FE_E_IO);
    assert_non_null(strstr(err.message, "/nonexistent/t.json"));
}

/* ---- a small graph: x (8, 64) normed twice over all rows, then over its first n ---- */
static fe_status small_body(fe_trace *t, const void *model) {
    (void)model;
    fe_val n = fe_scratchpad(t, "n");
    fe_h w = fe_weight(t, "w");
    fe_h x = fe_input(t, "x");
    fe_h a[2] = {x, w};
    fe_h y = fe_apply(t, "RMSNorm", a, 2, NULL, 0, NULL, 0);
    fe_h b[2] = {y, w};
    y = fe_apply(t, "RMSNorm", b, 2, NULL, 0, NULL, 0);
    fe_h c[2] = {fe_bound(t, y, 0, n), w};
    fe_output(t, fe_apply(t, "RMSNorm", c, 2, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

static fe_tune_options quick(void) {
    fe_tune_options o = fe_tune_options_default();
    o.budget_ms = 2;
    o.attempts = 1;
    o.warmup = 1;
    o.min_samples = 3;
    o.cache_root = cache_root;
    return o;
}

/* The small graph with w = 1 (64 columns) and x (8, 64) of i % mod - mod / 2, its input
 * named in `in`; x and w must outlive the graph (static in the caller). */
static fe_graph *small_graph(float *x, float *w, int mod, fe_named_tensor *in) {
    for (int i = 0; i < 8 * 64; i++) x[i] = (float)(i % mod - mod / 2);
    for (int i = 0; i < 64; i++) w[i] = 1;
    fe_graph *g = NULL;
    assert_int_equal(fe_graph_create(test_dev, "small", small_body, NULL, &g, NULL), FE_OK);
    int64_t ws = 64, xs[2] = {8, 64};
    assert_int_equal(fe_graph_set_weight(g, "w", fe_tensor_contiguous(w, FE_DTYPE_F32, 1, &ws)), FE_OK);
    *in = (fe_named_tensor){"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xs)};
    return g;
}

/* Rewrites every cost-cache entry whose file's label is `label`: median, p10 and p90 at
 * `ns`, reliable as given, not in turn; ns < 0 removes the file. Returns the files changed. */
static int cache_entries_set(const char *label, double ns, bool reliable) {
    char find[256], path[600];
    snprintf(find, sizeof find, "find '%s/costs' -name '*.json'", cache_root);
    int changed = 0;
    FILE *ls = popen(find, "r");
    if (!ls) fail_msg("cannot run %s", find);
    while (fgets(path, sizeof path, ls)) {
        path[strcspn(path, "\n")] = 0;
        json_t *j = NULL;
        fe_error err;
        if (fe_json_load_file(path, &j, &err) != FE_OK) continue;
        const char *l = json_string_value(json_object_get(j, "label"));
        if (l && strcmp(l, label) == 0 && ns < 0) {
            assert_int_equal(unlink(path), 0);
            changed++;
        } else if (l && strcmp(l, label) == 0) {
            size_t i;
            json_t *e;
            json_array_foreach(json_object_get(j, "entries"), i, e) {
                json_object_set_new(e, "median_ns", json_real(ns));
                json_object_set_new(e, "p10_ns", json_real(ns));
                json_object_set_new(e, "p90_ns", json_real(reliable ? ns : 2 * ns));
                json_object_set_new(e, "reliable", json_boolean(reliable));
                json_object_set_new(e, "in_turn", json_false());
            }
            assert_int_equal(json_dump_file(j, path, 0), 0);
            changed++;
        }
        json_decref(j);
    }
    pclose(ls);
    return changed;
}

/* The second pass of a graph's tune measures the fastest setting again in turn with the
 * default where the default runs short (a decode's steps), its figure is unreliable, or the
 * setting leads it by much: here a setting's cached figure is made the fastest by hand, so
 * the second pass must pair it. A setting still faster that its rounds did not reach is
 * marked unreliable. */
static void the_second_pass_pairs_the_fastest_where_short_unreliable_or_far_ahead(void **s) {
    (void)s;
    static float x[8 * 64], w[64];
    fe_named_tensor in;
    fe_graph *g = small_graph(x, w, 5, &in);
    fe_word words[2] = {{"n", 2}, {"n", 8}};
    fe_tune_call call = {"call", &in, 1, words, 1, 2};
    fe_tune_graph_request req = {g, "small", &call, 1};
    fe_tune_options o = quick();
    o.remeasure = true;
    fe_cost_table *t = NULL;
    fe_error err;
    if (fe_tune_graph(test_dev, &req, &o, NULL, &t, &err) != FE_OK) fail_msg("%s", err.message);
    o.remeasure = false;
    const fe_table_design *des = &t->designs[0];
    int pick = -1, other = -1; /* made fastest; measured again (the design not all cached) */
    for (int i = 1; i < des->n_options; i++)
        if (des->options[i].verdict == FE_TUNE_CANDIDATE) {
            if (pick < 0) pick = i;
            else other = i;
        }
    if (other < 0) fail_msg("fewer than two candidates besides the default in %s", des->op);
    char label[300], def_label[300], other_label[300];
    snprintf(label, sizeof label, "%s %s", des->op, des->options[pick].setting);
    snprintf(def_label, sizeof def_label, "%s default", des->op);
    snprintf(other_label, sizeof other_label, "%s %s", des->op, des->options[other].setting);
    for (int round = 0; round < 3; round++) {
        /* round 0: the default as measured (short); round 1: the default's figure 1 s and
         * unreliable, past the short bar; round 2: 1 s and reliable, the setting's lead large */
        assert_true(cache_entries_set(label, 1.0, true) > 0);
        if (round > 0) assert_true(cache_entries_set(def_label, 1e9, round == 2) > 0);
        assert_true(cache_entries_set(other_label, -1, true) > 0);
        fe_cost_table *again = NULL;
        if (fe_tune_graph(test_dev, &req, &o, NULL, &again, &err) != FE_OK)
            fail_msg("%s", err.message);
        const fe_table_design *d = &again->designs[0];
        const fe_table_option *x = NULL;
        for (int i = 0; i < d->n_options; i++)
            if (strcmp(d->options[i].setting, des->options[pick].setting) == 0) x = &d->options[i];
        assert_non_null(x);
        /* (its reason is the last search's: a later round that paired another setting read
         * this one back from the cache, which keeps in_turn) */
        if (!x->cost.in_turn) fail_msg("round %d: %s: \"%s\"", round, x->setting, x->reason);
        assert_true(x->cost.median_ns > 1.0);       /* measured, not the figure made up */
        assert_true(d->options[0].cost.in_turn);    /* the default measured with it */
        assert_true(d->options[0].cost.median_ns < 1e9);
        fe_cost_table_destroy(again);
    }
    /* the rounds run out: with one round, a second setting faster than the default (2 ns)
     * is not measured again, so narrowing must not trust its figure */
    o.second_pass_rounds = 1;
    assert_true(cache_entries_set(label, 1.0, true) > 0);
    assert_true(cache_entries_set(other_label, 2.0, true) > 0);
    assert_true(cache_entries_set(def_label, -1, true) > 0); /* the design measured again */
    fe_cost_table *again = NULL;
    if (fe_tune_graph(test_dev, &req, &o, NULL, &again, &err) != FE_OK) fail_msg("%s", err.message);
    const fe_table_design *dl = &again->designs[0];
    const fe_table_option *late = NULL;
    for (int i = 0; i < dl->n_options; i++)
        if (strcmp(dl->options[i].setting, des->options[other].setting) == 0) late = &dl->options[i];
    assert_non_null(late);
    if (late->cost.reliable || !strstr(late->reason, "rounds ran out"))
        fail_msg("%s: reliable %d, \"%s\"", late->setting, late->cost.reliable, late->reason);
    fe_cost_table_destroy(again);
    fe_cost_table_destroy(t);
    fe_graph_destroy(g);
}

static void a_graph_table_prices_each_distinct_design_once_at_its_points(void **s) {
    (void)s;
    static float x[8 * 64], w[64];
    fe_named_tensor in;
    fe_graph *g = small_graph(x, w, 7, &in);
    int64_t ws = 64;
    fe_word words[2] = {{"n", 2}, {"n", 8}};
    fe_tune_call call = {"call", &in, 1, words, 1, 2};
    fe_tune_graph_request req = {g, "small", &call, 1};
    fe_tune_options o = quick();
    fe_cost_table *t = NULL, *again = NULL;
    fe_error err;
    if (fe_tune_graph(test_dev, &req, &o, NULL, &t, &err) != FE_OK) fail_msg("%s", err.message);
    /* the first two steps are one design (same shape and values); the third reads n */
    assert_int_equal(fe_cost_table_designs(t), 2);
    assert_int_equal(t->calls[0].n_steps, 3);
    assert_int_equal(t->calls[0].steps[0].design, 0);
    assert_int_equal(t->calls[0].steps[1].design, 0);
    assert_int_equal(t->calls[0].steps[2].design, 1);
    assert_false(t->calls[0].each_step);
    assert_string_equal(t->designs[0].op, "RMSNorm");
    /* every step reads the one weight w (operand 1) and the input x (0, no weight); the
     * norm reads them as they are, in no layout */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(t->calls[0].steps[i].weight[0], 0);
        assert_true(t->calls[0].steps[i].weight[1] != 0);
        assert_true(t->calls[0].steps[i].weight[1] == t->calls[0].steps[0].weight[1]);
    }
    assert_true(t->designs[0].options[0].layouts_known);
    assert_int_equal(t->designs[0].options[0].layout_format[1], 0);
    assert_string_equal(t->designs[0].options[0].setting, "default");
    assert_true(t->designs[0].n_options >= 2); /* WIDTH=1 at least, on two workers */
    assert_true(t->designs[0].options[0].cost.median_ns > 0);
    bool has_rows = false;
    for (int i = 0; i < t->designs[0].n_when; i++)
        has_rows = has_rows || (strcmp(t->designs[0].when[i].name, "rows") == 0 &&
                                t->designs[0].when[i].value == 8);
    assert_true(has_rows);
    fe_cost_figure measured;
    bool cached = true;
    assert_int_equal(fe_tune_measure_calls(test_dev, &req, &o, t, &measured, &cached, &err), FE_OK);
    assert_true(t->calls[0].has_measured && measured.median_ns > 0);
    assert_false(cached); /* a fresh cache */
    /* the same graph at the same points again: the call's figure from the cost cache */
    fe_cost_figure again_measured;
    assert_int_equal(fe_tune_measure_calls(test_dev, &req, &o, NULL, &again_measured, &cached,
                                           &err), FE_OK);
    assert_true(cached);
    assert_true(again_measured.median_ns == measured.median_ns);
    /* other points are another call */
    fe_word other[2] = {{"n", 3}, {"n", 8}};
    call.words = other;
    assert_int_equal(fe_tune_measure_calls(test_dev, &req, &o, NULL, &again_measured, &cached,
                                           &err), FE_OK);
    assert_false(cached);
    call.words = words;
    /* a pair (the same graph twice here) is measured in turn, cached as a pair, apart from
     * the call measured alone; a pair at different calls is refused */
    fe_cost_figure pa, pb;
    assert_int_equal(fe_tune_measure_calls_paired(test_dev, &req, &req, &o, NULL, &pa, &pb,
                                                  &cached, &err), FE_OK);
    assert_false(cached);
    assert_true(pa.median_ns > 0 && pb.median_ns > 0 && pa.p10_ns <= pa.median_ns &&
                pa.median_ns <= pa.p90_ns);
    fe_cost_figure qa, qb;
    assert_int_equal(fe_tune_measure_calls_paired(test_dev, &req, &req, &o, NULL, &qa, &qb,
                                                  &cached, &err), FE_OK);
    assert_true(cached);
    assert_true(qa.median_ns == pa.median_ns && qb.median_ns == pb.median_ns);
    fe_tune_graph_request none = req;
    none.n_calls = 0;
    assert_int_equal(fe_tune_measure_calls_paired(test_dev, &req, &none, &o, NULL, &qa, &qb,
                                                  &cached, &err), FE_E_INVALID);
    /* the same graph computes the same bytes; one with another weight does not, and the
     * first call and point that differ are named */
    bool same = false;
    char where[96];
    assert_int_equal(fe_tune_calls_same_outputs(&req, &req, &same, where, sizeof where, &err), FE_OK);
    assert_true(same);
    static float w2[64];
    for (int i = 0; i < 64; i++) w2[i] = i == 5 ? 2.0f : 1.0f;
    fe_graph *g2 = NULL;
    assert_int_equal(fe_graph_create(test_dev, "small", small_body, NULL, &g2, NULL), FE_OK);
    assert_int_equal(fe_graph_set_weight(g2, "w", fe_tensor_contiguous(w2, FE_DTYPE_F32, 1, &ws)), FE_OK);
    fe_tune_graph_request other_w = req;
    other_w.graph = g2;
    assert_int_equal(fe_tune_calls_same_outputs(&req, &other_w, &same, where, sizeof where, &err), FE_OK);
    assert_false(same);
    assert_string_equal(where, "the call at point 1");
    assert_int_equal(fe_tune_calls_same_outputs(&req, &none, &same, where, sizeof where, &err),
                     FE_E_INVALID);
    fe_graph_destroy(g2);
    /* a second run takes every design from the last table, unreliable figures too (said
     * so), with its dispatch and barrier figures */
    for (int d = 0; d < t->n_designs; d++)
        for (int i = 0; i < t->designs[d].n_options; i++) t->designs[d].options[i].cost.reliable = false;
    t->dispatch.median_ns = 12345;
    t->dispatch.reliable = false;
    if (fe_tune_graph(test_dev, &req, &o, t, &again, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_cost_table_reused(again), 2);
    assert_int_equal(again->designs[1].n_options, t->designs[1].n_options);
    assert_true(again->dispatch.median_ns == 12345);
    for (int i = 0; i < again->designs[0].n_options; i++)
        if (again->designs[0].options[i].verdict == FE_TUNE_CANDIDATE &&
            !strstr(again->designs[0].options[i].reason, "cached (unreliable: spread "))
            fail_msg("option %d: \"%s\"", i, again->designs[0].options[i].reason);
    fe_cost_table_destroy(again);
    /* ... and --remeasure does not */
    o.remeasure = true;
    if (fe_tune_graph(test_dev, &req, &o, t, &again, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_cost_table_reused(again), 0);
    assert_true(again->dispatch.median_ns != 12345);
    fe_cost_table_destroy(again);
    assert_int_equal(fe_tune_measure_calls(test_dev, &req, &o, NULL, &again_measured, &cached,
                                           &err), FE_OK);
    assert_false(cached);
    fe_narrowing *n = NULL;
    assert_int_equal(fe_narrow(t, fe_narrow_kinds_all(), &n, &err), FE_OK);
    assert_true(fe_narrowing_predicted_ns(n, 0) > 0);
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(t);
    /* a request the tuner cannot price is refused with the rule */
    fe_word bad = {"m", 1};
    call.words = &bad;
    call.n_points = 1;
    assert_int_equal(fe_tune_graph(test_dev, &req, &o, NULL, &t, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "no per-call value \"m\""));
    fe_graph_destroy(g);
}

/* "Every tunable the Llama graph still passes is one a profile could not supply": it passes
 * none. In both versions of the 1B shape (weights unread: compiled, never run), no step holds
 * a tunable from its call site, so every tunable is the profile's to give, or resolve's. */
static void the_llama_graph_holds_no_tunable_a_profile_could_supply(void **s) {
    (void)s;
    fe_lm_open_options o = fe_lm_open_options_default();
    o.random_weights = true;
    o.header_only = true;
    o.device = test_dev;
    fe_lm_model *m = NULL;
    fe_error err;
    if (fe_lm_model_open("llama-3.2-1b", &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = 64;
    so.chunk = 16;
    fe_lm_session *ss = NULL;
    if (fe_lm_session_create(m, &so, &ss, &err) != FE_OK) fail_msg("%s", err.message);
    fe_graph *g = fe_lm_session_graph(ss);
    int64_t C = 16;
    fe_named_tensor prefill = {"tokens", fe_tensor_contiguous(NULL, FE_DTYPE_I32, 1, &C)};
    int versions[2];
    assert_int_equal(fe_graph_version_index(g, &prefill, 1, &versions[0]), FE_OK);
    assert_int_equal(fe_graph_version_index(g, NULL, 0, &versions[1]), FE_OK);
    assert_int_not_equal(versions[0], versions[1]);
    int steps = 0, tunables = 0;
    for (int v = 0; v < 2; v++)
        for (int st = 0; st < fe_graph_version_steps(g, versions[v]); st++) {
            fe_step_info info;
            assert_int_equal(fe_graph_step_info(g, versions[v], st, NULL, 0, &info, &err), FE_OK);
            if (info.n_held)
                fail_msg("version %d step %s holds %s from its call site", v, info.label,
                         info.held[0].name);
            for (int i = 0; i < info.op->n_tunables; i++) {
                fe_tunable_source src = fe_kernel_tunable_source(info.kernel, i);
                assert_true(src != FE_TUNABLE_FROM_CALL_SITE);
            }
            tunables += info.op->n_tunables;
            steps++;
        }
    assert_true(steps > 16 * 8); /* both versions of 16 layers were walked */
    assert_true(tunables > steps);
    fe_lm_session_destroy(ss);
    fe_lm_model_close(m);
}

static char out[1 << 16], errs[1 << 16];

static void cli_tune_model_prints_modelled_beside_measured_and_writes_the_table(void **s) {
    (void)s;
    char profile[128];
    snprintf(profile, sizeof profile, "--write-profile=%s/tiny-profile.json", cache_root);
    int code;
    CLI_RUN_INTO(code, out, errs, "tune", model_dir, "--context", "32", "--chunk", "8",
                 "--budget-ms", "1", profile);
    if (code != 0) fail_msg("exit %d: %s", code, errs);
    static const char *const says[] = {"cost table: ", "joint narrowing", "ablations",
                                       "widths held", "designs held", "decode step",
                                       "prefill chunk", "modelled", "measured", "model/measured",
                                       "unfolded: ", "groups kept", "folds off",
                                       "with no folds", "priced",
                                       "second pass: the fastest setting measured again"};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        if (!strstr(out, says[i])) fail_msg("no \"%s\" in:\n%s", says[i], out);
    /* the table it names loads back, with both calls */
    const char *at = strstr(out, "cost table: ") + strlen("cost table: ");
    char path[512];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(at, " "), at);
    fe_cost_table *t = NULL;
    fe_error err;
    if (fe_cost_table_load(path, &t, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_cost_table_calls(t), 2);
    assert_true(t->calls[0].has_measured && t->calls[1].has_measured);
    fe_cost_table_destroy(t);
    fe_profile *p = NULL;
    char ppath[128];
    snprintf(ppath, sizeof ppath, "%s/tiny-profile.json", cache_root);
    assert_int_equal(fe_profile_load(ppath, &p, &err), FE_OK);
    /* an entry per group decided on reliable figures (on a busy machine there may be none):
     * as many as the command says it wrote */
    const char *wrote = strstr(errs, "wrote ");
    assert_non_null(wrote);
    assert_int_equal(fe_profile_count(p), atoi(wrote + strlen("wrote ")));
    assert_true(fe_profile_folds(p) > 0); /* the fold decisions, one per site key */
    fe_profile_destroy(p);
    /* warm: every design from the last table, each call's figure from the cost cache (with
     * copies of weights allowed: the same table, narrowed under another rule) */
    CLI_RUN_INTO(code, out, errs, "tune", model_dir, "--context", "32", "--chunk", "8",
                 "--budget-ms", "1", "--allow-copies");
    if (code != 0) fail_msg("exit %d: %s", code, errs);
    int designs = 0, reused = 0;
    at = strstr(out, "cost table: ");
    assert_non_null(at);
    assert_int_equal(sscanf(strchr(at, '(') , "(%d designs, %d from", &designs, &reused), 2);
    assert_true(designs > 0);
    assert_int_equal(reused, designs);
    if (!strstr(out, "(cached: the same call measured by an earlier run)"))
        fail_msg("no cached call in:\n%s", out);
}

static void cli_tune_model_refuses_bad_options_naming_the_fix(void **s) {
    (void)s;
    int code;
    CLI_RUN_INTO(code, out, errs, "tune", model_dir, "--context", "16", "--chunk", "32");
    assert_int_equal(code, 2);
    assert_non_null(strstr(errs, "--chunk 32 is more than --context 16"));
    CLI_RUN_INTO(code, out, errs, "tune", model_dir, "--packaging", "both");
    assert_int_equal(code, 2);
    assert_non_null(strstr(errs, "each_step"));
    CLI_RUN_INTO(code, out, errs, "tune", model_dir, "--help");
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "ferrum tune [options] MODEL"));
    assert_non_null(strstr(out, "--allow-copies"));
    /* a preset's name alone is a model too: its help, and the hint to draw its weights */
    CLI_RUN_INTO(code, out, errs, "tune", "smollm2-135m", "--help");
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "ferrum tune [options] MODEL"));
    CLI_RUN_INTO(code, out, errs, "tune", "--random-weights", "1", "no-such-preset");
    assert_int_not_equal(code, 0);
    assert_non_null(strstr(errs, "no-such-preset"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(narrowing_on_a_synthetic_table_picks_the_optimum_computed_by_hand),
        cmocka_unit_test(a_call_measured_slower_tuned_puts_its_groups_back),
        cmocka_unit_test(each_step_calls_are_modelled_as_a_dispatch_per_step),
        cmocka_unit_test(the_choice_written_as_a_profile_reaches_the_kernel),
        cmocka_unit_test(a_table_survives_save_and_load),
        cmocka_unit_test(narrowing_holds_out_a_setting_that_would_copy_a_weight),
        cmocka_unit_test(figures_at_one_read_level_move_by_their_share_bound_by_memory),
        cmocka_unit_test(bad_cost_tables_are_refused_naming_the_field_and_the_fix),
        cmocka_unit_test(the_second_pass_pairs_the_fastest_where_short_unreliable_or_far_ahead),
        cmocka_unit_test(a_graph_table_prices_each_distinct_design_once_at_its_points),
        cmocka_unit_test(the_llama_graph_holds_no_tunable_a_profile_could_supply),
        cmocka_unit_test(cli_tune_model_prints_modelled_beside_measured_and_writes_the_table),
        cmocka_unit_test(cli_tune_model_refuses_bad_options_naming_the_fix),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
