/* tests/test_tune.c: the tuner's first part. Domains enumerate what they declare, the default
 * among them; held and derived tunables are not searched; the gate refuses a setting that
 * changes bits where the tolerance is 0; the cost cache keys on the design, values and input
 * contents and refuses (then replaces) a malformed file; a probe given the device carries the
 * memory's read level; `ferrum tune`'s errors name the rule and the fix. Nothing here asserts
 * a timing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "support/cli_run.h"
#include "support/testing.h"
#include "tune/tune.h"

static char cache_root[64];

static int setup(void **state) {
    snprintf(cache_root, sizeof cache_root, "/tmp/ferrum-tune-XXXXXX");
    if (!mkdtemp(cache_root)) return -1;
    setenv("FERRUM_CACHE_HOME", cache_root, 1);
    return test_device_setup(state);
}

static int teardown(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_root);
    if (system(cmd) != 0) return -1;
    return test_device_teardown(state);
}

static bool has(const int64_t *v, int n, int64_t x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return true;
    return false;
}

static fe_kernel *case_kernel(const fe_op *op, const fe_case *c, const fe_setting *tun, int n_tun,
                              const fe_profile *prof) {
    fe_tensor desc[FE_MAX_OPERANDS] = {0};
    double p[FE_MAX_PARAMS] = {0};
    op->operands_for(c, p, desc);
    fe_op_request req = {.op = op->name, .operands = desc, .n_operands = op->n_operands,
                         .params = c->params, .n_params = c->n_params, .tunables = tun,
                         .n_tunables = n_tun, .profile = prof};
    fe_kernel *k = NULL;
    fe_error err;
    if (fe_kernel_create(test_dev, &req, &k, &err) != FE_OK)
        fail_msg("%s/%s: %s", op->name, c->name, err.message);
    return k;
}

static void every_domain_enumerates_what_it_declares_and_the_default(void **s) {
    (void)s;
    int workers = fe_device_get_info(test_dev)->n_workers;
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        fe_kernel *k = case_kernel(op, &op->cases[0], NULL, 0, NULL);
        const fe_design *d = fe_kernel_design(k);
        for (int t = 0; t < op->n_tunables; t++) {
            const fe_tunable_decl *td = &op->tunables[t];
            int64_t v[FE_TUNE_MAX_DOMAIN];
            int n = fe_tune_domain_values(op, &td->domain, fe_kernel_extents(k), workers,
                                          d->tunables[t], v);
            assert_true(n >= 1);
            /* the resolved default is searched, every value lies in the domain, ascending */
            assert_true(has(v, n, d->tunables[t]));
            for (int i = 0; i < n; i++) {
                char why[200];
                if (i) assert_true(v[i - 1] < v[i]);
                if (!fe_domain_contains(op, &td->domain, fe_kernel_extents(k), workers, v[i],
                                        why, sizeof why))
                    fail_msg("%s.%s = %lld: %s", op->name, td->name, (long long)v[i], why);
            }
            if (td->domain.kind == FE_DOMAIN_CHOICES)
                for (int c = 0; c < td->domain.n_choices; c++)
                    assert_true(has(v, n, td->domain.choices[c]));
            if (td->domain.kind == FE_DOMAIN_WIDTH)
                assert_true(has(v, n, 1) && has(v, n, workers));
            /* a speed tunable of the design has something to search besides its default */
            if (td->design && td->domain.kind != FE_DOMAIN_WIDTH) assert_true(td->domain.kind == FE_DOMAIN_DIVISORS || td->domain.n_choices >= 2);
        }
        fe_kernel_destroy(k);
    }
}

static void width_domain_is_powers_of_two_and_the_workers(void **s) {
    (void)s;
    const fe_op *op = fe_op_find("GEMV");
    fe_domain w = {.kind = FE_DOMAIN_WIDTH};
    int64_t ext[FE_MAX_EXTENTS] = {0}, v[FE_TUNE_MAX_DOMAIN];
    int n = fe_tune_domain_values(op, &w, ext, 6, 6, v);
    assert_int_equal(n, 4);
    assert_true(v[0] == 1 && v[1] == 2 && v[2] == 4 && v[3] == 6);
    n = fe_tune_domain_values(op, &w, ext, 6, 3, v); /* a resolved 3 is searched too */
    assert_int_equal(n, 5);
    assert_true(has(v, n, 3));
}

static void divisors_domain_lists_multiples_of_step_dividing_the_extent(void **s) {
    (void)s;
    const fe_op *op = fe_op_find("GEMV"); /* extents B, N, K, G */
    fe_domain d = {.kind = FE_DOMAIN_DIVISORS, .of = "N", .step = 16, .cap = 64};
    int64_t ext[FE_MAX_EXTENTS] = {1, 96, 64, 1}, v[FE_TUNE_MAX_DOMAIN];
    int n = fe_tune_domain_values(op, &d, ext, 2, 32, v);
    assert_int_equal(n, 3);
    assert_true(v[0] == 16 && v[1] == 32 && v[2] == 48);
}

