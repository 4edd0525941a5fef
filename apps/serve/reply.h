/* apps/serve/reply.h: the JSON the server answers with, in OpenAI's shapes: the error object,
 * a whole completion (chat or text), a streamed chunk, the usage, the model list. Every
 * function returns a new NUL-terminated string (free()), or NULL when out of memory. Text is
 * written as UTF-8 whatever it holds: bytes that are not part of a whole character become
 * U+FFFD. */
#ifndef FE_SERVE_REPLY_H
#define FE_SERVE_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

/* What every completion object names. */
typedef struct reply_head {
    serve_kind kind;
    const char *id;    /* "chatcmpl-..." or "cmpl-..." */
    int64_t created;   /* unix seconds */
    const char *model;
} reply_head;

typedef struct reply_usage {
    int64_t prompt_tokens, completion_tokens, cached_tokens;
} reply_usage;

/* A token's log-probability: its bytes (a piece of the vocabulary; may be part of a UTF-8
 * character) and the value. */
typedef struct reply_logprob {
    const char *piece;
    size_t len;
    float logprob;
} reply_logprob;

/* One generated token's: its own, and the most likely tokens' at that step. */
typedef struct reply_token_logprobs {
    reply_logprob chosen;
    int n_top;
    reply_logprob top[SERVE_MAX_TOP_LOGPROBS];
} reply_token_logprobs;

/* Tokens' log-probabilities in order; text_offset is where the first token's text starts in
 * the choice's text (a completion's text_offset list counts from it). */
typedef struct reply_logprobs {
    reply_token_logprobs *p;
    size_t n, cap;
    size_t text_offset;
} reply_logprobs;

/* Appends t. false when out of memory (l unchanged). */
bool reply_logprobs_push(reply_logprobs *l, const reply_token_logprobs *t);

typedef struct reply_choice {
    const char *text;
    size_t len;
    const char *finish_reason; /* "stop", "length"; NULL while streaming */
    const reply_logprobs *logprobs; /* NULL: "logprobs": null */
} reply_choice;

/* {"error": {"message", "type", "param", "code"}} */
char *reply_error(const serve_error *e);
/* The whole answer: choices[0..n) and the usage. */
char *reply_whole(const reply_head *h, const reply_choice *choices, int n, const reply_usage *u);
/* One streamed chunk for choice `index`: text (chat: the delta's content; with `role`, the
 * first chunk's delta {"role": "assistant", "content": ""}), finish_reason (NULL: none) and
 * the log-probabilities of the tokens it brings (NULL: null). Log-probabilities come in
 * OpenAI's shapes: a chat's {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}, a
 * completion's {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}. */
char *reply_chunk(const reply_head *h, int index, const char *text, size_t len, int role,
                  const char *finish_reason, const reply_logprobs *logprobs);
/* The last chunk of a stream with stream_options.include_usage: no choices, the usage. */
char *reply_usage_chunk(const reply_head *h, const reply_usage *u);
/* GET /v1/models: the models served (a chat model, an embedding model, or both). */
char *reply_models(const char *const *models, int n, int64_t created);
char *reply_model(const char *model, int64_t created);
/* POST /v1/embeddings: vectors[0 .. n * dim), row i input i's, as JSON floats (each float32
 * written so it reads back exactly) or, with base64, the base64 of its little-endian float32
 * bytes; usage.prompt_tokens (and total_tokens) = prompt_tokens. */
char *reply_embeddings(const char *model, const float *vectors, size_t n, int64_t dim,
                       bool base64, int64_t prompt_tokens);

#endif
