/* tests/test_wordpiece.c: the WordPiece tokenizer and BERT's normaliser on a small vocabulary:
 * accents stripped through NFD, full lower-casing, CJK ideographs and punctuation split off,
 * control characters removed, greedy longest-match pieces with "##", a word with no piece or
 * over the character limit is one [UNK], special tokens matched in raw text, [CLS] ... [SEP]
 * and truncation at the maximum; a tokenizer.json loads, and malformed ones are refused with
 * the JSON path or the unsupported step named. The real all-MiniLM-L6-v2 tokenizer is checked
 * against the Hugging Face ids in test_embed_minilm. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "lm/tokenizer/wordpiece.h"

static const char *const VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",", "!", "cafe", "creme",
    "brulee", "中", "国", "un", "##aff", "##able", "i", "##stanbul", "a", "##a", "ss", "strasse",
    "(", ")", "x", "##x",
};
enum { N_VOCAB = sizeof VOCAB / sizeof VOCAB[0] };

static fe_wordpiece *make(int64_t max_tokens) {
    const char *specials[3] = {"[CLS]", "[SEP]", "[MASK]"};
    fe_wordpiece_spec sp = fe_wordpiece_spec_default();
    sp.tokens = VOCAB, sp.n_tokens = N_VOCAB, sp.specials = specials, sp.n_specials = 3;
    sp.max_chars_per_word = 10, sp.max_tokens = max_tokens;
    fe_wordpiece *w = NULL;
    fe_error err = {0};
    if (fe_wordpiece_create(&sp, &w, &err) != FE_OK) fail_msg("%s", err.message);
    return w;
}

/* the tokens of text as one space-separated string */
static const char *encode(const fe_wordpiece *w, const char *text, int64_t max) {
    static char out[1024];
    int32_t *ids;
    size_t n;
    fe_error err = {0};
    if (fe_wordpiece_encode(w, text, strlen(text), max, &ids, &n, &err) != FE_OK) fail_msg("%s", err.message);
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", i ? " " : "", fe_wordpiece_piece(w, ids[i]));
    fe_free(ids);
    return out;
}

static const char *normalize(const fe_wordpiece *w, const char *text) {
    static char out[256];
    char *s;
    size_t n;
    assert_int_equal(fe_wordpiece_normalize(w, text, strlen(text), &s, &n, NULL), FE_OK);
    snprintf(out, sizeof out, "%s", s);
    fe_free(s);
    return out;
}

static void the_normaliser_strips_accents_lowercases_and_spaces_cjk(void **state) {
    (void)state;
    fe_wordpiece *w = make(0);
    assert_string_equal(normalize(w, "Crème Brûlée"), "creme brulee");
    assert_string_equal(normalize(w, "İstanbul"), "istanbul"); /* NFD first: I + dot, dot dropped */
    assert_string_equal(normalize(w, "中国"), " 中  国 ");
    assert_string_equal(normalize(w, "a\tb\nc\x07" "d\xef\xbf\xbd" "e"), "a b cde"); /* U+FFFD and BEL go */
    assert_string_equal(normalize(w, "ｆｕｌｌ"), "ｆｕｌｌ"); /* NFD is not NFKD: full width stays */
    fe_wordpiece_destroy(w);
}

static void words_split_at_spaces_and_punctuation_into_pieces(void **state) {
    (void)state;
    fe_wordpiece *w = make(0);
    assert_string_equal(encode(w, "Hello, world!", -1), "[CLS] hello , world ! [SEP]");
    assert_string_equal(encode(w, "unaffable", -1), "[CLS] un ##aff ##able [SEP]");
    assert_string_equal(encode(w, "Café 中国", -1), "[CLS] cafe 中 国 [SEP]");
    assert_string_equal(encode(w, "İstanbul", -1), "[CLS] i ##stanbul [SEP]");
    assert_string_equal(encode(w, "(x)", -1), "[CLS] ( x ) [SEP]");
    assert_string_equal(encode(w, "", -1), "[CLS] [SEP]");
    fe_wordpiece_destroy(w);
}