static void held_and_derived_tunables_are_not_searched(void **s) {
    (void)s;
    const fe_op *gemv = fe_op_find("GEMV");
    const char *json = "{\"entries\": [{\"op\": \"GEMV\", \"tunables\": {\"prefetch\": 4096}}]}";
    fe_profile *prof = NULL;
    fe_error err;
    assert_int_equal(fe_profile_parse(json, strlen(json), &prof, &err), FE_OK);
    fe_setting call = {"rows_per_step", 8};
    fe_kernel *k = case_kernel(gemv, &gemv->cases[0], &call, 1, prof);
    assert_false(fe_tune_searched(k, fe_op_tunable_index(gemv, "rows_per_step"))); /* call site */
    assert_false(fe_tune_searched(k, fe_op_tunable_index(gemv, "prefetch")));      /* profile */
    assert_true(fe_tune_searched(k, fe_op_tunable_index(gemv, "WIDTH")));
    fe_kernel_destroy(k);
    fe_profile_destroy(prof);
    /* stream is derived (from the output's size), never a design choice */
    const fe_op *add = fe_op_find("ElementwiseAdd");
    k = case_kernel(add, &add->cases[0], NULL, 0, NULL);
    assert_false(fe_tune_searched(k, fe_op_tunable_index(add, "stream")));
    fe_kernel_destroy(k);
}

static fe_tune_options quick(void) {
    fe_tune_options o = fe_tune_options_default();
    o.budget_ms = 1;
    o.attempts = 1;
    return o;
}

static const fe_tune_row *find_row(const fe_tune_result *r, const char *prefix) {
    for (int i = 0; i < fe_tune_result_count(r); i++)
        if (strncmp(fe_tune_result_row(r, i)->setting, prefix, strlen(prefix)) == 0)
            return fe_tune_result_row(r, i);
    return NULL;
}

static void tune_lists_the_default_and_each_searched_value_not_the_held(void **s) {
    (void)s;
    fe_setting set[] = {{"N", 64}, {"K", 64}, {"B", 1}, {"rows_per_step", 2}};
    fe_tune_request req = {.op = "GEMV", .settings = set, .n_settings = 4};
    fe_tune_options o = quick();
    fe_tune_result *r = NULL;
    fe_error err;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_string_equal(fe_tune_result_row(r, 0)->setting, "default");
    assert_non_null(strstr(fe_tune_result_shape(r), "w (64, 64) bf16"));
    assert_null(find_row(r, "rows_per_step=")); /* held at 2 */
    assert_non_null(find_row(r, "prefetch=0"));
    assert_non_null(find_row(r, "prefetch=65536"));
    assert_null(find_row(r, "prefetch=2048")); /* the default's value is the default row */
    /* int8_dot = 1 without act_int8: resolve turns it off, the default's design again */
    assert_int_equal(find_row(r, "int8_dot=1")->verdict, FE_TUNE_SAME_DESIGN);
    fe_tune_result_destroy(r);
    /* a per-call value given runs (and keys the cache) at that value */
    fe_setting rows = {"rows", 16};
    req.values = &rows;
    req.n_values = 1;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_non_null(strstr(fe_tune_result_shape(r), "values rows=16 batches=1"));
    assert_true(fe_tune_result_row(r, 0)->bytes == 16.0 * 64 * 2 + 64 * 4 + 16 * 4);
    fe_tune_result_destroy(r);
}

/* Pairs of design tunables with small domains are searched together (GEMV rows_per_step x
 * prefetch: 3 x 7 combinations besides the default's row and column; the row kernels, panel
 * = 0 held); WIDTH is searched alone; the default stays row 0. Under panel = 1 (bf16's
 * default) prefetch does nothing: those settings resolve to the design without it. */
static void small_domains_are_searched_jointly(void **s) {
    (void)s;
    fe_setting set[] = {{"N", 64}, {"K", 64}, {"B", 1}, {"panel", 0}};
    fe_tune_request req = {.op = "GEMV", .settings = set, .n_settings = 4};
    fe_tune_options o = quick();
    fe_tune_result *r = NULL;
    fe_error err;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_string_equal(fe_tune_result_row(r, 0)->setting, "default");
    int pairs = 0;
    for (int i = 0; i < fe_tune_result_count(r); i++) {
        const char *set_i = fe_tune_result_row(r, i)->setting;
        pairs += strncmp(set_i, "rows_per_step=", 14) == 0 && strstr(set_i, " prefetch=") != NULL;
        assert_null(strstr(set_i, " WIDTH=")); /* never in a pair */
        assert_false(strncmp(set_i, "WIDTH=", 6) == 0 && strchr(set_i, ' '));
    }
    assert_int_equal(pairs, 3 * 7);
    const fe_tune_row *both = find_row(r, "rows_per_step=8 prefetch=0");
    assert_non_null(both);
    assert_int_equal(both->verdict, FE_TUNE_CANDIDATE);
    assert_null(find_row(r, "rows_per_step=2 ")); /* the default's value is in no pair */
    /* int8_dot = 1 pairs resolve to their single setting's design, not measured again */
    assert_int_equal(find_row(r, "int8_dot=1 prefetch=0")->verdict, FE_TUNE_SAME_DESIGN);
    fe_tune_result_destroy(r);
    req.n_settings = 3; /* panel searched, 1 by default for bf16 */
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_int_equal(find_row(r, "prefetch=0")->verdict, FE_TUNE_SAME_DESIGN);
    assert_int_equal(find_row(r, "rows_per_step=8 prefetch=0")->verdict, FE_TUNE_SAME_DESIGN);
    assert_int_equal(find_row(r, "batches_per_pass=1")->verdict, FE_TUNE_SAME_DESIGN);
    assert_int_equal(find_row(r, "prefetch=0 panel=0")->verdict, FE_TUNE_CANDIDATE);
    fe_tune_result_destroy(r);
}

