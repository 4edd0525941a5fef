/* lm/tokenizer/unigram_json.c: tokenizer.json's Unigram model read into plain arrays for
 * fe_tokenizer_create_spm (see unigram_json.h): the pieces and scores, the token types (from
 * unk_id, byte_fallback and added_tokens), the normaliser steps and the Metaspace prefix. */
#include "lm/tokenizer/unigram_json.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/tokenizer/tokenizer_internal.h"

static const char SPACE[] = "\xe2\x96\x81"; /* U+2581 */

typedef struct uctx {
    const char *what;
    fe_error *err;
    fe_spm_spec spec;
    char *charsmap; /* decoded Precompiled blob */
} uctx;

bool fe_unigram_json_is(json_t *root) {
    const char *type = json_string_value(json_object_get(json_object_get(root, "model"), "type"));
    return type && strcmp(type, "Unigram") == 0;
}

static fe_status unsupported(uctx *c, const char *part, const char *type) {
    return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: %s \"%.40s\" is not one ferrum applies to a "
                        "Unigram model (it reads Precompiled and Replace of space runs, "
                        "Metaspace \"always\"/\"never\", TemplateProcessing)", c->what, part,
                        type ? type : "(no type)");
}

static fe_status normalizer(uctx *c, json_t *n) {
    if (!n || json_is_null(n)) return FE_OK;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (type && !strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list))
            return fe_error_set(c->err, FE_E_FORMAT, "%s: normalizer Sequence has no "
                                "\"normalizers\" array", c->what);
        for (size_t i = 0; i < json_array_size(list); i++) {
            fe_status st = normalizer(c, json_array_get(list, i));
            if (st != FE_OK) return st;
        }
        return FE_OK;
    }
    if (type && !strcmp(type, "Precompiled")) {
        const char *b64 = json_string_value(json_object_get(n, "precompiled_charsmap"));
        if (!b64)
            return fe_error_set(c->err, FE_E_FORMAT, "%s: normalizer Precompiled has no "
                                "\"precompiled_charsmap\" string", c->what);
        size_t len = strlen(b64), got = 0;
        if (c->charsmap)
            return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: two Precompiled normalizers; "
                                "ferrum applies one", c->what);
        c->charsmap = fe_malloc(len / 4 * 3 + 1);
        if (!c->charsmap) return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->what);
        if (len > 0 && !fe_tok_b64_decode(b64, len, c->charsmap, &got))
            return fe_error_set(c->err, FE_E_FORMAT, "%s: normalizer Precompiled's "
                                "precompiled_charsmap is not padded base64", c->what);
        c->spec.charsmap = c->charsmap, c->spec.charsmap_len = got;
        c->spec.sp_normalize = true;
        return FE_OK;
    }
    if (type && !strcmp(type, "Replace")) {
        json_t *pat = json_object_get(n, "pattern");
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        const char *str = json_string_value(json_object_get(pat, "String"));
        const char *to = json_string_value(json_object_get(n, "content"));
        if (to && !strcmp(to, " ") && ((re && !strcmp(re, " {2,}")) || (str && !strcmp(str, "  ")))) {
            c->spec.sp_normalize = c->spec.collapse_spaces = true;
            return FE_OK;
        }
        return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: normalizer Replace of \"%.40s\" by "
                            "\"%.40s\"; ferrum applies only a run of spaces (\" {2,}\") by one",
                            c->what, re ? re : str ? str : "?", to ? to : "?");
    }
    return unsupported(c, "normalizer", type);
}

static fe_status pre_tokenizer(uctx *c, json_t *p) {
    if (!p || json_is_null(p)) {
        c->spec.add_space_prefix = false;
        return FE_OK;
    }
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "Sequence")) {
        json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list) || json_array_size(list) != 1)
            return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: a pre_tokenizer Sequence of other "
                                "than one Metaspace step", c->what);
        return pre_tokenizer(c, json_array_get(list, 0));
    }
    if (!type || strcmp(type, "Metaspace") != 0) return unsupported(c, "pre_tokenizer", type);
    const char *rep = json_string_value(json_object_get(p, "replacement"));
    if (!rep || strcmp(rep, SPACE) != 0)
        return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: Metaspace replacement is not \"\u2581\"; "
                            "the vocabulary's pieces are read with \"\u2581\" for a space", c->what);
    const char *scheme = json_string_value(json_object_get(p, "prepend_scheme"));
    json_t *old = json_object_get(p, "add_prefix_space");
    bool prefix;
    if (scheme && !strcmp(scheme, "always")) prefix = true;
    else if (scheme && !strcmp(scheme, "never")) prefix = false;
    else if (!scheme && json_is_boolean(old)) prefix = json_is_true(old);
    else
        return fe_error_set(c->err, FE_E_UNSUPPORTED, "%s: Metaspace prepend_scheme \"%.20s\"; "
                            "ferrum applies \"always\" and \"never\"", c->what,
                            scheme ? scheme : "(none)");
    c->spec.add_space_prefix = prefix;
    c->spec.prefix_unless_space = true;
    return FE_OK;
}

