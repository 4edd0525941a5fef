/* lm/tokenizer/tokenizer_json.c: the Hugging Face tokenizer.json loader (byte-level BPE; a
 * Unigram model goes to unigram_json.c).
 *
 * Reads model.vocab (byte-level text -> id), model.merges ("a b" strings or ["a", "b"]
 * pairs, rank = position), model.ignore_merges, added_tokens, the pre_tokenizer (ByteLevel,
 * Split with a Regex or String pattern and Isolated behaviour, Digits, or a Sequence of these
 * ending in ByteLevel) and a TemplateProcessing post-processor's leading special token (BOS).
 * Anything that would change the ids and that ferrum does not do is refused by name
 * (FE_E_UNSUPPORTED) rather than ignored. Every malformed input is FE_E_FORMAT naming the
 * JSON path and the rule, never a crash. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/tokenizer/tokenizer_internal.h"
#include "lm/tokenizer/unigram_json.h"

typedef struct ctx {
    const char *what;
    fe_error *err;
    fe_tokenizer *t;
    bool byte_level_seen;
} ctx;

static fe_status bad(ctx *c, const char *fmt, const char *path) {
    return fe_error_set(c->err, FE_E_FORMAT, "%s: %s %s", c->what, path, fmt);
}

static bool get_bool(json_t *o, const char *key, bool dflt, bool *ok) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return dflt;
    if (!json_is_boolean(v)) *ok = false;
    return json_is_true(v);
}

/* ---- pre-tokenizer ---- */

/* A String split pattern as a regex: ASCII punctuation escaped, the rest literal. */
static fe_status add_literal(ctx *c, const char *s, size_t n) {
    char *re = fe_malloc(2 * n + 1);
    if (!re) return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->what);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
        if (ch < 0x80 && !alnum) re[o++] = '\\';
        re[o++] = (char)ch;
    }
    fe_status st = fe_pretok_add(&c->t->pre, re, o, c->what, c->err);
    fe_free(re);
    return st;
}

static fe_status pre_step(ctx *c, json_t *p);

static fe_status pre_sequence(ctx *c, json_t *p) {
    json_t *list = json_object_get(p, "pretokenizers");
    if (!json_is_array(list))
        return bad(c, "is not an array", "pre_tokenizer (Sequence) \"pretokenizers\"");
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n; i++) {
        fe_status st = pre_step(c, json_array_get(list, i));
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

static fe_status pre_step(ctx *c, json_t *p) {
    if (!json_is_object(p)) return bad(c, "is not an object", "pre_tokenizer step");
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) return bad(c, "has no \"type\" string", "pre_tokenizer step");
    if (c->byte_level_seen)
        return fe_error_set(c->err, FE_E_UNSUPPORTED,
                            "%s: pre_tokenizer step %s comes after ByteLevel; ferrum runs "
                            "ByteLevel last (as GPT-2, Llama 3 and SmolLM2 do)",
                            c->what, type);
    bool ok = true;
    if (strcmp(type, "Sequence") == 0) return pre_sequence(c, p);
    if (strcmp(type, "ByteLevel") == 0) {
        bool prefix = get_bool(p, "add_prefix_space", false, &ok);
        bool regex = get_bool(p, "use_regex", true, &ok);
        if (!ok) return bad(c, "has a flag that is not a boolean", "pre_tokenizer ByteLevel");
        if (prefix)
            return fe_error_set(c->err, FE_E_UNSUPPORTED,
                                "%s: pre_tokenizer ByteLevel add_prefix_space is true; ferrum "
                                "supports it false (GPT-2, Llama 3, SmolLM2)",
                                c->what);
        c->byte_level_seen = true;
        return regex ? fe_pretok_add(&c->t->pre, fe_pretok_gpt2, strlen(fe_pretok_gpt2),
                                     c->what, c->err)
                     : FE_OK;
    }
    if (strcmp(type, "Digits") == 0) {
        bool each = get_bool(p, "individual_digits", false, &ok);
        if (!ok) return bad(c, "is not a boolean", "pre_tokenizer Digits individual_digits");
        const char *re = each ? "\\p{N}" : "\\p{N}+";
        return fe_pretok_add(&c->t->pre, re, strlen(re), c->what, c->err);
    }
    if (strcmp(type, "Split") == 0) {
        json_t *pat = json_object_get(p, "pattern");
        const char *behavior = json_string_value(json_object_get(p, "behavior"));
        bool invert = get_bool(p, "invert", false, &ok);
        if (!ok) return bad(c, "is not a boolean", "pre_tokenizer Split invert");
        if (!behavior) return bad(c, "is missing or not a string", "pre_tokenizer Split behavior");
        if (strcmp(behavior, "Isolated") != 0 || invert)
            return fe_error_set(c->err, FE_E_UNSUPPORTED,
                                "%s: pre_tokenizer Split behavior %s%s; ferrum splits "
                                "Isolated, not inverted",
                                c->what, behavior, invert ? " (inverted)" : "");
        json_t *re = json_is_object(pat) ? json_object_get(pat, "Regex") : NULL;
        json_t *lit = json_is_object(pat) ? json_object_get(pat, "String") : NULL;
        if (json_is_string(re))
            return fe_pretok_add(&c->t->pre, json_string_value(re), json_string_length(re),
                                 c->what, c->err);
        if (json_is_string(lit))
            return add_literal(c, json_string_value(lit), json_string_length(lit));
        return bad(c, "is not {\"Regex\": ...} or {\"String\": ...}", "pre_tokenizer Split pattern");
    }
    return fe_error_set(c->err, FE_E_UNSUPPORTED,
                        "%s: pre_tokenizer type %s is not supported; ferrum reads ByteLevel, "
                        "Split (Isolated), Digits and a Sequence of these",
                        c->what, type);
}

