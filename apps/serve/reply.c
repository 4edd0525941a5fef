/* apps/serve/reply.c: the response bodies in OpenAI's shapes (reply.h), built with jansson so
 * every string is escaped as JSON wants. */
#include "reply.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The length of the whole UTF-8 character at s[0..n), or 0 when it is not one. */
static size_t utf8_char(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < len; i++) cp = cp << 6 | (s[i] & 0x3F);
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

/* s[0..n) as a JSON string; bytes outside whole characters become U+FFFD. */
static json_t *text_json(const char *s, size_t n) {
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *fixed = malloc(3 * n + 1);
    if (!fixed) return NULL;
    size_t at = 0;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] ? utf8_char((const unsigned char *)s + i, n - i) : 0;
        if (len) {
            memcpy(fixed + at, s + i, len);
            at += len;
            i += len;
        } else {
            if (s[i]) memcpy(fixed + at, "\xEF\xBF\xBD", 3), at += 3;
            else fixed[at++] = ' '; /* a NUL byte: jansson takes none inside a C string */
            i++;
        }
    }
    j = json_stringn(fixed, at);
    free(fixed);
    return j;
}

static char *dump(json_t *o) {
    if (!o) return NULL;
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static json_t *nullable(const char *s) { return s && *s ? json_string(s) : json_null(); }

char *reply_error(const serve_error *e) {
    return dump(json_pack("{s:{s:o,s:s,s:o,s:o}}", "error", "message",
                          text_json(e->message, strlen(e->message)), "type",
                          e->type ? e->type : "invalid_request_error", "param", nullable(e->param),
                          "code", nullable(e->code)));
}

static json_t *head_json(const reply_head *h, bool chunk) {
    const char *object = h->kind == SERVE_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                               : "text_completion";
    return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", h->id, "object", object, "created",
                     (json_int_t)h->created, "model", h->model, "system_fingerprint", "ferrum");
}

static json_t *usage_json(const reply_usage *u) {
    return json_pack("{s:I,s:I,s:I,s:{s:I}}", "prompt_tokens", (json_int_t)u->prompt_tokens,
                     "completion_tokens", (json_int_t)u->completion_tokens, "total_tokens",
                     (json_int_t)(u->prompt_tokens + u->completion_tokens),
                     "prompt_tokens_details", "cached_tokens", (json_int_t)u->cached_tokens);
}

bool reply_logprobs_push(reply_logprobs *l, const reply_token_logprobs *t) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        reply_token_logprobs *p = realloc(l->p, cap * sizeof *p);
        if (!p) return false;
        l->p = p, l->cap = cap;
    }
    l->p[l->n++] = *t;
    return true;
}

static json_t *bytes_json(const reply_logprob *a) {
    json_t *b = json_array();
    for (size_t i = 0; b && i < a->len; i++) json_array_append_new(b, json_integer((unsigned char)a->piece[i]));
    return b;
}

/* -inf (a token the softmax gives nothing) as the most negative float JSON can carry */
static json_t *logprob_json(float lp) { return json_real(isfinite(lp) ? lp : -9999.0); }

static json_t *chat_logprob_json(const reply_logprob *a) {
    return json_pack("{s:o,s:o,s:o}", "token", text_json(a->piece ? a->piece : "", a->len), "logprob",
                     logprob_json(a->logprob), "bytes", bytes_json(a));
}

/* a chat's {"content": [...], "refusal": null} */
static json_t *chat_logprobs_json(const reply_logprobs *l) {
    json_t *content = json_array();
    for (size_t i = 0; i < l->n; i++) {
        const reply_token_logprobs *t = &l->p[i];
        json_t *o = chat_logprob_json(&t->chosen), *top = json_array();
        for (int k = 0; k < t->n_top; k++) json_array_append_new(top, chat_logprob_json(&t->top[k]));
        json_object_set_new(o, "top_logprobs", top);
        json_array_append_new(content, o);
    }
    return json_pack("{s:o,s:n}", "content", content, "refusal");
}

/* a completion's {"tokens", "token_logprobs", "top_logprobs", "text_offset"} */
static json_t *completion_logprobs_json(const reply_logprobs *l) {
    json_t *tokens = json_array(), *values = json_array(), *tops = json_array(), *offsets = json_array();
    size_t at = l->text_offset;
    for (size_t i = 0; i < l->n; i++) {
        const reply_token_logprobs *t = &l->p[i];
        json_array_append_new(tokens, text_json(t->chosen.piece ? t->chosen.piece : "", t->chosen.len));
        json_array_append_new(values, logprob_json(t->chosen.logprob));
        json_t *top = json_object();
        for (int k = 0; k < t->n_top; k++) {
            json_t *key = text_json(t->top[k].piece ? t->top[k].piece : "", t->top[k].len);
            if (key) json_object_set_new(top, json_string_value(key), logprob_json(t->top[k].logprob));
            json_decref(key);
        }
        json_array_append_new(tops, top);
        json_array_append_new(offsets, json_integer((json_int_t)at));
        at += t->chosen.len;
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", values, "top_logprobs",
                     tops, "text_offset", offsets);
}

static json_t *logprobs_json(serve_kind kind, const reply_logprobs *l) {
    if (!l) return json_null();
    return kind == SERVE_CHAT ? chat_logprobs_json(l) : completion_logprobs_json(l);
}

