/* apps/serve/pool.c: the slot pool (pool.h): sessions with worker threads, the bounded queue,
 * prefix-affine assignment, turns on the shared device, and a job's output as it is made. */
#include "pool.h"

#include "logprobs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fe_status serve_fail(fe_error *err, fe_status st, const char *fmt, ...) {
    if (err) {
        err->status = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Turns on the device: FIFO tickets, so a slot that yields goes behind every slot waiting. */
typedef struct turns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t next, serving;
} turns;

static void turn_take(turns *t) {
    pthread_mutex_lock(&t->mu);
    uint64_t mine = t->next++;
    while (t->serving != mine) pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

static void turn_give(turns *t) {
    pthread_mutex_lock(&t->mu);
    t->serving++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* A device group: one model on its own device; its slots take turns on it (sessions), or
 * are the rows of its one batch, stepped by its own thread. */
typedef struct group {
    serve_pool *pool;
    int index;
    fe_lm_model *m;      /* its model (borrowed) */
    turns turns;
    fe_lm_batch *batch;  /* batch mode */
    pthread_t thread;    /* batch mode: steps the batch */
    bool started;
    pthread_cond_t cv;   /* batch mode, under pool->mu: a job was given, or the pool stops */
} group;

typedef struct slot {
    serve_pool *pool;
    int index;
    group *g;            /* its device group */
    fe_lm_session *s;    /* session mode */
    int row;             /* batch mode: its row of g->batch */
    bool running;        /* batch mode (group thread only): its job is started */
    pthread_t thread;    /* session mode */
    bool started;
    pthread_cond_t cv;   /* under pool->mu: a job was given, or the pool stops */
    pthread_cond_t *wake;/* what to signal when a job is given: cv, or the group's */
    serve_job *job;      /* under pool->mu */
    int32_t *cached;     /* the ids the cache holds (a copy, for choosing slots) */
    int64_t n_cached;
    /* the choice being generated (worker only) */
    int choice;
    bool first_chunk;
    int64_t generated;
    size_t token_bytes;  /* the choice's tokens' pieces so far (logprobs' text_offset) */
} slot;

struct serve_pool {
    pool_options o;
    serve_metrics *metrics;
    group *groups;
    int n_groups;
    pthread_mutex_t mu;
    serve_job **queue; /* FIFO ring of q_cap = max(o.queue, 1) */
    int q_head, q_len, q_cap;
    int busy;
    bool stopping;
    slot *slots;
    int n_slots;
};

/* ---- jobs ---- */

serve_job *job_create(serve_request *req) {
    serve_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->req = *req;
    memset(req, 0, sizeof *req);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    return j;
}

void job_release(serve_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    serve_request_free(&j->req);
    free(j->ids);
    free(j->events.p);
    for (int i = 0; i < SERVE_MAX_N; i++) free(j->text[i].p), free(j->logprobs[i].p);
    free(j->pending.p);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void job_cancel(serve_job *j) {
    pthread_mutex_lock(&j->mu);
    j->cancelled = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

bool pool_text_append(pool_text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) return false;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
    return true;
}

/* One server-sent event "data: JSON\n\n" (json freed); under j->mu. */
static void event_locked(serve_job *j, char *json) {
    if (!json || !pool_text_append(&j->events, "data: ", 6) || !pool_text_append(&j->events, json, strlen(json)) ||
        !pool_text_append(&j->events, "\n\n", 2))
        j->end = JOB_FAILED;
    free(json);
    pthread_cond_broadcast(&j->cv);
}

/* ---- the queue (under pool->mu) ---- */

static int64_t common_prefix(const int32_t *a, int64_t na, const int32_t *b, int64_t nb) {
    int64_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

static void publish_load_locked(serve_pool *p) { metrics_gauges(p->metrics, p->q_len, p->busy); }

/* Gives queued jobs to free slots: the head job to the free slot whose cache shares the
 * longest prefix with its prompt. */
static void assign_locked(serve_pool *p) {
    while (p->q_len > 0) {
        serve_job *j = p->queue[p->q_head];
        slot *best = NULL;
        int64_t best_len = -1;
        for (int i = 0; i < p->n_slots; i++) {
            slot *s = &p->slots[i];
            if (s->job) continue;
            int64_t len = common_prefix(s->cached, s->n_cached, j->ids, j->n_ids);
            if (len > best_len) best = s, best_len = len;
        }
        if (!best) break;
        p->q_head = (p->q_head + 1) % p->q_cap;
        p->q_len--;
        best->job = j;
        p->busy++;
        pthread_cond_broadcast(best->wake);
    }
    publish_load_locked(p);
}

bool pool_submit(serve_pool *p, serve_job *j) {
    pthread_mutex_lock(&p->mu);
    /* a free slot takes it at once, whatever the queue's bound */
    bool ok = !p->stopping && (p->q_len < p->o.queue || (p->q_len == 0 && p->busy < p->n_slots));
    if (ok) {
        pthread_mutex_lock(&j->mu);
        j->refs++;
        j->t_submit = fe_time_ns();
        pthread_mutex_unlock(&j->mu);
        p->queue[(p->q_head + p->q_len) % p->q_cap] = j;
        p->q_len++;
        assign_locked(p);
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

void pool_load(serve_pool *p, int *queued, int *busy) {
    pthread_mutex_lock(&p->mu);
    *queued = p->q_len;
    *busy = p->busy;
    pthread_mutex_unlock(&p->mu);
}

/* ---- generating ---- */

/* Whether the job must stop now (under j->mu): its client is gone, or its time is up. */
static bool must_stop_locked(serve_job *j) {
    if (j->cancelled) {
        if (j->end == JOB_RUNNING) j->end = JOB_CANCELLED;
        return true;
    }
    if (fe_time_ns() > j->deadline_ns) {
        if (j->end == JOB_RUNNING) j->end = JOB_TIMED_OUT;
        return true;
    }
    return j->end != JOB_RUNNING;
}

/* When asked, the token's log-probabilities (under j->mu): into the choice's list, or the
 * stream's pending one (the next chunk carries them). */
static void record_logprobs_locked(slot *s, serve_job *j, int32_t tok) {
    const float *logits = s->g->batch ? fe_lm_batch_token_logits(s->g->batch, s->row)
                                      : fe_lm_session_token_logits(s->s);
    reply_logprobs *l = j->req.stream ? &j->pending : &j->logprobs[s->choice];
    if (!l->n) l->text_offset = s->token_bytes;
    size_t before = l->n;
    if (!logprobs_record(s->g->m, logits, tok, j->req.top_logprobs, l)) {
        serve_error_set(&j->err, 500, "server_error", NULL, NULL, "logprobs: no logits for token %d, "
                        "or out of memory", tok);
        j->end = JOB_FAILED;
        return;
    }
    if (l->n > before) s->token_bytes += l->p[before].chosen.len;
}

/* Each token's text: into the stream, or the choice's text; then the turn passes on. */
static int on_token(void *user, int32_t tok, const char *text, size_t len) {
    slot *s = user;
    serve_job *j = s->job;
    pthread_mutex_lock(&j->mu);
    if (tok >= 0) {
        s->generated++;
        if (s->generated == 1 && s->choice == 0) j->ttft_s = (double)(fe_time_ns() - j->t_submit) / 1e9;
        if (j->req.logprobs) record_logprobs_locked(s, j, tok);
    }
    if (j->req.stream) {
        if (len || s->first_chunk) {
            bool chat_role = s->first_chunk && j->head.kind == SERVE_CHAT;
            event_locked(j, reply_chunk(&j->head, s->choice, text, len, chat_role, NULL,
                                        j->pending.n ? &j->pending : NULL));
            j->pending.n = 0;
            s->first_chunk = false;
        }
    } else if (len && !pool_text_append(&j->text[s->choice], text, len)) {
        j->end = JOB_FAILED;
    }
    bool stop = must_stop_locked(j);
    pthread_mutex_unlock(&j->mu);
    if (stop || tok < 0) return 1;
    if (!s->g->batch) { /* a batch steps every slot at once: no turns */
        turn_give(&s->g->turns);
        turn_take(&s->g->turns);
    }
    return 0;
}

/* The prompt's chunks before its last, one per turn, from the first chunk the slot's cache does
 * not hold (reused: the rows it does, whole chunks); generate then runs the last chunk and
 * reuses the rest. false when the job must stop. */
static bool prefill_in_turns(slot *s, serve_job *j, int64_t reused) {
    int64_t chunk = s->pool->o.chunk;
    for (int64_t n = (reused / chunk + 1) * chunk; n < j->n_ids; n += chunk) {
        pthread_mutex_lock(&j->mu);
        bool stop = must_stop_locked(j);
        pthread_mutex_unlock(&j->mu);
        if (stop) return false;
        turn_take(&s->g->turns);
        fe_status st = fe_lm_session_prefill(s->s, j->ids, n, NULL);
        turn_give(&s->g->turns);
        if (st != FE_OK) {
            pthread_mutex_lock(&j->mu);
            serve_error_set(&j->err, 500, "server_error", NULL, NULL, "prefill: %s",
                            fe_lm_session_message(s->s));
            j->end = JOB_FAILED;
            pthread_mutex_unlock(&j->mu);
            return false;
        }
    }
    return true;
}

static const char *finish_reason(fe_lm_stop_reason r) {
    return r == FE_LM_STOP_EOS || r == FE_LM_STOP_STRING ? "stop" : "length";
}

/* Keeps a copy of the prompt the slot's cache now starts with (for choosing slots; the
 * generated tokens after it are in the cache too, but not needed for that). */
static void remember_cache(slot *s, serve_job *j) {
    int64_t n = j->n_ids;
    int32_t *c = realloc(s->cached, (size_t)(n ? n : 1) * sizeof *c);
    if (!c) {
        free(s->cached);
        s->cached = NULL;
        s->n_cached = 0;
        return;
    }
    memcpy(c, j->ids, (size_t)n * sizeof *c);
    s->cached = c;
    s->n_cached = n;
}

static fe_lm_stop job_stop(const serve_job *j) {
    fe_lm_stop stop = fe_lm_stop_default();
    stop.max_tokens = j->max_tokens;
    for (int i = 0; i < j->req.n_stop; i++) stop.strings[stop.n_strings++] = j->req.stop[i];
    return stop;
}

/* Choice c's sampling (seed + c: n choices draw apart), its stream state reset. */
static fe_lm_sampling choice_begin(slot *s, serve_job *j, int c) {
    fe_lm_sampling sp = j->req.sampling;
    sp.seed += (uint64_t)c;
    s->choice = c;
    s->first_chunk = true;
    s->generated = 0;
    s->token_bytes = 0;
    return sp;
}

/* Choice c ended (how: res; failed: the library's message); true when the job goes on. */
static bool choice_end(serve_job *j, int c, const char *failed, const fe_lm_generate_result *res) {
    pthread_mutex_lock(&j->mu);
    if (failed && j->end == JOB_RUNNING) {
        serve_error_set(&j->err, 500, "server_error", NULL, NULL, "generate: %s", failed);
        j->end = JOB_FAILED;
    }
    if (c == 0) {
        j->usage.prompt_tokens = res->prompt_tokens;
        j->usage.cached_tokens = res->prompt_reused;
        j->decode_s = res->decode_seconds;
    }
    j->usage.completion_tokens += res->generated_tokens;
    j->finish[c] = finish_reason(res->stop_reason);
    if (j->end == JOB_RUNNING && j->req.stream) /* with the tokens whose text was held back */
        event_locked(j, reply_chunk(&j->head, c, NULL, 0, 0, j->finish[c], j->pending.n ? &j->pending : NULL));
    j->pending.n = 0;
    bool go_on = j->end == JOB_RUNNING && c + 1 < j->req.n;
    pthread_mutex_unlock(&j->mu);
    return go_on;
}

/* The slot free again (if it still holds j): the next job queued may take it. */
static void free_slot(slot *s, serve_job *j) {
    serve_pool *p = s->pool;
    pthread_mutex_lock(&p->mu);
    if (s->job == j) {
        s->job = NULL;
        p->busy--;
        assign_locked(p);
    }
    pthread_mutex_unlock(&p->mu);
}

/* The job's end: its rows remembered and its slot freed, the metrics, then its last event
 * and its waiters woken (so a client that has its answer finds it counted, and finds the
 * slot that holds its prompt's rows free for its next request: freed after the answer, a
 * quick follow-up could go to another slot and reuse nothing). */
static void job_done(slot *s, serve_job *j) {
    remember_cache(s, j);
    free_slot(s, j);
    pthread_mutex_lock(&j->mu);
    job_end end = j->end == JOB_RUNNING ? JOB_FINISHED : j->end;
    reply_usage usage = j->usage;
    pthread_mutex_unlock(&j->mu);
    serve_metrics *m = s->pool->metrics;
    metrics_generation(m, usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens,
                       j->ttft_s, j->decode_s);
    if (end == JOB_CANCELLED) metrics_count_cancelled(m);
    if (end == JOB_TIMED_OUT) metrics_count_timed_out(m);
    pthread_mutex_lock(&j->mu);
    if (j->end == JOB_RUNNING) {
        j->end = JOB_FINISHED;
        if (j->req.stream && j->req.include_usage) event_locked(j, reply_usage_chunk(&j->head, &j->usage));
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Whether a job just given to a slot is already over (client gone, time up): then it ends
 * without running. */
static bool over_before_start(slot *s, serve_job *j) {
    pthread_mutex_lock(&j->mu);
    bool over = must_stop_locked(j);
    if (over) pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (over && j->end == JOB_CANCELLED) metrics_count_cancelled(s->pool->metrics);
    else if (over && j->end == JOB_TIMED_OUT) metrics_count_timed_out(s->pool->metrics);
    return over;
}

/* The slot's hold on j ends: the slot freed (unless job_done did, and another job may
 * already hold it), j's reference dropped. */
static void release_slot(slot *s, serve_job *j) {
    free_slot(s, j);
    job_release(j);
}

/* ---- session mode: a thread per slot, turns on the group's device ---- */

static void run_job(slot *s, serve_job *j) {
    fe_lm_stop stop = job_stop(j);
    /* the rows cached before this job (generate's own count would hold the turns' chunks) */
    const int64_t reused = fe_lm_session_reusable(s->s, j->ids, j->n_ids);
    bool go_on = prefill_in_turns(s, j, reused);
    for (int c = 0; go_on; c++) {
        fe_lm_sampling sp = choice_begin(s, j, c);
        fe_lm_generate_result res;
        turn_take(&s->g->turns);
        fe_status st = fe_lm_session_generate(s->s, j->ids, j->n_ids, &sp, &stop, on_token, s, &res);
        turn_give(&s->g->turns);
        if (c == 0) res.prompt_reused = reused;
        go_on = choice_end(j, c, st == FE_OK ? NULL : fe_lm_session_message(s->s), &res);
    }
    job_done(s, j);
}

static void *worker(void *arg) {
    slot *s = arg;
    serve_pool *p = s->pool;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!s->job && !p->stopping) pthread_cond_wait(&s->cv, &p->mu);
        serve_job *j = s->job;
        pthread_mutex_unlock(&p->mu);
        if (!j) return NULL;
        if (!over_before_start(s, j)) run_job(s, j);
        release_slot(s, j);
    }
}

/* ---- batch mode: one thread per group steps its batch; every slot is a row ---- */

/* Starts choice c of s's job in its row; false (the job failed) when the batch refuses. */
static bool batch_start(slot *s, serve_job *j, int c) {
    fe_lm_sampling sp = choice_begin(s, j, c);
    fe_lm_stop stop = job_stop(j);
    if (fe_lm_batch_start(s->g->batch, s->row, j->ids, j->n_ids, &sp, &stop, on_token, s) == FE_OK)
        return s->running = true;
    fe_lm_generate_result none = {0};
    choice_end(j, c, fe_lm_batch_message(s->g->batch), &none);
    return false;
}

static void *group_worker(void *arg) {
    group *g = arg;
    serve_pool *p = g->pool;
    for (;;) {
        slot *mine[FE_LM_BATCH_MAX_SLOTS];
        serve_job *jobs[FE_LM_BATCH_MAX_SLOTS];
        int n = 0, busy = 0;
        pthread_mutex_lock(&p->mu);
        for (;;) {
            busy = 0;
            for (int i = g->index; i < p->n_slots; i += p->n_groups) busy += p->slots[i].job != NULL;
            if (busy || p->stopping) break;
            pthread_cond_wait(&g->cv, &p->mu);
        }
        for (int i = g->index; i < p->n_slots; i += p->n_groups) mine[n] = &p->slots[i], jobs[n++] = p->slots[i].job;
        pthread_mutex_unlock(&p->mu);
        if (!busy) return NULL; /* stopping, and nothing runs */
        for (int k = 0; k < n; k++) { /* jobs given since the last step */
            slot *s = mine[k];
            if (!jobs[k] || s->running) continue;
            bool over = over_before_start(s, jobs[k]);
            if (!over && batch_start(s, jobs[k], 0)) continue;
            if (!over) job_done(s, jobs[k]); /* the batch refused it: failed */
            release_slot(s, jobs[k]);
            jobs[k] = NULL;
        }
        fe_status st = fe_lm_batch_step(g->batch, NULL);
        const char *failed = st == FE_OK ? NULL : fe_lm_batch_message(g->batch);
        for (int k = 0; k < n; k++) {
            slot *s = mine[k];
            serve_job *j = jobs[k];
            fe_lm_generate_result res;
            if (!j || !s->running || !fe_lm_batch_finished(g->batch, s->row, &res)) continue;
            s->running = false;
            int c = s->choice;
            if (choice_end(j, c, failed, &res) && batch_start(s, j, c + 1)) continue;
            job_done(s, j);
            release_slot(s, j);
        }
    }
}

/* ---- the pool ---- */

/* Batch mode: each group's batch over its slots, and its thread. */
static fe_status start_batches(serve_pool *p, fe_lm_model *const *models, fe_error *err) {
    for (int gi = 0; gi < p->n_groups; gi++) {
        group *g = &p->groups[gi];
        fe_lm_batch_options bo = fe_lm_batch_options_default();
        bo.slots = (p->n_slots - gi + p->n_groups - 1) / p->n_groups;
        bo.max_seq_len = p->o.ctx;
        bo.chunk = p->o.chunk;
        bo.cache_type = p->o.cache_type;
        fe_error e = {0};
        if (fe_lm_batch_create(models[gi], &bo, &g->batch, &e) != FE_OK)
            return serve_fail(err, e.status ? e.status : FE_E_STATE, "group %d: %s", gi, e.message);
        if (pthread_create(&g->thread, NULL, group_worker, g) != 0)
            return serve_fail(err, FE_E_STATE, "group %d: cannot start its thread", gi);
        g->started = true;
    }
    return FE_OK;
}

/* Session mode: each slot's session, and its thread. */
static fe_status start_sessions(serve_pool *p, fe_lm_model *const *models, fe_error *err) {
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = p->o.ctx;
    so.chunk = p->o.chunk;
    so.cache_type = p->o.cache_type;
    for (int i = 0; i < p->n_slots; i++) {
        slot *s = &p->slots[i];
        fe_error e = {0};
        if (fe_lm_session_create(models[i % p->n_groups], &so, &s->s, &e) != FE_OK)
            return serve_fail(err, e.status ? e.status : FE_E_STATE, "slot %d: %s", i, e.message);
        if (pthread_create(&s->thread, NULL, worker, s) != 0)
            return serve_fail(err, FE_E_STATE, "slot %d: cannot start its thread", i);
        s->started = true;
    }
    return FE_OK;
}

fe_status pool_create(fe_lm_model *const *models, int n_models, const pool_options *o,
                      serve_metrics *metrics, serve_pool **out, fe_error *err) {
    *out = NULL;
    if (o->batch && (o->slots + n_models - 1) / n_models > FE_LM_BATCH_MAX_SLOTS)
        return serve_fail(err, FE_E_INVALID, "%d slots in %d group%s: a batch takes at most %d "
                         "slots; give fewer slots or more groups", o->slots, n_models,
                         n_models == 1 ? "" : "s", FE_LM_BATCH_MAX_SLOTS);
    serve_pool *p = calloc(1, sizeof *p);
    if (!p) return serve_fail(err, FE_E_NOMEM, "out of memory for the slot pool");
    p->o = *o;
    p->metrics = metrics;
    pthread_mutex_init(&p->mu, NULL);
    p->q_cap = o->queue > 0 ? o->queue : 1;
    p->queue = calloc((size_t)p->q_cap, sizeof *p->queue);
    p->slots = calloc((size_t)o->slots, sizeof *p->slots);
    p->groups = calloc((size_t)n_models, sizeof *p->groups);
    if (!p->groups || !p->queue || !p->slots) {
        free(p->groups);
        p->groups = NULL;
        pool_destroy(p);
        return serve_fail(err, FE_E_NOMEM, "out of memory for the slot pool");
    }
    p->n_groups = n_models;
    for (int gi = 0; gi < n_models; gi++) {
        group *g = &p->groups[gi];
        g->pool = p;
        g->index = gi;
        g->m = models[gi];
        pthread_mutex_init(&g->turns.mu, NULL);
        pthread_cond_init(&g->turns.cv, NULL);
        pthread_cond_init(&g->cv, NULL);
    }
    for (int i = 0; i < o->slots; i++) {
        slot *s = &p->slots[i];
        s->pool = p;
        s->index = i;
        s->g = &p->groups[i % n_models];
        s->row = i / n_models;
        pthread_cond_init(&s->cv, NULL);
        s->wake = o->batch ? &s->g->cv : &s->cv;
    }
    p->n_slots = o->slots;
    fe_status st = o->batch ? start_batches(p, models, err) : start_sessions(p, models, err);
    if (st != FE_OK) {
        pool_destroy(p);
        return st;
    }
    *out = p;
    return FE_OK;
}

void pool_stop(serve_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return;
    }
    p->stopping = true;
    for (int i = 0; i < p->n_slots; i++) {
        if (p->slots[i].job) job_cancel(p->slots[i].job);
        pthread_cond_broadcast(p->slots[i].wake);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_slots; i++)
        if (p->slots[i].started) pthread_join(p->slots[i].thread, NULL);
    for (int g = 0; g < p->n_groups; g++)
        if (p->groups[g].started) pthread_join(p->groups[g].thread, NULL);
    while (p->q_len > 0) { /* never given a slot: their waiters see them cancelled */
        serve_job *j = p->queue[p->q_head];
        p->q_head = (p->q_head + 1) % p->q_cap;
        p->q_len--;
        job_cancel(j);
        pthread_mutex_lock(&j->mu);
        j->end = JOB_CANCELLED;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        job_release(j);
    }
}

void pool_destroy(serve_pool *p) {
    if (!p) return;
    pool_stop(p);
    for (int i = 0; i < p->n_slots; i++) {
        fe_lm_session_destroy(p->slots[i].s);
        free(p->slots[i].cached);
        pthread_cond_destroy(&p->slots[i].cv);
    }
    for (int g = 0; p->groups && g < p->n_groups; g++) {
        fe_lm_batch_destroy(p->groups[g].batch);
        pthread_mutex_destroy(&p->groups[g].turns.mu);
        pthread_cond_destroy(&p->groups[g].turns.cv);
        pthread_cond_destroy(&p->groups[g].cv);
    }
    free(p->groups);
    free(p->slots);
    free(p->queue);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