/* req tuned with every figure refused, so each one is stored unreliable (a loaded machine) */
static fe_tune_result *tuned_all_unreliable(const fe_tune_request *req) {
    fe_tune_options o = quick();
    o.max_spread = -1;
    fe_tune_result *r = NULL;
    fe_error err;
    assert_int_equal(fe_tune_op(test_dev, req, &o, &r, &err), FE_OK);
    return r;
}

/* A figure is a hit the next time, an unreliable one (a loaded machine) too, said so in the
 * row's reason; --remeasure measures every one again. */
static void a_second_tune_of_the_same_key_is_a_cache_hit(void **s) {
    (void)s;
    fe_setting set[] = {{"cols", 48}};
    fe_tune_request req = {.op = "Softmax", .settings = set, .n_settings = 1};
    fe_tune_options o = quick();
    fe_tune_result *first = tuned_all_unreliable(&req), *r = NULL;
    fe_error err;
    assert_false(fe_tune_result_row(first, 0)->cached); /* a fresh cache */
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_int_equal(fe_tune_result_count(r), fe_tune_result_count(first));
    int candidates = 0;
    for (int i = 0; i < fe_tune_result_count(r); i++) {
        const fe_tune_row *a = fe_tune_result_row(first, i), *b = fe_tune_result_row(r, i);
        assert_int_equal(a->verdict, b->verdict);
        if (b->verdict != FE_TUNE_CANDIDATE) continue;
        candidates++;
        assert_false(a->cost.reliable);
        assert_true(b->cached); /* reused, not measured again */
        assert_false(b->cost.reliable);
        assert_true(b->cost.median_ns == a->cost.median_ns);
        if (!strstr(b->reason, "cached (unreliable: spread "))
            fail_msg("row %d's reason: \"%s\"", i, b->reason);
    }
    assert_true(candidates >= 2);
    fe_tune_result_destroy(r);
    fe_tune_result_destroy(first);
    o.remeasure = true;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    for (int i = 0; i < fe_tune_result_count(r); i++) assert_false(fe_tune_result_row(r, i)->cached);
    fe_tune_result_destroy(r);
}

/* recheck_unreliable (tune MODEL's second pass): the default's cached unreliable figure is
 * measured again, not reused, and the figure kept is never above the cached one (the lower
 * median of the two); the other settings' figures and a reliable figure stay hits. */
static void an_unreliable_figure_is_measured_again_on_recheck(void **s) {
    (void)s;
    fe_setting set[] = {{"cols", 40}};
    fe_tune_request req = {.op = "Softmax", .settings = set, .n_settings = 1};
    fe_tune_options o = quick();
    fe_tune_result *first = tuned_all_unreliable(&req), *r = NULL;
    fe_error err;
    o.max_spread = -1; /* still refused: kept unreliable */
    o.recheck_unreliable = true;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    int candidates = 0;
    for (int i = 0; i < fe_tune_result_count(r); i++) {
        const fe_tune_row *a = fe_tune_result_row(first, i), *b = fe_tune_result_row(r, i);
        if (b->verdict != FE_TUNE_CANDIDATE) continue;
        candidates++;
        assert_false(b->cost.reliable);
        if (i > 0) { /* another setting: reused */
            assert_true(b->cached);
            assert_true(b->cost.median_ns == a->cost.median_ns);
            continue;
        }
        assert_false(b->cached); /* the default: measured again */
        assert_true(b->cost.median_ns <= a->cost.median_ns);
        if (!strstr(b->reason, "unreliable, measured twice: "))
            fail_msg("row %d's reason: \"%s\"", i, b->reason);
    }
    assert_true(candidates >= 2);
    assert_string_equal(fe_tune_result_row(r, 0)->setting, "default");
    assert_int_equal(fe_tune_result_row(first, 1)->verdict, FE_TUNE_CANDIDATE);
    fe_tune_result_destroy(r);
    /* recheck_setting: that one setting measured again in turn with the default, both new
     * figures kept (any other is reused, or measured in turn itself as the fastest) */
    o = quick();
    const char *again = fe_tune_result_row(first, 1)->setting;
    o.recheck_setting = again;
    o.recheck_in_turn = true;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    const fe_tune_row *def = fe_tune_result_row(r, 0);
    assert_false(def->cached);
    if (!strstr(def->reason, "measured again in turn with \""))
        fail_msg("the default's reason: \"%s\"", def->reason);
    for (int i = 1; i < fe_tune_result_count(r); i++) {
        const fe_tune_row *b = fe_tune_result_row(r, i);
        if (b->verdict != FE_TUNE_CANDIDATE) continue;
        if (strcmp(b->setting, again) != 0) {
            assert_true(b->cached || b->in_turn);
            continue;
        }
        assert_false(b->cached);
        assert_true(b->in_turn);
        if (!strstr(b->reason, "measured again in turn with the default"))
            fail_msg("row %d's reason: \"%s\"", i, b->reason);
    }
    fe_tune_result_destroy(r);
    /* without recheck_in_turn (tune MODEL's second pass): that setting alone */
    o.recheck_in_turn = false;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    const fe_tune_row *alone = find_row(r, again);
    assert_non_null(alone);
    if (!strstr(alone->reason, "measured again as the fastest") && !alone->in_turn)
        fail_msg("%s's reason: \"%s\"", again, alone->reason);
    fe_tune_result_destroy(r);
    /* reliable figures (a spread bound nothing exceeds) are hits under recheck (but for a
     * setting faster than the default, which fe_tune_op measures again in turn with it) */
    fe_tune_result_destroy(first);
    o = quick();
    o.max_spread = 1e9, o.remeasure = true;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &first, &err), FE_OK);
    o.remeasure = false, o.recheck_unreliable = true;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    for (int i = 0; i < fe_tune_result_count(r); i++) {
        const fe_tune_row *b = fe_tune_result_row(r, i);
        if (b->verdict == FE_TUNE_CANDIDATE && fe_tune_result_row(first, i)->cost.reliable)
            assert_true(b->cached || b->in_turn || strstr(b->reason, "in turn with \""));
    }
    fe_tune_result_destroy(r);
    fe_tune_result_destroy(first);
}

