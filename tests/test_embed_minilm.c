/* tests/test_embed_minilm.c: all-MiniLM-L6-v2 with its real weights (scripts/fetch-model)
 * against the sentence-transformers fixture (tests/fixtures/minilm_embeddings.json, made by
 * scripts/make-embed-fixture.py): WordPiece ids identical to the Hugging Face tokenizer's for
 * every sentence (accents, CJK, emoji, code, text truncated at 256 tokens), and each embedding
 * (batches of 8 packed sentences, mean pooling, L2) at cosine >= 0.9999 to the reference; the
 * graph matches the plain oracle on the real weights; the public API (fe_lm_encoder_open,
 * fe_lm_embed, the default dot products) gives vectors as close; bf16 dot products stay at
 * cosine >= 0.9999 too. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/alloc.h"
#include "ferrum/lm.h"
#include "lm/eval/bert_oracle.h"
#include "lm/format/safetensors.h"
#include "lm/model/encoder.h"
#include "lm/tokenizer/wordpiece.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"
#include "support/tok_fixtures.h"

typedef struct minilm {
    fe_safetensors *st;
    fe_bert_weights w;
    fe_wordpiece *tok;
    json_t *fixture;
} minilm;

static int setup(void **state) {
    test_device_setup(state);
    const char *dir = lmfix_need_minilm();
    if (!dir) { *state = NULL; return 0; }
    minilm *m = calloc(1, sizeof *m);
    char path[1200];
    fe_error err = {0};
    fe_bert_config c;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (fe_bert_config_from_file(dir, &c, &err) != FE_OK || fe_safetensors_open(path, &m->st, &err) != FE_OK ||
        fe_bert_weights_from_safetensors(m->st, &c, &m->w, &err) != FE_OK)
        fail_msg("%s", err.message);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (fe_wordpiece_load_json(path, &m->tok, &err) != FE_OK) fail_msg("%s", err.message);
    json_error_t je;
    m->fixture = json_load_file(tokfix_path("minilm_embeddings.json"), 0, &je);
    if (!m->fixture) fail_msg("minilm_embeddings.json: %s", je.text);
    *state = m;
    return 0;
}

static int teardown(void **state) {
    minilm *m = *state;
    if (m) {
        json_decref(m->fixture);
        fe_wordpiece_destroy(m->tok);
        fe_bert_weights_free(&m->w);
        fe_safetensors_close(m->st);
        free(m);
    }
    return test_device_teardown(state);
}

static json_t *items(minilm *m) { return json_object_get(m->fixture, "items"); }

/* the sentence's ids by ferrum's WordPiece, at sentence-transformers' maximum */
static int32_t *encode(minilm *m, json_t *item, size_t *n) {
    const char *text = json_string_value(json_object_get(item, "text"));
    int32_t *ids;
    fe_error err = {0};
    int64_t max = json_integer_value(json_object_get(m->fixture, "max_seq_length"));
    if (fe_wordpiece_encode(m->tok, text, strlen(text), max, &ids, n, &err) != FE_OK) fail_msg("%s", err.message);
    return ids;
}

static void wordpiece_ids_are_the_hugging_face_ids(void **state) {
    minilm *m = *state;
    if (!m) return;
    size_t bad = 0, longest = 0;
    for (size_t i = 0; i < json_array_size(items(m)); i++) {
        json_t *item = json_array_get(items(m), i), *want = json_object_get(item, "ids");
        size_t n;
        int32_t *ids = encode(m, item, &n);
        bool same = n == json_array_size(want);
        for (size_t j = 0; same && j < n; j++) same = ids[j] == json_integer_value(json_array_get(want, j));
        if (!same) {
            bad++;
            print_message("ids differ for %s: ferrum %zu ids, Hugging Face %zu\n",
                          json_string_value(json_object_get(item, "text")), n, json_array_size(want));
        }
        longest = n > longest ? n : longest;
        fe_free(ids);
    }
    assert_true(json_array_size(items(m)) >= 50);
    assert_int_equal(longest, 256); /* the long texts were cut at the maximum */
    assert_int_equal(bad, 0);
}

static double cosine(const float *a, json_t *b, int64_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        double y = json_number_value(json_array_get(b, (size_t)i));
        ab += a[i] * y, aa += (double)a[i] * a[i], bb += y * y;
    }
    return ab / sqrt(aa * bb);
}