/* BOS from a TemplateProcessing that starts with a special token */
static fe_status post_processor(uctx *c, json_t *pp, const char *const *pieces, int n) {
    if (!pp || json_is_null(pp)) return FE_OK;
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type || strcmp(type, "TemplateProcessing") != 0) return unsupported(c, "post_processor", type);
    json_t *first = json_object_get(json_array_get(json_object_get(pp, "single"), 0), "SpecialToken");
    const char *name = json_string_value(json_object_get(first, "id"));
    if (!name) return FE_OK; /* the text comes first: no BOS */
    for (int i = 0; i < n; i++)
        if (!strcmp(pieces[i], name)) {
            c->spec.bos_id = i;
            c->spec.add_bos = true;
            return FE_OK;
        }
    return fe_error_set(c->err, FE_E_FORMAT, "%s: post_processor starts with \"%.40s\", which is "
                        "not a piece of model.vocab", c->what, name);
}

static bool byte_piece(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    return strlen(s) == 6 && !strncmp(s, "<0x", 3) && strchr(hex, s[3]) && strchr(hex, s[4]) &&
           s[3] && s[4] && s[5] == '>';
}

static fe_status build(uctx *c, json_t *root, const char **pieces, float *scores,
                       int32_t *types, int n, fe_tokenizer **out) {
    json_t *model = json_object_get(root, "model"), *vocab = json_object_get(model, "vocab");
    json_t *fb = json_object_get(model, "byte_fallback"), *unk = json_object_get(model, "unk_id");
    if (fb && !json_is_boolean(fb) && !json_is_null(fb))
        return fe_error_set(c->err, FE_E_FORMAT, "%s: model.byte_fallback is not a boolean", c->what);
    if (unk && !json_is_null(unk) &&
        (!json_is_integer(unk) || json_integer_value(unk) < 0 || json_integer_value(unk) >= n))
        return fe_error_set(c->err, FE_E_FORMAT, "%s: model.unk_id is not the id of one of the %d "
                            "pieces", c->what, n);
    const int32_t unk_id = json_is_integer(unk) ? (int32_t)json_integer_value(unk) : -1;
    for (int i = 0; i < n; i++) {
        json_t *e = json_array_get(vocab, (size_t)i);
        const char *p = json_string_value(json_array_get(e, 0));
        json_t *sc = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !p || !json_is_number(sc))
            return fe_error_set(c->err, FE_E_FORMAT, "%s: model.vocab[%d] is not a [piece, "
                                "score] pair", c->what, i);
        pieces[i] = p;
        scores[i] = (float)json_number_value(sc);
        types[i] = i == unk_id ? FE_TOKEN_UNKNOWN
                   : json_is_true(fb) && byte_piece(p) ? FE_TOKEN_BYTE : FE_TOKEN_NORMAL;
    }
    json_t *added = json_object_get(root, "added_tokens"), *a;
    size_t k;
    json_array_foreach(added, k, a) {
        json_t *id = json_object_get(a, "id");
        const char *content = json_string_value(json_object_get(a, "content"));
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= n ||
            !content || strcmp(content, pieces[json_integer_value(id)]) != 0)
            return fe_error_set(c->err, FE_E_FORMAT, "%s: added_tokens[%zu] is not a piece of "
                                "model.vocab at its id (ferrum reads added tokens that are)",
                                c->what, k);
        if ((int32_t)json_integer_value(id) != unk_id)
            types[json_integer_value(id)] = json_is_true(json_object_get(a, "special"))
                                                ? FE_TOKEN_CONTROL : FE_TOKEN_USER_DEFINED;
    }
    c->spec = fe_spm_spec_default();
    c->spec.add_bos = false;
    c->spec.unigram = true;
    c->spec.unk_id = unk_id;
    fe_status st = normalizer(c, json_object_get(root, "normalizer"));
    if (st == FE_OK) st = pre_tokenizer(c, json_object_get(root, "pre_tokenizer"));
    if (st == FE_OK) st = post_processor(c, json_object_get(root, "post_processor"), pieces, n);
    if (st != FE_OK) return st;
    c->spec.tokens = pieces, c->spec.scores = scores, c->spec.token_types = types;
    c->spec.n_tokens = n;
    return fe_tokenizer_create_spm(&c->spec, out, c->err);
}

fe_status fe_unigram_json_build(json_t *root, const char *what, fe_tokenizer **out,
                                fe_error *err) {
    *out = NULL;
    uctx c = {.what = what, .err = err};
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    size_t n = json_array_size(vocab);
    if (!json_is_array(vocab) || n == 0 || n > FE_TOKENIZER_MAX_VOCAB)
        return fe_error_set(err, FE_E_FORMAT, "%s: model.vocab is not an array of 1 to %d "
                            "[piece, score] pairs", what, FE_TOKENIZER_MAX_VOCAB);
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_null(added) && !json_is_array(added))
        return fe_error_set(err, FE_E_FORMAT, "%s: added_tokens is not an array", what);
    const char **pieces = fe_malloc(n * sizeof *pieces);
    float *scores = fe_malloc(n * sizeof *scores);
    int32_t *types = fe_malloc(n * sizeof *types);
    fe_status st = pieces && scores && types
                       ? build(&c, root, pieces, scores, types, (int)n, out)
                       : fe_error_set(err, FE_E_NOMEM, "%s: out of memory for %zu pieces", what, n);
    fe_free(pieces);
    fe_free(scores);
    fe_free(types);
    fe_free(c.charsmap);
    return st;
}
