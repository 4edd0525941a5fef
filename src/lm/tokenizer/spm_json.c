/* lm/tokenizer/spm_json.c: Gemma's tokenizer.json read into a SentencePiece BPE tokenizer (see
 * spm_json.h): pieces by id from model.vocab, scores from the rank of the merge that makes each
 * piece, token types from added_tokens (special: CONTROL, else USER_DEFINED) and the <0xXX>
 * form (BYTE), the space prefix from the normalizer, and the template's tokens around. */
#include "lm/tokenizer/spm_json.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"

static const char SPACE[] = "\xe2\x96\x81"; /* U+2581 */

bool fe_spm_json_is(const char *text, size_t len) {
    json_t *r = NULL;
    if (fe_json_parse(text, len, "tokenizer.json", &r, NULL) != FE_OK) return false;
    bool yes = json_is_true(json_object_get(json_object_get(r, "model"), "byte_fallback"));
    json_decref(r);
    return yes;
}

/* the normalizer: Replace " " -> "▁" (required), Prepend "▁" (space prefix), in a Sequence
 * or alone */
static fe_status normalizer(json_t *n, const char *what, bool *prefix, bool *replace, fe_error *err) {
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) return fe_error_set(err, FE_E_FORMAT, "%s: a normalizer without a type", what);
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "normalizers");
        for (size_t i = 0; i < json_array_size(list); i++) {
            fe_status st = normalizer(json_array_get(list, i), what, prefix, replace, err);
            if (st) return st;
        }
        return FE_OK;
    }
    if (!strcmp(type, "Prepend") && json_is_string(json_object_get(n, "prepend")) &&
        !strcmp(json_string_value(json_object_get(n, "prepend")), SPACE)) {
        *prefix = true;
        return FE_OK;
    }
    json_t *pat = json_object_get(json_object_get(n, "pattern"), "String");
    if (!strcmp(type, "Replace") && json_is_string(pat) && !strcmp(json_string_value(pat), " ") &&
        json_is_string(json_object_get(n, "content")) &&
        !strcmp(json_string_value(json_object_get(n, "content")), SPACE)) {
        *replace = true;
        return FE_OK;
    }
    return fe_error_set(err, FE_E_UNSUPPORTED, "%s: normalizer %s is not one a SentencePiece BPE "
                        "tokenizer.json has here; ferrum runs Replace \" \" -> \"\xe2\x96\x81\" and "
                        "Prepend \"\xe2\x96\x81\"", what, type);
}

/* the template's special tokens before and after $A */
static fe_status template_around(json_t *r, const char *what, fe_spm_json_around *a, fe_error *err) {
    memset(a, 0, sizeof *a);
    json_t *pp = json_object_get(r, "post_processor");
    if (!pp || json_is_null(pp)) return FE_OK;
    json_t *single = json_object_get(pp, "single");
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type || strcmp(type, "TemplateProcessing") != 0 || !json_is_array(single))
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: post_processor %s; ferrum reads a "
                            "TemplateProcessing one", what, type ? type : "without a type");
    json_t *specials = json_object_get(pp, "special_tokens");
    bool seen_a = false;
    for (size_t i = 0; i < json_array_size(single); i++) {
        json_t *item = json_array_get(single, i);
        if (json_object_get(item, "Sequence")) {
            seen_a = true;
            continue;
        }
        const char *id = json_string_value(json_object_get(json_object_get(item, "SpecialToken"), "id"));
        json_t *ids = json_object_get(json_object_get(specials, id ? id : ""), "ids");
        if (!id || json_array_size(ids) != 1 || !json_is_integer(json_array_get(ids, 0)))
            return fe_error_set(err, FE_E_FORMAT, "%s: post_processor.single[%zu] names no special "
                                "token with one id", what, i);
        int *n = seen_a ? &a->n_after : &a->n_before;
        int32_t *to = seen_a ? a->after : a->before;
        if (*n == FE_SPM_JSON_MAX_AROUND)
            return fe_error_set(err, FE_E_UNSUPPORTED, "%s: more than %d special tokens on one side "
                                "of the text", what, FE_SPM_JSON_MAX_AROUND);
        to[(*n)++] = (int32_t)json_integer_value(json_array_get(ids, 0));
    }
    return FE_OK;
}

static bool is_byte_piece(const char *s) {
    return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[5] == '>';
}

