/* tests/test_catalog.c: the catalog test. Walks the operator registry and checks every
 * declaration is consistent; runs every operator's cases against its reference at the
 * case's shape and at lengths equal to, a multiple of, shorter and longer than each kernel's
 * tile, with per-call values at their default and bounded, on 1 and on all workers (and an
 * odd worker count), on every ISA the machine has down to scalar; shows one design serves
 * two extents; and that every refusal returns its status with a message naming the rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "support/testing.h"

typedef struct run_stats {
    int runs;
    int laid_out; /* runs from an input's layout compared with the run without */
} run_stats;

static fe_device *make_device(int workers, fe_isa isa) {
    fe_device_options o = fe_device_options_default();
    o.n_workers = workers;
    o.max_isa = (int)isa;
    fe_device *dev = NULL;
    fe_error err;
    assert_int_equal(fe_device_create(&o, &dev, &err), FE_OK);
    return dev;
}

static void case_params(const fe_case *c, fe_setting *out) {
    for (int i = 0; i < c->n_params; i++) out[i] = c->params[i];
}

static fe_status make_kernel(fe_device *dev, const fe_op *op, const fe_case *c,
                             const fe_tensor *ops, int width, fe_kernel **k, fe_error *err) {
    fe_setting params[FE_MAX_PARAMS];
    case_params(c, params);
    fe_setting tun[FE_MAX_TUNABLES + 1];
    int n_tun = 0;
    if (width) tun[n_tun++] = (fe_setting){"WIDTH", width};
    for (int i = 0; i < c->n_tunables; i++) tun[n_tun++] = c->tunables[i];
    fe_op_request req = {.op = op->name, .operands = ops, .n_operands = op->n_operands,
                         .params = params, .n_params = c->n_params,
                         .tunables = n_tun ? tun : NULL, .n_tunables = n_tun};
    return fe_kernel_create(dev, &req, k, err);
}

/* Runs one case shape on one device and width with the given values against the reference.
 * Fails the test with the op, case, ISA and first mismatch on any difference. */
