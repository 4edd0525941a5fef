/* apps/serve/request.h: an OpenAI request body (POST /v1/chat/completions or /v1/completions)
 * read into a checked serve_request, and the OpenAI-shaped error that explains a refusal.
 * Pure: no model, no server; the fuzzer drives it directly. */
#ifndef FE_SERVE_REQUEST_H
#define FE_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/lm.h"

typedef enum serve_kind { SERVE_CHAT = 0, SERVE_COMPLETION } serve_kind;

/* top log-probabilities per token: chat's top_logprobs (as OpenAI, at most 20), a
 * completion's logprobs (at most 5) */
enum { SERVE_MAX_STOP = 4, SERVE_MAX_N = 8, SERVE_MAX_MESSAGES = 4096, SERVE_MAX_TOP_LOGPROBS = 20,
       SERVE_MAX_COMPLETION_LOGPROBS = 5 };

/* A refusal: the HTTP status, and the OpenAI error object's fields. */
typedef struct serve_error {
    int status;         /* 400, 401, 404, 413, 503... */
    const char *type;   /* "invalid_request_error", "authentication_error", "server_error"... */
    char param[64];     /* the field at fault; "" when none */
    char code[48];      /* "model_not_found", "context_length_exceeded"...; "" when none */
    char message[512];
} serve_error;

/* Sets e and returns its status. */
__attribute__((format(printf, 6, 7)))
int serve_error_set(serve_error *e, int status, const char *type, const char *param,
                    const char *code, const char *fmt, ...);

typedef struct serve_request {
    serve_kind kind;
    char *model;               /* as asked */
    fe_lm_message *messages;   /* SERVE_CHAT: role and content, owned */
    int n_messages;
    char *prompt;              /* SERVE_COMPLETION, text form; owned */
    int32_t *prompt_ids;       /* SERVE_COMPLETION, token-id form; owned */
    size_t n_prompt_ids;
    bool stream, include_usage;
    fe_lm_sampling sampling;   /* seed: given, else 0 with seed_given false */
    bool seed_given;
    int64_t max_tokens;        /* -1: not given */
    char *stop[SERVE_MAX_STOP];
    int n_stop;
    int n;                     /* choices */
    bool logprobs;             /* each token's log-probability (chat: logprobs true; completion:
                                  logprobs N given) */
    int top_logprobs;          /* and the most likely tokens' at each step: chat's top_logprobs,
                                  a completion's logprobs N */
} serve_request;

/* Reads body[0..len) as `kind`'s JSON request into *r (zeroed first; serve_request_free
 * releases it, also after an error). Returns 0, or the HTTP status after filling e: a body
 * that is not a JSON object (or not UTF-8), a field of the wrong type or out of its range,
 * an empty messages list, a missing prompt or model. Unknown fields are ignored, as OpenAI's
 * clients send extras; fields ferrum does not do (tools, logit_bias) are refused by name. */
int serve_request_parse(const char *body, size_t len, serve_kind kind, serve_request *r,
                        serve_error *e);
void serve_request_free(serve_request *r);

#endif
