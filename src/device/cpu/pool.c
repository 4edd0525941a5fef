/* device/cpu/pool.c: the worker pool (see pool.h).
 *
 * Waiting spins on the word first (a dispatch usually follows the last one within
 * microseconds), then sleeps on a futex. A sleeper count lets the waker skip the wake
 * syscall when nobody sleeps; the seq_cst order on (word, sleepers) makes the skip safe. */
#include "device/cpu/pool.h"

#include <immintrin.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

/* Spin this long before sleeping; far less when the pool has more workers than CPUs, where a
 * spinning waiter only keeps the worker it waits for off the CPU. */
enum { SPIN_ITERS = 1 << 14, SPIN_ITERS_OVERSUBSCRIBED = 64 };

typedef struct { _Alignas(64) atomic_uint word; atomic_int sleepers; int spin; } wait_word;

struct fe_pool {
    int n;
    pthread_t *threads;
    int n_started;
    wait_word go;      /* bumped once per dispatch */
    wait_word barrier; /* bumped once per completed barrier */
    _Alignas(64) atomic_int arrived;
    const fe_step *steps;
    int n_steps;
    uint64_t *step_ns; /* worker 0 adds each step's time here when not NULL */
    atomic_int stop;
    /* Pinning: worker i runs on cpus[i], the i-th CPU the creating thread was allowed (mod
     * their count). Worker 0 is whichever thread dispatches: it is pinned at its first
     * dispatch, and its own mask comes back at destroy, so threads it starts later (an HTTP
     * server's, a child process) are not left on one CPU. */
    bool pin;
    int *cpus;
    bool runner_pinned;
    pthread_t runner;
    cpu_set_t runner_mask;
};

typedef struct { fe_pool *pool; int ith; } worker_arg;

static void futex_wait(atomic_uint *w, unsigned v) {
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *w) {
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Waits until w->word differs from `seen`; returns the new value. */
static unsigned wait_change(wait_word *w, unsigned seen) {
    unsigned v;
    for (int i = 0; i < w->spin; i++) {
        v = atomic_load_explicit(&w->word, memory_order_acquire);
        if (v != seen) return v;
        _mm_pause();
    }
    for (;;) {
        atomic_fetch_add(&w->sleepers, 1);
        if (atomic_load(&w->word) == seen) futex_wait(&w->word, seen);
        atomic_fetch_sub(&w->sleepers, 1);
        v = atomic_load(&w->word);
        if (v != seen) return v;
    }
}

static void bump(wait_word *w) {
    atomic_fetch_add(&w->word, 1);
    if (atomic_load(&w->sleepers) > 0) futex_wake_all(&w->word);
}

static void barrier(fe_pool *p) {
    unsigned gen = atomic_load_explicit(&p->barrier.word, memory_order_acquire);
    if (atomic_fetch_add(&p->arrived, 1) == p->n - 1) {
        atomic_store(&p->arrived, 0);
        bump(&p->barrier);
    } else {
        wait_change(&p->barrier, gen);
    }
}

static void run_steps(fe_pool *p, int ith) {
    /* locals: after the last barrier the dispatcher may already publish the next list */
    const fe_step *steps = p->steps;
    int n_steps = p->n_steps;
    uint64_t *clock = ith == 0 ? p->step_ns : NULL;
    uint64_t t = clock ? fe_time_ns() : 0;
    for (int s = 0; s < n_steps; s++) {
        const fe_step *st = &steps[s];
        int width = st->width < 1 ? 1 : st->width > p->n ? p->n : st->width;
        if (ith < width) st->fn(st->ctx, ith, width);
        if (p->n > 1) barrier(p);
        if (clock) { /* from the last barrier to this one: the step's slowest worker */
            uint64_t now = fe_time_ns();
            clock[s] += now - t;
            t = now;
        }
    }
}

static void pin_to(pthread_t thread, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(thread, sizeof set, &set); /* best effort */
}

/* cpus[i] = the (i mod allowed)-th CPU in the calling thread's affinity mask; false when the
 * mask cannot be read (the pool then runs unpinned). */
static bool choose_cpus(int *cpus, int n) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    int list[CPU_SETSIZE], count = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed)) list[count++] = c;
    if (count == 0) return false;
    for (int i = 0; i < n; i++) cpus[i] = list[i % count];
    return true;
}

