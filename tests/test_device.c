/* tests/test_device.c: the CPU device: features agree with the ISA chosen, the ISA cap and
 * worker count are honoured, bad options are refused with a message, FERRUM_WORKERS and
 * FERRUM_ISA are honoured or refused naming the variable (never ignored), and the pool runs
 * steps on their width with a barrier between steps, over many dispatches; a pinned pool pins
 * its workers inside the CPUs the process may use and gives the dispatching thread its own CPU
 * mask back when it is destroyed. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cpuid.h>

#include "device/counters.h"
#include "ferrum/device.h"

static void features_agree_with_the_isa(void **s) {
    (void)s;
    fe_device *dev = NULL;
    fe_error err;
    fe_device_options o = fe_device_options_default();
    o.max_isa = -1;
    assert_int_equal(fe_device_create(&o, &dev, &err), FE_OK);
    const fe_device_info *in = fe_device_get_info(dev);
    const fe_cpu_features *f = &in->features;
    if (in->best_isa == FE_ISA_AVX512) assert_true(f->avx512f && f->avx512bw && f->avx512vl);
    if (in->best_isa >= FE_ISA_AVX2) assert_true(f->avx2 && f->fma);
    assert_true(in->isa <= in->best_isa);
    assert_true(in->n_workers >= 1 && in->n_cores >= 1);
    /* vdpbf16ps counts as faster than the FMAs on AMD's AVX512_BF16 cores only */
    unsigned a, b, c, d;
    char vendor[13] = "";
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(vendor, &b, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &c, 4);
        vendor[12] = '\0';
    }
    assert_int_equal(in->bf16_dot_fast, in->isa == FE_ISA_AVX512 && f->avx512bf16 &&
                                            strcmp(vendor, "AuthenticAMD") == 0);
    char line[512];
    fe_device_describe(dev, line, sizeof line);
    assert_non_null(strstr(line, in->cpu_name));
    assert_non_null(strstr(line, fe_isa_name(in->isa)));
    fe_device_destroy(dev);
}

static void isa_cap_and_workers_are_honoured(void **s) {
    (void)s;
    for (int isa = 0; isa < FE_ISA_COUNT; isa++) {
        fe_device_options o = {.n_workers = 3, .max_isa = isa, .pin = false};
        fe_device *dev = NULL;
        assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
        const fe_device_info *in = fe_device_get_info(dev);
        assert_int_equal(in->n_workers, 3);
        assert_true((int)in->isa <= isa);
        fe_device_destroy(dev);
    }
    fe_isa x;
    assert_int_equal(fe_isa_from_name("avx2", &x), FE_OK);
    assert_int_equal(x, FE_ISA_AVX2);
    assert_int_equal(fe_isa_from_name("sse9", &x), FE_E_NOTFOUND);
}

static void bad_options_are_refused(void **s) {
    (void)s;
    fe_device *dev = (fe_device *)1;
    fe_error err;
    fe_device_options o = {.n_workers = -2, .max_isa = -1};
    assert_int_equal(fe_device_create(&o, &dev, &err), FE_E_INVALID);
    assert_null(dev);
    assert_non_null(strstr(err.message, "n_workers"));
    o = (fe_device_options){.n_workers = 1, .max_isa = 7};
    assert_int_equal(fe_device_create(&o, &dev, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "max_isa"));
}

/* Creates a default device with `var` set to `value`; the status, with the message in err. */
static fe_status create_with_env(const char *var, const char *value, fe_error *err, int *workers,
                                 fe_isa *isa) {
    char *old = getenv(var) ? strdup(getenv(var)) : NULL;
    setenv(var, value, 1);
    fe_device_options o = fe_device_options_default();
    o.pin = false;
    fe_device *dev = NULL;
    fe_status st = fe_device_create(&o, &dev, err);
    if (old) setenv(var, old, 1);
    else unsetenv(var);
    free(old);
    if (dev) {
        *workers = fe_device_get_info(dev)->n_workers;
        *isa = fe_device_get_info(dev)->isa;
    }
    fe_device_destroy(dev);
    return st;
}

