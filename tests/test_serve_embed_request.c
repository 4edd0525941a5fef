/* tests/test_serve_embed_request.c: `ferrum serve`'s embeddings request parser and answer,
 * without a model or a socket: `input` in OpenAI's four forms lands as texts or token-id lists;
 * encoding_format and dimensions are read; empty inputs, mixed lists, wrong types, too many
 * inputs and bad formats are refused with a 400 naming the field; the answer holds each
 * float32 exactly, as JSON numbers and as base64 of little-endian bytes. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../apps/serve/embed_request.h"
#include "../apps/serve/reply.h"

static int parse(const char *body, size_t max_inputs, serve_embed_request *r, serve_error *e) {
    memset(e, 0, sizeof *e);
    return serve_embed_request_parse(body, strlen(body), max_inputs, r, e);
}

static void refused(const char *body, const char *param, const char *words) {
    serve_embed_request r;
    serve_error e;
    int code = parse(body, 4, &r, &e);
    if (code != 400 || (param && strcmp(e.param, param) != 0) || !strstr(e.message, words))
        fail_msg("body %s: status %d, param \"%s\", message \"%s\"; wanted 400, \"%s\", \"%s\"",
                 body, code, e.param, e.message, param ? param : "", words);
    assert_string_equal(e.type, "invalid_request_error");
    serve_embed_request_free(&r);
}

static void input_takes_a_string_strings_ids_or_id_lists(void **state) {
    (void)state;
    serve_embed_request r;
    serve_error e;
    assert_int_equal(parse("{\"model\": \"m\", \"input\": \"a cat\"}", 4, &r, &e), 0);
    assert_string_equal(r.model, "m");
    assert_int_equal(r.n, 1);
    assert_non_null(r.texts);
    assert_null(r.ids);
    assert_string_equal(r.texts[0], "a cat");
    assert_false(r.base64);
    assert_int_equal(r.dimensions, 0);
    serve_embed_request_free(&r);

    assert_int_equal(parse("{\"model\": \"m\", \"input\": [\"a\", \"b c\"], \"encoding_format\": "
                           "\"base64\", \"dimensions\": 128, \"user\": \"x\"}", 4, &r, &e), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.texts[1], "b c");
    assert_true(r.base64);
    assert_int_equal(r.dimensions, 128);
    serve_embed_request_free(&r);

    assert_int_equal(parse("{\"model\": \"m\", \"input\": [101, 7, 102]}", 4, &r, &e), 0);
    assert_int_equal(r.n, 1);
    assert_null(r.texts);
    assert_int_equal(r.n_ids[0], 3);
    assert_int_equal(r.ids[0][1], 7);
    serve_embed_request_free(&r);

    assert_int_equal(parse("{\"model\": \"m\", \"input\": [[1, 2], [3]], \"encoding_format\": "
                           "\"float\"}", 4, &r, &e), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.n_ids[0], 2);
    assert_int_equal(r.n_ids[1], 1);
    assert_int_equal(r.ids[1][0], 3);
    assert_false(r.base64);
    serve_embed_request_free(&r);
}

static void bad_inputs_are_refused_by_name(void **state) {
    (void)state;
    refused("{\"model\": \"m\", \"input\": \"a\"", NULL, "not valid JSON");
    refused("[1]", NULL, "JSON object");
    refused("{\"model\": \"m\", \"input\": \"\\xff\"}", NULL, "not valid JSON");
    refused("{\"input\": \"a\"}", "model", "model is required");
    refused("{\"model\": 3, \"input\": \"a\"}", "model", "string");
    refused("{\"model\": \"m\"}", "input", "input is required");
    refused("{\"model\": \"m\", \"input\": \"\"}", "input", "empty string");
    refused("{\"model\": \"m\", \"input\": []}", "input", "empty list");
    refused("{\"model\": \"m\", \"input\": [\"a\", \"\"]}", "input", "input[1] is an empty string");
    refused("{\"model\": \"m\", \"input\": [\"a\", [1]]}", "input", "not a mix");
    refused("{\"model\": \"m\", \"input\": [[1], \"a\"]}", "input", "not a mix");
    refused("{\"model\": \"m\", \"input\": [[1], []]}", "input", "empty token list");
    refused("{\"model\": \"m\", \"input\": [1, -2]}", "input", "not a token id");
    refused("{\"model\": \"m\", \"input\": [1, 2.5]}", "input", "not a token id");
    refused("{\"model\": \"m\", \"input\": [[4294967296]]}", "input", "not a token id");
    refused("{\"model\": \"m\", \"input\": 7}", "input", "must be a string");
    refused("{\"model\": \"m\", \"input\": [true]}", "input", "neither a string");
    refused("{\"model\": \"m\", \"input\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}", "input",
            "at most 4 per request");
    refused("{\"model\": \"m\", \"input\": \"a\", \"encoding_format\": \"int8\"}", "encoding_format",
            "\"float\" or \"base64\"");
    refused("{\"model\": \"m\", \"input\": \"a\", \"dimensions\": 0}", "dimensions", ">= 1");
    refused("{\"model\": \"m\", \"input\": \"a\", \"dimensions\": \"64\"}", "dimensions", ">= 1");
}

static float float_of_le(const unsigned char *b) {
    uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &w, 4);
    return f;
}

/* standard base64 (with padding) back to bytes; the count */
static size_t unbase64(const char *s, unsigned char *out) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = 0, len = strlen(s);
    assert_int_equal(len % 4, 0);
    for (size_t i = 0; i < len; i += 4) {
        uint32_t w = 0;
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            const char *d = s[i + k] == '=' ? NULL : strchr(digits, s[i + k]);
            if (!d) pad++;
            w = w << 6 | (uint32_t)(d ? d - digits : 0);
        }
        out[n++] = (unsigned char)(w >> 16);
        if (pad < 2) out[n++] = (unsigned char)(w >> 8);
        if (pad < 1) out[n++] = (unsigned char)w;
    }
    return n;
}

