/* apps/serve/server.h: the OpenAI-compatible HTTP server over one model: libmicrohttpd
 * (a thread per connection) in front of the slot pool (pool.h).
 *
 * Routes: POST /v1/chat/completions and /v1/completions (whole, or streamed as server-sent
 * events ending in `data: [DONE]`) when a chat model is served, POST /v1/embeddings when an
 * encoder is (embeddings.h), GET /v1/models (and /v1/models/ID), GET /health, GET /metrics
 * (Prometheus text). With an API key, /v1/ wants `Authorization: Bearer KEY`.
 *
 * Limits, each named in the error it causes: the body's size (413), its upload time (408),
 * the prompt's tokens and max_tokens (400), the queue (503 with Retry-After), the time per
 * request (504, or an error event in a stream). A request is read whole before it may queue,
 * so a slow client never holds a slot; a client gone is seen at the next token and frees its
 * slot. */
#ifndef FE_SERVE_SERVER_H
#define FE_SERVE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "ferrum/lm.h"
#include "pool.h"

typedef struct serve_options {
    const char *host;          /* IPv4 address to bind */
    int port;                  /* 0: any free port (server_port says which) */
    const char *api_key;       /* NULL: none asked */
    const char *model_id;      /* the chat model's name, which /v1/models lists and requests
                                  must give; NULL: no chat model */
    fe_lm_encoder *encoder;    /* the embedding model (borrowed, outlives the server); NULL: none */
    const char *embedding_model_id; /* its name */
    size_t max_embedding_inputs;    /* inputs of one embeddings request at most */
    size_t max_body;           /* bytes */
    int64_t max_prompt_tokens;
    int64_t max_tokens;        /* the most a request may ask for (and the default) */
    double request_seconds;    /* from admission to the last token */
    unsigned client_seconds;   /* a client idle this long, or uploading its body longer, is dropped */
    unsigned max_connections;
    pool_options pool;
} serve_options;

typedef struct serve_server serve_server;

/* Starts the pool over models[0..n_models) (the same model opened once per device group;
 * borrowed: they must outlive the server; the first tokenizes; none when the server only
 * embeds, with o->encoder) and listens. On error *out is NULL and err says why. */
fe_status server_start(fe_lm_model *const *models, int n_models, const serve_options *o,
                       serve_server **out, fe_error *err);
/* The port listened on. */
int server_port(const serve_server *s);
/* Stops listening, cancels what runs, frees everything. NULL allowed. */
void server_stop(serve_server *s);

#endif
