/* apps/serve/server.c: the HTTP side of `ferrum serve` (server.h): libmicrohttpd's daemon,
 * a request read whole (within its limits), routed, checked and tokenized, then handed to
 * the slot pool as a job whose output is sent whole or streamed as it comes. */
#include "server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "embeddings.h"
#include "metrics.h"
#include "reply.h"

struct serve_server {
    fe_lm_model *m;            /* NULL: no chat model */
    serve_embedder *emb;       /* NULL: no embedding model */
    serve_options o;
    fe_lm_model_info info;
    serve_metrics metrics;
    serve_pool *pool;
    pthread_mutex_t model_mu; /* tokenizing and templating: the model keeps its last message */
    struct MHD_Daemon *d;
    int port;
    int64_t created;
    pthread_mutex_t id_mu;
    uint64_t next_id;
};

/* One request's reading state (MHD's con_cls). */
typedef struct conn {
    serve_server *srv;
    char route[40];
    pool_text body;
    uint64_t t_first;
    bool too_big;  /* the body passed --max-body: the rest is dropped, then 413 */
    bool answered; /* a response is queued (a refusal while the body still came) */
} conn;

/* The connection's socket, to see a client gone while we wait. */
static int conn_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* Whether the client closed its end (EOF or an error on the socket). */
static bool client_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
}

/* ---- answering ---- */

static enum MHD_Result send_body(struct MHD_Connection *c, conn *k, int status, const char *type,
                                 char *body, const char *retry_after) {
    if (!body) {
        static char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        body = strdup(oom);
        status = 500;
        if (!body) return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (retry_after) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry_after);
    if (status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    k->answered = true;
    metrics_request(&k->srv->metrics, k->route, status);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, conn *k, int status, char *json) {
    return send_body(c, k, status, "application/json", json, NULL);
}

static enum MHD_Result send_error(struct MHD_Connection *c, conn *k, const serve_error *e) {
    return send_body(c, k, e->status, "application/json", reply_error(e),
                     e->status == 503 ? "1" : NULL);
}

/* ---- the completion routes ---- */

/* The prompt's tokens: the chat template over the messages, or the text, or the ids. */
static int prompt_ids(serve_server *srv, const serve_request *r, int32_t **ids, int64_t *n,
                      serve_error *e) {
    if (r->prompt_ids) {
        for (size_t i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] >= srv->info.vocab)
                return serve_error_set(e, 400, "invalid_request_error", "prompt", NULL, "prompt[%zu] "
                                       "is token %d, outside the vocabulary of %lld", i,
                                       r->prompt_ids[i], (long long)srv->info.vocab);
        *ids = malloc(r->n_prompt_ids * sizeof **ids);
        if (!*ids) return serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        memcpy(*ids, r->prompt_ids, r->n_prompt_ids * sizeof **ids);
        *n = (int64_t)r->n_prompt_ids;
        return 0;
    }
    pthread_mutex_lock(&srv->model_mu);
    char *chat = NULL;
    fe_status st = FE_OK;
    if (r->kind == SERVE_CHAT) {
        st = fe_lm_chat_apply(srv->m, r->messages, r->n_messages, true, &chat);
        if (st != FE_OK) {
            pthread_mutex_unlock(&srv->model_mu);
            return serve_error_set(e, 400, "invalid_request_error", "messages", NULL, "the chat "
                                   "template: %s; use /v1/completions with the prompt as text",
                                   fe_lm_model_message(srv->m));
        }
    }
    const char *text = chat ? chat : r->prompt;
    size_t len = 0;
    st = fe_lm_tokenize(srv->m, text, strlen(text), true, chat != NULL, ids, &len);
    fe_lm_free(chat);
    int code = st == FE_OK ? 0 : serve_error_set(e, 400, "invalid_request_error", NULL, NULL,
                                                 "tokenizing the prompt: %s", fe_lm_model_message(srv->m));
    pthread_mutex_unlock(&srv->model_mu);
    *n = (int64_t)len;
    return code;
}