static void embeddings_match_sentence_transformers(void **state) {
    minilm *m = *state;
    if (!m) return;
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = 256, o.slots = 8;
    fe_encoder *e = NULL;
    fe_error err = {0};
    if (fe_encoder_create(test_dev, &m->w, &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    const int64_t H = m->w.cfg.hidden;
    size_t n_items = json_array_size(items(m));
    double worst = 1;
    float v[384];
    assert_int_equal(H, 384);
    for (size_t first = 0; first < n_items; first += 8) {
        int n = (int)(n_items - first < 8 ? n_items - first : 8);
        int32_t *ids[8];
        int64_t lens[8];
        for (int s = 0; s < n; s++) {
            size_t len;
            ids[s] = encode(m, json_array_get(items(m), first + (size_t)s), &len);
            lens[s] = (int64_t)len;
        }
        const float *h;
        if (fe_encoder_forward(e, (const int32_t *const *)ids, lens, n, &h) != FE_OK)
            fail_msg("%s", fe_encoder_message(e));
        for (int s = 0; s < n; s++) {
            json_t *item = json_array_get(items(m), first + (size_t)s);
            fe_encoder_pool(h, lens[s], H, FE_POOLING_MEAN, 0, true, v);
            double cos = cosine(v, json_object_get(item, "embedding"), H);
            if (cos < 0.9999)
                print_message("cosine %.6f for %s\n", cos, json_string_value(json_object_get(item, "text")));
            worst = fmin(worst, cos);
            h += lens[s] * H;
            fe_free(ids[s]);
        }
    }
    print_message("%zu sentences: worst cosine to sentence-transformers %.7f\n", n_items, worst);
    assert_true(worst >= 0.9999);
    fe_encoder_destroy(e);
}

static void the_graph_matches_the_oracle_on_real_weights(void **state) {
    minilm *m = *state;
    if (!m) return;
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = 64, o.slots = 1;
    fe_encoder *e = NULL;
    fe_error err = {0};
    if (fe_encoder_create(test_dev, &m->w, &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    size_t n;
    int32_t *ids = encode(m, json_array_get(items(m), 19), &n); /* accents */
    const int32_t *one[1] = {ids};
    int64_t len[1] = {(int64_t)n};
    const float *h;
    assert_int_equal(fe_encoder_forward(e, one, len, 1, &h), FE_OK);
    float *ref = malloc((size_t)n * 384 * sizeof *ref);
    assert_int_equal(fe_bert_oracle_forward(&m->w, ids, (int64_t)n, ref, &err), FE_OK);
    double d = 0;
    for (size_t i = 0; i < n * 384; i++) d = fmax(d, fabs((double)h[i] - ref[i]));
    print_message("%zu tokens: max |graph - oracle| %.3g\n", n, d);
    assert_true(d < 1e-3);
    free(ref);
    fe_free(ids);
    fe_encoder_destroy(e);
}

/* the public API (ferrum/lm.h) end to end: the folder opened by fe_lm_encoder_open, every
 * fixture text through fe_lm_embed in one call (batches inside), the model's pooling and
 * normalisation */
static void the_public_api_embeds_the_fixture(void **state) {
    minilm *m = *state;
    if (!m) return;
    fe_lm_encoder *e = NULL;
    fe_error err = {0};
    fe_lm_encoder_options o = fe_lm_encoder_options_default();
    o.device = test_dev;
    if (fe_lm_encoder_open(lmfix_need_minilm(), &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    fe_lm_encoder_info in;
    assert_int_equal(fe_lm_encoder_get_info(e, &in), FE_OK);
    assert_int_equal(in.max_tokens, 256);
    assert_int_equal(in.hidden, 384);
    assert_int_equal(in.pooling, FE_LM_POOLING_MEAN);
    assert_true(in.normalize);
    size_t n = json_array_size(items(m));
    const char **texts = malloc(n * sizeof *texts);
    for (size_t i = 0; i < n; i++) texts[i] = json_string_value(json_object_get(json_array_get(items(m), i), "text"));
    float *v = malloc(n * 384 * sizeof *v);
    int64_t dim = 0;
    fe_lm_embed_stats st = {0};
    if (fe_lm_embed(e, texts, n, NULL, v, &dim, &st) != FE_OK) fail_msg("%s", fe_lm_encoder_message(e));
    assert_int_equal(dim, 384);
    assert_int_equal(st.truncated, 3);
    for (size_t i = 0; i < n; i++)
        assert_true(cosine(v + i * 384, json_object_get(json_array_get(items(m), i), "embedding"), 384) >= 0.9999);
    int32_t *ids;
    size_t n_ids;
    assert_int_equal(fe_lm_encoder_tokenize(e, texts[0], NULL, &ids, &n_ids), FE_OK);
    assert_int_equal(n_ids, json_array_size(json_object_get(json_array_get(items(m), 0), "ids")));
    fe_lm_free(ids);
    fe_lm_embed_options bad = fe_lm_embed_options_default();
    bad.dim = 385;
    assert_int_equal(fe_lm_embed(e, texts, 1, &bad, v, NULL, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_lm_encoder_message(e), "1..384"));
    bad = fe_lm_embed_options_default();
    bad.prompt_name = "query";
    assert_int_equal(fe_lm_embed(e, texts, 1, &bad, v, NULL, NULL), FE_E_INVALID);
    assert_non_null(strstr(fe_lm_encoder_message(e), "no prompt named"));
    free(v);
    free(texts);
    fe_lm_encoder_close(e);
}

/* bf16 dot products (matrices and activations rounded to bf16, sums in f32; the default
 * where the CPU has AVX512_BF16): every vector still at cosine >= 0.9999 to
 * sentence-transformers', as f32's, and not bit-equal to the f32 path (the option changes the
 * design). On AVX2 and AVX-512 the GEMMs read their matrices from layouts the encoder's graph
 * made once at open (k-pair panels: the six layers' q|k|v, output, FFN in and out, N x K x 2
 * bytes each, every N a multiple of 32; bf16_dot = 1 dots them where the CPU has AVX512_BF16,
 * the f32 path widens its panels from them elsewhere), and embedding adds none: nothing of
 * the weights is packed from their rows per call. */
static void bf16_dot_products_stay_close(void **state) {
    minilm *m = *state;
    if (!m) return;
    fe_lm_encoder *e = NULL;
    fe_error err = {0};
    fe_lm_encoder_options o = fe_lm_encoder_options_default();
    o.device = test_dev, o.dot = FE_LM_ENCODER_DOT_BF16, o.batch = 16;
    if (fe_lm_encoder_open(lmfix_need_minilm(), &o, &e, &err) != FE_OK) fail_msg("%s", err.message);
    const fe_device_info *d = fe_device_get_info(test_dev);
    const size_t H = 384, F = 1536, per_layer = (3 * H * H + H * H + F * H + H * F) * 2;
    const size_t laid = d->isa >= FE_ISA_AVX2 ? 6 * per_layer : 0;
    assert_int_equal(fe_graph_get_stats(fe_lm_encoder_graph(e)).layout_bytes, laid);
    size_t n = json_array_size(items(m));
    const char **texts = malloc(n * sizeof *texts);
    for (size_t i = 0; i < n; i++) texts[i] = json_string_value(json_object_get(json_array_get(items(m), i), "text"));
    float *v = malloc(n * 384 * sizeof *v);
    if (fe_lm_embed(e, texts, n, NULL, v, NULL, NULL) != FE_OK) fail_msg("%s", fe_lm_encoder_message(e));
    double worst = 1;
    for (size_t i = 0; i < n; i++)
        worst = fmin(worst, cosine(v + i * 384, json_object_get(json_array_get(items(m), i), "embedding"), 384));
    print_message("bf16 dot products: worst cosine to sentence-transformers %.6f\n", worst);
    assert_true(worst >= 0.9999);
    assert_true(worst < 0.9999999);
    assert_int_equal(fe_graph_get_stats(fe_lm_encoder_graph(e)).layout_bytes, laid);
    free(v);
    free(texts);
    fe_lm_encoder_close(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wordpiece_ids_are_the_hugging_face_ids),
        cmocka_unit_test(embeddings_match_sentence_transformers),
        cmocka_unit_test(the_graph_matches_the_oracle_on_real_weights),
        cmocka_unit_test(the_public_api_embeds_the_fixture),
        cmocka_unit_test(bf16_dot_products_stay_close),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