static void a_word_without_pieces_or_too_long_is_one_unk(void **state) {
    (void)state;
    fe_wordpiece *w = make(0);
    assert_string_equal(encode(w, "unz hello", -1), "[CLS] [UNK] hello [SEP]");
    assert_string_equal(encode(w, "xxxxxxxxxx", -1), "[CLS] x ##x ##x ##x ##x ##x ##x ##x ##x ##x [SEP]");
    assert_string_equal(encode(w, "xxxxxxxxxxx", -1), "[CLS] [UNK] [SEP]"); /* 11 > 10 characters */
    assert_string_equal(encode(w, "😀", -1), "[CLS] [UNK] [SEP]");
    fe_wordpiece_destroy(w);
}

static void special_tokens_in_text_are_kept_whole(void **state) {
    (void)state;
    fe_wordpiece *w = make(0);
    assert_string_equal(encode(w, "hello[SEP]world [MASK]!", -1), "[CLS] hello [SEP] world [MASK] ! [SEP]");
    /* raw text: case matters; "[", "sep" and "]" are words with no piece */
    assert_string_equal(encode(w, "[sep]", -1), "[CLS] [UNK] [UNK] [UNK] [SEP]");
    fe_wordpiece_destroy(w);
}

static void truncation_keeps_cls_and_sep(void **state) {
    (void)state;
    fe_wordpiece *w = make(5);
    assert_string_equal(encode(w, "hello world hello world", 0), "[CLS] hello world hello [SEP]");
    assert_string_equal(encode(w, "hello world hello world", 3), "[CLS] hello [SEP]");
    assert_string_equal(encode(w, "hello world hello world", -1), "[CLS] hello world hello world [SEP]");
    int32_t *ids;
    size_t n;
    fe_error err = {0};
    assert_int_equal(fe_wordpiece_encode(w, "a", 1, 1, &ids, &n, &err), FE_E_INVALID);
    assert_non_null(strstr(err.message, "at least 2"));
    fe_wordpiece_destroy(w);
}

static void invalid_utf8_is_refused_naming_the_byte(void **state) {
    (void)state;
    fe_wordpiece *w = make(0);
    int32_t *ids = (int32_t *)1;
    size_t n;
    fe_error err = {0};
    assert_int_equal(fe_wordpiece_encode(w, "ab\xff", 3, 0, &ids, &n, &err), FE_E_INVALID);
    assert_null(ids);
    assert_non_null(strstr(err.message, "byte 2"));
    assert_int_equal(fe_wordpiece_encode(w, "\xe4\xb8", 2, 0, &ids, &n, &err), FE_E_INVALID);
    fe_wordpiece_destroy(w);
}

static void a_bad_vocabulary_is_refused(void **state) {
    (void)state;
    const char *dup[] = {"[UNK]", "a", "a"}, *no_unk[] = {"a", "b"}, *bad[] = {"[UNK]", "\xff"};
    fe_wordpiece_spec sp = fe_wordpiece_spec_default();
    sp.cls = sp.sep = NULL;
    fe_wordpiece *w;
    fe_error err = {0};
    sp.tokens = dup, sp.n_tokens = 3;
    assert_int_equal(fe_wordpiece_create(&sp, &w, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "given twice"));
    sp.tokens = no_unk, sp.n_tokens = 2;
    assert_int_equal(fe_wordpiece_create(&sp, &w, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "unk token"));
    sp.tokens = bad;
    assert_int_equal(fe_wordpiece_create(&sp, &w, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "UTF-8"));
    sp.n_tokens = 0;
    assert_int_equal(fe_wordpiece_create(&sp, &w, &err), FE_E_INVALID);
}

/* a tokenizer.json as BERT ships it, with `edit` (a JSON fragment replacing the marker) */
static fe_status from_json(const char *normalizer, const char *pre, const char *post, const char *model,
                           fe_wordpiece **w, fe_error *err) {
    char text[2048];
    int n = snprintf(text, sizeof text,
                     "{\"added_tokens\": [{\"id\": 1, \"content\": \"[UNK]\", \"special\": true}], "
                     "\"truncation\": {\"max_length\": 6}, \"normalizer\": %s, \"pre_tokenizer\": %s, "
                     "\"post_processor\": %s, \"model\": %s}", normalizer, pre, post, model);
    return fe_wordpiece_from_json(text, (size_t)n, "tokenizer.json", w, err);
}

#define NORM "{\"type\": \"BertNormalizer\", \"lowercase\": true, \"strip_accents\": null}"
#define PRE "{\"type\": \"BertPreTokenizer\"}"
#define POST "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\"}}, " \
             "{\"Sequence\": {\"id\": \"A\"}}, {\"SpecialToken\": {\"id\": \"[SEP]\"}}]}"