/* The limits on the prompt and max_tokens; sets the job's max_tokens. */
static int check_limits(serve_server *srv, serve_job *j, serve_error *e) {
    const serve_options *o = &srv->o;
    const char *param = j->req.kind == SERVE_CHAT ? "messages" : "prompt";
    if (j->n_ids == 0) return serve_error_set(e, 400, "invalid_request_error", param, NULL, "the prompt has no tokens; give some text");
    if (j->n_ids > o->max_prompt_tokens)
        return serve_error_set(e, 400, "invalid_request_error", param, "context_length_exceeded",
                               "the prompt is %lld tokens; this server takes at most %lld "
                               "(--max-prompt-tokens); shorten it", (long long)j->n_ids,
                               (long long)o->max_prompt_tokens);
    int64_t room = o->pool.ctx - j->n_ids;
    if (room < 1)
        return serve_error_set(e, 400, "invalid_request_error", param, "context_length_exceeded",
                               "the prompt is %lld tokens, leaving no room in a slot's %lld-row "
                               "KV cache (--ctx); shorten it", (long long)j->n_ids, (long long)o->pool.ctx);
    int64_t want = j->req.max_tokens;
    if (want > o->max_tokens)
        return serve_error_set(e, 400, "invalid_request_error", "max_tokens", NULL, "max_tokens is "
                               "%lld; this server gives at most %lld per request (--max-tokens); "
                               "ask for fewer", (long long)want, (long long)o->max_tokens);
    if (want > room)
        return serve_error_set(e, 400, "invalid_request_error", "max_tokens", "context_length_exceeded",
                               "the prompt's %lld tokens plus max_tokens %lld pass a slot's %lld-row "
                               "KV cache (--ctx); ask for at most %lld", (long long)j->n_ids,
                               (long long)want, (long long)o->pool.ctx, (long long)room);
    if (want < 0) want = o->max_tokens < room ? o->max_tokens : room;
    j->max_tokens = want;
    return 0;
}

static void name_job(serve_server *srv, serve_job *j) {
    pthread_mutex_lock(&srv->id_mu);
    uint64_t id = ++srv->next_id;
    pthread_mutex_unlock(&srv->id_mu);
    snprintf(j->id, sizeof j->id, "%s-%llx%06llx", j->req.kind == SERVE_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)srv->created, (unsigned long long)id);
    snprintf(j->model, sizeof j->model, "%s", srv->o.model_id);
    j->head = (reply_head){.kind = j->req.kind, .id = j->id, .created = (int64_t)time(NULL), .model = j->model};
    if (!j->req.seed_given && j->req.sampling.temperature > 0) /* a seed of its own per request */
        j->req.sampling.seed = (fe_time_ns() ^ (id * 0x9E3779B97F4A7C15ull)) & ((1ull << 53) - 1);
}

/* The streamed answer: the job's events as they come, then `data: [DONE]`. While nothing
 * comes (the job waits in the queue, a long prompt's prefill), an SSE comment every third of
 * --client-timeout: libmicrohttpd drops a connection idle past it, and the wait is the
 * server's, not the client's. */
static const char keepalive[] = ": keep-alive\n\n";

