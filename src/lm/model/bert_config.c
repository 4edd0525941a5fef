/* lm/model/bert_config.c: a BERT-family config from config.json (see bert.h): required keys,
 * the architecture switches ferrum runs (GELU erf, absolute positions) and the value rules,
 * every refusal naming the key. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/format/mapped.h"
#include "lm/model/bert.h"

typedef struct key_int {
    const char *key;
    int64_t *out, lo, hi;
    bool required;
} key_int;

static fe_status read_ints(json_t *o, const key_int *k, size_t n, const char *what, fe_error *err) {
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(o, k[i].key);
        if (!v) {
            if (!k[i].required) continue;
            return fe_error_set(err, FE_E_FORMAT, "%s: no \"%s\"; a BERT config.json needs it",
                                what, k[i].key);
        }
        if (!json_is_integer(v))
            return fe_error_set(err, FE_E_FORMAT, "%s: \"%s\" is not an integer", what, k[i].key);
        json_int_t x = json_integer_value(v);
        if (x < k[i].lo || x > k[i].hi)
            return fe_error_set(err, FE_E_INVALID, "%s: \"%s\" is %lld; it must be in %lld..%lld",
                                what, k[i].key, (long long)x, (long long)k[i].lo, (long long)k[i].hi);
        *k[i].out = x;
    }
    return FE_OK;
}

/* A string key that must be absent or one of the accepted values */
static fe_status expect_str(json_t *o, const char *key, const char *ok1, const char *ok2,
                            const char *what, const char *why, fe_error *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return FE_OK;
    const char *s = json_string_value(v);
    if (!s) return fe_error_set(err, FE_E_FORMAT, "%s: \"%s\" is not a string", what, key);
    if (strcmp(s, ok1) != 0 && (!ok2 || strcmp(s, ok2) != 0))
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: \"%s\" is \"%.40s\"; %s", what, key, s, why);
    return FE_OK;
}

static fe_status from_root(json_t *o, const char *what, fe_bert_config *out, fe_error *err) {
    if (!json_is_object(o)) return fe_error_set(err, FE_E_FORMAT, "%s: the top level is not an object", what);
    fe_bert_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.source, sizeof c.source, "%s", what);
    c.max_positions = 512, c.type_vocab = 2;
    const char *type = json_string_value(json_object_get(o, "model_type"));
    if (json_object_get(o, "model_type") && !type)
        return fe_error_set(err, FE_E_FORMAT, "%s: \"model_type\" is not a string", what);
    if (type && strcmp(type, "bert") != 0)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: model_type is \"%.40s\"; ferrum's encoder "
                            "reads BERT-family checkpoints (model_type \"bert\")", what, type);
    fe_status st = expect_str(o, "hidden_act", "gelu", NULL, what,
                              "ferrum's BERT runs GELU in its erf form (\"gelu\")", err);
    if (st == FE_OK) st = expect_str(o, "position_embedding_type", "absolute", NULL, what,
                                     "ferrum's BERT takes absolute position embeddings", err);
    const key_int k[] = {
        {"vocab_size", &c.vocab, 1, 1 << 24, true},
        {"hidden_size", &c.hidden, 1, 1 << 16, true},
        {"num_hidden_layers", &c.n_layers, 1, 1024, true},
        {"num_attention_heads", &c.n_heads, 1, 1024, true},
        {"intermediate_size", &c.ffn, 1, 1 << 20, true},
        {"max_position_embeddings", &c.max_positions, 1, 1 << 20, false},
        {"type_vocab_size", &c.type_vocab, 1, 1 << 16, false},
    };
    if (st == FE_OK) st = read_ints(o, k, sizeof k / sizeof k[0], what, err);
    if (st != FE_OK) return st;
    c.ln_eps = 1e-12;
    json_t *eps = json_object_get(o, "layer_norm_eps");
    if (eps && !json_is_number(eps))
        return fe_error_set(err, FE_E_FORMAT, "%s: \"layer_norm_eps\" is not a number", what);
    if (eps) c.ln_eps = json_number_value(eps);
    if (!(c.ln_eps > 0 && c.ln_eps < 1))
        return fe_error_set(err, FE_E_INVALID, "%s: \"layer_norm_eps\" is %g; it must be in (0, 1)",
                            what, c.ln_eps);
    if (c.hidden % c.n_heads != 0)
        return fe_error_set(err, FE_E_INVALID, "%s: hidden_size %lld is not a multiple of "
                            "num_attention_heads %lld; the heads must split the hidden size",
                            what, (long long)c.hidden, (long long)c.n_heads);
    c.head_dim = c.hidden / c.n_heads;
    *out = c;
    return FE_OK;
}

fe_status fe_bert_config_from_json(const char *text, size_t len, const char *what,
                                   fe_bert_config *out, fe_error *err) {
    json_t *o;
    fe_status st = fe_json_parse(text, len, what, &o, err);
    if (st != FE_OK) return st;
    st = from_root(o, what, out, err);
    json_decref(o);
    return st;
}

fe_status fe_bert_config_from_file(const char *path, fe_bert_config *out, fe_error *err) {
    char file[4096];
    snprintf(file, sizeof file, fe_path_is_dir(path) ? "%s/config.json" : "%s", path);
    fe_mapped m;
    fe_status st = fe_mapped_open(file, &m, err);
    if (st != FE_OK) return st;
    st = fe_bert_config_from_json((const char *)m.data, m.size, file, out, err);
    fe_mapped_close(&m);
    return st;
}
