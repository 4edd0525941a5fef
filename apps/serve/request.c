/* apps/serve/request.c: the OpenAI request parser (request.h). jansson reads the JSON (and
 * refuses bytes that are not UTF-8); each field is then checked for its type and range, and
 * every refusal names the field, the rule and the fix, in OpenAI's error shape. */
#include "request.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int serve_error_set(serve_error *e, int status, const char *type, const char *param,
                    const char *code, const char *fmt, ...) {
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return status;
}

#define BAD(param, ...) serve_error_set(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

static char *dup_string(const json_t *s) {
    size_t n = json_string_length(s);
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, json_string_value(s), n);
        p[n] = '\0';
    }
    return p;
}

/* A text field. It holds no NUL (the library takes C strings): json_loadb without
 * JSON_ALLOW_NUL refuses \u0000 in the body. */
static int text_of(const json_t *v, const char *param, char **out, serve_error *e) {
    if (!json_is_string(v)) return BAD(param, "%s must be a string", param);
    if (!(*out = dup_string(v))) return serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    return 0;
}

/* A number field in [lo, hi]; absent or null leaves *out as it is. */
static int number_in(const json_t *o, const char *key, double lo, double hi, double *out,
                     serve_error *e) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return BAD(key, "%s must be a number", key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) return BAD(key, "%s is %g; give a number in [%g, %g]", key, x, lo, hi);
    *out = x;
    return 0;
}

