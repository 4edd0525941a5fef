/* tests/test_chat_template.c: chat templates (src/lm/tokenizer/chat_template.c) and `ferrum generate
 * --chat` choosing one. Real templates (SmolLM2's as its GGUF carries it, Qwen2.5's with
 * escaped newlines, Llama 3's and Llama 3.1's) are recognised, with the default system
 * prompt read where the template spells one out; other templates (Gemma, Mistral, both
 * marker sets at once) are unknown; one user turn formats exactly as the templates write
 * it; malformed tokenizer_config.json files (bad JSON, chat_template of the wrong type, a
 * list without a default) are clear errors; failed allocations are FE_E_NOMEM; and the
 * CLI says which template it used, or why it used none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../apps/ferrum/cli.h"
#include "core/alloc.h"
#include "lm/tokenizer/chat_template.h"
#include "lm/format/gguf.h"
#include "lm/model/weights_safetensors_write.h"
#include "support/cli_run.h"
#include "support/lm_fixtures.h"
#include "support/tiny_llama.h"

/* SmolLM2-135M-Instruct's tokenizer.chat_template, byte for byte from its GGUF. */
static const char smollm2[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

/* Qwen2.5-Instruct's, as Jinja source (escaped newlines, a system turn built from a variable
 * before the literal default). */
static const char qwen[] =
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "{%- else %}\n"
    "    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + "
    "message.content + '<|im_end|>' + '\\n' }}{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}\n";

/* Meta-Llama-3-8B-Instruct's. */
static const char llama3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

/* The system preamble of Llama 3.1's: built from variables, so no default is claimed. */
static const char llama31[] =
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}{{- \"Cutting Knowledge Date: "
    "December 2023\\n\" }}{{- \"Today Date: \" + date_string + \"\\n\\n\" }}{{- system_message }}"
    "{{- \"<|eot_id|>\" }}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    "+ message['content'] | trim + '<|eot_id|>' }}";

static const char gemma[] =
    "{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + role + '\n' + "
    "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{'<start_of_turn>model\n'}}{% endif %}";

static const char mistral[] =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + "
    "eos_token}}{% endif %}{% endfor %}";

static void recognise(const char *text, fe_chat_format want, const char *want_system) {
    fe_chat_template t;
    fe_error err = {0};
    assert_int_equal(fe_chat_template_recognize(text, strlen(text), &t, &err), FE_OK);
    assert_int_equal(t.format, want);
    if (want_system) assert_string_equal(t.default_system, want_system);
    else assert_null(t.default_system);
    fe_chat_template_deinit(&t);
}