/* A small q8_0 GEMM with layouts (case q8_0/int8_odd, 32 x 48 x 64) as a search's shape,
 * and this device's cost cache */
static void q8_0_search_shape(fe_tune_shape *shape, fe_cost_cache **cache) {
    fe_setting set[] = {{.name = "case", .choice = "q8_0/int8_odd"}, {"M", 32}, {"N", 48},
                        {"K", 64}};
    fe_tune_request req = {.op = "GEMM", .settings = set, .n_settings = 4};
    fe_error err;
    assert_int_equal(fe_tune_shape_init(test_dev, &req, shape, &err), FE_OK);
    assert_int_equal(fe_cost_cache_open(test_dev, NULL, cache, &err), FE_OK);
}

/* A search given earlier verdicts (tune MODEL's second pass) takes them as they are: a
 * setting known gated out stays so, with its reason, though its gate would pass it now;
 * the rest are gated and priced as before. A GEMM reading B from layouts (q8_0 panels where
 * the ISA has them) prices every candidate with the layouts its settings share. */
static void a_known_verdict_stands_without_its_gate(void **s) {
    (void)s;
    fe_tune_shape shape;
    fe_error err;
    fe_cost_cache *cache = NULL;
    q8_0_search_shape(&shape, &cache);
    fe_tune_options o = quick();
    fe_tune_result *first = calloc(1, sizeof *first), *r = calloc(1, sizeof *r);
    assert_non_null(first);
    assert_non_null(r);
    assert_int_equal(fe_tune_shape_search(test_dev, &shape, &o, NULL, 0, cache, first, &err), FE_OK);
    int pick = -1, candidates = 0;
    for (int i = 1; i < first->n; i++)
        if (first->rows[i].verdict == FE_TUNE_CANDIDATE) {
            candidates++;
            assert_true(first->rows[i].cost.median_ns > 0);
            if (pick < 0) pick = i;
        }
    if (candidates < 2)
        for (int i = 0; i < first->n; i++)
            print_message("%s: verdict %d %s\n", first->rows[i].setting, first->rows[i].verdict,
                          first->rows[i].reason);
    assert_true(candidates >= 2);
    fe_tune_known known = {first->rows[pick].setting, FE_TUNE_GATED_OUT, "gated by an earlier search"};
    assert_int_equal(fe_tune_shape_search(test_dev, &shape, &o, &known, 1, cache, r, &err), FE_OK);
    assert_int_equal(r->n, first->n);
    for (int i = 0; i < r->n; i++) {
        assert_string_equal(r->rows[i].setting, first->rows[i].setting);
        if (i == pick) {
            assert_int_equal(r->rows[i].verdict, FE_TUNE_GATED_OUT);
            assert_string_equal(r->rows[i].reason, "gated by an earlier search");
        } else {
            assert_int_equal(r->rows[i].verdict, first->rows[i].verdict);
            if (r->rows[i].verdict == FE_TUNE_CANDIDATE) assert_true(r->rows[i].cached);
        }
    }
    free(first);
    free(r);
    fe_cost_cache_close(cache);
}

/* default_only (tune MODEL's graph without folds): the default alone, its figure the one a
 * full search of the same shape left in the cost cache */
static void default_only_measures_the_default_alone(void **s) {
    (void)s;
    fe_tune_shape shape;
    fe_error err;
    fe_cost_cache *cache = NULL;
    q8_0_search_shape(&shape, &cache);
    fe_tune_options o = quick();
    fe_tune_result *full = calloc(1, sizeof *full), *r = calloc(1, sizeof *r);
    assert_non_null(full);
    assert_non_null(r);
    assert_int_equal(fe_tune_shape_search(test_dev, &shape, &o, NULL, 0, cache, full, &err), FE_OK);
    assert_true(full->n > 1);
    o.default_only = true;
    assert_int_equal(fe_tune_shape_search(test_dev, &shape, &o, NULL, 0, cache, r, &err), FE_OK);
    assert_int_equal(r->n, 1);
    assert_string_equal(r->rows[0].setting, "default");
    assert_int_equal(r->rows[0].verdict, FE_TUNE_CANDIDATE);
    assert_true(r->rows[0].cached);
    assert_true(r->rows[0].cost.median_ns == full->rows[0].cost.median_ns);
    free(full);
    free(r);
    fe_cost_cache_close(cache);
}

