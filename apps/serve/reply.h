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

typedef struct reply_choice {
    const char *text;
    size_t len;
    const char *finish_reason; /* "stop", "length"; NULL while streaming */
} reply_choice;

/* {"error": {"message", "type", "param", "code"}} */
char *reply_error(const serve_error *e);
/* The whole answer: choices[0..n) and the usage. */
char *reply_whole(const reply_head *h, const reply_choice *choices, int n, const reply_usage *u);
/* One streamed chunk for choice `index`: text (chat: the delta's content; with `role`, the
 * first chunk's delta {"role": "assistant", "content": ""}) and finish_reason (NULL: none). */
char *reply_chunk(const reply_head *h, int index, const char *text, size_t len, int role,
                  const char *finish_reason);
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