/* ---- vocabulary, merges, added tokens ---- */

static fe_status json_id(ctx *c, json_t *v, const char *where, const char *name, int32_t *id) {
    char q[48];
    if (!json_is_integer(v))
        return fe_error_set(c->err, FE_E_FORMAT, "%s: %s \"%s\": the id is not an integer",
                            c->what, where, fe_tok_quote(name, strlen(name), q));
    json_int_t x = json_integer_value(v);
    if (x < 0 || x >= FE_TOKENIZER_MAX_VOCAB)
        return fe_error_set(c->err, FE_E_FORMAT, "%s: %s \"%s\": id %lld is outside 0..%d",
                            c->what, where, fe_tok_quote(name, strlen(name), q), (long long)x,
                            FE_TOKENIZER_MAX_VOCAB - 1);
    *id = (int32_t)x;
    return FE_OK;
}

static fe_status count_ids(ctx *c, json_t *vocab, json_t *added, int32_t *n) {
    int32_t max = -1, id;
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        fe_status st = json_id(c, v, "model.vocab", key, &id);
        if (st != FE_OK) return st;
        if (id > max) max = id;
    }
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        const char *content = json_string_value(json_object_get(a, "content"));
        if (!json_is_object(a) || !content)
            return fe_error_set(c->err, FE_E_FORMAT,
                                "%s: added_tokens[%zu] is not an object with a \"content\" "
                                "string",
                                c->what, i);
        fe_status st = json_id(c, json_object_get(a, "id"), "added_tokens", content, &id);
        if (st != FE_OK) return st;
        if (id > max) max = id;
    }
    if (max < 0)
        return fe_error_set(c->err, FE_E_FORMAT, "%s: model.vocab is empty", c->what);
    *n = max + 1;
    return FE_OK;
}