static int integer_in(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                      serve_error *e) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return BAD(key, "%s must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return BAD(key, "%s is %lld; give an integer in [%lld, %lld]", key, (long long)x,
                   (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static int bool_of(const json_t *o, const char *key, bool *out, serve_error *e) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return BAD(key, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* "content": a string, or an array of {"type": "text", "text": ...} parts, joined. */
static int content_of(const json_t *v, char **out, serve_error *e) {
    const char *param = "messages.content";
    if (json_is_string(v)) return text_of(v, param, out, e);
    if (!json_is_array(v))
        return BAD(param, "a message's content must be a string or an array of text parts");
    size_t total = 0, i;
    const json_t *part;
    json_array_foreach(v, i, part) {
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type) || strcmp(json_string_value(type), "text") != 0 ||
            !json_is_string(text))
            return BAD(param, "content part %zu is not {\"type\": \"text\", \"text\": ...}; ferrum "
                       "serves text only", i);
        total += json_string_length(text);
    }
    char *p = malloc(total + 1);
    if (!p) return serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    size_t at = 0;
    json_array_foreach(v, i, part) {
        const json_t *text = json_object_get(part, "text");
        memcpy(p + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    p[at] = '\0';
    *out = p;
    return 0;
}

static int messages_of(const json_t *o, serve_request *r, serve_error *e) {
    const json_t *msgs = json_object_get(o, "messages");
    if (!msgs) return BAD("messages", "messages is required: a list of {\"role\", \"content\"}");
    if (!json_is_array(msgs)) return BAD("messages", "messages must be an array");
    size_t n = json_array_size(msgs);
    if (n == 0) return BAD("messages", "messages is empty; give at least one message");
    if (n > SERVE_MAX_MESSAGES)
        return BAD("messages", "%zu messages; give at most %d", n, SERVE_MAX_MESSAGES);
    r->messages = calloc(n, sizeof *r->messages);
    if (!r->messages) return serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    static const char *const roles[] = {"system", "user", "assistant", "developer"};
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(msgs, i), *role = json_object_get(m, "role");
        if (!json_is_object(m)) return BAD("messages", "message %zu must be an object", i);
        if (!json_is_string(role)) return BAD("messages.role", "message %zu has no role string", i);
        const char *known = NULL;
        for (size_t k = 0; k < sizeof roles / sizeof roles[0]; k++)
            if (strcmp(json_string_value(role), roles[k]) == 0) known = k == 3 ? "system" : roles[k];
        if (!known)
            return BAD("messages.role", "message %zu has role \"%.40s\"; give system, developer, "
                       "user or assistant", i, json_string_value(role));
        const json_t *content = json_object_get(m, "content");
        if (!content) return BAD("messages.content", "message %zu has no content", i);
        char *text = NULL;
        int code = content_of(content, &text, e);
        if (code) return code;
        r->messages[i] = (fe_lm_message){.role = known, .content = text};
        r->n_messages++;
    }
    return 0;
}

/* "prompt": a string, a list of one string, or a list of token ids. */
static int prompt_of(const json_t *o, serve_request *r, serve_error *e) {
    const json_t *p = json_object_get(o, "prompt");
    if (!p) return BAD("prompt", "prompt is required: text or a list of token ids");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
        p = json_array_get(p, 0);
    if (json_is_string(p)) {
        if (json_string_length(p) == 0) return BAD("prompt", "prompt is empty; give some text");
        return text_of(p, "prompt", &r->prompt, e);
    }
    if (json_is_array(p) && json_is_string(json_array_get(p, 0)))
        return BAD("prompt", "prompt is a list of %zu strings; ferrum answers one prompt per "
                   "request: send them one by one", json_array_size(p));
    if (!json_is_array(p) || json_array_size(p) == 0)
        return BAD("prompt", "prompt must be a string, a list of one string or a nonempty list of "
                   "token ids (ferrum answers one prompt per request)");
    size_t n = json_array_size(p);
    r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
    if (!r->prompt_ids) return serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *id = json_array_get(p, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
            return BAD("prompt", "prompt[%zu] is not a token id (an integer >= 0); a list prompt "
                       "is one list of token ids", i);
        r->prompt_ids[i] = (int32_t)json_integer_value(id);
    }
    r->n_prompt_ids = n;
    return 0;
}

static int stop_of(const json_t *o, serve_request *r, serve_error *e) {
    const json_t *s = json_object_get(o, "stop");
    if (!s || json_is_null(s)) return 0;
    if (json_is_string(s)) {
        if (!json_string_length(s)) return BAD("stop", "stop is empty; give text or leave it out");
        r->n_stop = 1;
        return text_of(s, "stop", &r->stop[0], e);
    }
    if (!json_is_array(s)) return BAD("stop", "stop must be a string or a list of strings");
    if (json_array_size(s) > SERVE_MAX_STOP)
        return BAD("stop", "%zu stop strings; give at most %d", json_array_size(s), SERVE_MAX_STOP);
    size_t i;
    const json_t *v;
    json_array_foreach(s, i, v) {
        if (json_is_string(v) && !json_string_length(v))
            return BAD("stop", "stop[%zu] is empty; give text", i);
        int code = text_of(v, "stop", &r->stop[r->n_stop], e);
        if (code) return code;
        r->n_stop++;
    }
    return 0;
}

/* Fields OpenAI defines that ferrum does not do: refused by name rather than ignored, unless
 * their value asks for nothing (false, null, an empty list or object, best_of 1, "none"). */
static bool asks_for_something(const char *name, const json_t *v) {
    if (json_is_null(v) || json_is_false(v)) return false;
    if (json_is_integer(v)) return json_integer_value(v) != (strcmp(name, "best_of") == 0 ? 1 : 0);
    if (json_is_array(v)) return json_array_size(v) != 0;
    if (json_is_object(v)) return json_object_size(v) != 0;
    if (json_is_string(v)) return strcmp(json_string_value(v), "none") != 0;
    return true;
}

static int unsupported(const json_t *o, serve_error *e) {
    static const char *const fields[] = {"tools", "functions", "tool_choice", "response_format",
                                         "logit_bias", "suffix", "echo", "best_of"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const json_t *v = json_object_get(o, fields[i]);
        if (v && asks_for_something(fields[i], v))
            return BAD(fields[i], "%s is not supported by ferrum serve; leave it out", fields[i]);
    }
    return 0;
}

/* chat: "logprobs": true/false and "top_logprobs": 0..20; a completion: "logprobs": 0..5
 * (the top N; false or null: none) */
static int logprobs_of(const json_t *o, serve_kind kind, serve_request *r, serve_error *e) {
    const json_t *v = json_object_get(o, "logprobs");
    int64_t top = 0;
    int code;
    if (kind == SERVE_COMPLETION) {
        if (!v || json_is_null(v) || json_is_false(v)) return 0;
        if (!json_is_integer(v))
            return BAD("logprobs", "logprobs of a completion is the number of most likely tokens "
                       "to list at each step: give an integer in [0, %d]", SERVE_MAX_COMPLETION_LOGPROBS);
        if ((code = integer_in(o, "logprobs", 0, SERVE_MAX_COMPLETION_LOGPROBS, &top, e))) return code;
        r->logprobs = true;
        r->top_logprobs = (int)top;
        return 0;
    }
    if ((code = bool_of(o, "logprobs", &r->logprobs, e)) ||
        (code = integer_in(o, "top_logprobs", 0, SERVE_MAX_TOP_LOGPROBS, &top, e)))
        return code;
    if (top && !r->logprobs)
        return BAD("top_logprobs", "top_logprobs %lld asks for logprobs; give \"logprobs\": true "
                   "with it", (long long)top);
    r->top_logprobs = (int)top;
    return 0;
}

static int sampling_of(const json_t *o, serve_request *r, serve_error *e) {
    fe_lm_sampling *s = &r->sampling;
    double top_p = 1;
    int code;
    if ((code = number_in(o, "temperature", 0, 2, &s->temperature, e)) ||
        (code = number_in(o, "top_p", 0, 1, &top_p, e)) ||
        (code = number_in(o, "min_p", 0, 1, &s->min_p, e)) ||
        (code = number_in(o, "presence_penalty", -2, 2, &s->presence_penalty, e)) ||
        (code = number_in(o, "frequency_penalty", -2, 2, &s->frequency_penalty, e)) ||
        (code = number_in(o, "repeat_penalty", 1e-3, 100, &s->repeat_penalty, e)) ||
        (code = integer_in(o, "top_k", 0, 1 << 30, &s->top_k, e)) ||
        (code = integer_in(o, "repeat_last_n", -1, 1 << 30, &s->repeat_last_n, e)))
        return code;
    if (top_p == 0) return BAD("top_p", "top_p is 0; give a number in (0, 1] (1: off)");
    s->top_p = top_p;
    int64_t seed = -1;
    if ((code = integer_in(o, "seed", 0, (int64_t)1 << 53, &seed, e))) return code;
    r->seed_given = seed >= 0;
    s->seed = seed >= 0 ? (uint64_t)seed : 0;
    return 0;
}

static int fields_of(const json_t *o, serve_kind kind, serve_request *r, serve_error *e) {
    int code;
    const json_t *model = json_object_get(o, "model");
    if (!model) return BAD("model", "model is required; GET /v1/models lists the one served");
    if ((code = text_of(model, "model", &r->model, e))) return code;
    if ((code = unsupported(o, e))) return code;
    if ((code = kind == SERVE_CHAT ? messages_of(o, r, e) : prompt_of(o, r, e))) return code;
    if ((code = bool_of(o, "stream", &r->stream, e))) return code;
    const json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return BAD("stream_options", "stream_options must be an object");
        if ((code = bool_of(so, "include_usage", &r->include_usage, e))) return code;
    }
    if ((code = sampling_of(o, r, e))) return code;
    if ((code = logprobs_of(o, kind, r, e))) return code;
    int64_t max = -1, n = 1;
    if ((code = integer_in(o, "max_tokens", 0, INT32_MAX, &max, e)) ||
        (code = integer_in(o, "max_completion_tokens", 0, INT32_MAX, &max, e)) ||
        (code = integer_in(o, "n", 1, SERVE_MAX_N, &n, e)))
        return code;
    r->max_tokens = max;
    r->n = (int)n;
    return stop_of(o, r, e);
}

int serve_request_parse(const char *body, size_t len, serve_kind kind, serve_request *r,
                        serve_error *e) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->sampling = fe_lm_sampling_default();
    r->max_tokens = -1;
    r->n = 1;
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return BAD(NULL, "the body is not valid JSON (%s, at line %d column %d); send a JSON "
                   "object in UTF-8", jerr.text, jerr.line, jerr.column);
    int code = json_is_object(o) ? fields_of(o, kind, r, e)
                                 : BAD(NULL, "the body must be a JSON object");
    json_decref(o);
    return code;
}

void serve_request_free(serve_request *r) {
    free(r->model);
    for (int i = 0; i < r->n_messages; i++) free((char *)r->messages[i].content);
    free(r->messages);
    free(r->prompt);
    free(r->prompt_ids);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}