fe_status fe_spm_json_load(const char *text, size_t len, const char *what, fe_tokenizer **out,
                           fe_spm_json_around *around, fe_error *err) {
    *out = NULL;
    json_t *r = NULL;
    fe_status st = fe_json_parse(text, len, what, &r, err);
    if (st) return st;
    json_t *model = json_object_get(r, "model"), *vocab = json_object_get(model, "vocab");
    json_t *merges = json_object_get(model, "merges"), *norm = json_object_get(r, "normalizer");
    const char *type = json_string_value(json_object_get(model, "type"));
    bool prefix = false, replace = false;
    if (!type || strcmp(type, "BPE") != 0 || !json_is_true(json_object_get(model, "byte_fallback")))
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: model is not a BPE with byte_fallback true "
                          "(a SentencePiece-style BPE, as Gemma ships)", what);
    else if (!json_is_object(vocab) || !json_object_size(vocab) ||
             json_object_size(vocab) > FE_TOKENIZER_MAX_VOCAB)
        st = fe_error_set(err, FE_E_FORMAT, "%s: model.vocab must be an object of 1..%d pieces",
                          what, FE_TOKENIZER_MAX_VOCAB);
    else if (!json_is_array(merges))
        st = fe_error_set(err, FE_E_FORMAT, "%s: model.merges must be a list", what);
    else if (norm && !json_is_null(norm))
        st = normalizer(norm, what, &prefix, &replace, err);
    if (!st && !replace)
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: no normalizer replaces \" \" with "
                          "\"\xe2\x96\x81\"; ferrum's SentencePiece BPE escapes spaces so", what);
    if (!st) st = template_around(r, what, around, err);
    size_t n = st ? 0 : json_object_size(vocab);
    const char **strs = fe_calloc(n ? n : 1, sizeof *strs);
    float *sc = fe_malloc((n ? n : 1) * sizeof *sc);
    int32_t *ty = fe_malloc((n ? n : 1) * sizeof *ty);
    if (!st && (!strs || !sc || !ty)) st = fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (st) break;
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || (size_t)id >= n || strs[id])
            st = fe_error_set(err, FE_E_FORMAT, "%s: piece %.40s has id %lld; ids run 0..%zu, each "
                              "once", what, key, (long long)id, n - 1);
        else
            strs[id] = key, ty[id] = is_byte_piece(key) ? FE_TOKEN_BYTE : FE_TOKEN_NORMAL,
            sc[id] = -(float)json_array_size(merges) - 1;
    }
    char buf[1024];
    for (size_t i = 0; !st && i < json_array_size(merges); i++) {
        json_t *m = json_array_get(merges, i);
        const char *a, *b;
        if (json_is_string(m)) { /* "left right" */
            const char *s = json_string_value(m), *sp = strchr(s, ' ');
            if (!sp || (size_t)(sp - s) >= sizeof buf) {
                st = fe_error_set(err, FE_E_FORMAT, "%s: merge %zu is not \"left right\"", what, i);
                break;
            }
            snprintf(buf, sizeof buf, "%.*s%s", (int)(sp - s), s, sp + 1);
        } else if (json_array_size(m) == 2 && (a = json_string_value(json_array_get(m, 0))) &&
                   (b = json_string_value(json_array_get(m, 1)))) {
            snprintf(buf, sizeof buf, "%s%s", a, b);
        } else {
            st = fe_error_set(err, FE_E_FORMAT, "%s: merge %zu is neither \"left right\" nor a "
                              "pair of strings", what, i);
            break;
        }
        json_t *id = json_object_get(vocab, buf);
        if (!json_is_integer(id)) {
            st = fe_error_set(err, FE_E_FORMAT, "%s: merge %zu makes %.60s, which is not in the "
                              "vocab", what, i, buf);
            break;
        }
        float *s = &sc[json_integer_value(id)];
        if (*s < -(float)i) *s = -(float)i; /* the first merge that makes it */
    }
    json_t *added = json_object_get(r, "added_tokens");
    for (size_t i = 0; !st && i < json_array_size(added); i++) {
        json_t *t = json_array_get(added, i);
        json_int_t id = json_integer_value(json_object_get(t, "id"));
        if (!json_is_integer(json_object_get(t, "id")) || id < 0 || (size_t)id >= n)
            st = fe_error_set(err, FE_E_FORMAT, "%s: added_tokens[%zu] has no id in the vocab", what, i);
        else if (ty[id] != FE_TOKEN_BYTE)
            ty[id] = json_is_true(json_object_get(t, "special")) ? FE_TOKEN_CONTROL : FE_TOKEN_USER_DEFINED;
    }
    for (int s = 0; !st && s < around->n_before + around->n_after; s++) {
        int32_t id = s < around->n_before ? around->before[s] : around->after[s - around->n_before];
        if (id < 0 || (size_t)id >= n)
            st = fe_error_set(err, FE_E_FORMAT, "%s: the template's token %d is outside the vocab",
                              what, id);
    }
    if (!st) {
        fe_spm_spec spec = fe_spm_spec_default();
        spec.tokens = strs, spec.scores = sc, spec.token_types = ty, spec.n_tokens = (int)n;
        spec.add_bos = false;
        spec.add_space_prefix = prefix;
        st = fe_tokenizer_create_spm(&spec, out, err);
    }
    fe_free(strs), fe_free(sc), fe_free(ty);
    json_decref(r);
    return st;
}
