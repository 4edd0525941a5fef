/* tests/test_embedgemma.c: EmbeddingGemma (lm/model/embedgemma.h, gemma3_encoder.h) against the
 * plain float32 oracle (lm/eval/embedgemma_oracle.c) on random weights: a packed batch of
 * sentences longer than the local window matches the oracle sentence by sentence; the Dense
 * head and L2; a folder written as sentence-transformers saves one loads back to the same
 * embeddings (HF norms as w, read as 1 + w); malformed folders (missing Dense, wrong shapes,
 * a causal config, a Dense with bias) are refused by name; the public API (fe_lm_encoder) on a
 * written folder matches the oracle and, on the tiny folder with a tokenizer.json made for
 * Hugging Face's tokenizers, sentence-transformers' ids and embeddings
 * (tests/fixtures/embedgemma_tiny_st.json, scripts/make-embedgemma-fixture.py); the real shape (~300M parameters)
 * against the oracle as an extensive case (FERRUM_EXTENSIVE=1). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferrum/lm.h"
#include "lm/eval/embedgemma_oracle.h"
#include "lm/model/gemma3_encoder.h"
#include <jansson.h>

#include "support/testing.h"
#include "support/tok_fixtures.h"

static void random_model(const char *preset, fe_embedgemma *m, uint64_t seed) {
    fe_lm_config c;
    int64_t window, mid;
    fe_error err = {0};
    if (fe_embedgemma_preset(preset, &c, &window, &mid, &err) != FE_OK) fail_msg("%s", err.message);
    if (fe_embedgemma_random(&c, window, mid, seed, m, &err) != FE_OK) fail_msg("%s", err.message);
}

static fe_gemma3_encoder *make(const fe_embedgemma *m, int64_t max_tokens, int slots) {
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = max_tokens;
    o.slots = slots;
    fe_gemma3_encoder *e = NULL;
    fe_error err = {0};
    if (fe_gemma3_encoder_create(test_dev, m, &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    return e;
}

static void draw_ids(int32_t *ids, int64_t n, int64_t vocab, uint64_t seed) {
    test_rng r = {seed};
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(test_rng_next(&r) % (uint64_t)vocab);
}

/* max |a - b| relative to the largest |b| */
static double rel_diff(const float *a, const float *b, int64_t n) {
    double d = 0, big = 0;
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i])), big = fmax(big, fabs(b[i]));
    return d / fmax(big, 1e-30);
}

