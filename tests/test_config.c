/* tests/test_config.c: language-model configs (src/lm/config*): the presets hold the
 * published values; the real config.json files of Llama 3.2 1B and SmolLM2-135M read to the
 * presets; GGUF metadata reads to the same fields; missing keys, wrong types, unsupported
 * RoPE scaling and every validation rule are refused with a message naming the key. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lm/model/config.h"
#include "lm/format/gguf.h"
#include "support/lm_fixtures.h"
#include "support/tiny_llama.h"

/* config.json of meta-llama/Llama-3.2-1B-Instruct */
static const char LLAMA32_1B[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false,"
    " \"attention_dropout\": 0.0, \"bos_token_id\": 128000,"
    " \"eos_token_id\": [128001, 128008, 128009], \"head_dim\": 64, \"hidden_act\": \"silu\","
    " \"hidden_size\": 2048, \"initializer_range\": 0.02, \"intermediate_size\": 8192,"
    " \"max_position_embeddings\": 131072, \"mlp_bias\": false, \"model_type\": \"llama\","
    " \"num_attention_heads\": 32, \"num_hidden_layers\": 16, \"num_key_value_heads\": 8,"
    " \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 32.0,"
    " \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
    " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
    " \"rope_theta\": 500000.0, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
    " \"transformers_version\": \"4.45.0.dev0\", \"use_cache\": true, \"vocab_size\": 128256}";

/* config.json of HuggingFaceTB/SmolLM2-135M-Instruct */
static const char SMOLLM2[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false,"
    " \"attention_dropout\": 0.0, \"bos_token_id\": 1, \"eos_token_id\": 2,"
    " \"hidden_act\": \"silu\", \"hidden_size\": 576, \"initializer_range\": 0.041666666666666664,"
    " \"intermediate_size\": 1536, \"is_llama_config\": true, \"max_position_embeddings\": 8192,"
    " \"model_type\": \"llama\", \"num_attention_heads\": 9, \"num_hidden_layers\": 30,"
    " \"num_key_value_heads\": 3, \"pad_token_id\": 2, \"pretraining_tp\": 1,"
    " \"rms_norm_eps\": 1e-05, \"rope_interleaved\": false, \"rope_scaling\": null,"
    " \"rope_theta\": 100000, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
    " \"transformers_version\": \"4.42.3\", \"use_cache\": true, \"vocab_size\": 49152}";

static void presets_hold_the_published_values(void **s) {
    (void)s;
    fe_lm_config c;
    fe_error err;
    assert_int_equal(fe_lm_config_preset("llama-3.2-1b", &c, &err), FE_OK);
    assert_int_equal(c.vocab, 128256);
    assert_int_equal(c.hidden, 2048);
    assert_int_equal(c.n_layers, 16);
    assert_int_equal(c.n_heads, 32);
    assert_int_equal(c.n_kv_heads, 8);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.ffn, 8192);
    assert_true(c.rope_theta == 500000.0);
    assert_int_equal(c.rope_scaling.type, FE_LM_ROPE_LLAMA3);
    assert_true(c.rope_scaling.factor == 32.0);
    assert_true(c.rope_scaling.low_freq_factor == 1.0);
    assert_true(c.rope_scaling.high_freq_factor == 4.0);
    assert_int_equal(c.rope_scaling.original_max_position_embeddings, 8192);
    assert_true(c.tied_embeddings);
    assert_true(c.rms_eps == 1e-5);
    assert_int_equal(c.max_context, 131072);
    assert_int_equal(fe_lm_config_validate(&c, &err), FE_OK);
    assert_int_equal(fe_lm_config_preset("smollm2-135m", &c, &err), FE_OK);
    assert_int_equal(c.vocab, 49152);
    assert_int_equal(c.hidden, 576);
    assert_int_equal(c.n_layers, 30);
    assert_int_equal(c.n_heads, 9);
    assert_int_equal(c.n_kv_heads, 3);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.ffn, 1536);
    assert_true(c.rope_theta == 100000.0);
    assert_int_equal(c.rope_scaling.type, FE_LM_ROPE_NONE);
    assert_true(c.tied_embeddings);
    assert_int_equal(fe_lm_config_validate(&c, &err), FE_OK);
    assert_int_equal(fe_lm_config_preset("gpt-5", &c, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "llama-3.2-1b and smollm2-135m"));
    assert_int_equal(fe_lm_config_preset(NULL, &c, &err), FE_E_NOTFOUND);
}

