/* tests/test_bert_config.c: what an encoder folder is read from, and its refusals: a BERT
 * config.json (required keys, the activation and position embedding ferrum runs, value rules,
 * each refusal naming the key); the sentence-transformers files (pooling mode, Normalize,
 * max_seq_length, prompts; Dense modules and max pooling refused by name; malformed JSON named
 * by file); the safetensors name map (a missing, mis-shaped or unknown tensor named). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "lm/format/safetensors.h"
#include "lm/model/bert.h"
#include "lm/model/st_config.h"
#include "support/lm_fixtures.h"

#define TINY "\"vocab_size\": 10, \"hidden_size\": 8, \"num_hidden_layers\": 1, " \
             "\"num_attention_heads\": 2, \"intermediate_size\": 16, \"max_position_embeddings\": 6"

static fe_status config(const char *json, fe_bert_config *c, fe_error *err) {
    return fe_bert_config_from_json(json, strlen(json), "config.json", c, err);
}

static void a_bert_config_reads_and_bad_ones_name_the_key(void **state) {
    (void)state;
    fe_bert_config c;
    fe_error err = {0};
    assert_int_equal(config("{\"model_type\": \"bert\", \"hidden_act\": \"gelu\", " TINY "}", &c, &err), FE_OK);
    assert_int_equal(c.head_dim, 4);
    assert_int_equal(c.type_vocab, 2);
    assert_true(c.ln_eps == 1e-12);
    struct { const char *json, *says; fe_status st; } bad[] = {
        {"{\"model_type\": \"llama\", " TINY "}", "model_type", FE_E_UNSUPPORTED},
        {"{\"hidden_act\": \"relu\", " TINY "}", "hidden_act", FE_E_UNSUPPORTED},
        {"{\"position_embedding_type\": \"relative_key\", " TINY "}", "position_embedding_type", FE_E_UNSUPPORTED},
        {"{\"hidden_size\": 8}", "vocab_size", FE_E_FORMAT},
        {"{\"vocab_size\": 10, \"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 3, "
         "\"intermediate_size\": 16}", "multiple", FE_E_INVALID},
        {"{" TINY ", \"layer_norm_eps\": 0}", "layer_norm_eps", FE_E_INVALID},
        {"{" TINY ", \"layer_norm_eps\": \"small\"}", "layer_norm_eps", FE_E_FORMAT},
        {"{\"vocab_size\": -1, \"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
         "\"intermediate_size\": 16}", "vocab_size", FE_E_INVALID},
        {"[1, 2]", "top level", FE_E_FORMAT},
        {"{\"vocab_size\": ", "config.json", FE_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fe_status st = config(bad[i].json, &c, &err);
        if (st != bad[i].st || !strstr(err.message, bad[i].says))
            fail_msg("case %zu: %s (status %d), expected \"%s\"", i, err.message, st, bad[i].says);
    }
}

static char dir[64];

static void put(const char *name, const char *text) {
    assert_true(lmfix_write(dir, name, text, strlen(text)));
}

static void sentence_transformers_files_set_pooling_normalize_and_prompts(void **state) {
    (void)state;
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    fe_st_config c;
    fe_error err = {0};
    assert_int_equal(fe_st_config_read(dir, &c, &err), FE_OK); /* a bare folder: the defaults */
    assert_int_equal(c.pooling, FE_POOLING_MEAN);
    assert_false(c.normalize);
    assert_int_equal(c.max_seq_length, 0);
    fe_st_config_deinit(&c);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/1_Pooling", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    put("modules.json", "[{\"type\": \"sentence_transformers.models.Transformer\", \"path\": \"\"}, "
        "{\"type\": \"sentence_transformers.models.Pooling\", \"path\": \"1_Pooling\"}, "
        "{\"type\": \"sentence_transformers.models.Normalize\", \"path\": \"2_Normalize\"}]");
    put("1_Pooling/config.json", "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": false}");
    put("sentence_bert_config.json", "{\"max_seq_length\": 128}");
    put("config_sentence_transformers.json", "{\"prompts\": {\"query\": \"task: search | query: \", "
        "\"document\": \"title: none | text: \"}, \"default_prompt_name\": \"query\"}");
    assert_int_equal(fe_st_config_read(dir, &c, &err), FE_OK);
    assert_int_equal(c.pooling, FE_POOLING_CLS);
    assert_true(c.normalize);
    assert_int_equal(c.max_seq_length, 128);
    assert_string_equal(fe_st_config_prompt(&c, "query"), "task: search | query: ");
    assert_string_equal(c.default_prompt, "query");
    assert_null(fe_st_config_prompt(&c, "passage"));
    fe_st_config_deinit(&c);
    /* sentence-transformers 6 writes the pooling as one string */
    put("1_Pooling/config.json", "{\"embedding_dimension\": 8, \"pooling_mode\": \"lasttoken\"}");
    assert_int_equal(fe_st_config_read(dir, &c, &err), FE_OK);
    assert_int_equal(c.pooling, FE_POOLING_LAST);
    fe_st_config_deinit(&c);
    struct { const char *file, *text, *says; fe_status st; } bad[] = {
        {"1_Pooling/config.json", "{\"pooling_mode\": \"max\"}", "pooling_mode is max", FE_E_UNSUPPORTED},
        {"1_Pooling/config.json", "{\"pooling_mode_max_tokens\": true}", "pooling_mode_max_tokens", FE_E_UNSUPPORTED},
        {"1_Pooling/config.json", "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}", "2 pooling modes", FE_E_UNSUPPORTED},
        {"modules.json", "[{\"type\": \"sentence_transformers.models.Dense\", \"path\": \"2_Dense\"}]", "Dense", FE_E_UNSUPPORTED},
        {"modules.json", "{\"type\": \"x\"}", "list of modules", FE_E_FORMAT},
        {"modules.json", "[{\"type\": \"sentence_transformers.models.Pooling\", \"path\": \"../x\"}]", "leaves the folder", FE_E_FORMAT},
        {"sentence_bert_config.json", "{\"max_seq_length\": \"long\"}", "max_seq_length", FE_E_FORMAT},
        {"config_sentence_transformers.json", "{\"prompts\": {\"q\": 3}}", "prompt \"q\"", FE_E_FORMAT},
        {"config_sentence_transformers.json", "{\"prompts\": {}, \"default_prompt_name\": \"q\"}", "default_prompt_name", FE_E_FORMAT},
        {"sentence_bert_config.json", "{\"max_seq_length\": ", "sentence_bert_config.json", FE_E_FORMAT},
    };
    const char *good[] = {"1_Pooling/config.json", "{\"pooling_mode_mean_tokens\": true}", "modules.json",
                          "[{\"type\": \"sentence_transformers.models.Pooling\", \"path\": \"1_Pooling\"}]",
                          "sentence_bert_config.json", "{}", "config_sentence_transformers.json", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int g = 0; g < 8; g += 2) put(good[g], good[g + 1]);
        put(bad[i].file, bad[i].text);
        fe_status st = fe_st_config_read(dir, &c, &err);
        if (st != bad[i].st || !strstr(err.message, bad[i].says))
            fail_msg("case %zu: %s (status %d), expected \"%s\"", i, err.message, st, bad[i].says);
    }
    lmfix_rmtree(sub);
    lmfix_rmtree(dir);
}