static void gate_refuses_bit_changes_where_tol_is_0(void **s) {
    (void)s;
    fe_op exact = *fe_op_find("Copy");
    assert_true(exact.rtol == 0 && exact.atol == 0);
    float def[4] = {1, 2, 3, 4}, cand[4] = {1, 2, 3.00003f, 4}, ref[4] = {1, 2, 3, 4};
    fe_gate_output out = {def, cand, ref, sizeof def, FE_DTYPE_F32};
    char why[300];
    assert_false(fe_tune_gate(&exact, &out, 1, why, sizeof why));
    assert_non_null(strstr(why, "tol 0 (bit-identical required)"));
    assert_non_null(strstr(why, "y: max |diff| "));
    out.cand = def;
    assert_true(fe_tune_gate(&exact, &out, 1, why, sizeof why)); /* identical bits pass */
    /* with a tolerance: both within it of the reference pass, a candidate past it does not */
    fe_op tol = exact;
    tol.atol = 1e-4;
    out.cand = cand;
    assert_true(fe_tune_gate(&tol, &out, 1, why, sizeof why));
    float far[4] = {1, 2, 3.01f, 4};
    out.cand = far;
    assert_false(fe_tune_gate(&tol, &out, 1, why, sizeof why));
    assert_non_null(strstr(why, "from the reference"));
}

static void nap(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

static void uneven(void *ctx) { /* every other call naps 2 ms: a spread no figure survives */
    int *n = ctx;
    if ((*n)++ % 2) nap(2000);
}

static void off_cpu(void *ctx) { /* the wall clock runs, the process's CPU time does not */
    (void)ctx;
    nap(300);
}

static void probes_refuse_a_wide_spread_and_time_off_the_cpu(void **s) {
    (void)s;
    fe_tune_options o = quick();
    o.budget_ms = 20;
    o.attempts = 2;
    char why[200];
    int n = 0;
    fe_cost_figure f = fe_tune_probe(uneven, &n, 1, NULL, &o, why, sizeof why);
    assert_false(f.reliable);
    assert_non_null(strstr(why, "spread (p90-p10)/median"));
    assert_non_null(strstr(why, "in 2 tries"));
    o.max_spread = 1e9; /* so only the CPU rule can refuse (a loaded machine's naps vary) */
    f = fe_tune_probe(off_cpu, NULL, 1, NULL, &o, why, sizeof why);
    assert_false(f.reliable);
    assert_non_null(strstr(why, "another process took the CPU"));
    assert_true(f.samples > 0 && f.median_ns > 0); /* the last figure is kept, to show */
    assert_true(f.read_gbps == 0); /* no gauge given */
}

static void spin(void *ctx) { /* 100 us on the CPU */
    (void)ctx;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 100000);
}

/* A bound far below a setting's time ends its figure at two samples (a setting that far
 * slower than the default needs no finer figure to lose); one above it changes nothing. */
static void a_figure_far_past_the_bound_stops_at_two_samples(void **s) {
    (void)s;
    fe_tune_options o = quick();
    o.max_spread = 1e9;
    char why[200];
    fe_cost_figure f = fe_tune_probe_below(spin, NULL, 1, NULL, &o, 1000.0, why, sizeof why);
    assert_int_equal(f.samples, 2);
    assert_true(f.median_ns >= 100000);
    f = fe_tune_probe_below(spin, NULL, 1, NULL, &o, 1e12, why, sizeof why);
    assert_true(f.samples >= o.min_samples && f.samples > 2);
}

/* Given the device, a probe reads the memory's rate before and after its runs: the figure
 * carries their mean (a rate, finite and above 0; nothing here asserts how fast). */
static void a_probe_with_the_gauge_carries_the_read_level(void **s) {
    (void)s;
    double gbps = fe_device_read_gbps(test_dev, 2);
    assert_true(gbps > 0 && isfinite(gbps));
    fe_tune_options o = quick();
    o.max_spread = 1e9;
    char why[200];
    int n = 0;
    fe_cost_figure f = fe_tune_probe(uneven, &n, 1, test_dev, &o, why, sizeof why);
    assert_true(f.read_gbps > 0 && isfinite(f.read_gbps));
    fe_cost_figure a, b;
    fe_tune_probe_pair(uneven, &n, uneven, &n, 1, test_dev, &o, &a, &b, why, sizeof why);
    assert_true(a.read_gbps > 0 && a.read_gbps == b.read_gbps); /* one stretch of time */
}

static fe_cost_cache *open_cache(void) {
    fe_cost_cache *c = NULL;
    fe_error err;
    assert_int_equal(fe_cost_cache_open(test_dev, NULL, &c, &err), FE_OK);
    assert_non_null(strstr(fe_cost_cache_dir(c), cache_root)); /* FERRUM_CACHE_HOME */
    return c;
}

/* Timed runs take the spread copies of the inputs far apart, every one once a round: in
 * address order a run found its inputs in a stream the run before had started (a small
 * weight priced 20 % under its step in a call). */
