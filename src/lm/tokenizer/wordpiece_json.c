/* lm/tokenizer/wordpiece_json.c: a WordPiece tokenizer from a Hugging Face tokenizer.json
 * (see wordpiece.h): model.vocab, unk_token, continuing_subword_prefix and
 * max_input_chars_per_word; the BertNormalizer's four switches; the BertPreTokenizer; the
 * post-processor's [CLS] and [SEP]; truncation.max_length; the special added tokens. A step
 * that would change the ids and that ferrum does not run is refused by name, never ignored;
 * malformed JSON is FE_E_FORMAT naming the JSON path. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/tokenizer/wordpiece.h"

static fe_status bad(fe_error *err, const char *what, const char *path, const char *rule) {
    return fe_error_set(err, FE_E_FORMAT, "%s: %s %s", what, path, rule);
}

/* A boolean switch: absent or null gives dflt (null strip_accents: follow lowercase) */
static fe_status switch_of(json_t *o, const char *key, bool dflt, bool *out, const char *what,
                           fe_error *err) {
    json_t *v = json_object_get(o, key);
    *out = dflt;
    if (!v || json_is_null(v)) return FE_OK;
    if (!json_is_boolean(v))
        return fe_error_set(err, FE_E_FORMAT, "%s: normalizer.%s is not a boolean or null", what, key);
    *out = json_is_true(v);
    return FE_OK;
}

static fe_status read_normalizer(json_t *n, fe_wordpiece_spec *sp, const char *what, fe_error *err) {
    if (!n || json_is_null(n)) {
        sp->clean_text = sp->chinese_chars = sp->strip_accents = sp->lowercase = false;
        return FE_OK;
    }
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return bad(err, what, "normalizer", "has no \"type\" string");
    if (strcmp(type, "BertNormalizer") != 0)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: normalizer %s; ferrum's WordPiece runs "
                            "BertNormalizer (or none)", what, type);
    fe_status st = switch_of(n, "clean_text", true, &sp->clean_text, what, err);
    if (st == FE_OK) st = switch_of(n, "handle_chinese_chars", true, &sp->chinese_chars, what, err);
    if (st == FE_OK) st = switch_of(n, "lowercase", true, &sp->lowercase, what, err);
    if (st == FE_OK) st = switch_of(n, "strip_accents", sp->lowercase, &sp->strip_accents, what, err);
    return st;
}

/* The token string of a TemplateProcessing SpecialToken piece */
static const char *special_piece(json_t *piece) {
    return json_string_value(json_object_get(json_object_get(piece, "SpecialToken"), "id"));
}

/* [CLS] $A [SEP] from TemplateProcessing.single or BertProcessing's cls and sep pairs */
static fe_status read_post(json_t *p, fe_wordpiece_spec *sp, const char *what, fe_error *err) {
    sp->cls = sp->sep = NULL;
    if (!p || json_is_null(p)) return FE_OK;
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) return bad(err, what, "post_processor", "has no \"type\" string");
    if (strcmp(type, "BertProcessing") == 0) {
        json_t *cls = json_object_get(p, "cls"), *sep = json_object_get(p, "sep");
        sp->cls = json_string_value(json_array_get(cls, 0));
        sp->sep = json_string_value(json_array_get(sep, 0));
        if (!sp->cls || !sp->sep)
            return bad(err, what, "post_processor (BertProcessing)", "needs cls and sep as [\"token\", id]");
        return FE_OK;
    }
    if (strcmp(type, "TemplateProcessing") != 0)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: post_processor %s; ferrum's WordPiece "
                            "takes TemplateProcessing or BertProcessing", what, type);
    json_t *single = json_object_get(p, "single");
    size_t n = json_array_size(single);
    bool seq_mid = n == 3 && json_object_get(json_array_get(single, 1), "Sequence");
    if (!json_is_array(single) || !seq_mid || !special_piece(json_array_get(single, 0)) ||
        !special_piece(json_array_get(single, 2)))
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: post_processor.single is not "
                            "[special] $A [special]; ferrum's WordPiece adds [CLS] first and [SEP] "
                            "last", what);
    sp->cls = special_piece(json_array_get(single, 0));
    sp->sep = special_piece(json_array_get(single, 2));
    return FE_OK;
}