char *reply_whole(const reply_head *h, const reply_choice *choices, int n, const reply_usage *u) {
    json_t *o = head_json(h, false), *list = json_array();
    for (int i = 0; i < n; i++) {
        const reply_choice *c = &choices[i];
        json_t *text = text_json(c->text ? c->text : "", c->len);
        json_t *lp = logprobs_json(h->kind, c->logprobs);
        json_t *choice = h->kind == SERVE_CHAT
            ? json_pack("{s:i,s:{s:s,s:o},s:o,s:o}", "index", i, "message", "role", "assistant",
                        "content", text, "logprobs", lp, "finish_reason", nullable(c->finish_reason))
            : json_pack("{s:i,s:o,s:o,s:o}", "index", i, "text", text, "logprobs", lp,
                        "finish_reason", nullable(c->finish_reason));
        json_array_append_new(list, choice);
    }
    json_object_set_new(o, "choices", list);
    json_object_set_new(o, "usage", usage_json(u));
    return dump(o);
}

char *reply_chunk(const reply_head *h, int index, const char *text, size_t len, int role,
                  const char *finish_reason, const reply_logprobs *logprobs) {
    json_t *o = head_json(h, true), *choice;
    json_t *t = text_json(text ? text : "", len);
    if (h->kind == SERVE_CHAT) {
        json_t *delta = json_object();
        if (role) json_object_set_new(delta, "role", json_string("assistant"));
        if (role || len) json_object_set_new(delta, "content", t);
        else json_decref(t);
        choice = json_pack("{s:i,s:o,s:o,s:o}", "index", index, "delta", delta, "logprobs",
                           logprobs_json(h->kind, logprobs), "finish_reason", nullable(finish_reason));
    } else {
        choice = json_pack("{s:i,s:o,s:o,s:o}", "index", index, "text", t, "logprobs",
                           logprobs_json(h->kind, logprobs), "finish_reason", nullable(finish_reason));
    }
    json_object_set_new(o, "choices", json_pack("[o]", choice));
    return dump(o);
}

char *reply_usage_chunk(const reply_head *h, const reply_usage *u) {
    json_t *o = head_json(h, true);
    json_object_set_new(o, "choices", json_array());
    json_object_set_new(o, "usage", usage_json(u));
    return dump(o);
}

static json_t *model_json(const char *model, int64_t created) {
    return json_pack("{s:s,s:s,s:I,s:s}", "id", model, "object", "model", "created",
                     (json_int_t)created, "owned_by", "ferrum");
}

char *reply_models(const char *const *models, int n, int64_t created) {
    json_t *list = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(list, model_json(models[i], created));
    return dump(json_pack("{s:s,s:o}", "object", "list", "data", list));
}

char *reply_model(const char *model, int64_t created) { return dump(model_json(model, created)); }

/* bytes[0..n) in standard base64 with padding */
static json_t *base64_json(const unsigned char *bytes, size_t n) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *p = malloc((n + 2) / 3 * 4 + 1);
    if (!p) return NULL;
    size_t at = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)bytes[i] << 16 | (i + 1 < n ? (uint32_t)bytes[i + 1] << 8 : 0) |
                     (i + 2 < n ? bytes[i + 2] : 0);
        p[at++] = digits[w >> 18 & 63];
        p[at++] = digits[w >> 12 & 63];
        p[at++] = i + 1 < n ? digits[w >> 6 & 63] : '=';
        p[at++] = i + 2 < n ? digits[w & 63] : '=';
    }
    json_t *j = json_stringn(p, at);
    free(p);
    return j;
}

/* v[0..dim) as base64 of its float32 bytes, little-endian as OpenAI's clients decode them */
static json_t *vector_base64(const float *v, int64_t dim) {
    unsigned char *b = malloc((size_t)dim * 4 + 1);
    if (!b) return NULL;
    for (int64_t i = 0; i < dim; i++) {
        uint32_t w;
        memcpy(&w, &v[i], 4);
        for (int k = 0; k < 4; k++) b[i * 4 + k] = (unsigned char)(w >> (8 * k));
    }
    json_t *j = base64_json(b, (size_t)dim * 4);
    free(b);
    return j;
}

char *reply_embeddings(const char *model, const float *vectors, size_t n, int64_t dim,
                       bool base64, int64_t prompt_tokens) {
    json_t *data = json_array();
    for (size_t i = 0; data && i < n; i++) {
        const float *v = vectors + i * (size_t)dim;
        json_t *e;
        if (base64) {
            e = vector_base64(v, dim);
        } else {
            e = json_array();
            for (int64_t k = 0; e && k < dim; k++) json_array_append_new(e, json_real(v[k]));
        }
        if (!e || json_array_append_new(data, json_pack("{s:s,s:I,s:o}", "object", "embedding", "index",
                                                        (json_int_t)i, "embedding", e)) != 0) {
            json_decref(data);
            return NULL;
        }
    }
    json_t *o = json_pack("{s:s,s:o,s:s,s:{s:I,s:I}}", "object", "list", "data", data, "model", model,
                          "usage", "prompt_tokens", (json_int_t)prompt_tokens, "total_tokens",
                          (json_int_t)prompt_tokens);
    if (!o) return NULL;
    /* 9 significant digits give every float32 back exactly */
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}