static void spread_copies_are_visited_far_apart_each_once(void **s) {
    (void)s;
    const fe_op *op = fe_op_find("GEMV");
    const fe_case *c = &op->cases[0];
    fe_kernel *k = case_kernel(op, c, NULL, 0, NULL);
    fe_tensor desc[FE_MAX_OPERANDS] = {0};
    double p[FE_MAX_PARAMS] = {0};
    op->operands_for(c, p, desc);
    fe_tune_buffers b = {0};
    fe_error err;
    assert_int_equal(fe_tune_buffers_init(&b, op, desc, fe_kernel_extents(k), -1, 1, 7, &err),
                     FE_OK);
    size_t in = 0;
    for (int i = 0; i < op->n_operands; i++)
        if (op->operands[i].role == FE_IN && b.mem[i]) in += (b.bytes[i] + 63) & ~(size_t)63;
    assert_int_equal(fe_tune_buffers_spread(&b, op, 12 * in, &err), FE_OK);
    const int n = b.n_sets;
    assert_true(n >= 12 && n <= 64);
    int seen[64] = {0}, prev = -1;
    for (int r = 0; r < n; r++) {
        const fe_tensor *t = fe_tune_buffers_next(&b);
        int i = 0; /* which set t is */
        while (i < n && t != b.sets[i]) i++;
        assert_true(i >= 0 && i < n);
        seen[i]++;
        if (prev >= 0) { /* not the set beside the last one, around the end either */
            const int d = abs(i - prev);
            assert_true(d > 1 && d < n - 1);
        }
        prev = i;
    }
    for (int i = 0; i < n; i++) assert_int_equal(seen[i], 1);
    fe_tune_buffers_deinit(&b);
    fe_kernel_destroy(k);
}

