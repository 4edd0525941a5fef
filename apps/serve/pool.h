/* apps/serve/pool.h: the slot pool behind the server. Each slot is a session (its own KV
 * cache rows) with a worker thread; a job (one request's generation) waits in a bounded queue
 * until a slot is free, and goes to the free slot whose cache shares the longest prefix with
 * its prompt (a shared system prompt is reused, not recomputed).
 *
 * The slots of a device group share its model's device, which runs one dispatch at a time,
 * so they take turns (a FIFO ticket): a slot holds the device for one prefill chunk or one
 * decode step, then lets every slot waiting go first. A prompt is prefilled a chunk per turn,
 * so a long prompt never stalls the others' decode by more than a chunk. Groups (the same
 * model opened over devices of their own) run side by side; slot i is in group i mod K.
 *
 * Batch mode: a group's slots are the rows of one fe_lm_batch, stepped by the group's own
 * thread: each step a prefill chunk for every slot in its prompt, then one decode call for
 * every slot generating (the weights read once for all of them).
 *
 * A job streams its output as server-sent events (or keeps its text for a whole answer) into
 * its own buffer, which the HTTP side drains. A job cancelled (its client gone) or past its
 * time limit stops at the next step and frees its slot. */
#ifndef FE_SERVE_POOL_H
#define FE_SERVE_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ferrum/lm.h"
#include "metrics.h"
#include "reply.h"
#include "request.h"

/* Sets *err (when not NULL) to st and the formatted message; returns st. */
__attribute__((format(printf, 3, 4)))
fe_status serve_fail(fe_error *err, fe_status st, const char *fmt, ...);

typedef struct serve_pool serve_pool;

typedef struct pool_options {
    int slots;           /* sessions, each with its own KV cache */
    int64_t ctx;         /* KV cache rows per slot */
    int64_t chunk;       /* prefill rows per turn */
    int queue;           /* jobs that may wait for a slot; past it, submit refuses */
    bool batch;          /* a group's slots are the rows of one batch (fe_lm_batch): one decode
                          * call a step for all of them, instead of turns between sessions */
    fe_lm_cache_type cache_type; /* the KV caches' keys and values: f32 or f16 */
} pool_options;

typedef struct pool_text {
    char *p;
    size_t len, cap;
} pool_text;

typedef enum job_end {
    JOB_RUNNING = 0,
    JOB_FINISHED, /* every choice ended (stop, length) */
    JOB_CANCELLED,
    JOB_TIMED_OUT,
    JOB_FAILED,   /* err says why */
} job_end;

typedef struct serve_job {
    /* set before submit, read-only after */
    serve_request req;
    int32_t *ids;        /* the prompt's tokens (free()) */
    int64_t n_ids;
    int64_t max_tokens;  /* resolved: the request's, else the room left, within the limit */
    uint64_t deadline_ns;
    reply_head head;
    char id[48];
    char model[128];
    /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool cancelled;
    job_end end;
    pool_text events;                  /* streaming: SSE bytes not yet sent */
    size_t events_sent;
    pool_text text[SERVE_MAX_N];       /* whole: each choice's text */
    reply_logprobs logprobs[SERVE_MAX_N]; /* whole, when asked: each choice's tokens' */
    reply_logprobs pending;            /* streaming, when asked: tokens not yet in a chunk */
    const char *finish[SERVE_MAX_N];
    reply_usage usage;
    serve_error err;
    uint64_t t_submit;
    double ttft_s, decode_s;
} serve_job;

/* Creates the slots' sessions over models[0..n_models) (one per device group, each on a
 * device of its own; borrowed, they must outlive the pool) and starts their workers. On error
 * *out is NULL and err says why. */
fe_status pool_create(fe_lm_model *const *models, int n_models, const pool_options *o,
                      serve_metrics *metrics, serve_pool **out, fe_error *err);
/* Stops the workers: jobs running are cancelled, jobs queued end cancelled, and submit
 * refuses from then on. Once is enough; NULL allowed. */
void pool_stop(serve_pool *p);
/* Stops the pool, then frees the sessions. NULL allowed. */
void pool_destroy(serve_pool *p);

/* A new job for req (moved into it; req is zeroed), holding one reference for the caller. */
serve_job *job_create(serve_request *req);
/* Drops a reference; the last frees the job. */
void job_release(serve_job *j);
/* Marks the job cancelled: it stops at its next step, or is skipped if still queued. */
void job_cancel(serve_job *j);

/* Appends s[0..n) (and keeps a NUL after it). false when out of memory (t unchanged). */
bool pool_text_append(pool_text *t, const char *s, size_t n);

/* Queues j (the pool takes its own reference). false when the queue is full. */
bool pool_submit(serve_pool *p, serve_job *j);
/* Jobs waiting, slots busy. */
void pool_load(serve_pool *p, int *queued, int *busy);

#endif