typedef struct stream {
    serve_job *job;
    int fd;
    bool tail_written;
    uint64_t last_sent_ns, keepalive_ns;
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *st = cls;
    serve_job *j = st->job;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (j->events.len > j->events_sent) {
            size_t n = j->events.len - j->events_sent;
            if (n > max) n = max;
            memcpy(buf, j->events.p + j->events_sent, n);
            j->events_sent += n;
            pthread_mutex_unlock(&j->mu);
            st->last_sent_ns = fe_time_ns();
            return (ssize_t)n;
        }
        if (j->end == JOB_RUNNING && !j->cancelled && fe_time_ns() - st->last_sent_ns > st->keepalive_ns &&
            max >= sizeof keepalive - 1) {
            pthread_mutex_unlock(&j->mu);
            memcpy(buf, keepalive, sizeof keepalive - 1);
            st->last_sent_ns = fe_time_ns();
            return (ssize_t)(sizeof keepalive - 1);
        }
        if (j->cancelled) break;
        if (j->end != JOB_RUNNING) {
            if (st->tail_written) break;
            st->tail_written = true;
            serve_error e = {0};
            if (j->end == JOB_TIMED_OUT)
                serve_error_set(&e, 504, "server_error", NULL, "request_time_limit", "the request ran "
                                "past this server's time limit per request; ask for fewer tokens");
            else if (j->end == JOB_FAILED)
                e = j->err.status ? j->err : (serve_error){500, "server_error", "", "", "generation failed"};
            else if (j->end == JOB_CANCELLED)
                serve_error_set(&e, 503, "server_error", NULL, NULL, "the server is stopping");
            if (e.status) {
                char *json = reply_error(&e);
                if (json) {
                    pool_text_append(&j->events, "data: ", 6);
                    pool_text_append(&j->events, json, strlen(json));
                    pool_text_append(&j->events, "\n\n", 2);
                    free(json);
                }
            }
            pool_text_append(&j->events, "data: [DONE]\n\n", 14);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        if (j->events.len == j->events_sent && client_gone(st->fd)) j->cancelled = true;
    }
    bool ended = st->tail_written && !j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return ended ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls) {
    stream *st = cls;
    job_cancel(st->job); /* nothing when it ended; else the client went away */
    job_release(st->job);
    free(st);
}

static enum MHD_Result answer_stream(struct MHD_Connection *c, conn *k, serve_job *j) {
    stream *st = calloc(1, sizeof *st);
    if (!st) {
        job_cancel(j);
        job_release(j);
        return send_json(c, k, 500, NULL);
    }
    st->job = j;
    st->fd = conn_fd(c);
    st->last_sent_ns = fe_time_ns();
    st->keepalive_ns = (uint64_t)k->srv->o.client_seconds * 1000000000ull / 3;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_free);
    if (!r) {
        stream_free(st);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    k->answered = true;
    metrics_request(&k->srv->metrics, k->route, 200);
    return ok;
}

/* The whole answer, once the job ends (or the client goes away while it waits). */
static enum MHD_Result answer_whole(struct MHD_Connection *c, conn *k, serve_job *j) {
    int fd = conn_fd(c);
    pthread_mutex_lock(&j->mu);
    while (j->end == JOB_RUNNING && !j->cancelled) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        if (j->end == JOB_RUNNING && client_gone(fd)) j->cancelled = true;
    }
    job_end end = j->end;
    bool cancelled = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    serve_error e = {0};
    enum MHD_Result ok;
    if (end == JOB_FINISHED) {
        reply_choice ch[SERVE_MAX_N];
        for (int i = 0; i < j->req.n; i++)
            ch[i] = (reply_choice){j->text[i].p, j->text[i].len, j->finish[i],
                                   j->req.logprobs ? &j->logprobs[i] : NULL};
        ok = send_json(c, k, 200, reply_whole(&j->head, ch, j->req.n, &j->usage));
    } else if (end == JOB_TIMED_OUT) {
        serve_error_set(&e, 504, "server_error", NULL, "request_time_limit", "the request ran past "
                        "this server's time limit of %g s per request (--request-time); ask for "
                        "fewer tokens", k->srv->o.request_seconds);
        ok = send_error(c, k, &e);
    } else if (end == JOB_FAILED) {
        e = j->err;
        if (!e.status) serve_error_set(&e, 500, "server_error", NULL, NULL, "generation failed");
        ok = send_error(c, k, &e);
    } else { /* the client went away (nobody reads this), or the server stops */
        serve_error_set(&e, cancelled ? 499 : 503, "server_error", NULL, NULL, "cancelled");
        ok = send_error(c, k, &e);
    }
    job_cancel(j);
    job_release(j);
    return ok;
}