static void cache_keys_on_design_values_and_input(void **s) {
    (void)s;
    fe_cost_cache *c = open_cache();
    fe_cost_key key = {.design = 0x1234, .values = {100, 1}, .n_values = 2, .input_hash = 0xabc};
    fe_cost_figure f = {.median_ns = 5000, .p10_ns = 4900, .p90_ns = 5200, .samples = 40,
                        .reliable = true}, got;
    bool hit = true;
    fe_error err;
    assert_int_equal(fe_cost_cache_get(c, &key, &got, &hit, &err), FE_OK);
    assert_false(hit);
    assert_int_equal(fe_cost_cache_put(c, &key, &f, "test", &err), FE_OK);
    assert_int_equal(fe_cost_cache_get(c, &key, &got, &hit, &err), FE_OK);
    assert_true(hit && got.median_ns == 5000 && got.samples == 40 && got.reliable);
    fe_cost_key other = key;
    other.input_hash = 0xabd; /* a changed input is a new entry */
    assert_int_equal(fe_cost_cache_get(c, &other, &got, &hit, &err), FE_OK);
    assert_false(hit);
    other = key;
    other.values[0] = 99; /* so are other per-call values */
    assert_int_equal(fe_cost_cache_get(c, &other, &got, &hit, &err), FE_OK);
    assert_false(hit);
    assert_int_equal(fe_cost_cache_put(c, &other, &f, "test", &err), FE_OK);
    assert_int_equal(fe_cost_cache_get(c, &key, &got, &hit, &err), FE_OK);
    assert_true(hit); /* both entries live in the design's one file */
    fe_cost_cache_close(c);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void malformed_cache_files_are_refused_by_name_and_replaced(void **s) {
    (void)s;
    fe_cost_cache *c = open_cache();
    fe_cost_key key = {.design = 0x77, .n_values = 0, .input_hash = 1};
    fe_cost_figure f = {.median_ns = 10, .p10_ns = 9, .p90_ns = 11, .samples = 5, .reliable = true};
    fe_error err;
    assert_int_equal(fe_cost_cache_put(c, &key, &f, NULL, &err), FE_OK); /* makes the dir */
    { /* in_turn survives the file, absent reads as false */
        fe_cost_figure paired = f, got;
        paired.in_turn = true;
        fe_cost_key other = key;
        other.input_hash = 2;
        bool hit = false;
        assert_int_equal(fe_cost_cache_put(c, &other, &paired, NULL, &err), FE_OK);
        assert_int_equal(fe_cost_cache_get(c, &other, &got, &hit, &err), FE_OK);
        assert_true(hit && got.in_turn);
        assert_int_equal(fe_cost_cache_get(c, &key, &got, &hit, &err), FE_OK);
        assert_true(hit && !got.in_turn);
        /* so does the read level, absent reads as 0 (unknown) */
        assert_true(got.read_gbps == 0);
        paired.read_gbps = 31.25;
        assert_int_equal(fe_cost_cache_put(c, &other, &paired, NULL, &err), FE_OK);
        assert_int_equal(fe_cost_cache_get(c, &other, &got, &hit, &err), FE_OK);
        assert_true(hit && got.read_gbps == 31.25);
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/%016x.json", fe_cost_cache_dir(c), 0x77);
    const char *bad[] = {
        "{not json",
        "[]",
        "{\"design\": \"0000000000000077\", \"entries\": {}}",
        "{\"design\": \"0000000000000078\", \"entries\": []}",
        "{\"design\": \"0000000000000077\", \"entries\": [{\"values\": [1.5], \"input\": "
        "\"0000000000000001\", \"median_ns\": 1, \"p10_ns\": 1, \"p90_ns\": 1, \"samples\": 1, "
        "\"reliable\": true}]}",
        "{\"design\": \"0000000000000077\", \"entries\": [{\"values\": [], \"input\": "
        "\"0000000000000001\", \"median_ns\": -1, \"p10_ns\": 1, \"p90_ns\": 1, \"samples\": 1, "
        "\"reliable\": true}]}",
        "{\"design\": \"0000000000000077\", \"entries\": [{\"values\": [], \"input\": "
        "\"0000000000000001\", \"median_ns\": 1, \"p10_ns\": 1, \"p90_ns\": 1, \"samples\": 1, "
        "\"reliable\": true, \"in_turn\": 1}]}",
        "{\"design\": \"0000000000000077\", \"entries\": [{\"values\": [], \"input\": "
        "\"0000000000000001\", \"median_ns\": 1, \"p10_ns\": 1, \"p90_ns\": 1, \"samples\": 1, "
        "\"reliable\": true, \"read_gbps\": -3}]}",
        "{\"design\": \"0000000000000077\", \"entries\": [{\"values\": [], \"input\": "
        "\"0000000000000001\", \"median_ns\": 1, \"p10_ns\": 1, \"p90_ns\": 1, \"samples\": 1, "
        "\"reliable\": true, \"read_gbps\": \"fast\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i]);
        fe_cost_figure got;
        bool hit = true;
        assert_int_equal(fe_cost_cache_get(c, &key, &got, &hit, &err), FE_E_FORMAT);
        assert_false(hit);
        assert_non_null(strstr(err.message, path));
        assert_non_null(strstr(err.message, "malformed"));
        /* the next measurement replaces it */
        assert_int_equal(fe_cost_cache_put(c, &key, &f, NULL, &err), FE_OK);
        assert_int_equal(fe_cost_cache_get(c, &key, &got, &hit, &err), FE_OK);
        assert_true(hit);
    }
    fe_cost_cache_close(c);
}

static void tune_reports_a_malformed_cache_file_and_measures(void **s) {
    (void)s;
    fe_setting set[] = {{"cols", 40}};
    fe_tune_request req = {.op = "Softmax", .settings = set, .n_settings = 1};
    fe_tune_options o = quick();
    fe_tune_result *r = NULL;
    fe_error err;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    fe_cost_cache *c = open_cache();
    char path[1200];
    snprintf(path, sizeof path, "%s/%016llx.json", fe_cost_cache_dir(c),
             (unsigned long long)fe_tune_result_row(r, 0)->design);
    fe_cost_cache_close(c);
    fe_tune_result_destroy(r);
    write_file(path, "{\"design\": 3");
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_non_null(strstr(fe_tune_result_notes(r), path));
    assert_false(fe_tune_result_row(r, 0)->cached);
    fe_tune_result_destroy(r);
}

static void the_ladder_prices_a_value_over_its_range(void **s) {
    (void)s;
    fe_setting set[] = {{"N", 64}, {"K", 64}, {"B", 1}, {"rows_per_step", 2}, {"prefetch", 0}};
    fe_tune_request req = {.op = "GEMV", .settings = set, .n_settings = 5, .ladder = "rows"};
    fe_tune_options o = quick();
    fe_tune_result *r = NULL;
    fe_error err;
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_OK);
    assert_non_null(strstr(fe_tune_result_shape(r), "rows=ladder of 4"));
    /* the cost model's mean over rows 8, 24, 40, 56 of 64: 32 rows of bf16 W on average,
     * x (64 f32) and 32 of y on average */
    const fe_tune_row *def = fe_tune_result_row(r, 0);
    assert_true(def->bytes == 32.0 * 64 * 2 + 64 * 4 + 32 * 4);
    fe_tune_result_destroy(r);
    req.ladder = "batchez";
    assert_int_equal(fe_tune_op(test_dev, &req, &o, &r, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "--ladder batchez"));
}

#define RUN(...) CLI_RUN_INTO(code, out, errs, __VA_ARGS__)

/* Each wrong command line is a usage error (exit 2) whose message says what is wrong. */
/* rows of a synthetic result: the default, then the others, each a reliable candidate with
 * its median and a p10..p90 range of +-spread */
static fe_tune_result *rows_of(const double *median, const double *spread, int n) {
    fe_tune_result *r = calloc(1, sizeof *r);
    assert_non_null(r);
    for (int i = 0; i < n; i++)
        r->rows[i] = (fe_tune_row){.verdict = FE_TUNE_CANDIDATE, .in_turn = i > 0,
                                   .cost = {.median_ns = median[i], .p10_ns = median[i] - spread[i],
                                            .p90_ns = median[i] + spread[i], .samples = 9,
                                            .reliable = true}};
    r->n = n;
    fe_tune_mark_best(r);
    return r;
}

static int best_row(const fe_tune_result *r) {
    int best = -1;
    for (int i = 0; i < r->n; i++)
        if (r->rows[i].best) assert_int_equal(best, -1), best = i;
    return best;
}

static void a_setting_within_the_noise_does_not_displace_the_default(void **s) {
    (void)s;
    /* 0.5 % faster with 3 % ranges: the default stays */
    fe_tune_result *r = rows_of((double[]){1000, 995, 1100}, (double[]){30, 30, 30}, 3);
    assert_int_equal(best_row(r), 0);
    free(r);
    /* 10 % faster with 3 % ranges: the setting wins */
    r = rows_of((double[]){1000, 900, 1100}, (double[]){30, 30, 30}, 3);
    assert_int_equal(best_row(r), 1);
    free(r);
    /* 10 % faster, but measured apart from the default, not in turn with it: the
     * default stays (a figure of another minute on a drifting host is no evidence) */
    r = rows_of((double[]){1000, 900, 1100}, (double[]){30, 30, 30}, 3);
    r->rows[1].in_turn = false;
    for (int i = 0; i < r->n; i++) r->rows[i].best = false;
    fe_tune_mark_best(r);
    assert_int_equal(best_row(r), 0);
    free(r);
    /* an unreliable faster figure: no best at all */
    r = rows_of((double[]){1000, 900, 800}, (double[]){30, 30, 30}, 3);
    r->rows[2].cost.reliable = false;
    for (int i = 0; i < r->n; i++) r->rows[i].best = false;
    fe_tune_mark_best(r);
    assert_int_equal(best_row(r), -1);
    free(r);
}

static void cli_tune_errors_name_the_rule_and_the_fix(void **s) {
    (void)s;
    static const struct {
        const char *argv[5];
        const char *want;
    } bad[] = {
        {{"tune", "GEMV", "Q=3"}, "GEMV has no extent, param or tunable named \"Q\"; it takes "
                                  "extents: B N K; params: epilogue"},
        {{"tune", "NoSuchOp"}, "no operator named \"NoSuchOp\""},
        {{"tune", "GEMV", "N"}, "\"N\" is not NAME=VALUE"},
        {{"tune", "GEMV", "N=abc"}, "N=abc"},
        {{"tune", "GEMV", "N=0"}, "give a positive integer"},
        {{"tune", "GEMV", "dtype=f99"}, "dtype=f99 is not a dtype"},
        {{"tune", "GEMV", "epilogue=fancy"}, "no choice \"fancy\""},
        {{"tune", "GEMV", "case=nope"}, "GEMV has no case \"nope\"; give one of: bf16/small"},
        /* the op's own refusal, passed on */
        {{"tune", "GEMV", "K=100", "dtype=q8_0"}, "q8_0 needs K a multiple of its block of 32"},
        {{"tune", "GEMV", "--value", "rowz=3"}, "--value rowz=3"},
        {{"tune", "GEMV", "rows_per_step=3"}, "outside its domain"},
        {{"tune", "GEMV", "--profile", "/nonexistent/profile.json"}, "/nonexistent/profile.json"},
        {{"tune"}, "give an operator"},
    };
    char out[8192], errs[2048];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[6] = {"ferrum"};
        int argc = 1;
        while (argc < 6 && bad[i].argv[argc - 1]) argv[argc] = bad[i].argv[argc - 1], argc++;
        int code = cli_run(argc, argv, out, sizeof out, errs, sizeof errs);
        if (code != 2 || !strstr(errs, bad[i].want))
            fail_msg("ferrum %s %s: exit %d, stderr \"%s\"; want exit 2 and \"%s\"",
                     bad[i].argv[0], bad[i].argv[1] ? bad[i].argv[1] : "", code, errs, bad[i].want);
    }
    int code;
    RUN("tune", "--help");
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "ferrum tune GEMV N=2048"));
    RUN("--help");
    assert_non_null(strstr(out, "tune"));
}