static void bad_environment_is_refused_naming_the_variable(void **s) {
    (void)s;
    fe_error err;
    int workers = 0, cpus = fe_device_cpus_allowed();
    fe_isa isa;
    assert_true(cpus >= 1);
    const char *bad_workers[] = {"abc", "0", "-3", "2x", "1000"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(create_with_env("FERRUM_WORKERS", bad_workers[i], &err, &workers, &isa),
                         FE_E_INVALID);
        char want[64], range[32];
        snprintf(want, sizeof want, "FERRUM_WORKERS=%s", bad_workers[i]);
        snprintf(range, sizeof range, "1..%d", cpus);
        if (!strstr(err.message, want) || !strstr(err.message, range))
            fail_msg("FERRUM_WORKERS=%s: %s", bad_workers[i], err.message);
    }
    char more[16], want[64];
    snprintf(more, sizeof more, "%d", cpus + 1);
    snprintf(want, sizeof want, "more than the %d CPUs this process may use", cpus);
    assert_int_equal(create_with_env("FERRUM_WORKERS", more, &err, &workers, &isa), FE_E_INVALID);
    assert_non_null(strstr(err.message, want));
    assert_int_equal(create_with_env("FERRUM_WORKERS", "1", &err, &workers, &isa), FE_OK);
    assert_int_equal(workers, 1);
    assert_int_equal(create_with_env("FERRUM_ISA", "bogus", &err, &workers, &isa), FE_E_INVALID);
    assert_non_null(strstr(err.message, "FERRUM_ISA=bogus"));
    assert_non_null(strstr(err.message, "scalar, avx2, avxvnni, avx512 or avx512noamx"));
    assert_int_equal(create_with_env("FERRUM_ISA", "scalar", &err, &workers, &isa), FE_OK);
    assert_int_equal(isa, FE_ISA_SCALAR);
    /* an ISA the CPU lacks, asked for by name, is refused rather than quietly capped */
    fe_device *dev = NULL;
    fe_device_options o = {.n_workers = 1, .max_isa = -1};
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    fe_isa best = fe_device_get_info(dev)->best_isa;
    fe_device_destroy(dev);
    if (best < FE_ISA_AVX512) {
        assert_int_equal(create_with_env("FERRUM_ISA", "avx512", &err, &workers, &isa),
                         FE_E_UNSUPPORTED);
        assert_non_null(strstr(err.message, "FERRUM_ISA=avx512"));
    }
    /* a count given in the options is the caller's: the variable does not override it */
    char *old = getenv("FERRUM_WORKERS") ? strdup(getenv("FERRUM_WORKERS")) : NULL;
    setenv("FERRUM_WORKERS", "abc", 1);
    o = (fe_device_options){.n_workers = 1, .max_isa = -1};
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    fe_device_destroy(dev);
    if (old) setenv("FERRUM_WORKERS", old, 1);
    else unsetenv("FERRUM_WORKERS");
    free(old);
}

/* The avx2 kernels' AVX-VNNI: FERRUM_ISA=avx2 withholds it (the AVX2 set alone, as an
 * AVX2-only Zen 3 runs it), FERRUM_ISA=avxvnni asks for it and is refused on a CPU without it;
 * the options' no_avxvnni withholds it, else it follows the CPU at isa avx2 and is never set
 * at any other isa. */
static bool avxvnni_under(const char *isa_env, fe_isa max_isa, bool no_avxvnni, fe_status *st,
                          fe_error *err) {
    char *old = getenv("FERRUM_ISA") ? strdup(getenv("FERRUM_ISA")) : NULL;
    if (isa_env) setenv("FERRUM_ISA", isa_env, 1);
    else unsetenv("FERRUM_ISA");
    fe_device_options o = fe_device_options_default();
    o.pin = false;
    o.n_workers = 1;
    o.max_isa = (int)max_isa;
    o.no_avxvnni = no_avxvnni;
    fe_device *dev = NULL;
    *st = fe_device_create(&o, &dev, err);
    if (old) setenv("FERRUM_ISA", old, 1);
    else unsetenv("FERRUM_ISA");
    free(old);
    bool used = dev && fe_device_get_info(dev)->avxvnni;
    if (dev && used) assert_int_equal(fe_device_get_info(dev)->isa, FE_ISA_AVX2);
    fe_device_destroy(dev);
    return used;
}

