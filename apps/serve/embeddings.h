/* apps/serve/embeddings.h: POST /v1/embeddings over one text encoder (fe_lm_encoder): the
 * request read (embed_request.h), checked against what the model allows (its name, its
 * vocabulary, its longest input, the widths it was trained to be cut to), embedded and
 * answered in OpenAI's shape. The encoder takes one caller at a time, so requests take turns
 * on it (a mutex); a request runs on its connection's thread, never in the chat slots. */
#ifndef FE_SERVE_EMBEDDINGS_H
#define FE_SERVE_EMBEDDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "ferrum/lm.h"
#include "request.h"

typedef struct serve_embedder serve_embedder;

typedef struct embedder_options {
    const char *model_id; /* the name /v1/models lists and requests must give; copied */
    size_t max_inputs;    /* inputs in one request at most */
} embedder_options;

/* A new embedder over enc (borrowed: it must outlive the embedder). NULL when out of memory. */
serve_embedder *embedder_create(fe_lm_encoder *enc, const embedder_options *o);
void embedder_destroy(serve_embedder *s); /* NULL allowed */
const char *embedder_model(const serve_embedder *s);

/* Answers body[0..len): 0 with *reply (free()) the embeddings, *inputs and *tokens the inputs
 * embedded and the tokens they ran as, or
 * the HTTP status with e filled (the request's fault: 400 naming the field, rule and fix; 404
 * for another model; 500 when the encoder fails or memory runs out). */
int embedder_answer(serve_embedder *s, const char *body, size_t len, char **reply,
                    int64_t *inputs, int64_t *tokens, serve_error *e);

#endif