static void cli_tune_prints_a_table_with_the_default(void **s) {
    (void)s;
    char out[16384], errs[8192];
    int code;
    RUN("tune", "Softmax", "cols=32", "--budget-ms", "1");
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "median us"));
    assert_non_null(strstr(out, "default"));
    assert_non_null(strstr(errs, "tune Softmax:")); /* progress on stderr */
    RUN("tune", "Softmax", "cols=32", "--budget-ms", "1", "--json");
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "\"setting\": \"default\""));
    json_error_t jerr;
    json_t *doc = json_loads(out, 0, &jerr); /* the JSON is JSON */
    assert_non_null(doc);
    assert_true(json_array_size(json_object_get(doc, "rows")) >= 2);
    json_decref(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_domain_enumerates_what_it_declares_and_the_default),
        cmocka_unit_test(width_domain_is_powers_of_two_and_the_workers),
        cmocka_unit_test(divisors_domain_lists_multiples_of_step_dividing_the_extent),
        cmocka_unit_test(held_and_derived_tunables_are_not_searched),
        cmocka_unit_test(tune_lists_the_default_and_each_searched_value_not_the_held),
        cmocka_unit_test(small_domains_are_searched_jointly),
        cmocka_unit_test(a_second_tune_of_the_same_key_is_a_cache_hit),
        cmocka_unit_test(an_unreliable_figure_is_measured_again_on_recheck),
        cmocka_unit_test(a_known_verdict_stands_without_its_gate),
        cmocka_unit_test(default_only_measures_the_default_alone),
        cmocka_unit_test(gate_refuses_bit_changes_where_tol_is_0),
        cmocka_unit_test(probes_refuse_a_wide_spread_and_time_off_the_cpu),
        cmocka_unit_test(a_figure_far_past_the_bound_stops_at_two_samples),
        cmocka_unit_test(a_probe_with_the_gauge_carries_the_read_level),
        cmocka_unit_test(spread_copies_are_visited_far_apart_each_once),
        cmocka_unit_test(cache_keys_on_design_values_and_input),
        cmocka_unit_test(malformed_cache_files_are_refused_by_name_and_replaced),
        cmocka_unit_test(tune_reports_a_malformed_cache_file_and_measures),
        cmocka_unit_test(the_ladder_prices_a_value_over_its_range),
        cmocka_unit_test(a_setting_within_the_noise_does_not_displace_the_default),
        cmocka_unit_test(cli_tune_errors_name_the_rule_and_the_fix),
        cmocka_unit_test(cli_tune_prints_a_table_with_the_default),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