static void real_config_json_files_read_to_the_presets(void **s) {
    (void)s;
    fe_lm_config c, p;
    fe_error err;
    if (fe_lm_config_from_json(LLAMA32_1B, strlen(LLAMA32_1B), "llama/config.json", &c, &err))
        fail_msg("%s", err.message);
    assert_int_equal(fe_lm_config_preset("llama-3.2-1b", &p, &err), FE_OK);
    tiny_llama_expect_same_config(&c, &p, 1e-12);
    assert_string_equal(c.source, "llama/config.json");
    if (fe_lm_config_from_json(SMOLLM2, strlen(SMOLLM2), NULL, &c, &err))
        fail_msg("%s", err.message);
    assert_int_equal(fe_lm_config_preset("smollm2-135m", &p, &err), FE_OK);
    tiny_llama_expect_same_config(&c, &p, 1e-12);

    /* from a file, and from the folder holding it */
    char dir[64], path[128];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_write(dir, "config.json", SMOLLM2, strlen(SMOLLM2)));
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(fe_lm_config_from_json_file(path, &c, &err), FE_OK);
    tiny_llama_expect_same_config(&c, &p, 1e-12);
    assert_int_equal(fe_lm_config_from_json_file(dir, &c, &err), FE_OK);
    tiny_llama_expect_same_config(&c, &p, 1e-12);
    assert_string_equal(c.source, path);
    lmfix_rmtree(dir);
    assert_int_equal(fe_lm_config_from_json_file(dir, &c, &err), FE_E_IO);
}

static void missing_keys_take_the_transformers_defaults(void **s) {
    (void)s;
    const char *j = "{\"vocab_size\": 100, \"hidden_size\": 64, \"num_hidden_layers\": 2,"
                    " \"num_attention_heads\": 4, \"intermediate_size\": 128}";
    fe_lm_config c;
    fe_error err;
    if (fe_lm_config_from_json(j, strlen(j), "min.json", &c, &err)) fail_msg("%s", err.message);
    assert_int_equal(c.n_kv_heads, 4);
    assert_int_equal(c.head_dim, 16);
    assert_true(c.rms_eps == 1e-6);
    assert_true(c.rope_theta == 10000.0);
    assert_int_equal(c.max_context, 2048);
    assert_false(c.tied_embeddings);
    assert_int_equal(c.bos_id, -1);
    assert_int_equal(c.n_eos, 0);
    assert_int_equal(c.rope_scaling.type, FE_LM_ROPE_NONE);
    assert_string_equal(c.architecture, "");
}

/* SMOLLM2 with `key`'s value text replaced by `value` (or the key removed when NULL). */
static fe_status with(const char *key, const char *value, fe_error *err) {
    char buf[2048], pat[80];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *at = strstr(SMOLLM2, pat);
    if (!at) fail_msg("no key %s", key);
    const char *v = at + strlen(pat), *end = v;
    int depth = 0;
    while (*end && (depth > 0 || (*end != ',' && *end != '}'))) {
        depth += *end == '{' || *end == '[';
        depth -= *end == '}' || *end == ']';
        end++;
    }
    if (value)
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(v - SMOLLM2), SMOLLM2, value, end);
    else
        snprintf(buf, sizeof buf, "%.*sx_%s", (int)(at + 1 - SMOLLM2), SMOLLM2, at + 1);
    fe_lm_config c;
    return fe_lm_config_from_json(buf, strlen(buf), "bad/config.json", &c, err);
}