/* model.vocab {token: id} as an array by id; every id 0..n-1 must be given once */
static fe_status read_vocab(json_t *vocab, const char ***tokens, int *n, const char *what,
                            fe_error *err) {
    if (!json_is_object(vocab)) return bad(err, what, "model.vocab", "is not an object");
    size_t count = json_object_size(vocab);
    if (count < 1 || count > (1u << 24))
        return bad(err, what, "model.vocab", "must hold 1..2^24 tokens");
    const char **t = fe_calloc(count, sizeof *t);
    if (!t) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || (size_t)id >= count || t[id]) {
            fe_free(t);
            return fe_error_set(err, FE_E_FORMAT, "%s: model.vocab[\"%.40s\"] has id %s; ids must "
                                "be the integers 0..%zu, each once", what, key,
                                json_is_integer(v) ? "out of range or given twice" : "that is not an integer",
                                count - 1);
        }
        t[id] = key;
    }
    *tokens = t;
    *n = (int)count;
    return FE_OK;
}

static fe_status build(json_t *root, const char *what, fe_wordpiece **out, fe_error *err) {
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return bad(err, what, "model", "is missing or not an object");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "WordPiece") != 0)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: model.type is %s, not WordPiece", what,
                            type ? type : "missing");
    fe_wordpiece_spec sp = fe_wordpiece_spec_default();
    json_t *v;
    if ((v = json_object_get(model, "unk_token")) && !(sp.unk = json_string_value(v)))
        return bad(err, what, "model.unk_token", "is not a string");
    if ((v = json_object_get(model, "continuing_subword_prefix")) && !(sp.prefix = json_string_value(v)))
        return bad(err, what, "model.continuing_subword_prefix", "is not a string");
    if ((v = json_object_get(model, "max_input_chars_per_word"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1 << 20)
            return bad(err, what, "model.max_input_chars_per_word", "is not an integer in 1..2^20");
        sp.max_chars_per_word = (int)json_integer_value(v);
    }
    fe_status st = read_normalizer(json_object_get(root, "normalizer"), &sp, what, err);
    json_t *pre = json_object_get(root, "pre_tokenizer");
    const char *pre_type = json_string_value(json_object_get(pre, "type"));
    if (st == FE_OK && (!pre_type || strcmp(pre_type, "BertPreTokenizer") != 0))
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: pre_tokenizer %s; ferrum's WordPiece runs "
                          "BertPreTokenizer", what, pre_type ? pre_type : "missing");
    if (st == FE_OK) st = read_post(json_object_get(root, "post_processor"), &sp, what, err);
    json_t *trunc = json_object_get(root, "truncation");
    if (st == FE_OK && trunc && !json_is_null(trunc)) {
        json_t *m = json_object_get(trunc, "max_length");
        if (!json_is_integer(m) || json_integer_value(m) < 2 || json_integer_value(m) > 1 << 24)
            st = bad(err, what, "truncation.max_length", "is not an integer in 2..2^24");
        else
            sp.max_tokens = json_integer_value(m);
    }
    json_t *added = json_object_get(root, "added_tokens");
    if (st == FE_OK && added && !json_is_array(added))
        st = bad(err, what, "added_tokens", "is not an array");
    const char **specials = fe_calloc(json_array_size(added) + 1, sizeof *specials);
    if (st == FE_OK && !specials) st = fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    for (size_t i = 0; st == FE_OK && i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        const char *content = json_string_value(json_object_get(a, "content"));
        if (!content || !*content) {
            st = bad(err, what, "added_tokens[]", "has no non-empty \"content\" string");
        } else if (json_is_true(json_object_get(a, "special"))) {
            specials[sp.n_specials++] = content;
        } else {
            st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: added token \"%.40s\" is not special; "
                              "ferrum's WordPiece matches special added tokens only", what, content);
        }
    }
    sp.specials = specials;
    const char **tokens = NULL;
    if (st == FE_OK) st = read_vocab(json_object_get(model, "vocab"), &tokens, &sp.n_tokens, what, err);
    sp.tokens = tokens;
    if (st == FE_OK) {
        st = fe_wordpiece_create(&sp, out, err);
        if (st != FE_OK && err) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            fe_error_set(err, st, "%s: %s", what, msg);
        }
    }
    fe_free(tokens);
    fe_free(specials);
    return st;
}

fe_status fe_wordpiece_from_json(const char *text, size_t len, const char *what,
                                 fe_wordpiece **out, fe_error *err) {
    *out = NULL;
    json_t *root;
    fe_status st = fe_json_parse(text, len, what, &root, err);
    if (st != FE_OK) return st;
    st = json_is_object(root) ? build(root, what, out, err) : bad(err, what, "the top level", "is not an object");
    json_decref(root);
    return st;
}

fe_status fe_wordpiece_load_json(const char *path, fe_wordpiece **out, fe_error *err) {
    *out = NULL;
    json_t *root;
    fe_status st = fe_json_load_file(path, &root, err);
    if (st != FE_OK) return st;
    st = json_is_object(root) ? build(root, path, out, err) : bad(err, path, "the top level", "is not an object");
    json_decref(root);
    return st;
}
