/* device/cpu/pool.h: the persistent pool of pinned workers with a spin-then-sleep barrier.
 *
 * Worker 0 is the dispatching thread; workers 1..n-1 are threads created once and parked
 * on a futex between dispatches. Between steps every worker meets at the barrier, so a step
 * sees all writes of the steps before it. */
#ifndef FE_DEVICE_CPU_POOL_H
#define FE_DEVICE_CPU_POOL_H

#include "ferrum/device.h"

typedef struct fe_pool fe_pool;

/* NULL when threads or memory cannot be had. `pin` pins worker i to the i-th CPU (mod their
 * count) the creating thread may run on; worker 0, the dispatching thread, is pinned at its
 * first dispatch and gets its own CPU mask back at destroy (when it is the one destroying). */
fe_pool *fe_pool_create(int n_workers, bool pin, fe_error *err);
void fe_pool_destroy(fe_pool *p);
/* step_ns, when not NULL, gets each step's wall time added (ns, by worker 0: from the barrier
 * before the step to the one after it, so the slowest worker's time plus the barrier). */
void fe_pool_run(fe_pool *p, const fe_step *steps, int n_steps, uint64_t *step_ns);
int fe_pool_size(const fe_pool *p);

#endif
