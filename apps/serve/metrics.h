/* apps/serve/metrics.h: the server's counters and their Prometheus text (GET /metrics):
 * requests by route and status, prompt and completion tokens, the queue's depth and the busy
 * slots, time to first token (a histogram), decode speed, embedding inputs and tokens.
 * Thread-safe: every call takes the metrics' own lock. */
#ifndef FE_SERVE_METRICS_H
#define FE_SERVE_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum { METRICS_MAX_SERIES = 48, METRICS_TTFT_BUCKETS = 10 };

typedef struct serve_metrics {
    pthread_mutex_t mu;
    struct { char route[40]; int status; uint64_t count; } requests[METRICS_MAX_SERIES];
    int n_requests;
    uint64_t prompt_tokens, cached_tokens, completion_tokens, cancelled, timed_out, rejected_busy;
    int64_t queue_depth, slots_busy, slots;
    uint64_t ttft_bucket[METRICS_TTFT_BUCKETS]; /* counts <= each bound; the last is +Inf */
    double ttft_sum;
    uint64_t ttft_count;
    double decode_seconds;      /* summed over requests: first token to last */
    uint64_t decode_tokens;     /* tokens after the first */
    double last_decode_tok_s;   /* the last request's */
    uint64_t embedding_inputs, embedding_tokens;
} serve_metrics;

void metrics_init(serve_metrics *m, int slots);
void metrics_deinit(serve_metrics *m);
void metrics_request(serve_metrics *m, const char *route, int status);
/* A finished generation: its tokens, its time to first token and its decode time. */
void metrics_generation(serve_metrics *m, int64_t prompt, int64_t cached, int64_t completion,
                        double ttft_s, double decode_s);
/* An embeddings request answered: its inputs and the tokens they ran as. */
void metrics_embeddings(serve_metrics *m, int64_t inputs, int64_t tokens);
void metrics_gauges(serve_metrics *m, int64_t queue_depth, int64_t slots_busy);
void metrics_count_cancelled(serve_metrics *m);
void metrics_count_timed_out(serve_metrics *m);
void metrics_count_rejected_busy(serve_metrics *m);
/* The Prometheus text exposition (version 0.0.4); a new string (free()), NULL when out of
 * memory. */
char *metrics_render(serve_metrics *m);

#endif