static void avxvnni_follows_ferrum_isa(void **s) {
    (void)s;
    fe_error err;
    fe_status st;
    fe_device *dev = NULL;
    fe_device_options o = {.n_workers = 1, .max_isa = -1};
    unsetenv("FERRUM_ISA");
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    const bool has = fe_device_get_info(dev)->features.avxvnni;
    const fe_isa best = fe_device_get_info(dev)->best_isa;
    fe_device_destroy(dev);
    if (best < FE_ISA_AVX2) skip();
    assert_false(avxvnni_under("avx2", -1, false, &st, &err));
    assert_int_equal(st, FE_OK);
    const bool asked = avxvnni_under("avxvnni", -1, false, &st, &err);
    if (has) {
        assert_int_equal(st, FE_OK);
        assert_true(asked);
    } else {
        assert_int_equal(st, FE_E_UNSUPPORTED);
        assert_non_null(strstr(err.message, "FERRUM_ISA=avxvnni"));
        assert_non_null(strstr(err.message, "no AVX-VNNI"));
    }
    /* options: the variable is read only where max_isa is -1 */
    assert_int_equal(avxvnni_under("avx2", FE_ISA_AVX2, false, &st, &err), has);
    assert_false(avxvnni_under(NULL, FE_ISA_AVX2, true, &st, &err));
    assert_false(avxvnni_under(NULL, FE_ISA_SCALAR, false, &st, &err));
    if (best == FE_ISA_AVX512) assert_false(avxvnni_under(NULL, FE_ISA_AVX512, false, &st, &err));
}

/* FERRUM_ISA=avx512noamx: the avx512 kernels with the AMX features cleared (the tiles the CPU
 * has are not used); refused, naming the variable and the ISA, where the CPU lacks AVX-512;
 * the options' no_amx clears them too, and the default keeps what the CPU has. */
static void avx512noamx_withholds_the_tiles(void **s) {
    (void)s;
    fe_device_options o = {.n_workers = 1, .max_isa = -1};
    fe_device *dev = NULL;
    unsetenv("FERRUM_ISA");
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    const fe_cpu_features cpu = fe_device_get_info(dev)->features;
    const fe_isa best = fe_device_get_info(dev)->best_isa;
    fe_device_destroy(dev);
    char *old = getenv("FERRUM_ISA") ? strdup(getenv("FERRUM_ISA")) : NULL;
    setenv("FERRUM_ISA", "avx512noamx", 1);
    fe_error err;
    fe_status st = fe_device_create(&o, &dev, &err);
    if (best < FE_ISA_AVX512) {
        assert_int_equal(st, FE_E_UNSUPPORTED);
        assert_null(dev);
        assert_non_null(strstr(err.message, "FERRUM_ISA=avx512noamx"));
    } else {
        assert_int_equal(st, FE_OK);
        const fe_device_info *in = fe_device_get_info(dev);
        assert_int_equal(in->isa, FE_ISA_AVX512);
        assert_false(in->features.amx_bf16);
        assert_false(in->features.amx_int8);
        assert_int_equal(in->features.avx512bf16, cpu.avx512bf16); /* the rest as the CPU's */
        assert_int_equal(in->features.avx512vnni, cpu.avx512vnni);
        fe_device_destroy(dev);
    }
    if (old) setenv("FERRUM_ISA", old, 1);
    else unsetenv("FERRUM_ISA");
    free(old);
    /* the option, and the default */
    o = (fe_device_options){.n_workers = 1, .max_isa = -1, .no_amx = true};
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    assert_false(fe_device_get_info(dev)->features.amx_bf16);
    assert_false(fe_device_get_info(dev)->features.amx_int8);
    fe_device_destroy(dev);
    o.no_amx = false;
    assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
    assert_int_equal(fe_device_get_info(dev)->features.amx_bf16, cpu.amx_bf16);
    assert_int_equal(fe_device_get_info(dev)->features.amx_int8, cpu.amx_int8);
    fe_device_destroy(dev);
}

typedef struct {
    int n;
    atomic_int ran[16];
    int slot[16];
    long total;
    long rounds_ok;
} pool_check;

static void write_slots(void *ctx, int ith, int nth) {
    pool_check *p = ctx;
    atomic_fetch_add(&p->ran[ith], 1);
    p->slot[ith] = ith + 1 + nth * 100;
}