static fe_status load_merges(ctx *c, json_t *merges) {
    size_t n = json_array_size(merges);
    if (fe_bpe_merges_init(&c->t->merges, n) != FE_OK)
        return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory for merges", c->what);
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(merges, i);
        const char *l = NULL, *r = NULL;
        size_t ln = 0, rn = 0;
        if (json_is_string(m)) {
            const char *s = json_string_value(m);
            size_t len = json_string_length(m);
            const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
            if (sp && !memchr(sp + 1, ' ', len - (size_t)(sp - s) - 1)) {
                l = s;
                ln = (size_t)(sp - s);
                r = sp + 1;
                rn = len - ln - 1;
            }
        } else if (json_is_array(m) && json_array_size(m) == 2 &&
                   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
            l = json_string_value(json_array_get(m, 0));
            ln = json_string_length(json_array_get(m, 0));
            r = json_string_value(json_array_get(m, 1));
            rn = json_string_length(json_array_get(m, 1));
        }
        if (!l)
            return fe_error_set(c->err, FE_E_FORMAT,
                                "%s: model.merges[%zu] is neither \"left right\" nor [\"left\", "
                                "\"right\"]",
                                c->what, i);
        char name[64];
        snprintf(name, sizeof name, "%s: model.merges[%zu]", c->what, i);
        fe_status st = fe_tok_merge(c->t, l, ln, r, rn, (int32_t)i, true, name, c->err);
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

static fe_status load_added(ctx *c, json_t *added) {
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_t *a = json_array_get(added, i);
        json_t *content = json_object_get(a, "content");
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id")); /* checked */
        bool ok = true;
        bool special = get_bool(a, "special", false, &ok);
        bool lstrip = get_bool(a, "lstrip", false, &ok);
        bool rstrip = get_bool(a, "rstrip", false, &ok);
        if (!ok)
            return fe_error_set(c->err, FE_E_FORMAT,
                                "%s: added_tokens[%zu] has a flag that is not a boolean",
                                c->what, i);
        fe_status st = fe_tok_set(c->t, id, json_string_value(content), json_string_length(content),
                                  special ? FE_TOKEN_CONTROL : FE_TOKEN_USER_DEFINED, false, true,
                                  c->what, c->err);
        if (st == FE_OK) st = fe_tok_mark_added(c->t, id, special, lstrip, rstrip, c->err);
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

/* BOS from TemplateProcessing: single = [{"SpecialToken": {"id": "<s>"}}, {"Sequence": ..}]. */
static fe_status post_processor(ctx *c, json_t *pp) {
    if (!pp || json_is_null(pp)) return FE_OK;
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type) return bad(c, "has no \"type\" string", "post_processor");
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(pp, "processors");
        if (!json_is_array(list)) return bad(c, "is not an array", "post_processor processors");
        for (size_t i = 0; i < json_array_size(list); i++) {
            fe_status st = post_processor(c, json_array_get(list, i));
            if (st != FE_OK) return st;
        }
        return FE_OK;
    }
    if (strcmp(type, "TemplateProcessing") != 0) return FE_OK; /* ByteLevel: offsets only */
    json_t *single = json_object_get(pp, "single");
    if (!json_is_array(single)) return bad(c, "is not an array", "post_processor single");
    json_t *first = json_object_get(json_array_get(single, 0), "SpecialToken");
    if (!first) return FE_OK; /* the text comes first: no BOS */
    const char *name = json_string_value(json_object_get(first, "id"));
    if (!name) return bad(c, "has no \"id\" string", "post_processor single[0].SpecialToken");
    json_t *ids = json_object_get(json_object_get(json_object_get(pp, "special_tokens"), name), "ids");
    int32_t id = fe_tok_lookup(c->t, name, strlen(name));
    if (json_is_array(ids) && json_array_size(ids) == 1) {
        fe_status st = json_id(c, json_array_get(ids, 0), "post_processor special_tokens", name, &id);
        if (st != FE_OK) return st;
    }
    if (id < 0 || id >= c->t->n_vocab) {
        char q[48];
        return fe_error_set(c->err, FE_E_FORMAT,
                            "%s: post_processor starts with \"%s\", which is not a token", c->what,
                            fe_tok_quote(name, strlen(name), q));
    }
    c->t->bos = id;
    c->t->add_bos = true;
    return FE_OK;
}

static fe_status check_model(ctx *c, json_t *model) {
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type && strcmp(type, "BPE") != 0)
        return fe_error_set(c->err, FE_E_UNSUPPORTED,
                            "%s: model type %s; ferrum reads byte-level BPE tokenizers only",
                            c->what, type);
    bool ok = true;
    if (get_bool(model, "byte_fallback", false, &ok))
        return fe_error_set(c->err, FE_E_UNSUPPORTED,
                            "%s: model.byte_fallback is true (a SentencePiece-style BPE); ferrum "
                            "reads byte-level BPE only",
                            c->what);
    const char *keys[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(model, keys[i]);
        if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
            return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: model.%s is set; ferrum does not "
                                "apply it", c->what, keys[i]);
    }
    if (!json_is_object(json_object_get(model, "vocab")))
        return bad(c, "is missing or not an object", "model.vocab");
    if (!json_is_array(json_object_get(model, "merges")))
        return bad(c, "is missing or not an array", "model.merges");
    get_bool(model, "ignore_merges", false, &ok);
    if (!ok) return bad(c, "is not a boolean", "model.ignore_merges");
    return FE_OK;
}