static void check_once(fe_device *dev, const fe_op *op, const fe_case *c, const fe_tensor *desc,
                       int width, const int64_t *values, const char *label, run_stats *st) {
    fe_kernel *k = NULL;
    fe_error err = {0};
    fe_status s = make_kernel(dev, op, c, desc, width, &k, &err);
    if (s != FE_OK) fail_msg("%s/%s [%s]: create failed: %s", op->name, c->name, label, err.message);
    test_buf in[FE_MAX_OPERANDS] = {0}, got[FE_MAX_OPERANDS] = {0}, ref[FE_MAX_OPERANDS] = {0};
    fe_tensor run_got[FE_MAX_OPERANDS], run_ref[FE_MAX_OPERANDS];
    test_rng rng = {.s = 0x5eed ^ ((uint64_t)desc[0].shape[0] * 31 + (uint64_t)c->n_dims)};
    for (int i = 0; i < op->n_operands; i++) {
        run_got[i] = run_ref[i] = desc[i];
        if (desc[i].rank == 0) continue;
        const fe_operand_decl *od = &op->operands[i];
        if (od->role == FE_IN) {
            assert_true(test_buf_alloc(&in[i], &desc[i]));
            double lo = od->draw_lo < od->draw_hi ? od->draw_lo : c->lo < c->hi ? c->lo : -3;
            double hi = od->draw_lo < od->draw_hi ? od->draw_hi : c->lo < c->hi ? c->hi : 3;
            /* integers (ids, indices) honour a range their operand declares; otherwise
             * they are random bytes */
            if (!fe_dtype_info(desc[i].dtype)->is_float && od->draw_lo < od->draw_hi)
                test_buf_draw_ints(&in[i], desc[i].dtype,
                                   c->int_hi > 0 ? c->int_lo : (int64_t)od->draw_lo,
                                   c->int_hi > 0 ? c->int_hi : (int64_t)od->draw_hi, &rng);
            else
                test_buf_draw(&in[i], desc[i].dtype, lo, hi, &rng);
            run_got[i].data = run_ref[i].data = in[i].mem;
        } else {
            assert_true(test_buf_alloc(&got[i], &desc[i]));
            assert_true(test_buf_alloc(&ref[i], &desc[i]));
            test_buf_fill(&got[i], 0x7b);
            test_buf_fill(&ref[i], 0x7b);
            run_got[i].data = got[i].mem;
            run_ref[i].data = ref[i].mem;
        }
    }
    int nv = values ? op->n_values : 0;
    s = fe_kernel_run_reference(k, run_ref, op->n_operands, values, nv);
    if (s != FE_OK) fail_msg("%s/%s [%s]: reference refused: %s", op->name, c->name, label,
                             fe_kernel_message(k));
    s = fe_kernel_run(k, run_got, op->n_operands, values, nv);
    if (s != FE_OK) fail_msg("%s/%s [%s]: run refused: %s", op->name, c->name, label,
                             fe_kernel_message(k));
    /* an input the design reads from a layout of its own (a weight repacked once): the run
     * from the layout writes the same bytes as the run that read the input as stored */
    void *lay[FE_MAX_OPERANDS] = {0};
    bool laid = false;
    for (int i = 0; i < op->n_operands; i++) {
        size_t bytes = desc[i].rank ? fe_kernel_layout_bytes(k, i, NULL) : 0;
        if (!bytes) continue;
        assert_int_equal(op->operands[i].role, FE_IN);
        assert_non_null(lay[i] = fe_aligned_alloc(64, bytes));
        if (fe_kernel_make_layout(k, i, &run_got[i], lay[i]) != FE_OK)
            fail_msg("%s/%s [%s]: layout of %s refused: %s", op->name, c->name, label,
                     op->operands[i].name, fe_kernel_message(k));
        laid = true;
    }
    for (int i = 0; laid && i < op->n_operands; i++) {
        if (desc[i].rank == 0 || op->operands[i].role != FE_OUT) continue;
        test_buf from = {0};
        assert_true(test_buf_alloc(&from, &desc[i]));
        test_buf_fill(&from, 0x7b);
        fe_tensor run_lay[FE_MAX_OPERANDS];
        memcpy(run_lay, run_got, sizeof run_lay);
        run_lay[i].data = from.mem;
        if (fe_kernel_run_layouts(k, run_lay, op->n_operands, (const void *const *)lay, values,
                                  nv) != FE_OK)
            fail_msg("%s/%s [%s]: run from the layouts refused: %s", op->name, c->name, label,
                     fe_kernel_message(k));
        char why[256];
        if (!test_close(&from, &got[i], desc[i].dtype, 0, 0, why, sizeof why, NULL))
            fail_msg("%s/%s [%s, %s, width %d]: %s from the layouts differs from the run "
                     "without: %s", op->name, c->name, label, fe_isa_name(fe_kernel_isa(k)),
                     width, op->operands[i].name, why);
        if (!test_buf_guard_intact(&from))
            fail_msg("%s/%s [%s]: wrote past the end of %s from the layouts", op->name,
                     c->name, label, op->operands[i].name);
        test_buf_free(&from);
        st->laid_out++;
    }
    for (int i = 0; i < op->n_operands; i++) fe_free(lay[i]);
    for (int i = 0; i < op->n_operands; i++) {
        if (desc[i].rank == 0) continue;
        if (op->operands[i].role == FE_OUT) {
            char why[256];
            if (!test_close(&got[i], &ref[i], desc[i].dtype, op->rtol, op->atol, why, sizeof why, NULL))
                fail_msg("%s/%s [%s, %s, width %d, shape %lldx%lld]: %s: %s", op->name, c->name,
                         label, fe_isa_name(fe_kernel_isa(k)), width, (long long)desc[0].shape[0],
                         (long long)(desc[0].rank > 1 ? desc[0].shape[1] : 1), op->operands[i].name, why);
            if (!test_buf_guard_intact(&got[i]))
                fail_msg("%s/%s [%s]: wrote past the end of %s", op->name, c->name, label,
                         op->operands[i].name);
            test_buf_free(&got[i]);
            test_buf_free(&ref[i]);
        } else {
            if (!test_buf_guard_intact(&in[i]))
                fail_msg("%s/%s: wrote past input %s", op->name, c->name, op->operands[i].name);
            test_buf_free(&in[i]);
        }
    }
    fe_kernel_destroy(k);
    st->runs++;
}