/* A model route asked of a server that does not serve that kind of model. */
static enum MHD_Result not_served(struct MHD_Connection *c, conn *k, const char *what, const char *how) {
    serve_error e = {0};
    serve_error_set(&e, 404, "invalid_request_error", "model", "model_not_found", "this server "
                    "serves no %s model; start it with %s (GET /v1/models lists what it serves)",
                    what, how);
    return send_error(c, k, &e);
}

static enum MHD_Result embeddings(struct MHD_Connection *c, conn *k) {
    serve_server *srv = k->srv;
    if (!srv->emb) return not_served(c, k, "embedding", "--embedding-model DIR");
    serve_error e = {0};
    char *reply = NULL;
    int64_t inputs = 0, tokens = 0;
    if (embedder_answer(srv->emb, k->body.p ? k->body.p : "", k->body.len, &reply, &inputs, &tokens, &e))
        return send_error(c, k, &e);
    metrics_embeddings(&srv->metrics, inputs, tokens);
    return send_json(c, k, 200, reply);
}

static enum MHD_Result completions(struct MHD_Connection *c, conn *k, serve_kind kind) {
    serve_server *srv = k->srv;
    if (!srv->m) return not_served(c, k, "chat", "a MODEL (a GGUF file or a checkpoint)");
    serve_request req;
    serve_error e = {0};
    if (serve_request_parse(k->body.p ? k->body.p : "", k->body.len, kind, &req, &e)) {
        serve_request_free(&req);
        return send_error(c, k, &e);
    }
    if (strcmp(req.model, srv->o.model_id) != 0) {
        serve_error_set(&e, 404, "invalid_request_error", "model", "model_not_found", "the model "
                        "\"%.100s\" is not served here; give \"%s\" (GET /v1/models)", req.model,
                        srv->o.model_id);
        serve_request_free(&req);
        return send_error(c, k, &e);
    }
    int32_t *ids = NULL;
    int64_t n = 0;
    if (prompt_ids(srv, &req, &ids, &n, &e)) {
        serve_request_free(&req);
        fe_lm_free(ids);
        return send_error(c, k, &e);
    }
    serve_job *j = job_create(&req);
    if (!j) {
        serve_request_free(&req);
        fe_lm_free(ids);
        return send_json(c, k, 500, NULL);
    }
    j->ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (j->ids) memcpy(j->ids, ids, (size_t)n * sizeof *ids);
    fe_lm_free(ids);
    j->n_ids = n;
    if (!j->ids) {
        job_release(j);
        return send_json(c, k, 500, NULL);
    }
    if (check_limits(srv, j, &e)) {
        job_release(j);
        return send_error(c, k, &e);
    }
    name_job(srv, j);
    j->deadline_ns = fe_time_ns() + (uint64_t)(srv->o.request_seconds * 1e9);
    if (!pool_submit(srv->pool, j)) {
        metrics_count_rejected_busy(&srv->metrics);
        serve_error_set(&e, 503, "server_error", NULL, "queue_full", "every slot is busy and the "
                        "queue holds its limit of %d requests (--queue); retry after a second",
                        srv->o.pool.queue);
        job_release(j);
        return send_error(c, k, &e);
    }
    return j->req.stream ? answer_stream(c, k, j) : answer_whole(c, k, j);
}

/* ---- routing ---- */

static bool authorized(struct MHD_Connection *c, const serve_server *srv) {
    if (!srv->o.api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7) != 0) return false;
    const char *given = h + 7, *key = srv->o.api_key;
    size_t n = strlen(key);
    unsigned char diff = (unsigned char)(strlen(given) != n);
    for (size_t i = 0; i < n && given[i]; i++) diff |= (unsigned char)(given[i] ^ key[i]);
    return diff == 0;
}