static fe_status build(ctx *c, json_t *root) {
    if (!json_is_object(root)) return bad(c, "is not a JSON object", "the document");
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model))
        return fe_error_set(c->err, FE_E_FORMAT,
                            "%s: no \"model\" object; a tokenizer.json has model.vocab and "
                            "model.merges",
                            c->what);
    fe_status st = check_model(c, model);
    if (st != FE_OK) return st;
    json_t *norm = json_object_get(root, "normalizer");
    if (norm && !json_is_null(norm))
        return fe_error_set(c->err, FE_E_UNSUPPORTED,
                            "%s: a normalizer is set; ferrum supports byte-level BPE without one "
                            "(normalizer null)",
                            c->what);
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_null(added) && !json_is_array(added))
        return bad(c, "is not an array", "added_tokens");
    json_t *vocab = json_object_get(model, "vocab");
    int32_t n = 0;
    st = count_ids(c, vocab, added, &n);
    if (st == FE_OK) st = fe_tok_new(n, c->what, &c->t, c->err);
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (st != FE_OK) break;
        st = fe_tok_set(c->t, (int32_t)json_integer_value(v), key, strlen(key), FE_TOKEN_NORMAL,
                        true, false, c->what, c->err);
    }
    if (st == FE_OK) st = load_added(c, added);
    if (st == FE_OK) st = fe_tok_index(c->t, c->what, c->err);
    if (st == FE_OK) st = load_merges(c, json_object_get(model, "merges"));
    json_t *pre = json_object_get(root, "pre_tokenizer");
    if (st == FE_OK && (!pre || json_is_null(pre)))
        st = fe_error_set(c->err, FE_E_UNSUPPORTED,
                          "%s: no pre_tokenizer; ferrum reads byte-level BPE, whose pipeline "
                          "has a ByteLevel pre-tokenizer",
                          c->what);
    if (st == FE_OK) st = pre_step(c, pre);
    if (st == FE_OK && !c->byte_level_seen)
        st = fe_error_set(c->err, FE_E_UNSUPPORTED,
                          "%s: the pre_tokenizer has no ByteLevel step; ferrum reads byte-level "
                          "BPE only",
                          c->what);
    if (st == FE_OK) {
        bool ok = true;
        c->t->ignore_merges = get_bool(model, "ignore_merges", false, &ok);
        st = post_processor(c, json_object_get(root, "post_processor"));
    }
    if (st == FE_OK) st = fe_tok_finish(c->t, c->what, c->err);
    return st;
}

/* The tokenizer the parsed root describes (what names it in messages); the root is
 * released either way. */
static fe_status from_root(json_t *root, const char *what, fe_tokenizer **out, fe_error *err) {
    if (fe_unigram_json_is(root)) { /* SentencePiece Unigram (unigram_json.h) */
        fe_status st = fe_unigram_json_build(root, what, out, err);
        json_decref(root);
        return st;
    }
    ctx c = {.what = what, .err = err};
    fe_status st = build(&c, root);
    json_decref(root);
    if (st != FE_OK) {
        fe_tokenizer_destroy(c.t);
        return st;
    }
    *out = c.t;
    return FE_OK;
}

fe_status fe_tokenizer_from_json(const char *text, size_t len, const char *what,
                                 fe_tokenizer **out, fe_error *err) {
    *out = NULL;
    if (!what) what = "tokenizer.json";
    json_t *root;
    fe_status st = fe_json_parse(text, len, what, &root, err);
    return st != FE_OK ? st : from_root(root, what, out, err);
}

fe_status fe_tokenizer_load_json(const char *path, fe_tokenizer **out, fe_error *err) {
    *out = NULL;
    json_t *root;
    fe_status st = fe_json_load_file(path, &root, err);
    return st != FE_OK ? st : from_root(root, path, out, err);
}