/* Values to try: defaults (NULL), each at a middle bound and at its minimum. */
static void check_shape(fe_device *dev, const fe_op *op, const fe_case *c, int width,
                        run_stats *st) {
    fe_tensor desc[FE_MAX_OPERANDS] = {0};
    double params[FE_MAX_PARAMS] = {0};
    op->operands_for(c, params, desc);
    check_once(dev, op, c, desc, width, NULL, "full", st);
    if (op->n_values == 0) return;
    /* extents come from a kernel made at this shape */
    fe_kernel *k = NULL;
    fe_error err;
    assert_int_equal(make_kernel(dev, op, c, desc, width, &k, &err), FE_OK);
    const int64_t *ext = fe_kernel_extents(k);
    int64_t mid[FE_MAX_VALUES], low[FE_MAX_VALUES];
    for (int v = 0; v < op->n_values; v++) {
        int64_t hi = ext[fe_op_extent_index(op, op->values[v].extent)];
        int64_t m = hi / 2 + 1 > hi ? hi : hi / 2 + 1;
        mid[v] = m < op->values[v].min ? op->values[v].min : m;
        /* an offset stays at its start: its cross-value rules (pos + rows <= P) are the op's
         * own cases' business, and the bounds vary here */
        if (op->values[v].map == FE_MAP_NONE) mid[v] = op->values[v].min;
        low[v] = op->values[v].min;
    }
    fe_kernel_destroy(k);
    check_once(dev, op, c, desc, width, mid, "bounded", st);
    check_once(dev, op, c, desc, width, low, "minimal", st);
}

/* The case with its last dim replaced by n. */
static fe_case with_last(const fe_case *c, int64_t n) {
    fe_case v = *c;
    v.dims[v.n_dims - 1] = n;
    return v;
}

/* FERRUM_CATALOG_ONLY=TEXT: only the cases whose "OP/case" name contains TEXT (e.g. "GEMM/q4_1",
 * or "i8" for the int8 GEMM cases), to rerun a few extensive ones without the hour of all */
static bool case_wanted(const fe_op *op, const fe_case *c) {
    const char *only = getenv("FERRUM_CATALOG_ONLY");
    if (!only || !*only) return true;
    char name[160];
    snprintf(name, sizeof name, "%s/%s", op->name, c->name);
    return strstr(name, only) != NULL;
}

static void catalog_matches_references(void **state) {
    (void)state;
    fe_device *probe = make_device(1, FE_ISA_AVX512);
    fe_isa best = fe_device_get_info(probe)->best_isa;
    int cores = fe_device_get_info(probe)->n_cores;
    fe_device_destroy(probe);
    run_stats st = {0};
    for (int isa = 0; isa <= (int)best; isa++) {
        int counts[3] = {1, cores, 3};
        for (int wc = 0; wc < 3; wc++) {
            if (wc == 1 && cores == 1) continue;
            fe_device *dev = make_device(counts[wc], (fe_isa)isa);
            for (int o = 0; o < fe_op_count(); o++) {
                const fe_op *op = fe_op_at(o);
                for (int ci = 0; ci < op->n_cases; ci++) {
                    const fe_case *c = &op->cases[ci];
                    if (!case_wanted(op, c)) continue;
                    if (c->extensive && !test_extensive()) continue;
                    check_shape(dev, op, c, counts[wc], &st);
                    if (c->extensive) continue;
                    /* lengths around each kernel's tile, on the first case only */
                    if (ci != 0) continue;
                    for (int kd = 0; kd < op->n_kernels; kd++) {
                        int t = op->kernels[kd].tile;
                        if (t <= 1 || op->kernels[kd].isa > (fe_isa)isa) continue;
                        int64_t lens[4] = {t, 3 * t, t - 1, t + 1};
                        for (int li = 0; li < 4; li++) {
                            fe_case v = with_last(c, lens[li]);
                            check_shape(dev, op, &v, counts[wc], &st);
                        }
                    }
                }
            }
            fe_device_destroy(dev);
        }
    }
    print_message("catalog: %d operators, %d kernel runs compared with references, %d of "
                  "them again from their inputs' layouts\n", fe_op_count(), st.runs,
                  st.laid_out);
}

