/* device/cpu/step_barrier.h: a kernel's own synchronisation inside one step: a barrier, for a
 * kernel whose workers finish one phase before any starts the next (MHA's key segments, then
 * their combination), and a counter of work units claimed (fe_step_claim, below: GEMV's
 * rows). The pool puts a barrier between steps; this one lies between a step's phases, on
 * memory the kernel owns (ops/kernel.c gives each kernel one, zeroed, in fe_args.barrier),
 * so it needs no reset:
 * the last of the nth workers to arrive clears the count and opens the next generation.
 * Every worker of the step must call it the same number of times (ith < nth, all of them,
 * work or not). Waiting spins, then yields the CPU (a pool with more workers than CPUs, as
 * tests make, would otherwise crawl). */
#ifndef FE_DEVICE_CPU_STEP_BARRIER_H
#define FE_DEVICE_CPU_STEP_BARRIER_H

#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#include "device/split.h"

typedef struct fe_step_barrier {
    _Alignas(64) atomic_uint arrived;
    atomic_uint generation;
    /* fe_step_claim's: the next unit of the run, and the workers that found none left */
    _Alignas(64) atomic_llong next;
    atomic_int finished;
} fe_step_barrier;

enum { FE_STEP_BARRIER_SPINS = 1 << 12 };

static inline void fe_step_barrier_wait(fe_step_barrier *b, int nth) {
    if (nth <= 1) return;
    const unsigned gen = atomic_load(&b->generation); /* before arriving: none opens it yet */
    if (atomic_fetch_add(&b->arrived, 1) == (unsigned)nth - 1) {
        atomic_store(&b->arrived, 0);
        atomic_fetch_add(&b->generation, 1);
        return;
    }
    for (int i = 0; atomic_load(&b->generation) == gen; i++) {
        if (i < FE_STEP_BARRIER_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
}

/* Work units claimed as the workers come for them, in place of a fixed share each: a worker
 * the host slows (another process on its CPU, a late wake-up) then takes fewer units, and
 * none waits at the step's end for it. Returns the next of the run's n units, or -1 when none
 * is left. Every worker of the step (ith < nth, all of them) calls it until it returns -1,
 * each exactly once past the end: the last of the nth to find none resets the count for the
 * step's next run (which the pool starts only after every worker has left this one), so it
 * needs no reset either. Which worker computes a unit never changes its bytes where the
 * units are independent (a GEMV's rows). */
static inline int64_t fe_step_claim(fe_step_barrier *b, int nth, int64_t n) {
    const int64_t u = atomic_fetch_add(&b->next, 1);
    if (u < n) return u;
    if (atomic_fetch_add(&b->finished, 1) == nth - 1) {
        atomic_store(&b->next, 0);
        atomic_store(&b->finished, 0);
    }
    return -1;
}

/* fe_step_claim over n items cut into `units` ranges as fe_split cuts them (multiples of
 * align): true with the next claimed unit's range in [*lo, *hi) (empty where units outnumber
 * the aligned items), false when none is left (the same calling rule as fe_step_claim). */
static inline bool fe_step_claim_range(fe_step_barrier *b, int nth, int64_t units, int64_t n,
                                       int64_t align, int64_t *lo, int64_t *hi) {
    const int64_t u = fe_step_claim(b, nth, units);
    if (u < 0) return false;
    fe_split(n, (int)u, (int)units, align, lo, hi);
    return true;
}

#endif
