/* device/cpu/step_barrier.h: a barrier inside one step, for a kernel whose workers finish one
 * phase before any starts the next (MHA's key segments, then their combination). The pool
 * puts a barrier between steps; this one lies between a step's phases, on memory the kernel
 * owns (ops/kernel.c gives each kernel one, zeroed, in fe_args.barrier), so it needs no reset:
 * the last of the nth workers to arrive clears the count and opens the next generation.
 * Every worker of the step must call it the same number of times (ith < nth, all of them,
 * work or not). Waiting spins, then yields the CPU (a pool with more workers than CPUs, as
 * tests make, would otherwise crawl). */
#ifndef FE_DEVICE_CPU_STEP_BARRIER_H
#define FE_DEVICE_CPU_STEP_BARRIER_H

#include <sched.h>
#include <stdatomic.h>

typedef struct fe_step_barrier {
    _Alignas(64) atomic_uint arrived;
    atomic_uint generation;
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

#endif