static double cosine(const float *a, const float *b, int64_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

/* the graph over sentences of lens, each checked against the oracle's hidden rows and
 * embedding */
static void check_against_oracle(const fe_embedgemma *m, fe_gemma3_encoder *e, const int64_t *lens,
                                 int n_seqs, double tol) {
    const int64_t H = m->cfg.hidden;
    int32_t *ids[FE_ENCODER_MAX_SLOTS];
    for (int s = 0; s < n_seqs; s++) {
        ids[s] = malloc((size_t)lens[s] * sizeof(int32_t));
        draw_ids(ids[s], lens[s], m->cfg.vocab, 100 + (uint64_t)s);
    }
    const float *h = NULL;
    assert_int_equal(fe_gemma3_encoder_forward(e, (const int32_t *const *)ids, lens, n_seqs, &h), FE_OK);
    int64_t row = 0, D = m->n_dense ? m->dense[m->n_dense - 1].shape[0] : H;
    float *ref = malloc((size_t)(lens[0] > 1 ? lens[0] : 1) * (size_t)H * 4 * 64);
    float *ea = malloc((size_t)D * 4), *eb = malloc((size_t)D * 4);
    for (int s = 0; s < n_seqs; s++) {
        fe_error err = {0};
        ref = realloc(ref, (size_t)lens[s] * (size_t)H * 4);
        assert_int_equal(fe_oracle_embedgemma_hidden(m, ids[s], (int)lens[s], ref, &err), FE_OK);
        double d = rel_diff(h + row * H, ref, lens[s] * H);
        if (d > tol) fail_msg("sentence %d (%lld tokens): hidden differs from the oracle by %g", s,
                              (long long)lens[s], d);
        assert_int_equal(fe_gemma3_encoder_embed(m, h + row * H, lens[s], 0, true, ea), FE_OK);
        assert_int_equal(fe_gemma3_encoder_embed(m, ref, lens[s], 0, true, eb), FE_OK);
        double cs = cosine(ea, eb, D);
        if (cs < 1 - 1e-6) fail_msg("sentence %d: embedding cosine to the oracle %.9f", s, cs);
        row += lens[s];
    }
    for (int s = 0; s < n_seqs; s++) free(ids[s]);
    free(ref), free(ea), free(eb);
}

static void packed_sentences_match_the_oracle_across_the_window(void **state) {
    (void)state;
    fe_embedgemma m;
    random_model("embeddinggemma-tiny", &m, 3);
    assert_int_equal(m.window, 9 / 2 + 1); /* transformers halves it for bidirectional */
    fe_gemma3_encoder *e = make(&m, 24, 4);
    int64_t lens[3] = {24, 3, 11}; /* past the local radius of 5, short, and between */
    check_against_oracle(&m, e, lens, 3, 2e-4);
    fe_gemma3_encoder_destroy(e);
    fe_embedgemma_free(&m);
}

static void the_local_window_changes_the_result(void **state) {
    /* the oracle's window matters (a check that could fail): a model whose window covers the
     * whole sentence gives different hidden states for a sentence past the window */
    (void)state;
    fe_embedgemma m;
    random_model("embeddinggemma-tiny", &m, 5);
    int32_t ids[20];
    draw_ids(ids, 20, m.cfg.vocab, 9);
    float *a = malloc(20 * (size_t)m.cfg.hidden * 4), *b = malloc(20 * (size_t)m.cfg.hidden * 4);
    fe_error err = {0};
    assert_int_equal(fe_oracle_embedgemma_hidden(&m, ids, 20, a, &err), FE_OK);
    m.window = 64;
    assert_int_equal(fe_oracle_embedgemma_hidden(&m, ids, 20, b, &err), FE_OK);
    assert_true(rel_diff(a, b, 20 * m.cfg.hidden) > 1e-3);
    /* and the graph follows the window it is given */
    fe_gemma3_encoder *e = make(&m, 20, 1);
    int64_t len = 20;
    const int32_t *p = ids;
    const float *h = NULL;
    assert_int_equal(fe_gemma3_encoder_forward(e, &p, &len, 1, &h), FE_OK);
    assert_true(rel_diff(h, b, 20 * m.cfg.hidden) < 2e-4);
    fe_gemma3_encoder_destroy(e);
    free(a), free(b);
    fe_embedgemma_free(&m);
}

static void make_tmp(char *dir) {
    strcpy(dir, "/tmp/ferrum_embedgemma_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void remove_tree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void a_written_folder_loads_back_to_the_same_embeddings(void **state) {
    (void)state;
    fe_embedgemma m, back;
    random_model("embeddinggemma-tiny", &m, 11);
    char dir[64];
    make_tmp(dir);
    fe_error err = {0};
    assert_int_equal(fe_embedgemma_write(&m, dir, &err), FE_OK);
    assert_true(fe_embedgemma_is_folder(dir));
    if (fe_embedgemma_load(dir, &back, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(back.n_dense, 2);
    assert_int_equal(back.window, m.window);
    assert_int_equal(back.cfg.swa_pattern, 6);
    int32_t ids[13];
    draw_ids(ids, 13, m.cfg.vocab, 4);
    const int64_t H = m.cfg.hidden, D = m.dense[1].shape[0];
    float *a = malloc(13 * (size_t)H * 4), *b = malloc(13 * (size_t)H * 4);
    float *ea = malloc((size_t)D * 4), *eb = malloc((size_t)D * 4);
    assert_int_equal(fe_oracle_embedgemma_hidden(&m, ids, 13, a, &err), FE_OK);
    assert_int_equal(fe_oracle_embedgemma_hidden(&back, ids, 13, b, &err), FE_OK);
    assert_true(rel_diff(b, a, 13 * H) < 1e-5); /* norms: 1 + (w - 1) rounds in f32 */
    assert_int_equal(fe_gemma3_encoder_embed(&m, a, 13, 0, true, ea), FE_OK);
    assert_int_equal(fe_gemma3_encoder_embed(&back, b, 13, 0, true, eb), FE_OK);
    assert_true(cosine(ea, eb, D) > 1 - 1e-9);
    /* Matryoshka: cut, then unit norm */
    assert_int_equal(fe_gemma3_encoder_embed(&m, a, 13, 16, true, eb), FE_OK);
    double ss = 0;
    for (int i = 0; i < 16; i++) ss += (double)eb[i] * eb[i];
    assert_true(fabs(ss - 1) < 1e-6);
    free(a), free(b), free(ea), free(eb);
    fe_embedgemma_free(&back);
    fe_embedgemma_free(&m);
    remove_tree(dir);
}

/* loads a written folder after `edit` (a shell command run in it) and expects status and a
 * message holding `words` */
static void refused(const char *edit, fe_status want, const char *words) {
    fe_embedgemma m, back;
    random_model("embeddinggemma-tiny", &m, 2);
    char dir[64], cmd[4400];
    make_tmp(dir);
    fe_error err = {0};
    assert_int_equal(fe_embedgemma_write(&m, dir, &err), FE_OK);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s", dir, edit);
    assert_int_equal(system(cmd), 0);
    fe_status st = fe_embedgemma_load(dir, &back, &err);
    if (st != want || !strstr(err.message, words))
        fail_msg("after `%s`: status %s, message \"%s\"; wanted %s with \"%s\"", edit,
                 fe_status_str(st), err.message, fe_status_str(want), words);
    fe_embedgemma_free(&m);
    remove_tree(dir);
}

static void malformed_folders_are_refused_by_name(void **state) {
    (void)state;
    refused("rm -r 3_Dense", FE_E_NOTFOUND, "3_Dense");
    refused("rm 2_Dense/model.safetensors", FE_E_NOTFOUND, "2_Dense/model.safetensors: no such file");
    refused("mv 2_Dense/model.safetensors 2_Dense/pytorch_model.bin", FE_E_UNSUPPORTED, "pickle");
    refused("rm model.safetensors", FE_E_NOTFOUND, "");
    refused("printf '\\001\\000\\000\\000\\000\\000\\000\\000{' > 3_Dense/model.safetensors",
            FE_E_FORMAT, "3_Dense");
    refused("sed -i 's/\"in_features\": 64/\"in_features\": 65/' 2_Dense/config.json", FE_E_SHAPE,
            "in_features");
    refused("sed -i 's/\"out_features\": 160/\"out_features\": 161/' 2_Dense/config.json",
            FE_E_SHAPE, "linear.weight");
    refused("sed -i 's/\"bias\": false/\"bias\": true/' 3_Dense/config.json", FE_E_UNSUPPORTED, "bias");
    refused("sed -i 's/Identity/Tanh/' 2_Dense/config.json", FE_E_UNSUPPORTED, "Identity");
    refused("sed -i 's/\"intermediate_size\": 96/\"intermediate_size\": 97/' config.json",
            FE_E_SHAPE, "mlp.gate_proj");
    refused("sed -i 's/\"use_bidirectional_attention\": true/\"use_bidirectional_attention\": false/' "
            "config.json", FE_E_UNSUPPORTED, "ferrum generate");
    refused("sed -i 's/\"num_hidden_layers\": 8/\"num_hidden_layers\": 7/' config.json",
            FE_E_FORMAT, "layers.7");
    refused("sed -i 's/gemma3_text/bert/' config.json", FE_E_UNSUPPORTED, "model_type");
    refused("sed -i 's/\"rope_scaling\": null/\"attention_bias\": true/' config.json", FE_E_UNSUPPORTED,
            "attention_bias");
    refused("sed -i 's/\"head_dim\": 16,//' config.json", FE_E_FORMAT, "head_dim");
}

/* transformers 5 saves RoPE bases as rope_parameters per layer type */
static void rope_parameters_set_the_bases(void **state) {
    (void)state;
    static const char base[] =
        "{\"model_type\": \"gemma3_text\", \"vocab_size\": 300, \"hidden_size\": 64, "
        "\"num_hidden_layers\": 8, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"head_dim\": 16, \"intermediate_size\": 96, \"sliding_window\": 8, "
        "\"use_bidirectional_attention\": true, \"rope_parameters\": %s}";
    char text[1024];
    fe_lm_config c;
    int64_t w;
    fe_error err = {0};
    snprintf(text, sizeof text, base, "{\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 500000}, "
             "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 20000}}");
    if (fe_embedgemma_config_from_json(text, strlen(text), "t", &c, &w, &err)) fail_msg("%s", err.message);
    assert_true(c.rope_theta == 500000 && c.rope_theta_local == 20000);
    assert_int_equal(w, 5); /* 8 as transformers 5 saves the window of 9: the same radius */
    snprintf(text, sizeof text, base, "{\"full_attention\": {\"rope_type\": \"linear\", \"rope_theta\": 1}}");
    assert_int_equal(fe_embedgemma_config_from_json(text, strlen(text), "t", &c, &w, &err), FE_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "rope_type linear"));
}

static void bad_calls_are_refused_by_name(void **state) {
    (void)state;
    fe_embedgemma m;
    random_model("embeddinggemma-tiny", &m, 1);
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = 65;
    fe_gemma3_encoder *e = NULL;
    fe_error err = {0};
    assert_int_equal(fe_gemma3_encoder_create(test_dev, &m, &o, &e, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "max_tokens"));
    e = make(&m, 8, 2);
    int32_t ids[9] = {0};
    const int32_t *p = ids;
    int64_t len = 9;
    const float *h;
    assert_int_equal(fe_gemma3_encoder_forward(e, &p, &len, 1, &h), FE_E_BOUNDS);
    assert_non_null(strstr(fe_gemma3_encoder_message(e), "max_tokens"));
    ids[0] = 300, len = 1;
    assert_int_equal(fe_gemma3_encoder_forward(e, &p, &len, 1, &h), FE_E_BOUNDS);
    assert_non_null(strstr(fe_gemma3_encoder_message(e), "vocabulary"));
    fe_gemma3_encoder_destroy(e);
    fe_lm_config c;
    int64_t w, mid;
    assert_int_equal(fe_embedgemma_preset("embeddinggemma-1b", &c, &w, &mid, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "embeddinggemma-300m"));
    fe_embedgemma_free(&m);
}

/* A Gemma-style tokenizer.json for the tiny vocabulary of 300: <pad> <eos> <bos> <unk>, the
 * 256 byte tokens, "▁", a..z and 13 merged pieces; spaces replaced by "▁", no prefix;
 * <bos> $A <eos> */
#define SP "\xe2\x96\x81"
static void write_tokenizer(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"<pad>\", \"special\": true},"
               "{\"id\": 1, \"content\": \"<eos>\", \"special\": true}, {\"id\": 2, \"content\": \"<bos>\", \"special\": true}],\n"
               "\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"" SP "\"},\n"
               "\"pre_tokenizer\": null,\n"
               "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<bos>\", \"type_id\": 0}},"
               " {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"<eos>\", \"type_id\": 0}}],"
               " \"special_tokens\": {\"<bos>\": {\"id\": \"<bos>\", \"ids\": [2]}, \"<eos>\": {\"id\": \"<eos>\", \"ids\": [1]}}},\n"
               "\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"unk_token\": \"<unk>\", \"vocab\": {"
               "\"<pad>\": 0, \"<eos>\": 1, \"<bos>\": 2, \"<unk>\": 3");
    for (int b = 0; b < 256; b++) fprintf(f, ", \"<0x%02X>\": %d", b, 4 + b);
    fprintf(f, ", \"" SP "\": 260");
    for (int c = 0; c < 26; c++) fprintf(f, ", \"%c\": %d", 'a' + c, 261 + c);
    static const char *const merged[13][2] = {{SP, "t"}, {"h", "e"}, {SP "t", "he"}, {SP, "a"},
                                              {"i", "n"}, {"e", "r"}, {"a", "n"}, {SP, "s"},
                                              {SP, "w"}, {"o", "n"}, {"a", "t"}, {"e", "n"}, {"r", "e"}};
    for (int i = 0; i < 13; i++) fprintf(f, ", \"%s%s\": %d", merged[i][0], merged[i][1], 287 + i);
    fprintf(f, "}, \"merges\": [");
    for (int i = 0; i < 13; i++) fprintf(f, "%s\"%s %s\"", i ? ", " : "", merged[i][0], merged[i][1]);
    fprintf(f, "]}}\n");
    assert_int_equal(fclose(f), 0);
}

static void the_public_api_embeds_a_folder_as_the_oracle_does(void **state) {
    (void)state;
    fe_embedgemma m, back;
    random_model("embeddinggemma-tiny", &m, 21);
    char dir[64];
    make_tmp(dir);
    fe_error err = {0};
    assert_int_equal(fe_embedgemma_write(&m, dir, &err), FE_OK);
    write_tokenizer(dir);
    fe_lm_encoder_options eo = fe_lm_encoder_options_default();
    eo.device = test_dev;
    eo.batch = 2;
    fe_lm_encoder *enc = NULL;
    if (fe_lm_encoder_open(dir, &eo, &enc, &err) != FE_OK) fail_msg("%s", err.message);
    fe_lm_encoder_info info;
    assert_int_equal(fe_lm_encoder_get_info(enc, &info), FE_OK);
    assert_string_equal(info.architecture, "gemma3_text");
    assert_int_equal(info.hidden, 64); /* 3_Dense's out features */
    assert_true(info.normalize);
    assert_int_equal(info.n_prompts, 2);
    /* SentencePiece pieces by merge order, byte fallback, <bos> ... <eos> */
    fe_lm_embed_options o = fe_lm_embed_options_default();
    o.prompt_name = "";
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(fe_lm_encoder_tokenize(enc, "a the\xc3\xa9", &o, &ids, &n), FE_OK);
    int32_t want[] = {2, 261, 289, 4 + 0xC3, 4 + 0xA9, 1};
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) assert_int_equal(ids[i], want[i]);
    fe_lm_free(ids);
    /* three texts with the query prompt (two calls of the batch of 2), against the oracle */
    const char *texts[3] = {"the cat sat on the mat", "a", "where is the station and when are we there"};
    o.prompt_name = "query";
    float out[3 * 64];
    int64_t dim = 0;
    if (fe_lm_embed(enc, texts, 3, &o, out, &dim, NULL) != FE_OK) fail_msg("%s", fe_lm_encoder_message(enc));
    assert_int_equal(dim, 64);
    if (fe_embedgemma_load(dir, &back, &err) != FE_OK) fail_msg("%s", err.message);
    for (int t = 0; t < 3; t++) {
        assert_int_equal(fe_lm_encoder_tokenize(enc, texts[t], &o, &ids, &n), FE_OK);
        assert_true(n > 8); /* the prompt's pieces are there */
        float *h = malloc(n * 64 * 4), ref[64];
        assert_int_equal(fe_oracle_embedgemma_hidden(&back, ids, (int)n, h, &err), FE_OK);
        assert_int_equal(fe_gemma3_encoder_embed(&back, h, (int64_t)n, 0, true, ref), FE_OK);
        double cs = cosine(out + t * 64, ref, 64);
        if (cs < 1 - 1e-6) fail_msg("text %d: cosine to the oracle %.9f", t, cs);
        free(h);
        fe_lm_free(ids);
    }
    /* other poolings are refused by name */
    o.pooling = FE_LM_POOLING_CLS;
    assert_int_equal(fe_lm_embed(enc, texts, 1, &o, out, &dim, NULL), FE_E_UNSUPPORTED);
    assert_non_null(strstr(fe_lm_encoder_message(enc), "mean"));
    fe_lm_encoder_close(enc);
    fe_embedgemma_free(&back);
    /* a folder without its tokenizer.json is refused by name */
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm '%s/tokenizer.json'", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(fe_lm_encoder_open(dir, &eo, &enc, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "tokenizer.json"));
    fe_embedgemma_free(&m);
    remove_tree(dir);
}

/* the tiny folder the fixture was made from: preset embeddinggemma-tiny, seed 1, the fixture's
 * tokenizer files; in $FERRUM_EMBEDGEMMA_FOLDER when set (kept, for the fixture's script) */
static void write_fixture_folder(char *dir, size_t n, bool *keep) {
    const char *want = getenv("FERRUM_EMBEDGEMMA_FOLDER");
    *keep = want && *want;
    if (*keep) snprintf(dir, n, "%s", want);
    else make_tmp(dir);
    fe_embedgemma m;
    random_model("embeddinggemma-tiny", &m, 1);
    fe_error err = {0};
    if (fe_embedgemma_write(&m, dir, &err) != FE_OK) fail_msg("%s", err.message);
    fe_embedgemma_free(&m);
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json", "sentence_bert_config.json"};
    for (int i = 0; i < 3; i++) {
        char name[128], cmd[4400];
        snprintf(name, sizeof name, "embedgemma_tiny/%s", files[i]);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s/'", tokfix_path(name), dir);
        assert_int_equal(system(cmd), 0);
    }
}

static void check_fixture(const char *dir, json_t *fx);

static void the_tiny_folder_matches_sentence_transformers(void **state) {
    (void)state;
    char dir[1024];
    bool keep;
    write_fixture_folder(dir, sizeof dir, &keep);
    size_t len;
    char *text = tokfix_read_file(tokfix_path("embedgemma_tiny_st.json"), &len);
    json_error_t je;
    json_t *fx = json_loadb(text, len, 0, &je);
    if (!fx) fail_msg("embedgemma_tiny_st.json: %s", je.text);
    free(text);
    /* transformers halves the window of 9 for bidirectional attention, as embedgemma.h says */
    assert_int_equal(json_integer_value(json_object_get(fx, "sliding_window_after_load")), 9 / 2 + 1);
    /* as written (sentence-transformers 5's layout), then as sentence-transformers 6 and
     * transformers 5 save it again: rope_parameters, the window stored as 8, pooling_mode as
     * a string, modules under sentence_transformers.base */
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 1) {
            char cmd[4400];
            snprintf(cmd, sizeof cmd, "cd '%s' && sed -i 's/\"rope_theta\": 1000000, \"rope_local_base_freq\": "
                     "10000,/\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1000000, \"rope_type\": "
                     "\"default\"}, \"sliding_attention\": {\"rope_theta\": 10000, \"rope_type\": \"default\"}},/; "
                     "s/\"sliding_window\": 9/\"sliding_window\": 8/' config.json && grep -q rope_parameters "
                     "config.json && echo '{\"embedding_dimension\": 64, \"pooling_mode\": \"mean\", "
                     "\"include_prompt\": true}' > 1_Pooling/config.json && sed -i "
                     "'s/sentence_transformers.models.Dense/sentence_transformers.base.modules.dense.Dense/' "
                     "modules.json", dir);
            assert_int_equal(system(cmd), 0);
        }
        check_fixture(dir, fx);
    }
    json_decref(fx);
    if (!keep) remove_tree(dir);
}

