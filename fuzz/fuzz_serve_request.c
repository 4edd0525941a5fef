/* fuzz/fuzz_serve_request.c: libFuzzer target for `ferrum serve`'s request parsers
 * (apps/serve/request.c, apps/serve/embed_request.c): the input read as a chat, a completion
 * and an embeddings request body. Whatever it holds, a parser either accepts it with every
 * field inside its range, or refuses it with a 4xx/5xx status and a message; the refusal's
 * JSON body (apps/serve/reply.c) is always valid JSON, and an accepted request's streamed
 * chunk, whole answer and embeddings answer are too. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../apps/serve/embed_request.h"
#include "../apps/serve/reply.h"
#include "../apps/serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must_be_json(char *s) {
    if (!s) return; /* out of memory */
    json_error_t e;
    json_t *o = json_loads(s, 0, &e);
    if (!o) __builtin_trap();
    json_decref(o);
    free(s);
}

static void check_accepted(const serve_request *r, serve_kind kind) {
    if (!r->model || r->n < 1 || r->n > SERVE_MAX_N || r->n_stop < 0 || r->n_stop > SERVE_MAX_STOP ||
        r->top_logprobs < 0 || r->top_logprobs > SERVE_MAX_TOP_LOGPROBS || (r->top_logprobs && !r->logprobs))
        __builtin_trap();
    if (kind == SERVE_CHAT && (r->n_messages < 1 || !r->messages)) __builtin_trap();
    if (kind == SERVE_COMPLETION && !r->prompt == !r->prompt_ids) __builtin_trap();
    for (int i = 0; i < r->n_messages; i++)
        if (!r->messages[i].role || !r->messages[i].content) __builtin_trap();
    const fe_lm_sampling *s = &r->sampling;
    if (!(s->temperature >= 0 && s->temperature <= 2) || !(s->top_p > 0 && s->top_p <= 1) ||
        !(s->min_p >= 0 && s->min_p <= 1) || s->top_k < 0 || r->max_tokens < -1)
        __builtin_trap();
    for (int i = 0; i < r->n_stop; i++)
        if (!r->stop[i] || !*r->stop[i]) __builtin_trap();
    reply_head h = {kind, "id", 0, r->model};
    const char *text = r->prompt ? r->prompt : r->n_messages ? r->messages[0].content : "";
    /* the request's text as a token's piece, cut anywhere (part of a character) */
    reply_token_logprobs t = {.chosen = {text, strlen(text) / 2, -0.5f}, .n_top = r->top_logprobs};
    for (int k = 0; k < t.n_top; k++) t.top[k] = (reply_logprob){text, strlen(text) / (size_t)(k + 1), -(float)k};
    reply_logprobs l = {.p = &t, .n = 1, .cap = 1};
    reply_choice c = {text, strlen(text), "stop", r->logprobs ? &l : NULL};
    reply_usage u = {1, 2, 0};
    must_be_json(reply_chunk(&h, 0, text, strlen(text), 1, NULL, r->logprobs ? &l : NULL));
    must_be_json(reply_whole(&h, &c, 1, &u));
}

enum { FUZZ_MAX_INPUTS = 64 };

static void check_embed_accepted(const serve_embed_request *r) {
    if (!r->model || r->n < 1 || !r->texts == !r->ids || r->dimensions < 0) __builtin_trap();
    if (r->n > FUZZ_MAX_INPUTS) __builtin_trap();
    for (size_t i = 0; i < r->n; i++) {
        if (r->texts && (!r->texts[i] || !*r->texts[i])) __builtin_trap();
        if (r->ids && (!r->ids[i] || r->n_ids[i] < 1)) __builtin_trap();
        for (size_t k = 0; r->ids && k < r->n_ids[i]; k++)
            if (r->ids[i][k] < 0) __builtin_trap();
    }
    float v[2 * 3] = {0.5f, -1, 3, 1e-30f, 0, 2};
    size_t n = r->n < 2 ? r->n : 2;
    must_be_json(reply_embeddings(r->model, v, n, 3, r->base64, 9));
}

static void embeddings(const uint8_t *data, size_t size) {
    serve_embed_request r;
    serve_error e = {0};
    int code = serve_embed_request_parse((const char *)data, size, FUZZ_MAX_INPUTS, &r, &e);
    if (code == 0) check_embed_accepted(&r);
    else if (code < 400 || code > 599 || code != e.status || !e.message[0]) __builtin_trap();
    else must_be_json(reply_error(&e));
    serve_embed_request_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    embeddings(data, size);
    for (int k = 0; k < 2; k++) {
        serve_kind kind = k ? SERVE_COMPLETION : SERVE_CHAT;
        serve_request r;
        serve_error e = {0};
        int code = serve_request_parse((const char *)data, size, kind, &r, &e);
        if (code == 0) check_accepted(&r, kind);
        else if (code < 400 || code > 599 || code != e.status || !e.message[0]) __builtin_trap();
        else must_be_json(reply_error(&e));
        serve_request_free(&r);
    }
    return 0;
}