static void the_answer_holds_every_float_exactly_as_numbers_and_base64(void **state) {
    (void)state;
    /* 2 vectors of 5: values whose shortest decimal needs all 9 digits, and the extremes */
    const float v[10] = {0.1f, -1.0f / 3.0f, 1e-38f, 3.4e38f, 0.0f, 1.0f, -0.0f, 7.0e-3f,
                         0.33333334f, 123456.789f};
    for (int b64 = 0; b64 < 2; b64++) {
        char *s = reply_embeddings("m", v, 2, 5, b64, 17);
        assert_non_null(s);
        json_error_t je;
        json_t *o = json_loads(s, 0, &je);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "object")), "list");
        assert_string_equal(json_string_value(json_object_get(o, "model")), "m");
        json_t *u = json_object_get(o, "usage");
        assert_int_equal(json_integer_value(json_object_get(u, "prompt_tokens")), 17);
        assert_int_equal(json_integer_value(json_object_get(u, "total_tokens")), 17);
        json_t *data = json_object_get(o, "data");
        assert_int_equal(json_array_size(data), 2);
        for (size_t i = 0; i < 2; i++) {
            json_t *d = json_array_get(data, i);
            assert_string_equal(json_string_value(json_object_get(d, "object")), "embedding");
            assert_int_equal(json_integer_value(json_object_get(d, "index")), (json_int_t)i);
            json_t *emb = json_object_get(d, "embedding");
            float got[5];
            if (b64) {
                unsigned char bytes[32];
                assert_int_equal(unbase64(json_string_value(emb), bytes), 20);
                for (int k = 0; k < 5; k++) got[k] = float_of_le(bytes + 4 * k);
            } else {
                assert_int_equal(json_array_size(emb), 5);
                for (int k = 0; k < 5; k++) got[k] = (float)json_number_value(json_array_get(emb, (size_t)k));
            }
            assert_memory_equal(got, v + 5 * i, sizeof got);
        }
        json_decref(o);
        free(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(input_takes_a_string_strings_ids_or_id_lists),
        cmocka_unit_test(bad_inputs_are_refused_by_name),
        cmocka_unit_test(the_answer_holds_every_float_exactly_as_numbers_and_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