#define MODEL "{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": {\"[PAD]\": 0, " \
              "\"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3, \"cafe\": 4, \"##s\": 5}}"

static void tokenizer_json_loads_and_malformed_ones_are_named(void **state) {
    (void)state;
    fe_wordpiece *w;
    fe_error err = {0};
    assert_int_equal(from_json(NORM, PRE, POST, MODEL, &w, &err), FE_OK);
    assert_int_equal(fe_wordpiece_max_tokens(w), 6);
    assert_string_equal(encode(w, "CAFÉS cafe cafe cafe cafe", 0), "[CLS] cafe ##s cafe cafe [SEP]");
    fe_wordpiece_destroy(w);
    assert_int_equal(from_json(NORM, PRE, "{\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3], "
                               "\"cls\": [\"[CLS]\", 2]}", MODEL, &w, &err), FE_OK);
    fe_wordpiece_destroy(w);
    struct { const char *norm, *pre, *post, *model, *says; fe_status st; } bad[] = {
        {"{\"type\": \"NFKC\"}", PRE, POST, MODEL, "normalizer NFKC", FE_E_UNSUPPORTED},
        {NORM, "{\"type\": \"Whitespace\"}", POST, MODEL, "pre_tokenizer Whitespace", FE_E_UNSUPPORTED},
        {NORM, PRE, "{\"type\": \"RobertaProcessing\"}", MODEL, "RobertaProcessing", FE_E_UNSUPPORTED},
        {NORM, PRE, POST, "{\"type\": \"BPE\", \"vocab\": {}}", "not WordPiece", FE_E_UNSUPPORTED},
        {NORM, PRE, POST, "{\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"a\": 0}}", "each once", FE_E_FORMAT},
        {NORM, PRE, POST, "{\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"[CLS]\": 1}}", "[SEP]", FE_E_FORMAT},
        {NORM, PRE, POST, "{\"type\": \"WordPiece\", \"vocab\": [1, 2]}", "model.vocab", FE_E_FORMAT},
        {"{\"type\": \"BertNormalizer\", \"lowercase\": 3}", PRE, POST, MODEL, "normalizer.lowercase", FE_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fe_status st = from_json(bad[i].norm, bad[i].pre, bad[i].post, bad[i].model, &w, &err);
        if (st != bad[i].st || !strstr(err.message, bad[i].says))
            fail_msg("case %zu: %s (status %d), expected \"%s\"", i, err.message, st, bad[i].says);
        assert_null(w);
    }
    assert_int_equal(fe_wordpiece_from_json("{\"model\": ", 10, "cut.json", &w, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "cut.json"));
}

static void failed_allocations_are_nomem(void **state) {
    (void)state;
    for (long k = 1;; k++) {
        fe_wordpiece *w = NULL;
        fe_error err = {0};
        int32_t *ids = NULL;
        size_t n;
        fe_alloc_fail_at(k);
        fe_status st = from_json(NORM, PRE, POST, MODEL, &w, &err);
        if (st == FE_OK) st = fe_wordpiece_encode(w, "CAFÉS 中 cafe", strlen("CAFÉS 中 cafe"), 0, &ids, &n, &err);
        fe_alloc_fail_at(0);
        fe_wordpiece_destroy(w);
        if (st == FE_OK) {
            assert_int_equal(n, 6); /* [CLS] cafe ##s [UNK] cafe [SEP] */
            fe_free(ids);
            break;
        }
        if (st != FE_E_NOMEM) fail_msg("allocation %ld: %s (status %d)", k, err.message, st);
        assert_true(k < 1000);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_normaliser_strips_accents_lowercases_and_spaces_cjk),
        cmocka_unit_test(words_split_at_spaces_and_punctuation_into_pieces),
        cmocka_unit_test(a_word_without_pieces_or_too_long_is_one_unk),
        cmocka_unit_test(special_tokens_in_text_are_kept_whole),
        cmocka_unit_test(truncation_keeps_cls_and_sep),
        cmocka_unit_test(invalid_utf8_is_refused_naming_the_byte),
        cmocka_unit_test(a_bad_vocabulary_is_refused),
        cmocka_unit_test(tokenizer_json_loads_and_malformed_ones_are_named),
        cmocka_unit_test(failed_allocations_are_nomem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