/* The routes, each with its one method. */
static const struct { const char *url, *method; } routes[] = {
    {"/health", "GET"}, {"/metrics", "GET"}, {"/v1/models", "GET"},
    {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"}, {"/v1/embeddings", "POST"},
};

/* The names of the models served: the chat model's, then the embedding model's. */
static int models_served(const serve_server *srv, const char *names[2]) {
    int n = 0;
    if (srv->m) names[n++] = srv->o.model_id;
    if (srv->emb) names[n++] = embedder_model(srv->emb);
    return n;
}

static enum MHD_Result route(struct MHD_Connection *c, conn *k, const char *url, const char *method) {
    serve_server *srv = k->srv;
    serve_error e = {0};
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (strcmp(url, "/health") == 0 && get) {
        int queued = 0, busy = 0;
        if (srv->pool) pool_load(srv->pool, &queued, &busy);
        char *body = NULL;
        if (asprintf(&body, "{\"status\":\"ok\",\"slots\":%d,\"slots_busy\":%d,\"queue\":%d}",
                     srv->pool ? srv->o.pool.slots : 0, busy, queued) < 0)
            body = NULL;
        return send_json(c, k, 200, body);
    }
    if (strcmp(url, "/metrics") == 0 && get) {
        int queued = 0, busy = 0;
        if (srv->pool) pool_load(srv->pool, &queued, &busy);
        metrics_gauges(&srv->metrics, queued, busy);
        return send_body(c, k, 200, "text/plain; version=0.0.4", metrics_render(&srv->metrics), NULL);
    }
    bool v1 = strncmp(url, "/v1/", 4) == 0;
    if (v1 && !authorized(c, srv)) {
        serve_error_set(&e, 401, "invalid_request_error", NULL, "invalid_api_key", "a missing or "
                        "wrong API key; send the header \"Authorization: Bearer KEY\" with the key "
                        "the server was started with (--api-key)");
        return send_error(c, k, &e);
    }
    const char *names[2];
    int n_names = models_served(srv, names);
    if (strcmp(url, "/v1/models") == 0 && get) return send_json(c, k, 200, reply_models(names, n_names, srv->created));
    if (strncmp(url, "/v1/models/", 11) == 0 && get) {
        for (int i = 0; i < n_names; i++)
            if (strcmp(url + 11, names[i]) == 0) return send_json(c, k, 200, reply_model(names[i], srv->created));
        serve_error_set(&e, 404, "invalid_request_error", "model", "model_not_found", "the model "
                        "\"%.100s\" is not served here; this server has \"%s\"%s%s%s", url + 11,
                        names[0], n_names > 1 ? " and \"" : "", n_names > 1 ? names[1] : "",
                        n_names > 1 ? "\"" : "");
        return send_error(c, k, &e);
    }
    if (strcmp(url, "/v1/chat/completions") == 0 && post) return completions(c, k, SERVE_CHAT);
    if (strcmp(url, "/v1/completions") == 0 && post) return completions(c, k, SERVE_COMPLETION);
    if (strcmp(url, "/v1/embeddings") == 0 && post) return embeddings(c, k);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(url, routes[i].url) == 0) {
            serve_error_set(&e, 405, "invalid_request_error", NULL, "method_not_allowed", "%s %s: "
                            "use %s", method, url, routes[i].method);
            return send_error(c, k, &e);
        }
    serve_error_set(&e, 404, "invalid_request_error", NULL, "unknown_url", "no route %.16s %.100s; "
                    "this server answers POST /v1/chat/completions, POST /v1/completions, POST "
                    "/v1/embeddings, GET /v1/models, GET /health and GET /metrics", method, url);
    return send_error(c, k, &e);
}