/* the tensors of a one-layer BERT of TINY's shapes, f32; `skip` left out, `extra` added */
static fe_status weights_of(const char *skip, const char *extra, int64_t word_rows, fe_error *err) {
    static const char *const names[] = {
        "attention.self.query.weight", "attention.self.query.bias", "attention.self.key.weight",
        "attention.self.key.bias", "attention.self.value.weight", "attention.self.value.bias",
        "attention.output.dense.weight", "attention.output.dense.bias",
        "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
        "intermediate.dense.weight", "intermediate.dense.bias", "output.dense.weight",
        "output.dense.bias", "output.LayerNorm.weight", "output.LayerNorm.bias"};
    static char full[16][96];
    lmfix_st_tensor t[24];
    size_t n = 0;
    t[n++] = (lmfix_st_tensor){"embeddings.word_embeddings.weight", "F32", 2, {word_rows, 8}, 4};
    t[n++] = (lmfix_st_tensor){"embeddings.position_embeddings.weight", "F32", 2, {6, 8}, 4};
    t[n++] = (lmfix_st_tensor){"embeddings.token_type_embeddings.weight", "F32", 2, {2, 8}, 4};
    t[n++] = (lmfix_st_tensor){"embeddings.LayerNorm.weight", "F32", 1, {8}, 4};
    t[n++] = (lmfix_st_tensor){"embeddings.LayerNorm.bias", "F32", 1, {8}, 4};
    for (int i = 0; i < 16; i++) {
        snprintf(full[i], sizeof full[i], "encoder.layer.0.%s", names[i]);
        bool vec = i % 2 == 1 || i == 8 || i == 14;
        int64_t rows = i == 10 || i == 11 ? 16 : 8, cols = i == 12 ? 16 : 8;
        t[n++] = vec ? (lmfix_st_tensor){full[i], "F32", 1, {rows}, 4}
                     : (lmfix_st_tensor){full[i], "F32", 2, {rows, cols}, 4};
    }
    if (extra) t[n++] = (lmfix_st_tensor){extra, "F32", 1, {8}, 4};
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!skip || strcmp(t[i].name, skip) != 0) t[k++] = t[i];
    lmfix_buf b = {0};
    lmfix_safetensors(&b, t, k, 0);
    fe_safetensors *st;
    fe_status s = fe_safetensors_open_memory(b.p, b.n, "tiny.safetensors", &st, err);
    fe_bert_config c;
    const char *json = "{" TINY "}";
    if (s == FE_OK) s = fe_bert_config_from_json(json, strlen(json), "config.json", &c, err);
    fe_bert_weights w;
    if (s == FE_OK) {
        s = fe_bert_weights_from_safetensors(st, &c, &w, err);
        if (s == FE_OK) fe_bert_weights_free(&w);
        fe_safetensors_close(st);
    }
    lmfix_free(&b);
    return s;
}

static void the_name_map_is_strict_both_ways(void **state) {
    (void)state;
    fe_error err = {0};
    assert_int_equal(weights_of(NULL, "pooler.dense.bias", 10, &err), FE_OK); /* a known extra */
    assert_int_equal(weights_of("encoder.layer.0.output.dense.bias", NULL, 10, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "encoder.layer.0.output.dense.bias"));
    assert_int_equal(weights_of(NULL, NULL, 11, &err), FE_E_SHAPE);
    assert_non_null(strstr(err.message, "word_embeddings"));
    assert_int_equal(weights_of(NULL, "cls.predictions.bias", 10, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "cls.predictions.bias"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_bert_config_reads_and_bad_ones_name_the_key),
        cmocka_unit_test(sentence_transformers_files_set_pooling_normalize_and_prompts),
        cmocka_unit_test(the_name_map_is_strict_both_ways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
