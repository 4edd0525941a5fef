/* tests/test_serve_request.c: `ferrum serve`'s request parser and answer shapes, without a
 * model or a socket: every OpenAI field lands where it should; malformed JSON, wrong types,
 * out-of-range values, empty messages, invalid UTF-8, NUL inside text and fields ferrum does
 * not do are refused with a 400 naming the field; the answers (whole, chunk, error, models)
 * are OpenAI's shapes; the metrics render as Prometheus text. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../apps/serve/metrics.h"
#include "../apps/serve/reply.h"
#include "../apps/serve/request.h"

static int parse(const char *body, serve_kind kind, serve_request *r, serve_error *e) {
    memset(e, 0, sizeof *e);
    return serve_request_parse(body, strlen(body), kind, r, e);
}

/* The body is refused with 400, naming `param` (NULL: none) and saying `words`. */
static void refused(const char *body, serve_kind kind, const char *param, const char *words) {
    serve_request r;
    serve_error e;
    int code = parse(body, kind, &r, &e);
    if (code != 400 || (param && strcmp(e.param, param) != 0) || !strstr(e.message, words))
        fail_msg("body %s: status %d, param \"%s\", message \"%s\"; wanted 400, \"%s\", \"%s\"",
                 body, code, e.param, e.message, param ? param : "", words);
    assert_string_equal(e.type, "invalid_request_error");
    serve_request_free(&r);
}

static void chat_fields_land_where_they_should(void **state) {
    (void)state;
    serve_request r;
    serve_error e;
    const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \"},{\"type\":\"text\","
        "\"text\":\"there\"}]}],\"stream\":true,\"stream_options\":{\"include_usage\":true},"
        "\"temperature\":0.7,\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,\"seed\":7,"
        "\"max_tokens\":16,\"stop\":[\"\\n\",\"END\"],\"presence_penalty\":0.5,"
        "\"frequency_penalty\":0.25,\"repeat_penalty\":1.1,\"n\":2,\"user\":\"ignored\"}";
    assert_int_equal(parse(body, SERVE_CHAT, &r, &e), 0);
    assert_string_equal(r.model, "m");
    assert_int_equal(r.n_messages, 2);
    assert_string_equal(r.messages[0].role, "system"); /* developer is the system's new name */
    assert_string_equal(r.messages[1].content, "Hi there");
    assert_true(r.stream && r.include_usage && r.seed_given);
    assert_true(r.sampling.temperature == 0.7 && r.sampling.top_p == 0.9 && r.sampling.min_p == 0.05);
    assert_int_equal(r.sampling.top_k, 40);
    assert_int_equal(r.sampling.seed, 7);
    assert_true(r.sampling.presence_penalty == 0.5 && r.sampling.frequency_penalty == 0.25);
    assert_true(r.sampling.repeat_penalty == 1.1);
    assert_int_equal(r.max_tokens, 16);
    assert_int_equal(r.n_stop, 2);
    assert_string_equal(r.stop[1], "END");
    assert_int_equal(r.n, 2);
    serve_request_free(&r);
}

static void defaults_are_greedy_one_choice_no_limit(void **state) {
    (void)state;
    serve_request r;
    serve_error e;
    assert_int_equal(parse("{\"model\":\"m\",\"prompt\":\"Once\"}", SERVE_COMPLETION, &r, &e), 0);
    assert_string_equal(r.prompt, "Once");
    assert_true(r.sampling.temperature == 0 && r.sampling.top_p == 1 && !r.seed_given && !r.stream);
    assert_int_equal(r.max_tokens, -1);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.n_stop, 0);
    serve_request_free(&r);
}

static void completion_prompt_takes_text_one_string_list_or_ids(void **state) {
    (void)state;
    serve_request r;
    serve_error e;
    assert_int_equal(parse("{\"model\":\"m\",\"prompt\":[\"Once\"],\"stop\":\"x\"}", SERVE_COMPLETION, &r, &e), 0);
    assert_string_equal(r.prompt, "Once");
    assert_int_equal(r.n_stop, 1);
    serve_request_free(&r);
    assert_int_equal(parse("{\"model\":\"m\",\"prompt\":[1,22,333],\"max_completion_tokens\":5}",
                           SERVE_COMPLETION, &r, &e), 0);
    assert_null(r.prompt);
    assert_int_equal(r.n_prompt_ids, 3);
    assert_int_equal(r.prompt_ids[2], 333);
    assert_int_equal(r.max_tokens, 5);
    serve_request_free(&r);
}

