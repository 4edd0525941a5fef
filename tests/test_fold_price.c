/* tests/test_fold_price.c: pricing the folds (tune/fold_price.c) on a small graph with three
 * groups of folds and synthetic cost tables of its unfolded and folded versions: the log
 * records each fold with the steps it joins; the pricing keeps exactly the groups the hand
 * computation keeps (a group kept only where its folded steps model faster than the steps
 * they replace plus the barriers between them); the priced compile then folds those and no
 * others; the modelled call times follow; tables of other calls are refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "ferrum/tune.h"
#include "graph/inspect.h"
#include "support/testing.h"
#include "tune/cost_table.h"

enum { K = 32, N = 16, S = 4 };

static float x1[K], nw[K], w1[K * K], wd[N * K], w5[N * K];

/* One row x through three groups of folds:
 *   A  RMSNorm#0 -> GEMV#1 -> ElementwiseAdd#2 (+ x): a prologue and an epilogue into GEMV#1
 *   B  GEMV#3 -> Copy#4 into a state at pos: a drain
 *   C  GEMV#5 -> SiLU#6, the output: an epilogue */
static fe_status body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_input(t, "x");
    fe_h nin[2] = {x, fe_weight(t, "nw")};
    fe_h h = fe_apply(t, "RMSNorm", nin, 2, NULL, 0, NULL, 0);
    fe_h gin[2] = {fe_weight(t, "w1"), h};
    fe_h y = fe_apply(t, "GEMV", gin, 2, NULL, 0, NULL, 0);
    fe_h add[2] = {y, x};
    fe_h z = fe_apply(t, "ElementwiseAdd", add, 2, NULL, 0, NULL, 0);
    int64_t shape[2] = {S, N};
    fe_h cache = fe_state(t, "cache", FE_DTYPE_F32, 2, shape);
    fe_h din[2] = {fe_weight(t, "wd"), z};
    fe_copy_into(t, fe_at(t, cache, 0, fe_scratchpad(t, "pos"), fe_const(1)),
                 fe_apply(t, "GEMV", din, 2, NULL, 0, NULL, 0));
    fe_h cin[2] = {fe_weight(t, "w5"), z};
    fe_h c = fe_apply(t, "GEMV", cin, 2, NULL, 0, NULL, 0);
    fe_output(t, fe_apply(t, "SiLU", &c, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

static fe_graph *make(fe_fold_mode fold, fe_fold_price_fn price, void *user) {
    fe_graph *g = NULL;
    assert_int_equal(fe_graph_create(test_dev, "fold_price", body, NULL, &g, NULL), FE_OK);
    int64_t k = K, ww[2] = {K, K}, wn[2] = {N, K};
    assert_int_equal(fe_graph_set_weight(g, "nw", fe_tensor_contiguous(nw, FE_DTYPE_F32, 1, &k)), FE_OK);
    assert_int_equal(fe_graph_set_weight(g, "w1", fe_tensor_contiguous(w1, FE_DTYPE_F32, 2, ww)), FE_OK);
    assert_int_equal(fe_graph_set_weight(g, "wd", fe_tensor_contiguous(wd, FE_DTYPE_F32, 2, wn)), FE_OK);
    assert_int_equal(fe_graph_set_weight(g, "w5", fe_tensor_contiguous(w5, FE_DTYPE_F32, 2, wn)), FE_OK);
    fe_compile_options o = fe_compile_options_default();
    o.fold = fold;
    o.fold_price = price;
    o.fold_user = user;
    int64_t xs[2] = {1, K};
    fe_named_tensor in = {"x", fe_tensor_contiguous(x1, FE_DTYPE_F32, 2, xs)};
    if (fe_graph_compile(g, &in, 1, &o) != FE_OK) fail_msg("%s", fe_graph_message(g));
    return g;
}

/* The synthetic figure of each step, by label, in each table (ns, a step timed alone) */
typedef struct figure {
    const char *label;
    double ns;
} figure;

enum { DISPATCH = 1000, BARRIER = 500 };

/* A cost table of version 0 of g, one call "step" (fused), a design per step priced as
 * figs says (every step of g must be there). */
static fe_cost_table *table_of(fe_graph *g, const figure *figs, int n_figs) {
    fe_cost_table *t;
    assert_int_equal(fe_cost_table_create(&t, NULL), FE_OK);
    t->dispatch.median_ns = DISPATCH;
    t->barrier.median_ns = BARRIER;
    t->calls = fe_calloc(1, sizeof *t->calls);
    assert_non_null(t->calls);
    t->n_calls = 1;
    fe_table_call *c = &t->calls[0];
    snprintf(c->name, sizeof c->name, "step");
    c->version = 0;
    c->n_steps = fe_graph_version_steps(g, 0);
    c->steps = fe_calloc((size_t)c->n_steps, sizeof *c->steps);
    assert_non_null(c->steps);
    for (int s = 0; s < c->n_steps; s++) {
        fe_step_info info;
        assert_int_equal(fe_graph_step_info(g, 0, s, NULL, 0, &info, NULL), FE_OK);
        snprintf(c->steps[s].label, sizeof c->steps[s].label, "%s", info.label);
        double ns = -1;
        for (int i = 0; i < n_figs; i++)
            if (strcmp(figs[i].label, info.label) == 0) ns = figs[i].ns;
        if (ns < 0) fail_msg("no figure for step %s", info.label);
        fe_table_design *d = fe_cost_table_add_design(t);
        assert_non_null(d);
        snprintf(d->op, sizeof d->op, "%s", info.op->name);
        d->options = fe_calloc(1, sizeof *d->options);
        assert_non_null(d->options);
        d->n_options = 1;
        snprintf(d->options[0].setting, sizeof d->options[0].setting, "default");
        d->options[0].cost.median_ns = ns;
        d->options[0].cost.reliable = true;
        c->steps[s].design = t->n_designs - 1;
    }
    return t;
}

static int steps_named(fe_graph *g, const char *op) {
    int n = 0;
    for (int s = 0; s < fe_graph_version_steps(g, 0); s++) {
        fe_step_info info;
        assert_int_equal(fe_graph_step_info(g, 0, s, NULL, 0, &info, NULL), FE_OK);
        n += strcmp(info.op->name, op) == 0;
    }
    return n;
}

static void priced_pass_keeps_the_folds_the_hand_computation_keeps(void **s) {
    (void)s;
    fe_fold_log *log;
    assert_int_equal(fe_fold_log_create(&log, NULL), FE_OK);
    fe_graph *folded = make(FE_FOLD_PRICED, fe_fold_log_record, log);
    fe_graph *unfolded = make(FE_FOLD_NONE, NULL, NULL);
    assert_int_equal(fe_fold_log_sites(log), 4); /* prologue, epilogue, drain, epilogue */
    assert_int_equal(fe_graph_version_steps(unfolded, 0), 7);
    assert_int_equal(fe_graph_version_steps(folded, 0), 3);
    /* unfolded: A 1300 + 3000 + 1200, B 3000 + 1100, C 2000 + 1100 */
    const figure u[] = {{"RMSNorm#0", 1300}, {"GEMV#1", 3000}, {"ElementwiseAdd#2", 1200},
                        {"GEMV#3", 3000},    {"Copy#4", 1100}, {"GEMV#5", 2000},
                        {"SiLU#6", 1100}};
    /* folded: A 3200, B 4000, C 2500 */
    const figure f[] = {{"GEMV#1", 3200}, {"GEMV#3", 4000}, {"GEMV#5", 2500}};
    fe_cost_table *tu = table_of(unfolded, u, 7), *tf = table_of(folded, f, 3);
    /* by hand, each share less the dispatch (fused), a barrier per step that goes:
     *   A unfolded 300 + 2000 + 200 + 2 x 500 = 3500, folded 2200: kept (saves 1300)
     *   B unfolded 2000 + 100 + 500 = 2600, folded 3000: not kept
     *   C unfolded 1000 + 100 + 500 = 1600, folded 1500: kept (saves 100) */
    fe_fold_pricing *p;
    assert_int_equal(fe_fold_price(tu, tf, log, &p, NULL), FE_OK);
    assert_int_equal(fe_fold_pricing_groups(p), 3);
    assert_int_equal(fe_fold_pricing_kept(p), 2);
    double none = DISPATCH + 6 * BARRIER + (300 + 2000 + 200 + 2000 + 100 + 1000 + 100);
    double all = DISPATCH + 2 * BARRIER + (2200 + 3000 + 1500);
    assert_true(fabs(fe_fold_pricing_call_ns(p, 0, FE_FOLD_NONE) - none) < 1e-6);
    assert_true(fabs(fe_fold_pricing_call_ns(p, 0, FE_FOLD_ALL) - all) < 1e-6);
    assert_true(fabs(fe_fold_pricing_call_ns(p, 0, FE_FOLD_PRICED) - (none - 1300 - 100)) < 1e-6);
    fe_fold_pricing_print(p, stderr);
    /* the priced compile: A's two folds and C's taken, B's Copy left a step */
    fe_graph *priced = make(FE_FOLD_PRICED, fe_fold_pricing_keeps, p);
    assert_int_equal(fe_graph_version_steps(priced, 0), 4);
    assert_int_equal(steps_named(priced, "Copy"), 1);
    assert_int_equal(steps_named(priced, "RMSNorm"), 0);
    assert_int_equal(steps_named(priced, "SiLU"), 0);
    assert_int_equal(steps_named(priced, "ElementwiseAdd"), 0);
    fe_graph_stats st = fe_graph_get_stats(priced);
    assert_int_equal(st.folds[FE_FOLD_PROLOGUE], 1);
    assert_int_equal(st.folds[FE_FOLD_EPILOGUE], 2);
    assert_int_equal(st.folds[FE_FOLD_DRAIN], 0);
    fe_graph_destroy(priced);
    fe_fold_pricing_destroy(p);
    /* a folded step dearer than all it replaces: nothing kept, the unfolded graph */
    const figure dear[] = {{"GEMV#1", 9000}, {"GEMV#3", 9000}, {"GEMV#5", 9000}};
    fe_cost_table *td = table_of(folded, dear, 3);
    assert_int_equal(fe_fold_price(tu, td, log, &p, NULL), FE_OK);
    assert_int_equal(fe_fold_pricing_kept(p), 0);
    priced = make(FE_FOLD_PRICED, fe_fold_pricing_keeps, p);
    assert_int_equal(fe_graph_version_steps(priced, 0), 7);
    fe_graph_destroy(priced);
    fe_fold_pricing_destroy(p);
    fe_cost_table_destroy(td);
    /* tables of other calls are refused, naming the call */
    snprintf(tf->calls[0].name, sizeof tf->calls[0].name, "prefill");
    fe_error err = {0};
    assert_int_equal(fe_fold_price(tu, tf, log, &p, &err), FE_E_INVALID);
    assert_null(p);
    assert_non_null(strstr(err.message, "call 0"));
    tf->calls[0].version = -1;
    snprintf(tf->calls[0].name, sizeof tf->calls[0].name, "step");
    assert_int_equal(fe_fold_price(tu, tf, log, &p, &err), FE_E_INVALID);
    fe_cost_table_destroy(tu), fe_cost_table_destroy(tf);
    fe_graph_destroy(folded), fe_graph_destroy(unfolded);
    fe_fold_log_destroy(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(priced_pass_keeps_the_folds_the_hand_computation_keeps),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