static void declarations_are_consistent(void **state) {
    (void)state;
    assert_true(fe_op_count() >= 5);
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        assert_non_null(op->name);
        assert_non_null(op->summary);
        /* the public accessors give the declaration's name and a one-line summary */
        assert_string_equal(fe_op_name(op), op->name);
        assert_string_equal(fe_op_summary(op), op->summary);
        assert_true(strlen(fe_op_summary(op)) > 0 && !strchr(fe_op_summary(op), '\n'));
        assert_true(fe_op_find(op->name) == op);
        for (int p = 0; p < o; p++) assert_string_not_equal(fe_op_at(p)->name, op->name);
        assert_non_null(op->infer);
        assert_non_null(op->reference);
        assert_non_null(op->cost);
        assert_non_null(op->operands_for);
        assert_true(op->n_cases > 0);
        assert_true(op->n_operands <= FE_MAX_OPERANDS && op->n_params <= FE_MAX_PARAMS);
        assert_true(op->n_tunables <= FE_MAX_TUNABLES && op->n_values <= FE_MAX_VALUES);
        assert_true(op->n_extents <= FE_MAX_EXTENTS);
        assert_true(fe_op_tunable_index(op, "WIDTH") >= 0);
        bool has_scalar = false;
        for (int k = 0; k < op->n_kernels; k++) has_scalar |= op->kernels[k].isa == FE_ISA_SCALAR;
        if (!has_scalar) fail_msg("%s has no scalar kernel", op->name);
        for (int v = 0; v < op->n_values; v++)
            if (fe_op_extent_index(op, op->values[v].extent) < 0)
                fail_msg("%s: value %s names no extent", op->name, op->values[v].name);
        for (int t = 0; t < op->n_tunables; t++)
            if (op->tunables[t].domain.kind == FE_DOMAIN_DIVISORS &&
                fe_op_extent_index(op, op->tunables[t].domain.of) < 0)
                fail_msg("%s: tunable %s divides no extent", op->name, op->tunables[t].name);
        assert_true(op->rtol >= 0 && op->atol >= 0);
        for (int c = 0; c < op->n_cases; c++)
            for (int p = 0; p < op->cases[c].n_params; p++)
                if (fe_op_param_index(op, op->cases[c].params[p].name) < 0)
                    fail_msg("%s case %s: no param %s", op->name, op->cases[c].name,
                             op->cases[c].params[p].name);
    }
}

/* One design serves every extent: a kernel made at the first case's shape and at a larger
 * one share their design key. */
static void design_key_is_equal_at_two_extents(void **state) {
    (void)state;
    fe_device *dev = make_device(0, FE_ISA_AVX512);
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        const fe_case *c = &op->cases[0];
        fe_case big = with_last(c, c->dims[c->n_dims - 1] * 2 + 3);
        big.dims[0] += 5;
        fe_tensor d1[FE_MAX_OPERANDS] = {0}, d2[FE_MAX_OPERANDS] = {0};
        double params[FE_MAX_PARAMS] = {0};
        op->operands_for(c, params, d1);
        op->operands_for(&big, params, d2);
        fe_kernel *k1 = NULL, *k2 = NULL;
        fe_error err;
        assert_int_equal(make_kernel(dev, op, c, d1, 0, &k1, &err), FE_OK);
        assert_int_equal(make_kernel(dev, op, &big, d2, 0, &k2, &err), FE_OK);
        if (fe_kernel_design_key(k1) != fe_kernel_design_key(k2))
            fail_msg("%s: design keys differ between two extents", op->name);
        fe_kernel_destroy(k1);
        fe_kernel_destroy(k2);
    }
    fe_device_destroy(dev);
}

static void expect_refusal(fe_status got, fe_status want, const char *msg, const char *needle,
                           const char *what) {
    if (got != want)
        fail_msg("%s: got %s, want %s (%s)", what, fe_status_str(got), fe_status_str(want), msg);
    if (!strstr(msg, needle)) fail_msg("%s: message \"%s\" does not say \"%s\"", what, msg, needle);
}

/* Every op: a bound past its view, a dtype it does not take, a rank it does not take, an
 * unknown param and a tunable outside its domain are refused with a message naming the rule,
 * and a refused run leaves the output untouched. */