static void malformed_bodies_are_refused_by_name(void **state) {
    (void)state;
    refused("", SERVE_CHAT, NULL, "not valid JSON");
    refused("{\"model\":\"m\",", SERVE_CHAT, NULL, "not valid JSON");
    refused("[1,2]", SERVE_CHAT, NULL, "must be a JSON object");
    refused("{\"model\":\"m\",\"model\":\"n\",\"prompt\":\"a\"}", SERVE_COMPLETION, NULL, "not valid JSON");
    refused("{\"model\":\"m\",\"prompt\":\"\xc3\x28\"}", SERVE_COMPLETION, NULL, "UTF-8");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", SERVE_CHAT, "model", "model is required");
    refused("{\"model\":7,\"prompt\":\"a\"}", SERVE_COMPLETION, "model", "must be a string");
    refused("{\"model\":\"m\"}", SERVE_CHAT, "messages", "messages is required");
    refused("{\"model\":\"m\",\"messages\":[]}", SERVE_CHAT, "messages", "empty");
    refused("{\"model\":\"m\",\"messages\":{}}", SERVE_CHAT, "messages", "must be an array");
    refused("{\"model\":\"m\",\"messages\":[\"hi\"]}", SERVE_CHAT, "messages", "must be an object");
    refused("{\"model\":\"m\",\"messages\":[{\"role\":\"robot\",\"content\":\"a\"}]}", SERVE_CHAT,
            "messages.role", "give system");
    refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}", SERVE_CHAT, "messages.content", "no content");
    refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}", SERVE_CHAT,
            "messages.content", "string or an array");
    refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
            SERVE_CHAT, "messages.content", "text only");
    refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}", SERVE_CHAT,
            NULL, "\\u0000 is not allowed");
    refused("{\"model\":\"m\"}", SERVE_COMPLETION, "prompt", "prompt is required");
    refused("{\"model\":\"m\",\"prompt\":\"\"}", SERVE_COMPLETION, "prompt", "empty");
    refused("{\"model\":\"m\",\"prompt\":[]}", SERVE_COMPLETION, "prompt", "nonempty list");
    refused("{\"model\":\"m\",\"prompt\":[1,-2]}", SERVE_COMPLETION, "prompt", "not a token id");
    refused("{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}", SERVE_COMPLETION, "prompt", "one prompt per request");
}