static void check_fixture(const char *dir, json_t *fx) {
    json_t *texts = json_object_get(fx, "texts"), *ids_want = json_object_get(fx, "ids");
    json_t *embs = json_object_get(fx, "embeddings");
    size_t n = json_array_size(texts);
    assert_true(n >= 5 && json_array_size(ids_want) == n && json_array_size(embs) == n);
    fe_lm_encoder_options eo = fe_lm_encoder_options_default();
    eo.device = test_dev;
    eo.batch = 4;
    fe_lm_encoder *enc = NULL;
    fe_error err = {0};
    if (fe_lm_encoder_open(dir, &eo, &enc, &err) != FE_OK) fail_msg("%s", err.message);
    fe_lm_embed_options o = fe_lm_embed_options_default();
    o.prompt_name = json_string_value(json_object_get(fx, "prompt_name"));
    const char **ts = calloc(n, sizeof *ts);
    for (size_t i = 0; i < n; i++) ts[i] = json_string_value(json_array_get(texts, i));
    for (size_t i = 0; i < n; i++) { /* ids identical to the Hugging Face tokenizer's */
        int32_t *ids = NULL;
        size_t k = 0;
        assert_int_equal(fe_lm_encoder_tokenize(enc, ts[i], &o, &ids, &k), FE_OK);
        json_t *w = json_array_get(ids_want, i);
        if (k != json_array_size(w)) fail_msg("text %zu: %zu ids, Hugging Face %zu", i, k, json_array_size(w));
        for (size_t j = 0; j < k; j++)
            if (ids[j] != json_integer_value(json_array_get(w, j)))
                fail_msg("text %zu: id %zu is %d, Hugging Face %lld", i, j, ids[j],
                         (long long)json_integer_value(json_array_get(w, j)));
        fe_lm_free(ids);
    }
    float *out = malloc(n * 64 * sizeof *out);
    int64_t dim = 0;
    if (fe_lm_embed(enc, ts, n, &o, out, &dim, NULL) != FE_OK) fail_msg("%s", fe_lm_encoder_message(enc));
    assert_int_equal(dim, 64);
    double worst = 1;
    for (size_t i = 0; i < n; i++) {
        float ref[64];
        json_t *row = json_array_get(embs, i);
        assert_int_equal(json_array_size(row), 64);
        for (int j = 0; j < 64; j++) ref[j] = (float)json_real_value(json_array_get(row, (size_t)j));
        worst = fmin(worst, cosine(out + i * 64, ref, 64));
    }
    if (worst < 0.99999) fail_msg("worst cosine to sentence-transformers %.9f", worst);
    free(out), free(ts);
    fe_lm_encoder_close(enc);
}

