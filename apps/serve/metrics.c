/* apps/serve/metrics.c: the server's counters and their Prometheus text (metrics.h). */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double ttft_bounds[METRICS_TTFT_BUCKETS - 1] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

void metrics_init(serve_metrics *m, int slots) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->slots = slots;
}

void metrics_deinit(serve_metrics *m) { pthread_mutex_destroy(&m->mu); }

void metrics_request(serve_metrics *m, const char *route, int status) {
    pthread_mutex_lock(&m->mu);
    int i = 0;
    while (i < m->n_requests && !(m->requests[i].status == status && strcmp(m->requests[i].route, route) == 0)) i++;
    if (i == m->n_requests && i < METRICS_MAX_SERIES) {
        snprintf(m->requests[i].route, sizeof m->requests[i].route, "%s", route);
        m->requests[i].status = status;
        m->n_requests++;
    }
    if (i < m->n_requests) m->requests[i].count++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_generation(serve_metrics *m, int64_t prompt, int64_t cached, int64_t completion,
                        double ttft_s, double decode_s) {
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)prompt;
    m->cached_tokens += (uint64_t)cached;
    m->completion_tokens += (uint64_t)completion;
    if (completion > 0) {
        int b = 0;
        while (b < METRICS_TTFT_BUCKETS - 1 && ttft_s > ttft_bounds[b]) b++;
        m->ttft_bucket[b]++;
        m->ttft_sum += ttft_s;
        m->ttft_count++;
    }
    if (completion > 1 && decode_s > 0) {
        m->decode_seconds += decode_s;
        m->decode_tokens += (uint64_t)(completion - 1);
        m->last_decode_tok_s = (double)(completion - 1) / decode_s;
    }
    pthread_mutex_unlock(&m->mu);
}

void metrics_embeddings(serve_metrics *m, int64_t inputs, int64_t tokens) {
    pthread_mutex_lock(&m->mu);
    m->embedding_inputs += (uint64_t)inputs;
    m->embedding_tokens += (uint64_t)tokens;
    pthread_mutex_unlock(&m->mu);
}

void metrics_gauges(serve_metrics *m, int64_t queue_depth, int64_t slots_busy) {
    pthread_mutex_lock(&m->mu);
    m->queue_depth = queue_depth;
    m->slots_busy = slots_busy;
    pthread_mutex_unlock(&m->mu);
}

#define COUNT(field)                         \
    void metrics_count_##field(serve_metrics *m) { \
        pthread_mutex_lock(&m->mu);          \
        m->field++;                          \
        pthread_mutex_unlock(&m->mu);        \
    }
COUNT(cancelled)
COUNT(timed_out)
COUNT(rejected_busy)

static void counter(FILE *f, const char *name, const char *help, double v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %.17g\n", name, help, name, name, v);
}

static void gauge(FILE *f, const char *name, const char *help, double v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

char *metrics_render(serve_metrics *m) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    pthread_mutex_lock(&m->mu);
    fprintf(f, "# HELP ferrum_requests_total HTTP requests answered, by route and status.\n"
               "# TYPE ferrum_requests_total counter\n");
    for (int i = 0; i < m->n_requests; i++)
        fprintf(f, "ferrum_requests_total{route=\"%s\",status=\"%d\"} %llu\n", m->requests[i].route,
                m->requests[i].status, (unsigned long long)m->requests[i].count);
    counter(f, "ferrum_prompt_tokens_total", "Prompt tokens of finished generations.", (double)m->prompt_tokens);
    counter(f, "ferrum_prompt_tokens_cached_total", "Prompt tokens reused from a slot's KV cache.",
            (double)m->cached_tokens);
    counter(f, "ferrum_completion_tokens_total", "Tokens generated.", (double)m->completion_tokens);
    counter(f, "ferrum_requests_cancelled_total", "Generations stopped because the client went away.",
            (double)m->cancelled);
    counter(f, "ferrum_requests_timed_out_total", "Generations stopped by the time limit per request.",
            (double)m->timed_out);
    counter(f, "ferrum_requests_rejected_busy_total", "Requests refused with 503: the queue was full.",
            (double)m->rejected_busy);
    gauge(f, "ferrum_queue_depth", "Requests waiting for a slot.", (double)m->queue_depth);
    gauge(f, "ferrum_slots_busy", "Slots generating.", (double)m->slots_busy);
    gauge(f, "ferrum_slots", "Slots (--parallel).", (double)m->slots);
    fprintf(f, "# HELP ferrum_time_to_first_token_seconds From admission to the first token.\n"
               "# TYPE ferrum_time_to_first_token_seconds histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < METRICS_TTFT_BUCKETS; b++) {
        cum += m->ttft_bucket[b];
        if (b < METRICS_TTFT_BUCKETS - 1)
            fprintf(f, "ferrum_time_to_first_token_seconds_bucket{le=\"%g\"} %llu\n", ttft_bounds[b],
                    (unsigned long long)cum);
        else
            fprintf(f, "ferrum_time_to_first_token_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    fprintf(f, "ferrum_time_to_first_token_seconds_sum %.9g\nferrum_time_to_first_token_seconds_count %llu\n",
            m->ttft_sum, (unsigned long long)m->ttft_count);
    counter(f, "ferrum_decode_seconds_total", "Time from first to last token, summed over requests.",
            m->decode_seconds);
    counter(f, "ferrum_decode_tokens_total", "Tokens after the first, summed over requests.",
            (double)m->decode_tokens);
    gauge(f, "ferrum_decode_tokens_per_second", "The last finished request's decode speed.",
          m->last_decode_tok_s);
    counter(f, "ferrum_embedding_inputs_total", "Inputs embedded (POST /v1/embeddings).",
            (double)m->embedding_inputs);
    counter(f, "ferrum_embedding_tokens_total", "Tokens the embedded inputs ran as.",
            (double)m->embedding_tokens);
    pthread_mutex_unlock(&m->mu);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