static void expect(const char *key, const char *value, fe_status want, const char *needle) {
    fe_error err = {0};
    fe_status got = with(key, value, &err);
    if (got != want)
        fail_msg("%s = %s: wanted %s, got %s (%s)", key, value ? value : "(absent)",
                 fe_status_str(want), fe_status_str(got), err.message);
    if (!strstr(err.message, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.message, needle);
    assert_non_null(strstr(err.message, "bad/config.json"));
}

static void bad_config_json_is_refused_naming_the_key(void **s) {
    (void)s;
    fe_lm_config c;
    fe_error err;
    assert_int_equal(fe_lm_config_from_json("[1]", 3, "a.json", &c, &err), FE_E_FORMAT);
    assert_int_equal(fe_lm_config_from_json("{", 1, "a.json", &c, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "a.json"));
    expect("hidden_size", NULL, FE_E_FORMAT, "required key hidden_size is missing");
    expect("vocab_size", NULL, FE_E_FORMAT, "vocab_size");
    expect("num_hidden_layers", "\"30\"", FE_E_FORMAT, "num_hidden_layers must be an integer");
    expect("rope_theta", "\"big\"", FE_E_FORMAT, "rope_theta must be a number");
    expect("tie_word_embeddings", "1", FE_E_FORMAT, "tie_word_embeddings");
    expect("eos_token_id", "-1", FE_E_FORMAT, "eos_token_id must be a token id");
    expect("eos_token_id", "[1,2,3,4,5,6,7,8,9]", FE_E_FORMAT, "at most 8");
    expect("bos_token_id", "1.5", FE_E_FORMAT, "bos_token_id");
    expect("rope_scaling", "7", FE_E_FORMAT, "rope_scaling must be an object");
    expect("rope_scaling", "{\"factor\": 2}", FE_E_FORMAT, "rope_type");
    expect("rope_scaling", "{\"rope_type\": \"yarn\", \"factor\": 4}", FE_E_UNSUPPORTED,
           "rope_scaling type yarn");
    expect("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8}", FE_E_FORMAT,
           "low_freq_factor");
    expect("rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4,"
           " \"high_freq_factor\": 1, \"original_max_position_embeddings\": 8192}", FE_E_INVALID,
           "0 < low < high");
    expect("rope_scaling", "{\"type\": \"linear\", \"factor\": -2}", FE_E_INVALID,
           "positive factor");
    /* the validation rules, each naming the field and its key */
    expect("hidden_size", "577", FE_E_INVALID, "hidden (hidden_size) 577 is not a multiple of "
           "n_heads (num_attention_heads) 9");
    expect("num_key_value_heads", "2", FE_E_INVALID, "not a multiple of n_kv_heads "
           "(num_key_value_heads) 2");
    expect("num_hidden_layers", "0", FE_E_INVALID, "n_layers (num_hidden_layers) is 0");
    expect("vocab_size", "-5", FE_E_INVALID, "vocab (vocab_size) is -5");
    expect("intermediate_size", "99999999999", FE_E_INVALID, "ffn (intermediate_size)");
    expect("num_attention_heads", "0", FE_E_INVALID, "n_heads (num_attention_heads) is 0");
    expect("rms_norm_eps", "0", FE_E_INVALID, "rms_eps (rms_norm_eps) is 0");
    expect("rms_norm_eps", "2", FE_E_INVALID, "rms_eps");
    expect("rope_theta", "-1", FE_E_INVALID, "rope_theta is -1");
    expect("max_position_embeddings", "0", FE_E_INVALID, "max_context");
    expect("bos_token_id", "49152", FE_E_INVALID, "bos_token_id 49152 is outside");
    expect("eos_token_id", "[2, 50000]", FE_E_INVALID, "eos_token_id 50000 is outside");
    expect("num_attention_heads", "8", FE_E_INVALID, "not a multiple of n_kv_heads");
    char j[2100];
    snprintf(j, sizeof j, "%.*s, \"head_dim\": 63}", (int)strlen(SMOLLM2) - 1, SMOLLM2);
    assert_int_equal(fe_lm_config_from_json(j, strlen(j), "hd.json", &c, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "head_dim 63 is odd"));
}

static fe_status gguf_config(const lmfix_gguf_opts *o, fe_lm_config *c, fe_error *err) {
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, o, &lay);
    fe_gguf *g = NULL;
    fe_status st = fe_gguf_open_memory(b.p, b.n, "tiny.gguf", &g, err);
    if (st) fail_msg("%s", err->message);
    st = fe_lm_config_from_gguf(g, c, err);
    fe_gguf_close(g);
    lmfix_free(&b);
    return st;
}