static void the_real_shape_matches_the_oracle(void **state) {
    (void)state;
    if (!test_extensive()) skip();
    fe_embedgemma m;
    random_model("embeddinggemma-300m", &m, 17);
    int64_t params = m.cfg.vocab * m.cfg.hidden + 2 * 3072 * 768;
    for (int64_t l = 0; l < m.cfg.n_layers; l++) {
        const fe_llama_layer *L = &m.layers[l];
        params += fe_tensor_numel(&L->wq) + fe_tensor_numel(&L->wk) + fe_tensor_numel(&L->wv) +
                  fe_tensor_numel(&L->wo) + 3 * fe_tensor_numel(&L->w_gate);
    }
    assert_true(params > 290000000 && params < 320000000);
    assert_int_equal(m.window, 257);
    fe_gemma3_encoder *e = make(&m, 300, 2);
    int64_t lens[2] = {300, 7}; /* past the window of 257 on the local layers, and short */
    check_against_oracle(&m, e, lens, 2, 5e-4);
    fe_gemma3_encoder_destroy(e);
    fe_embedgemma_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(packed_sentences_match_the_oracle_across_the_window),
        cmocka_unit_test(the_local_window_changes_the_result),
        cmocka_unit_test(a_written_folder_loads_back_to_the_same_embeddings),
        cmocka_unit_test(malformed_folders_are_refused_by_name),
        cmocka_unit_test(rope_parameters_set_the_bases),
        cmocka_unit_test(bad_calls_are_refused_by_name),
        cmocka_unit_test(the_public_api_embeds_a_folder_as_the_oracle_does),
        cmocka_unit_test(the_tiny_folder_matches_sentence_transformers),
        cmocka_unit_test(the_real_shape_matches_the_oracle),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
