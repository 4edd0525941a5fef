/* apps/serve/embed_request.h: an OpenAI embeddings request body (POST /v1/embeddings) read into
 * a checked serve_embed_request: the model, the inputs (texts, or token-id lists), the
 * encoding format and the Matryoshka width. Pure: no model, no server; the fuzzer drives it
 * directly. What the model allows (its vocabulary, its widths, its longest input) the server
 * checks after (embeddings.h). */
#ifndef FE_SERVE_EMBED_REQUEST_H
#define FE_SERVE_EMBED_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

typedef struct serve_embed_request {
    char *model;          /* as asked; owned */
    size_t n;             /* inputs */
    char **texts;         /* n texts (input as a string or a list of strings); owned; or NULL */
    int32_t **ids;        /* n token-id lists (input as a list of ints or of lists); owned; or NULL */
    size_t *n_ids;        /* their lengths (each >= 1) */
    bool base64;          /* encoding_format "base64": little-endian float32 bytes */
    int64_t dimensions;   /* 0: not given */
} serve_embed_request;

/* Reads body[0..len) into *r (zeroed first; serve_embed_request_free releases it, also after
 * an error). max_inputs bounds the inputs of one request. Returns 0, or the HTTP status after
 * filling e: a body that is not a JSON object (or not UTF-8), no model, an input that is
 * empty, of the wrong type, or one of more than max_inputs, an encoding_format other than
 * float and base64, dimensions < 1. Unknown fields ("user") are ignored, as OpenAI's clients
 * send extras. */
int serve_embed_request_parse(const char *body, size_t len, size_t max_inputs,
                              serve_embed_request *r, serve_error *e);
void serve_embed_request_free(serve_embed_request *r);

#endif
