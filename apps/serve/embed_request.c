/* apps/serve/embed_request.c: the embeddings request parser (embed_request.h). jansson reads
 * the JSON (and refuses bytes that are not UTF-8); `input` takes OpenAI's four forms (a
 * string, a list of strings, a list of token ids, a list of such lists), and every refusal
 * names the field, the rule and the fix, in OpenAI's error shape. */
#include "embed_request.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define BAD(param, ...) serve_error_set(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)
#define OOM() serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory")

static int text_at(serve_embed_request *r, size_t i, const json_t *v, serve_error *e) {
    if (!json_is_string(v))
        return BAD("input", "input[%zu] is not a string; give a list of strings, or of token-id "
                   "lists, not a mix", i);
    size_t n = json_string_length(v);
    if (n == 0) return BAD("input", "input[%zu] is an empty string; give some text", i);
    if (!(r->texts[i] = malloc(n + 1))) return OOM();
    memcpy(r->texts[i], json_string_value(v), n + 1); /* no NUL inside: json_loadb refuses \u0000 */
    return 0;
}

static int ids_at(serve_embed_request *r, size_t i, const json_t *list, serve_error *e) {
    if (!json_is_array(list))
        return BAD("input", "input[%zu] is not a list of token ids; give a list of strings, or "
                   "of token-id lists, not a mix", i);
    size_t n = json_array_size(list);
    if (n == 0) return BAD("input", "input[%zu] is an empty token list; give at least one id", i);
    if (!(r->ids[i] = malloc(n * sizeof *r->ids[i]))) return OOM();
    r->n_ids[i] = n;
    for (size_t k = 0; k < n; k++) {
        const json_t *id = json_array_get(list, k);
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
            return BAD("input", "input[%zu][%zu] is not a token id (an integer >= 0)", i, k);
        r->ids[i][k] = (int32_t)json_integer_value(id);
    }
    return 0;
}

/* "input": "text" | ["text", ...] | [id, ...] | [[id, ...], ...] */
static int inputs_of(const json_t *o, size_t max_inputs, serve_embed_request *r, serve_error *e) {
    const json_t *in = json_object_get(o, "input");
    if (!in || json_is_null(in))
        return BAD("input", "input is required: a string, a list of strings, or token ids");
    if (json_is_string(in)) {
        if (!(r->texts = calloc(1, sizeof *r->texts))) return OOM();
        r->n = 1;
        return text_at(r, 0, in, e);
    }
    if (!json_is_array(in))
        return BAD("input", "input must be a string, a list of strings, a list of token ids or a "
                   "list of token-id lists");
    size_t n = json_array_size(in);
    if (n == 0) return BAD("input", "input is an empty list; give at least one input");
    const json_t *first = json_array_get(in, 0);
    if (json_is_integer(first)) { /* one token-id list */
        if (!(r->ids = calloc(1, sizeof *r->ids)) || !(r->n_ids = calloc(1, sizeof *r->n_ids))) return OOM();
        r->n = 1;
        return ids_at(r, 0, in, e);
    }
    if (n > max_inputs)
        return BAD("input", "input holds %zu inputs; this server embeds at most %zu per request "
                   "(--max-embedding-inputs); send them in parts", n, max_inputs);
    bool text = json_is_string(first);
    if (!text && !json_is_array(first))
        return BAD("input", "input[0] is neither a string nor a list of token ids");
    if (text ? !(r->texts = calloc(n, sizeof *r->texts))
             : (!(r->ids = calloc(n, sizeof *r->ids)) || !(r->n_ids = calloc(n, sizeof *r->n_ids))))
        return OOM();
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        int code = text ? text_at(r, i, json_array_get(in, i), e) : ids_at(r, i, json_array_get(in, i), e);
        if (code) return code;
    }
    return 0;
}

static int fields_of(const json_t *o, size_t max_inputs, serve_embed_request *r, serve_error *e) {
    const json_t *model = json_object_get(o, "model");
    if (!model) return BAD("model", "model is required; GET /v1/models lists the ones served");
    if (!json_is_string(model)) return BAD("model", "model must be a string");
    if (!(r->model = strdup(json_string_value(model)))) return OOM();
    const json_t *fmt = json_object_get(o, "encoding_format");
    if (fmt && !json_is_null(fmt)) {
        const char *f = json_is_string(fmt) ? json_string_value(fmt) : "";
        if (strcmp(f, "base64") != 0 && strcmp(f, "float") != 0)
            return BAD("encoding_format", "encoding_format must be \"float\" or \"base64\"");
        r->base64 = strcmp(f, "base64") == 0;
    }
    const json_t *dims = json_object_get(o, "dimensions");
    if (dims && !json_is_null(dims)) {
        if (!json_is_integer(dims) || json_integer_value(dims) < 1 || json_integer_value(dims) > INT32_MAX)
            return BAD("dimensions", "dimensions must be an integer >= 1 (the width to keep)");
        r->dimensions = json_integer_value(dims);
    }
    return inputs_of(o, max_inputs, r, e);
}

int serve_embed_request_parse(const char *body, size_t len, size_t max_inputs,
                              serve_embed_request *r, serve_error *e) {
    memset(r, 0, sizeof *r);
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return BAD(NULL, "the body is not valid JSON (%s, at line %d column %d); send a JSON "
                   "object in UTF-8", jerr.text, jerr.line, jerr.column);
    int code = json_is_object(o) ? fields_of(o, max_inputs, r, e)
                                 : BAD(NULL, "the body must be a JSON object");
    json_decref(o);
    return code;
}

void serve_embed_request_free(serve_embed_request *r) {
    free(r->model);
    for (size_t i = 0; i < r->n; i++) {
        if (r->texts) free(r->texts[i]);
        if (r->ids) free(r->ids[i]);
    }
    free(r->texts);
    free(r->ids);
    free(r->n_ids);
    memset(r, 0, sizeof *r);
}