static void gguf_metadata_reads_to_a_config(void **s) {
    (void)s;
    fe_lm_config c;
    fe_error err;
    if (gguf_config(&(lmfix_gguf_opts){0}, &c, &err)) fail_msg("%s", err.message);
    assert_string_equal(c.architecture, "llama");
    assert_string_equal(c.source, "tiny.gguf");
    assert_int_equal(c.n_layers, 1);
    assert_int_equal(c.hidden, 32);
    assert_int_equal(c.ffn, 64);
    assert_int_equal(c.n_heads, 4);
    assert_int_equal(c.n_kv_heads, 2);
    assert_int_equal(c.head_dim, 8);
    assert_int_equal(c.vocab, 8);
    assert_int_equal(c.max_context, 128);
    assert_true(c.rope_theta == 10000.0);
    assert_true(c.rms_eps == (double)1e-5f);
    assert_true(c.tied_embeddings);
    assert_int_equal(c.rope_scaling.type, FE_LM_ROPE_NONE);
    assert_int_equal(c.bos_id, 1);
    assert_int_equal(c.n_eos, 1);
    assert_int_equal(c.eos_ids[0], 2);
    /* the vocabulary from the token list; an output tensor unties; rope_freqs scales */
    if (gguf_config(&(lmfix_gguf_opts){.no_vocab_size = true, .output = true, .rope_freqs = true},
                    &c, &err))
        fail_msg("%s", err.message);
    assert_int_equal(c.vocab, 8);
    assert_false(c.tied_embeddings);
    assert_int_equal(c.rope_scaling.type, FE_LM_ROPE_FREQS_TENSOR);
    assert_int_equal(gguf_config(&(lmfix_gguf_opts){.rot_dims = 4}, &c, &err), FE_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "llama.rope.dimension_count is 4 but head_dim is 8"));
}

static void gguf_metadata_errors_name_the_key(void **s) {
    (void)s;
    static const struct {
        const char *key, *renamed, *needle;
        fe_status want;
    } cases[] = {
        {"llama.block_count", "llama.block_xxxxx", "metadata llama.block_count is missing",
         FE_E_FORMAT},
        {"llama.context_length", "llama.context_lengtX", "llama.context_length is missing",
         FE_E_FORMAT},
        {"llama.attention.layer_norm_rms_epsilon", "llama.attention.layer_norm_rms_epsilXX",
         "layer_norm_rms_epsilon is missing", FE_E_FORMAT},
        {"general.architecture", "general.architecturX", "general.architecture is missing",
         FE_E_FORMAT},
    };
    lmfix_gguf_opts o = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lmfix_buf b = {0};
        lmfix_gguf_layout lay;
        lmfix_gguf(&b, &o, &lay);
        size_t k = 0;
        while (k < lay.n_kv && strcmp(lay.kv_key[k], cases[i].key)) k++;
        assert_true(k < lay.n_kv);
        assert_int_equal(strlen(cases[i].renamed), strlen(cases[i].key)); /* same length */
        memcpy(b.p + lay.kv_at[k] + 8, cases[i].renamed, strlen(cases[i].renamed));
        fe_gguf *g = NULL;
        fe_error err = {0};
        fe_lm_config c;
        fe_status st = fe_gguf_open_memory(b.p, b.n, "tiny.gguf", &g, &err);
        if (!st) st = fe_lm_config_from_gguf(g, &c, &err);
        if (st != cases[i].want || !strstr(err.message, cases[i].needle))
            fail_msg("%s: got %s (%s)", cases[i].key, fe_status_str(st), err.message);
        fe_gguf_close(g);
        lmfix_free(&b);
    }
    /* a metadata value of the wrong type */
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &o, &lay);
    size_t k = 0;
    while (strcmp(lay.kv_key[k], "llama.embedding_length")) k++;
    lmfix_set_u32(&b, lay.kv_type_at[k], 6); /* u32 -> f32: same size */
    fe_gguf *g = NULL;
    fe_error err;
    fe_lm_config c;
    assert_int_equal(fe_gguf_open_memory(b.p, b.n, "tiny.gguf", &g, &err), FE_OK);
    assert_int_equal(fe_lm_config_from_gguf(g, &c, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "llama.embedding_length is a f32"));
    fe_gguf_close(g);
    lmfix_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(presets_hold_the_published_values),
        cmocka_unit_test(real_config_json_files_read_to_the_presets),
        cmocka_unit_test(missing_keys_take_the_transformers_defaults),
        cmocka_unit_test(bad_config_json_is_refused_naming_the_key),
        cmocka_unit_test(gguf_metadata_reads_to_a_config),
        cmocka_unit_test(gguf_metadata_errors_name_the_key),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