static void out_of_range_fields_name_their_range(void **state) {
    (void)state;
    const char *p = "{\"model\":\"m\",\"prompt\":\"a\",";
    char body[256];
    struct { const char *field, *param, *words; } cases[] = {
        {"\"temperature\":2.5}", "temperature", "[0, 2]"},
        {"\"temperature\":\"hot\"}", "temperature", "must be a number"},
        {"\"top_p\":0}", "top_p", "(0, 1]"},
        {"\"top_p\":1.5}", "top_p", "[0, 1]"},
        {"\"min_p\":-0.1}", "min_p", "[0, 1]"},
        {"\"top_k\":-1}", "top_k", "integer in [0"},
        {"\"top_k\":1.5}", "top_k", "must be an integer"},
        {"\"presence_penalty\":3}", "presence_penalty", "[-2, 2]"},
        {"\"frequency_penalty\":-3}", "frequency_penalty", "[-2, 2]"},
        {"\"seed\":-1}", "seed", "integer in [0"},
        {"\"seed\":9007199254740993}", "seed", "9007199254740992"},
        {"\"max_tokens\":-5}", "max_tokens", "integer in [0"},
        {"\"n\":0}", "n", "[1, 8]"},
        {"\"n\":9}", "n", "[1, 8]"},
        {"\"stream\":1}", "stream", "true or false"},
        {"\"stream_options\":[]}", "stream_options", "object"},
        {"\"stop\":5}", "stop", "string or a list"},
        {"\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop", "at most 4"},
        {"\"stop\":[\"\"]}", "stop", "empty"},
        {"\"stop\":[3]}", "stop", "must be a string"},
        {"\"tools\":[{\"type\":\"function\"}]}", "tools", "not supported"},
        {"\"logprobs\":true}", "logprobs", "integer in [0, 5]"},
        {"\"logprobs\":6}", "logprobs", "[0, 5]"},
        {"\"logit_bias\":{\"1\":5}}", "logit_bias", "not supported"},
        {"\"best_of\":2}", "best_of", "not supported"},
        {"\"response_format\":{\"type\":\"json_object\"}}", "response_format", "not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "%s%s", p, cases[i].field);
        refused(body, SERVE_COMPLETION, cases[i].param, cases[i].words);
    }
    serve_request r;
    serve_error e;
    /* fields that ask for nothing pass */
    snprintf(body, sizeof body, "%s%s", p, "\"tools\":[],\"logprobs\":false,\"best_of\":1,\"logit_bias\":{}}");
    assert_int_equal(parse(body, SERVE_COMPLETION, &r, &e), 0);
    serve_request_free(&r);
}

static void logprobs_are_read_for_chat_and_completions(void **state) {
    (void)state;
    serve_request r;
    serve_error e;
    const char *chat = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],";
    const char *completion = "{\"model\":\"m\",\"prompt\":\"a\",";
    char body[256];
    snprintf(body, sizeof body, "%s%s", chat, "\"logprobs\":true,\"top_logprobs\":20}");
    assert_int_equal(parse(body, SERVE_CHAT, &r, &e), 0);
    assert_true(r.logprobs);
    assert_int_equal(r.top_logprobs, 20);
    serve_request_free(&r);
    snprintf(body, sizeof body, "%s%s", chat, "\"logprobs\":true}");
    assert_int_equal(parse(body, SERVE_CHAT, &r, &e), 0);
    assert_true(r.logprobs);
    assert_int_equal(r.top_logprobs, 0);
    serve_request_free(&r);
    snprintf(body, sizeof body, "%s%s", completion, "\"logprobs\":3}");
    assert_int_equal(parse(body, SERVE_COMPLETION, &r, &e), 0);
    assert_true(r.logprobs);
    assert_int_equal(r.top_logprobs, 3);
    serve_request_free(&r);
    snprintf(body, sizeof body, "%s%s", completion, "\"logprobs\":null}");
    assert_int_equal(parse(body, SERVE_COMPLETION, &r, &e), 0);
    assert_false(r.logprobs);
    serve_request_free(&r);
    snprintf(body, sizeof body, "%s%s", chat, "\"top_logprobs\":2}");
    refused(body, SERVE_CHAT, "top_logprobs", "\"logprobs\": true");
    snprintf(body, sizeof body, "%s%s", chat, "\"logprobs\":true,\"top_logprobs\":21}");
    refused(body, SERVE_CHAT, "top_logprobs", "[0, 20]");
    snprintf(body, sizeof body, "%s%s", chat, "\"logprobs\":2}");
    refused(body, SERVE_CHAT, "logprobs", "true or false");
}

static json_t *loads(char *s) {
    assert_non_null(s);
    json_error_t e;
    json_t *o = json_loads(s, 0, &e);
    if (!o) fail_msg("not JSON (%s): %s", e.text, s);
    free(s);
    return o;
}