static void refusals_name_the_rule(void **state) {
    (void)state;
    fe_device *dev = make_device(0, FE_ISA_AVX512);
    for (int o = 0; o < fe_op_count(); o++) {
        const fe_op *op = fe_op_at(o);
        const fe_case *c = &op->cases[0];
        fe_tensor desc[FE_MAX_OPERANDS] = {0};
        double params[FE_MAX_PARAMS] = {0};
        op->operands_for(c, params, desc);
        fe_kernel *k = NULL;
        fe_error err = {0};
        char what[128];

        /* a dtype operand 0 does not take */
        for (int dt = 0; dt < FE_DTYPE_COUNT; dt++) {
            if (op->operands[0].dtypes & FE_DT(dt)) continue;
            fe_tensor bad[FE_MAX_OPERANDS];
            memcpy(bad, desc, sizeof bad);
            bad[0].dtype = (fe_dtype)dt;
            snprintf(what, sizeof what, "%s with %s operand", op->name, fe_dtype_info(dt)->name);
            expect_refusal(make_kernel(dev, op, c, bad, 0, &k, &err), FE_E_DTYPE, err.message,
                           "takes", what);
            assert_null(k);
            break;
        }
        /* a rank past the declared range */
        if (op->operands[0].max_rank < FE_MAX_RANK) {
            fe_tensor bad[FE_MAX_OPERANDS];
            memcpy(bad, desc, sizeof bad);
            bad[0].rank = op->operands[0].max_rank + 1;
            bad[0].shape[bad[0].rank - 1] = 1;
            snprintf(what, sizeof what, "%s with rank %d", op->name, bad[0].rank);
            expect_refusal(make_kernel(dev, op, c, bad, 0, &k, &err), FE_E_SHAPE, err.message,
                           "takes rank", what);
        }
        /* an unknown param, a tunable outside its domain, an unknown tunable */
        fe_setting bogus = {"no_such_param", 1};
        fe_op_request req = {.op = op->name, .operands = desc, .n_operands = op->n_operands,
                             .params = &bogus, .n_params = 1};
        expect_refusal(fe_kernel_create(dev, &req, &k, &err), FE_E_INVALID, err.message,
                       "no param named", op->name);
        fe_setting wide = {"WIDTH", 1000};
        req = (fe_op_request){.op = op->name, .operands = desc, .n_operands = op->n_operands,
                              .tunables = &wide, .n_tunables = 1};
        expect_refusal(fe_kernel_create(dev, &req, &k, &err), FE_E_INVALID, err.message,
                       "outside its domain", op->name);
        fe_setting unknown = {"no_such_tunable", 1};
        req.tunables = &unknown;
        expect_refusal(fe_kernel_create(dev, &req, &k, &err), FE_E_INVALID, err.message,
                       "no tunable named", op->name);

        /* a per-call value past its view: refused, nothing written */
        for (int v = 0; v < op->n_values; v++) {
            assert_int_equal(make_kernel(dev, op, c, desc, 0, &k, &err), FE_OK);
            test_buf bufs[FE_MAX_OPERANDS] = {0};
            fe_tensor run[FE_MAX_OPERANDS];
            for (int i = 0; i < op->n_operands; i++) {
                run[i] = desc[i];
                if (desc[i].rank == 0) continue;
                assert_true(test_buf_alloc(&bufs[i], &desc[i]));
                test_buf_fill(&bufs[i], 0x3c);
                run[i].data = bufs[i].mem;
            }
            const int64_t *ext = fe_kernel_extents(k);
            int64_t vals[FE_MAX_VALUES];
            for (int j = 0; j < op->n_values; j++)
                vals[j] = ext[fe_op_extent_index(op, op->values[j].extent)];
            vals[v] += 1;
            snprintf(what, sizeof what, "%s with %s past its extent", op->name, op->values[v].name);
            expect_refusal(fe_kernel_run(k, run, op->n_operands, vals, op->n_values), FE_E_BOUNDS,
                           fe_kernel_message(k), "past its view", what);
            vals[v] = op->values[v].min - 1;
            expect_refusal(fe_kernel_run(k, run, op->n_operands, vals, op->n_values), FE_E_BOUNDS,
                           fe_kernel_message(k), "past its view", what);
            for (int i = 0; i < op->n_operands; i++) {
                if (desc[i].rank == 0) continue;
                for (size_t b = 0; b < bufs[i].bytes; b++)
                    if (bufs[i].mem[b] != 0x3c) fail_msg("%s: a refused run wrote", what);
                test_buf_free(&bufs[i]);
            }
            fe_kernel_destroy(k);
        }
    }
    fe_device_destroy(dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(declarations_are_consistent),
        cmocka_unit_test(catalog_matches_references),
        cmocka_unit_test(design_key_is_equal_at_two_extents),
        cmocka_unit_test(refusals_name_the_rule),
    };
    return cmocka_run_group_tests_name("catalog", tests, NULL, NULL);
}