/* worker 0 reads what every worker wrote in the step before: the barrier must order them */
static void sum_slots(void *ctx, int ith, int nth) {
    pool_check *p = ctx;
    (void)nth;
    if (ith != 0) return;
    long want = 0, got = 0;
    for (int i = 0; i < p->n; i++) {
        want += i + 1 + p->n * 100;
        got += p->slot[i];
        p->slot[i] = 0;
    }
    p->total += got;
    p->rounds_ok += got == want;
}

static void pool_runs_steps_on_their_width_with_barriers(void **s) {
    (void)s;
    for (int workers = 1; workers <= 4; workers++) {
        fe_device_options o = {.n_workers = workers, .max_isa = -1, .pin = workers <= 2};
        fe_device *dev = NULL;
        assert_int_equal(fe_device_create(&o, &dev, NULL), FE_OK);
        pool_check p = {.n = workers};
        fe_step steps[3] = {{write_slots, &p, workers}, {sum_slots, &p, workers},
                            {write_slots, &p, 1}};
        uint64_t before = fe_device_dispatch_count(dev);
        /* fewer rounds when the pool has more workers than this machine has CPUs */
        const int rounds = workers <= fe_device_get_info(dev)->n_cores ? 20000 : 2000;
        for (int r = 0; r < rounds; r++) fe_device_dispatch(dev, steps, 2);
        assert_int_equal(p.rounds_ok, rounds);
        for (int i = 0; i < workers; i++) assert_int_equal(atomic_load(&p.ran[i]), rounds);
        /* a step of width 1 runs on worker 0 only; a width past the pool is clamped */
        fe_device_dispatch(dev, &steps[2], 1);
        assert_int_equal(atomic_load(&p.ran[0]), rounds + 1);
        if (workers > 1) assert_int_equal(atomic_load(&p.ran[1]), rounds);
        fe_step wide = {write_slots, &p, 64};
        fe_device_dispatch(dev, &wide, 1);
        assert_int_equal(atomic_load(&p.ran[workers - 1]), rounds + 1 + (workers == 1));
        assert_int_equal(fe_device_dispatch_count(dev) - before, rounds + 2);
        fe_device_destroy(dev);
    }
}

static void record_cpu(void *ctx, int ith, int nth) {
    (void)nth;
    ((int *)ctx)[ith] = sched_getcpu();
}

static void pinning_stays_inside_the_allowed_cpus_and_is_undone(void **s) {
    (void)s;
    cpu_set_t original, narrowed, after;
    assert_int_equal(sched_getaffinity(0, sizeof original, &original), 0);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &original)) last = c;
    assert_true(last >= 0);
    /* allow only the highest CPU: both workers must land on it, never on CPU 0 */
    CPU_ZERO(&narrowed);
    CPU_SET(last, &narrowed);
    assert_int_equal(sched_setaffinity(0, sizeof narrowed, &narrowed), 0);
    fe_device_options o = {.n_workers = 2, .max_isa = -1, .pin = true};
    fe_device *dev = NULL;
    fe_status st = fe_device_create(&o, &dev, NULL);
    /* restore before any assertion can leave this process narrowed */
    assert_int_equal(sched_setaffinity(0, sizeof original, &original), 0);
    assert_int_equal(st, FE_OK);
    int cpu[2] = {-1, -1};
    fe_step step = {record_cpu, cpu, 2};
    fe_device_dispatch(dev, &step, 1);
    assert_int_equal(cpu[1], last);
    /* the dispatching thread is pinned while the pool lives, to the first allowed CPU then */
    cpu_set_t during;
    assert_int_equal(sched_getaffinity(0, sizeof during, &during), 0);
    assert_int_equal(CPU_COUNT(&during), 1);
    assert_true(CPU_ISSET(last, &during));
    fe_device_destroy(dev);
    assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
    assert_true(CPU_EQUAL(&after, &original));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(features_agree_with_the_isa),
        cmocka_unit_test(isa_cap_and_workers_are_honoured),
        cmocka_unit_test(bad_options_are_refused),
        cmocka_unit_test(bad_environment_is_refused_naming_the_variable),
        cmocka_unit_test(avxvnni_follows_ferrum_isa),
        cmocka_unit_test(avx512noamx_withholds_the_tiles),
        cmocka_unit_test(pool_runs_steps_on_their_width_with_barriers),
        cmocka_unit_test(pinning_stays_inside_the_allowed_cpus_and_is_undone),
    };
    return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