/* Pins the dispatching thread to cpus[0] the first time it dispatches, keeping its own mask
 * for destroy. A new dispatching thread is pinned in turn; the earlier one keeps its pin. */
static void pin_runner(fe_pool *p) {
    pthread_t self = pthread_self();
    if (p->runner_pinned && pthread_equal(self, p->runner)) return;
    if (pthread_getaffinity_np(self, sizeof p->runner_mask, &p->runner_mask) != 0) return;
    p->runner = self;
    p->runner_pinned = true;
    pin_to(self, p->cpus[0]);
}

static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    fe_free(arg);
    fe_pool *p = wa.pool;
    if (p->pin) pin_to(pthread_self(), p->cpus[wa.ith]);
    unsigned seen = 0;
    for (;;) {
        seen = wait_change(&p->go, seen);
        if (atomic_load(&p->stop)) break;
        run_steps(p, wa.ith);
    }
    return NULL;
}

fe_pool *fe_pool_create(int n_workers, bool pin, fe_error *err) {
    fe_pool *p = fe_aligned_alloc(64, sizeof *p);
    if (!p) {
        fe_error_set(err, FE_E_NOMEM, "device: out of memory creating the worker pool");
        return NULL;
    }
    *p = (fe_pool){.n = n_workers < 1 ? 1 : n_workers};
    atomic_init(&p->go.word, 0);
    atomic_init(&p->go.sleepers, 0);
    atomic_init(&p->barrier.word, 0);
    atomic_init(&p->barrier.sleepers, 0);
    atomic_init(&p->arrived, 0);
    atomic_init(&p->stop, 0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    p->go.spin = p->barrier.spin = p->n > ncpu ? SPIN_ITERS_OVERSUBSCRIBED : SPIN_ITERS;
    if (p->n > 1) {
        p->threads = fe_calloc((size_t)p->n, sizeof *p->threads);
        if (!p->threads) {
            fe_error_set(err, FE_E_NOMEM, "device: out of memory creating the worker pool");
            fe_pool_destroy(p);
            return NULL;
        }
    }
    if (pin && p->n > 1) {
        /* worker 0 is pinned too: left free, the OS may put it beside worker 1 and halve the
         * bandwidth of a dispatch (seen in bench/bench_memory) */
        p->cpus = fe_calloc((size_t)p->n, sizeof *p->cpus);
        if (!p->cpus) {
            fe_error_set(err, FE_E_NOMEM, "device: out of memory creating the worker pool");
            fe_pool_destroy(p);
            return NULL;
        }
        p->pin = choose_cpus(p->cpus, p->n);
    }
    for (int i = 1; i < p->n; i++) {
        worker_arg *wa = fe_malloc(sizeof *wa);
        if (!wa) {
            fe_error_set(err, FE_E_NOMEM, "device: out of memory starting worker %d", i);
            fe_pool_destroy(p);
            return NULL;
        }
        *wa = (worker_arg){.pool = p, .ith = i};
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            fe_free(wa);
            fe_error_set(err, FE_E_NOMEM,
                         "device: cannot start worker thread %d of %d; ask for fewer workers",
                         i, p->n);
            fe_pool_destroy(p);
            return NULL;
        }
        p->n_started = i;
    }
    return p;
}

void fe_pool_destroy(fe_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    bump(&p->go);
    for (int i = 1; i <= p->n_started; i++) pthread_join(p->threads[i], NULL);
    if (p->runner_pinned && pthread_equal(pthread_self(), p->runner))
        pthread_setaffinity_np(p->runner, sizeof p->runner_mask, &p->runner_mask);
    fe_free(p->cpus);
    fe_free(p->threads);
    fe_free(p);
}

void fe_pool_run(fe_pool *p, const fe_step *steps, int n_steps, uint64_t *step_ns) {
    p->steps = steps;
    p->n_steps = n_steps;
    p->step_ns = step_ns;
    if (p->pin) pin_runner(p);
    if (p->n > 1) bump(&p->go); /* release: workers see steps after they see the new word */
    run_steps(p, 0);            /* the last barrier means every worker has finished */
}

int fe_pool_size(const fe_pool *p) { return p->n; }
