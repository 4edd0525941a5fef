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
};

typedef struct { fe_pool *pool; int ith; bool pin; } worker_arg;

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

static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    fe_free(arg);
    fe_pool *p = wa.pool;
    if (wa.pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)(wa.ith % (ncpu > 0 ? ncpu : 1)), &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
    }
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
        /* the creating thread is worker 0: left free, the OS may put it beside worker 1 and
         * halve the bandwidth of a dispatch (seen in bench/bench_memory) */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
    }
    for (int i = 1; i < p->n; i++) {
        worker_arg *wa = fe_malloc(sizeof *wa);
        if (!wa) {
            fe_error_set(err, FE_E_NOMEM, "device: out of memory starting worker %d", i);
            fe_pool_destroy(p);
            return NULL;
        }
        *wa = (worker_arg){.pool = p, .ith = i, .pin = pin};
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
    fe_free(p->threads);
    fe_free(p);
}

void fe_pool_run(fe_pool *p, const fe_step *steps, int n_steps, uint64_t *step_ns) {
    p->steps = steps;
    p->n_steps = n_steps;
    p->step_ns = step_ns;
    if (p->n > 1) bump(&p->go); /* release: workers see steps after they see the new word */
    run_steps(p, 0);            /* the last barrier means every worker has finished */
}

int fe_pool_size(const fe_pool *p) { return p->n; }