static void known_templates_are_recognised_with_their_default_system_prompt(void **s) {
    (void)s;
    recognise(smollm2, FE_CHAT_CHATML, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    recognise(qwen, FE_CHAT_CHATML, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    recognise(llama3, FE_CHAT_LLAMA3, NULL);
    recognise(llama31, FE_CHAT_LLAMA3, NULL);
    /* a literal default with escapes and the other quote inside */
    recognise("\"<|im_start|>system\\nIt's \\\"fine\\\".\\tOk<|im_end|>\"", FE_CHAT_CHATML,
              "It's \"fine\".\tOk");
    /* a literal that ends before the end marker is no default */
    recognise("'<|im_start|>system\n' + sys + '<|im_end|>'", FE_CHAT_CHATML, NULL);
    recognise("'<|im_start|>system\n{{ sys }}<|im_end|>'", FE_CHAT_CHATML, NULL);
    recognise("'<|im_start|>system\n<|im_end|>'", FE_CHAT_CHATML, NULL);   /* empty */
    recognise("<|im_start|>system\nHi<|im_end|>", FE_CHAT_CHATML, NULL);   /* not in quotes */
    recognise("'<|im_start|>systemHi<|im_end|>'", FE_CHAT_CHATML, NULL);   /* no newline */
    recognise("<|im_end|>'<|im_start|>system\nno end", FE_CHAT_CHATML, NULL);
    recognise("<|im_end|>'<|im_start|>system\nHi\\", FE_CHAT_CHATML, NULL); /* a lone escape at the end */
}

/* Gemma: no system turn (the system prompt opens the first user turn), "model" for the
 * assistant, contents trimmed, and the model's header after the last turn */
static void gemma_turns_carry_the_system_prompt_in_the_first_user_turn(void **s) {
    (void)s;
    recognise(gemma, FE_CHAT_GEMMA, NULL);
    fe_chat_template t = {FE_CHAT_GEMMA, NULL};
    fe_chat_message msgs[] = {{"system", "Be brief. "}, {"user", " Hi\n"}, {"assistant", "Hello."},
                              {"user", "Capital of France?"}};
    char *out = NULL;
    fe_error err;
    assert_int_equal(fe_chat_template_apply_messages(&t, msgs, 4, true, &out, &err), FE_OK);
    assert_string_equal(out, "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
                             "<start_of_turn>model\nHello.<end_of_turn>\n"
                             "<start_of_turn>user\nCapital of France?<end_of_turn>\n"
                             "<start_of_turn>model\n");
    fe_free(out);
    assert_int_equal(fe_chat_template_apply(&t, NULL, "Hi", &out, &err), FE_OK);
    assert_string_equal(out, "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
    fe_free(out);
    fe_chat_message late[] = {{"user", "a"}, {"system", "b"}};
    assert_int_equal(fe_chat_template_apply_messages(&t, late, 2, true, &out, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "system"));
    assert_string_equal(fe_chat_end_marker(FE_CHAT_GEMMA), "<end_of_turn>");
    assert_string_equal(fe_chat_start_marker(FE_CHAT_GEMMA), "<start_of_turn>");
}

static void other_templates_are_unknown(void **s) {
    (void)s;
    recognise(mistral, FE_CHAT_UNKNOWN, NULL);
    recognise("", FE_CHAT_UNKNOWN, NULL);
    recognise("<|im_start|> only, no end", FE_CHAT_UNKNOWN, NULL);
    recognise("<|start_header_id|><|end_header_id|> but no eot", FE_CHAT_UNKNOWN, NULL);
    /* both marker sets: ambiguous, so not claimed */
    recognise("<|im_start|><|im_end|><|start_header_id|><|end_header_id|><|eot_id|>", FE_CHAT_UNKNOWN, NULL);
    fe_chat_template t;
    assert_int_equal(fe_chat_template_recognize(NULL, 0, &t, NULL), FE_OK);
    assert_int_equal(t.format, FE_CHAT_UNKNOWN);
    /* bytes that are not text do not matter */
    static const char bin[] = "\0\xff<|im_start|>\0<|im_end|>\xfe";
    assert_int_equal(fe_chat_template_recognize(bin, sizeof bin - 1, &t, NULL), FE_OK);
    assert_int_equal(t.format, FE_CHAT_CHATML);
    fe_chat_template_deinit(&t);
    assert_string_equal(fe_chat_format_name(FE_CHAT_UNKNOWN), "unknown");
    assert_string_equal(fe_chat_format_name((fe_chat_format)99), "unknown");
    assert_null(fe_chat_end_marker(FE_CHAT_UNKNOWN));
    assert_null(fe_chat_start_marker(FE_CHAT_UNKNOWN));
}

static char *apply(const char *text, const char *system, const char *user) {
    fe_chat_template t;
    fe_error err = {0};
    char *out = NULL;
    assert_int_equal(fe_chat_template_recognize(text, strlen(text), &t, &err), FE_OK);
    assert_int_equal(fe_chat_template_apply(&t, system, user, &out, &err), FE_OK);
    fe_chat_template_deinit(&t);
    return out;
}

static void a_user_turn_formats_as_the_template_writes_it(void **s) {
    (void)s;
    char *p = apply(smollm2, NULL, "Hi!");
    assert_string_equal(p, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
                           "trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
                           "<|im_start|>assistant\n");
    fe_free(p);
    p = apply(smollm2, "Be brief.", "100% sure?");
    assert_string_equal(p, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n100% "
                           "sure?<|im_end|>\n<|im_start|>assistant\n");
    fe_free(p);
    p = apply(smollm2, "", "Hi");
    assert_string_equal(p, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    fe_free(p);
    p = apply(llama3, NULL, "Hi");
    assert_string_equal(p, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    fe_free(p);
    p = apply(llama3, "Be brief.", "Hi");
    assert_string_equal(p, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                           "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    fe_free(p);
    assert_string_equal(fe_chat_end_marker(FE_CHAT_CHATML), "<|im_end|>");
    assert_string_equal(fe_chat_end_marker(FE_CHAT_LLAMA3), "<|eot_id|>");
    /* an unknown template has nothing to format */
    fe_chat_template t = {FE_CHAT_UNKNOWN, NULL};
    fe_error err = {0};
    char *out = (char *)&out;
    assert_int_equal(fe_chat_template_apply(&t, NULL, "Hi", &out, &err), FE_E_INVALID);
    assert_null(out);
    assert_non_null(strstr(err.message, "as it is"));
}

static fe_status from_config(const char *json, fe_chat_template *t, fe_error *err) {
    return fe_chat_template_from_tokenizer_config(json, strlen(json), "tokenizer_config.json", t, err);
}

static void tokenizer_config_json_gives_the_template_or_a_clear_error(void **s) {
    (void)s;
    fe_chat_template t;
    fe_error err = {0};
    /* a string, with JSON's escapes */
    static const char ok[] = "{\"bos_token\": \"<s>\", \"chat_template\": \"{{ '<|im_start|>system"
                             "\\\\nBe kind.<|im_end|>\\\\n' }}{{ '<|im_start|>' }}\"}";
    assert_int_equal(from_config(ok, &t, &err), FE_OK);
    assert_int_equal(t.format, FE_CHAT_CHATML);
    assert_string_equal(t.default_system, "Be kind.");
    fe_chat_template_deinit(&t);
    /* a list of named templates: the default one */
    static const char list[] =
        "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"<|im_start|><|im_end|>\"}, "
        "7, {\"name\": \"default\", \"template\": \"<|start_header_id|><|end_header_id|><|eot_id|>\"}]}";
    assert_int_equal(from_config(list, &t, &err), FE_OK);
    assert_int_equal(t.format, FE_CHAT_LLAMA3);
    fe_chat_template_deinit(&t);
    assert_int_equal(from_config("{\"chat_template\": \"[INST]\"}", &t, &err), FE_OK);
    assert_int_equal(t.format, FE_CHAT_UNKNOWN);
    struct { const char *json; fe_status st; const char *needle; } bad[] = {
        {"{\"chat_template\": \"<|im_start|>", FE_E_FORMAT, "tokenizer_config.json"},
        {"", FE_E_FORMAT, "tokenizer_config.json"},
        {"[\"chat_template\"]", FE_E_FORMAT, "not a JSON object"},
        {"{}", FE_E_NOTFOUND, "no chat_template"},
        {"{\"chat_template\": null}", FE_E_NOTFOUND, "no chat_template"},
        {"{\"chat_template\": 42}", FE_E_FORMAT, "neither a string nor a list"},
        {"{\"chat_template\": {\"default\": \"x\"}}", FE_E_FORMAT, "neither a string nor a list"},
        {"{\"chat_template\": []}", FE_E_FORMAT, "none of them named \"default\""},
        {"{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"x\"}]}", FE_E_FORMAT,
         "list of 1 templates"},
        {"{\"chat_template\": [{\"name\": \"default\", \"template\": 3}]}", FE_E_FORMAT,
         "no \"template\" string"},
        {"{\"chat_template\": [{\"name\": \"default\"}]}", FE_E_FORMAT, "no \"template\" string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t.format = FE_CHAT_LLAMA3;
        fe_status st = from_config(bad[i].json, &t, &err);
        if (st != bad[i].st || !strstr(err.message, bad[i].needle))
            fail_msg("case %zu: status %d: %s", i, st, err.message);
        assert_int_equal(t.format, FE_CHAT_UNKNOWN);
        assert_null(t.default_system);
    }
    /* files */
    char dir[64], path[128];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    assert_int_equal(fe_chat_template_from_tokenizer_config_file(path, &t, &err), FE_E_IO);
    assert_true(lmfix_write(dir, "tokenizer_config.json", ok, strlen(ok)));
    assert_int_equal(fe_chat_template_from_tokenizer_config_file(path, &t, &err), FE_OK);
    assert_int_equal(t.format, FE_CHAT_CHATML);
    fe_chat_template_deinit(&t);
    assert_true(lmfix_write(dir, "tokenizer_config.json", "{\"chat_template\": 1}", 20));
    assert_int_equal(fe_chat_template_from_tokenizer_config_file(path, &t, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, path));
    lmfix_rmtree(dir);
    fe_chat_template_deinit(NULL);
}

static void gguf_metadata_gives_the_template(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    fe_gguf *g = NULL;
    fe_error err = {0};
    fe_chat_template t;
    assert_int_equal(fe_gguf_open_memory(b.p, b.n, "tiny.gguf", &g, &err), FE_OK);
    assert_int_equal(fe_chat_template_from_gguf(g, &t, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "tokenizer.chat_template"));
    fe_gguf_close(g);
    lmfix_free(&b);
    const char *path = lmfix_need_smollm2();
    if (!path) return; /* the rest needs the model */
    assert_int_equal(fe_gguf_open_header(path, &g, &err), FE_OK);
    assert_int_equal(fe_chat_template_from_gguf(g, &t, &err), FE_OK);
    assert_int_equal(t.format, FE_CHAT_CHATML);
    assert_string_equal(t.default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    /* the fixture above is that template, byte for byte */
    const char *text;
    size_t n;
    assert_int_equal(fe_gguf_get_str(fe_gguf_find(g, "tokenizer.chat_template"), &text, &n, &err), FE_OK);
    assert_int_equal(n, strlen(smollm2));
    assert_memory_equal(text, smollm2, n);
    fe_chat_template_deinit(&t);
    fe_gguf_close(g);
}

static void failed_allocations_are_nomem(void **s) {
    (void)s;
    static const char list[] = "{\"chat_template\": [{\"name\": \"default\", \"template\": "
                               "\"'<|im_start|>system\\\\nHi<|im_end|>'\"}]}";
    for (long k = 1;; k++) {
        fe_chat_template t;
        fe_error err = {0};
        char *out = NULL;
        fe_alloc_fail_at(k);
        fe_status st = from_config(list, &t, &err);
        if (st == FE_OK) st = fe_chat_template_apply(&t, NULL, "Hi", &out, &err);
        fe_alloc_fail_at(0);
        fe_chat_template_deinit(&t);
        if (st == FE_OK) {
            assert_string_equal(out, "<|im_start|>system\nHi<|im_end|>\n<|im_start|>user\nHi"
                                     "<|im_end|>\n<|im_start|>assistant\n");
            fe_free(out);
            break;
        }
        assert_int_equal(st, FE_E_NOMEM);
        assert_true(k < 100);
    }
}

/* ---- `ferrum generate --chat` ---- */

static int code;
static char out[1 << 14], errs[1 << 14];


#define RUN(...) CLI_RUN_INTO(code, out, errs, __VA_ARGS__)

static void write_config(const char *dir, const char *json) {
    assert_true(lmfix_write(dir, "tokenizer_config.json", json, strlen(json)));
}

static void generate_chat_says_which_template_it_uses(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 1, &w, &err), FE_OK);
    char dir[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    if (fe_llama_weights_write_safetensors(&w, dir, &err) != FE_OK) fail_msg("%s", err.message);
    assert_true(lmfix_byte_tokenizer(dir, true, 0));
    /* no tokenizer_config.json: the tokenizer's special tokens decide */
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "no chat template in the checkpoint; the tokenizer has ChatML's"));
    /* <|im_start|> user\n hi <|im_end|> \n <|im_start|> assistant\n: 1 + 5 + 2 + 1 + 1 + 1 + 10 */
    assert_non_null(strstr(errs, "prompt 21 tokens"));
    /* SmolLM2's template: its default system prompt */
    char json[1024];
    snprintf(json, sizeof json, "{\"chat_template\": \"");
    for (const char *q = smollm2; *q; q++) {
        size_t at = strlen(json);
        if (*q == '\n') snprintf(json + at, sizeof json - at, "\\n");
        else snprintf(json + at, sizeof json - at, "%c", *q);
    }
    strcat(json, "\"}");
    write_config(dir, json);
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "chat template ChatML, from"));
    assert_non_null(strstr(errs, "tokenizer_config.json, with its default system prompt"));
    /* + <|im_start|> system\n {68 bytes} <|im_end|> \n */
    assert_non_null(strstr(errs, "prompt 99 tokens"));
    RUN("generate", dir, "--chat", "--system", "", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_null(strstr(errs, "with its default system prompt"));
    assert_non_null(strstr(errs, "prompt 21 tokens"));
    /* an unknown template: said, and the prompt used as it is */
    write_config(dir, "{\"chat_template\": \"{{ '[INST] ' + message['content'] + ' [/INST]' }}\"}");
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "is not one ferrum knows (ChatML, Llama 3); using the prompt as it is"));
    assert_non_null(strstr(errs, "prompt 2 tokens"));
    /* a malformed one: said, ignored, and the tokenizer decides */
    write_config(dir, "{\"chat_template\": [1, 2]}");
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "none of them named \"default\"")), assert_non_null(strstr(errs, "ignoring it"));
    assert_non_null(strstr(errs, "so using ChatML"));
    write_config(dir, "{not json");
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "ignoring it"));
    /* a known template the tokenizer cannot encode */
    assert_true(lmfix_byte_tokenizer(dir, false, 0));
    write_config(dir, "{\"chat_template\": \"<|start_header_id|><|end_header_id|><|eot_id|>\"}");
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "is Llama 3, but the tokenizer has no <|start_header_id|> token"));
    assert_non_null(strstr(errs, "prompt 2 tokens"));
    write_config(dir, "{}");
    RUN("generate", dir, "--chat", "--prompt", "hi", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "neither ChatML's nor Llama 3's special tokens"));
    /* --system belongs to --chat */
    RUN("generate", dir, "--system", "x", "--prompt", "hi");
    assert_int_equal(code, 2);
    assert_non_null(strstr(errs, "give --chat too"));
    RUN("generate", "--help");
    assert_non_null(strstr(out, "--system TEXT"));
    assert_non_null(strstr(out, "tokenizer_config.json"));
    lmfix_rmtree(dir);
    fe_llama_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_templates_are_recognised_with_their_default_system_prompt),
        cmocka_unit_test(gemma_turns_carry_the_system_prompt_in_the_first_user_turn),
        cmocka_unit_test(other_templates_are_unknown),
        cmocka_unit_test(a_user_turn_formats_as_the_template_writes_it),
        cmocka_unit_test(tokenizer_config_json_gives_the_template_or_a_clear_error),
        cmocka_unit_test(gguf_metadata_gives_the_template),
        cmocka_unit_test(failed_allocations_are_nomem),
        cmocka_unit_test(generate_chat_says_which_template_it_uses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