static const char *route_name(const char *url) {
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(url, routes[i].url) == 0) return routes[i].url;
    return strncmp(url, "/v1/models/", 11) == 0 ? "/v1/models/ID" : "other";
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    (void)version;
    serve_server *srv = cls;
    conn *k = *con_cls;
    serve_error e = {0};
    if (!k) { /* the headers are in: set up, and refuse a declared body over the limit now */
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        k->srv = srv;
        k->t_first = fe_time_ns();
        snprintf(k->route, sizeof k->route, "%s", route_name(url));
        *con_cls = k;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->o.max_body) {
            serve_error_set(&e, 413, "invalid_request_error", NULL, "body_too_large", "the body is "
                            "%s bytes; this server takes at most %zu (--max-body)", cl, srv->o.max_body);
            return send_error(c, k, &e);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (k->answered) return MHD_YES;
        if ((double)(fe_time_ns() - k->t_first) / 1e9 > srv->o.client_seconds) {
            serve_error_set(&e, 408, "invalid_request_error", NULL, "client_timeout", "the body "
                            "took more than %u s to arrive (--client-timeout); send it at once",
                            srv->o.client_seconds);
            return send_error(c, k, &e);
        }
        /* past the limit (a body sent without its length), the rest is read and dropped, so
         * the client, still sending, can read the 413 at the end */
        if (k->too_big || k->body.len + n > srv->o.max_body) {
            k->too_big = true;
            return MHD_YES;
        }
        if (!pool_text_append(&k->body, upload, n)) return MHD_NO;
        return MHD_YES;
    }
    if (k->answered) return MHD_YES;
    if (k->too_big) {
        serve_error_set(&e, 413, "invalid_request_error", NULL, "body_too_large", "the body "
                        "passes this server's limit of %zu bytes (--max-body)", srv->o.max_body);
        return send_error(c, k, &e);
    }
    return route(c, k, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    conn *k = *con_cls;
    if (!k) return;
    free(k->body.p);
    free(k);
    *con_cls = NULL;
}

/* ---- the server ---- */

fe_status server_start(fe_lm_model *const *models, int n_models, const serve_options *o,
                       serve_server **out, fe_error *err) {
    fe_lm_model *m = n_models ? models[0] : NULL;
    *out = NULL;
    if (!m && !o->encoder) return serve_fail(err, FE_E_INVALID, "no model to serve; give a chat MODEL, --embedding-model DIR, or both");
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    if (inet_pton(AF_INET, o->host, &addr.sin_addr) != 1)
        return serve_fail(err, FE_E_INVALID, "--host %s is not an IPv4 address; give one such as 127.0.0.1", o->host);
    serve_server *s = calloc(1, sizeof *s);
    if (!s) return serve_fail(err, FE_E_NOMEM, "out of memory");
    s->m = m;
    s->o = *o;
    s->created = (int64_t)time(NULL);
    if (m) fe_lm_model_get_info(m, &s->info);
    pthread_mutex_init(&s->model_mu, NULL);
    pthread_mutex_init(&s->id_mu, NULL);
    metrics_init(&s->metrics, m ? o->pool.slots : 0);
    if (o->encoder) {
        embedder_options eo = {.model_id = o->embedding_model_id, .max_inputs = o->max_embedding_inputs};
        if (!(s->emb = embedder_create(o->encoder, &eo))) {
            server_stop(s);
            return serve_fail(err, FE_E_NOMEM, "out of memory");
        }
    }
    fe_status st = m ? pool_create(models, n_models, &o->pool, &s->metrics, &s->pool, err) : FE_OK;
    if (st != FE_OK) {
        server_stop(s);
        return st;
    }
    s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                                MHD_USE_ITC,
                            (uint16_t)o->port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_CONNECTION_TIMEOUT, o->client_seconds,
                            MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    if (!s->d) {
        server_stop(s);
        return serve_fail(err, FE_E_IO, "cannot listen on %s:%d (in use, or not an address of this "
                    "machine); give another --port or --host", o->host, o->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : o->port;
    *out = s;
    return FE_OK;
}

int server_port(const serve_server *s) { return s->port; }

void server_stop(serve_server *s) {
    if (!s) return;
    if (s->d) MHD_quiesce_daemon(s->d); /* no new connections */
    pool_stop(s->pool);                  /* whoever waits on a job sees it end */
    if (s->d) MHD_stop_daemon(s->d);
    pool_destroy(s->pool);
    embedder_destroy(s->emb);
    metrics_deinit(&s->metrics);
    pthread_mutex_destroy(&s->model_mu);
    pthread_mutex_destroy(&s->id_mu);
    free(s);
}