static void answers_have_openai_shapes(void **state) {
    (void)state;
    reply_head h = {SERVE_CHAT, "chatcmpl-1", 1700000000, "m"};
    reply_choice c[2] = {{"Hello \xe4 world", 13, "stop", NULL}, {"x", 1, "length", NULL}};
    reply_usage u = {5, 3, 2};
    json_t *o = loads(reply_whole(&h, c, 2, &u));
    assert_string_equal(json_string_value(json_object_get(o, "object")), "chat.completion");
    json_t *ch = json_array_get(json_object_get(o, "choices"), 0);
    /* the byte cut from a character becomes U+FFFD */
    assert_string_equal(json_string_value(json_object_get(json_object_get(ch, "message"), "content")),
                        "Hello \xef\xbf\xbd world");
    assert_string_equal(json_string_value(json_object_get(ch, "finish_reason")), "stop");
    json_t *usage = json_object_get(o, "usage");
    assert_int_equal(json_integer_value(json_object_get(usage, "total_tokens")), 8);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(usage, "prompt_tokens_details"),
                                                        "cached_tokens")), 2);
    json_decref(o);

    o = loads(reply_chunk(&h, 1, "", 0, 1, NULL, NULL));
    assert_string_equal(json_string_value(json_object_get(o, "object")), "chat.completion.chunk");
    ch = json_array_get(json_object_get(o, "choices"), 0);
    assert_int_equal(json_integer_value(json_object_get(ch, "index")), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ch, "delta"), "role")), "assistant");
    assert_true(json_is_null(json_object_get(ch, "finish_reason")));
    json_decref(o);

    h.kind = SERVE_COMPLETION;
    o = loads(reply_chunk(&h, 0, "ab", 2, 0, "length", NULL));
    assert_string_equal(json_string_value(json_object_get(o, "object")), "text_completion");
    ch = json_array_get(json_object_get(o, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(ch, "text")), "ab");
    assert_string_equal(json_string_value(json_object_get(ch, "finish_reason")), "length");
    json_decref(o);

    o = loads(reply_usage_chunk(&h, &u));
    assert_int_equal(json_array_size(json_object_get(o, "choices")), 0);
    json_decref(o);

    serve_error e;
    serve_error_set(&e, 404, "invalid_request_error", "model", "model_not_found", "no \"%s\"", "x");
    o = loads(reply_error(&e));
    json_t *err = json_object_get(o, "error");
    assert_string_equal(json_string_value(json_object_get(err, "message")), "no \"x\"");
    assert_string_equal(json_string_value(json_object_get(err, "param")), "model");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "model_not_found");
    json_decref(o);
    serve_error_set(&e, 400, "invalid_request_error", NULL, NULL, "bad");
    o = loads(reply_error(&e));
    assert_true(json_is_null(json_object_get(json_object_get(o, "error"), "param")));
    json_decref(o);

    const char *names[] = {"m", "e"};
    o = loads(reply_models(names, 2, 5));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "data"), 0), "id")), "m");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "data"), 1), "id")), "e");
    json_decref(o);
}

static void metrics_render_as_prometheus_text(void **state) {
    (void)state;
    serve_metrics m;
    metrics_init(&m, 4);
    metrics_request(&m, "/v1/completions", 200);
    metrics_request(&m, "/v1/completions", 200);
    metrics_request(&m, "/v1/completions", 400);
    metrics_generation(&m, 10, 4, 9, 0.2, 0.8);
    metrics_gauges(&m, 3, 2);
    char *t = metrics_render(&m);
    assert_non_null(t);
    assert_non_null(strstr(t, "ferrum_requests_total{route=\"/v1/completions\",status=\"200\"} 2\n"));
    assert_non_null(strstr(t, "ferrum_requests_total{route=\"/v1/completions\",status=\"400\"} 1\n"));
    assert_non_null(strstr(t, "ferrum_completion_tokens_total 9\n"));
    assert_non_null(strstr(t, "ferrum_prompt_tokens_cached_total 4\n"));
    assert_non_null(strstr(t, "ferrum_queue_depth 3\n"));
    assert_non_null(strstr(t, "ferrum_time_to_first_token_seconds_bucket{le=\"0.1\"} 0\n"));
    assert_non_null(strstr(t, "ferrum_time_to_first_token_seconds_bucket{le=\"0.25\"} 1\n"));
    assert_non_null(strstr(t, "ferrum_time_to_first_token_seconds_count 1\n"));
    assert_non_null(strstr(t, "ferrum_decode_tokens_per_second 10\n")); /* 8 tokens in 0.8 s */
    free(t);
    metrics_deinit(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chat_fields_land_where_they_should),
        cmocka_unit_test(defaults_are_greedy_one_choice_no_limit),
        cmocka_unit_test(completion_prompt_takes_text_one_string_list_or_ids),
        cmocka_unit_test(malformed_bodies_are_refused_by_name),
        cmocka_unit_test(out_of_range_fields_name_their_range),
        cmocka_unit_test(logprobs_are_read_for_chat_and_completions),
        cmocka_unit_test(answers_have_openai_shapes),
        cmocka_unit_test(metrics_render_as_prometheus_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
