/* lm/model/config.c: language-model configs from presets and config.json, and their validation
 * (see config.h). The GGUF reader is in config_gguf.c. */
#include "lm/model/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/format/mapped.h"

static void set_source(fe_lm_config *c, const char *what) {
    snprintf(c->source, sizeof c->source, "%s", what ? what : "(config)");
}

/* ---- presets ---- */

fe_status fe_lm_config_preset(const char *name, fe_lm_config *out, fe_error *err) {
    fe_lm_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.architecture, sizeof c.architecture, "llama");
    if (name && strcmp(name, "llama-3.2-1b") == 0) {
        c.vocab = 128256, c.hidden = 2048, c.n_layers = 16, c.n_heads = 32, c.n_kv_heads = 8;
        c.head_dim = 64, c.ffn = 8192, c.rms_eps = 1e-5, c.rope_theta = 500000.0;
        c.rope_scaling.type = FE_LM_ROPE_LLAMA3;
        c.rope_scaling.factor = 32.0, c.rope_scaling.low_freq_factor = 1.0;
        c.rope_scaling.high_freq_factor = 4.0;
        c.rope_scaling.original_max_position_embeddings = 8192;
        c.tied_embeddings = true, c.max_context = 131072;
        /* <|begin_of_text|>; <|end_of_text|>, <|eom_id|>, <|eot_id|> */
        c.bos_id = 128000;
        c.eos_ids[0] = 128001, c.eos_ids[1] = 128008, c.eos_ids[2] = 128009, c.n_eos = 3;
    } else if (name && strcmp(name, "smollm2-135m") == 0) {
        /* the values of SmolLM2-135M-Instruct.Q4_1.gguf's metadata */
        c.vocab = 49152, c.hidden = 576, c.n_layers = 30, c.n_heads = 9, c.n_kv_heads = 3;
        c.head_dim = 64, c.ffn = 1536, c.rms_eps = 1e-5, c.rope_theta = 100000.0;
        c.tied_embeddings = true, c.max_context = 8192;
        c.bos_id = 1; /* <|im_start|> */
        c.eos_ids[0] = 2, c.n_eos = 1; /* <|im_end|> */
    } else {
        return fe_error_set(err, FE_E_NOTFOUND,
                            "no model preset named %s; the presets are llama-3.2-1b and "
                            "smollm2-135m", name ? name : "(null)");
    }
    set_source(&c, name);
    *out = c;
    return FE_OK;
}

/* ---- validation ---- */

typedef struct bound {
    const char *field, *key;
    int64_t v, lo, hi;
} bound;

fe_status fe_lm_config_validate(const fe_lm_config *c, fe_error *err) {
    const char *s = c->source;
    const bound b[] = {
        {"vocab", "vocab_size", c->vocab, 1, (int64_t)1 << 24},
        {"hidden", "hidden_size", c->hidden, 1, (int64_t)1 << 20},
        {"n_layers", "num_hidden_layers", c->n_layers, 1, 4096},
        {"n_heads", "num_attention_heads", c->n_heads, 1, 4096},
        {"n_kv_heads", "num_key_value_heads", c->n_kv_heads, 1, 4096},
        {"head_dim", "head_dim", c->head_dim, 2, 4096},
        {"ffn", "intermediate_size", c->ffn, 1, (int64_t)1 << 22},
        {"max_context", "max_position_embeddings", c->max_context, 1, (int64_t)1 << 30},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i].v < b[i].lo || b[i].v > b[i].hi)
            return fe_error_set(err, FE_E_INVALID, "%s: %s (%s) is %lld; it must be in %lld..%lld",
                                s, b[i].field, b[i].key, (long long)b[i].v, (long long)b[i].lo,
                                (long long)b[i].hi);
    if (c->hidden % c->n_heads != 0)
        return fe_error_set(err, FE_E_INVALID,
                            "%s: hidden (hidden_size) %lld is not a multiple of n_heads "
                            "(num_attention_heads) %lld; the heads must split the hidden size",
                            s, (long long)c->hidden, (long long)c->n_heads);
    if (c->n_heads % c->n_kv_heads != 0)
        return fe_error_set(err, FE_E_INVALID,
                            "%s: n_heads (num_attention_heads) %lld is not a multiple of "
                            "n_kv_heads (num_key_value_heads) %lld; each KV head must serve "
                            "the same number of query heads", s, (long long)c->n_heads,
                            (long long)c->n_kv_heads);
    if (c->head_dim % 2 != 0)
        return fe_error_set(err, FE_E_INVALID,
                            "%s: head_dim %lld is odd; RoPE rotates pairs, so it must be even",
                            s, (long long)c->head_dim);
    if (!(c->rms_eps > 0 && c->rms_eps < 1))
        return fe_error_set(err, FE_E_INVALID, "%s: rms_eps (rms_norm_eps) is %g; it must be in "
                            "(0, 1), typically 1e-5 or 1e-6", s, c->rms_eps);
    if (!(c->rope_theta > 0 && isfinite(c->rope_theta)))
        return fe_error_set(err, FE_E_INVALID, "%s: rope_theta is %g; it must be positive and "
                            "finite", s, c->rope_theta);
    const double f = c->rope_scaling.factor, lo = c->rope_scaling.low_freq_factor,
                 hi = c->rope_scaling.high_freq_factor;
    switch (c->rope_scaling.type) {
    case FE_LM_ROPE_NONE:
    case FE_LM_ROPE_FREQS_TENSOR:
        break;
    case FE_LM_ROPE_LINEAR:
        if (!(f > 0 && isfinite(f)))
            return fe_error_set(err, FE_E_INVALID, "%s: rope_scaling.factor is %g; linear "
                                "scaling needs a positive factor", s, f);
        break;
    case FE_LM_ROPE_LLAMA3:
        if (!(f >= 1 && isfinite(f) && lo > 0 && hi > lo && isfinite(hi)))
            return fe_error_set(err, FE_E_INVALID,
                                "%s: llama3 rope_scaling has factor %g, low_freq_factor %g, "
                                "high_freq_factor %g; it needs factor >= 1 and 0 < low < high",
                                s, f, lo, hi);
        if (c->rope_scaling.original_max_position_embeddings <= 0 ||
            c->rope_scaling.original_max_position_embeddings > ((int64_t)1 << 30))
            return fe_error_set(err, FE_E_INVALID,
                                "%s: rope_scaling.original_max_position_embeddings is %lld; it "
                                "must be in 1..2^30", s,
                                (long long)c->rope_scaling.original_max_position_embeddings);
        break;
    default:
        return fe_error_set(err, FE_E_INVALID, "%s: rope scaling type %d is not one ferrum has",
                            s, (int)c->rope_scaling.type);
    }
    if (c->family == FE_LM_FAMILY_GEMMA3) {
        if (c->sliding_window < 0 || c->swa_pattern < 0 || c->swa_pattern > 4096)
            return fe_error_set(err, FE_E_INVALID, "%s: gemma3 sliding_window %lld and "
                                "sliding_window_pattern %lld; give a window >= 0 (0: none) and "
                                "a pattern in 0..4096", s, (long long)c->sliding_window,
                                (long long)c->swa_pattern);
        if (!(c->rope_theta_local > 0 && isfinite(c->rope_theta_local)))
            return fe_error_set(err, FE_E_INVALID, "%s: gemma3 rope.freq_base_swa is %g; it must "
                                "be positive and finite", s, c->rope_theta_local);
        if (!(c->attn_scale > 0 && isfinite(c->attn_scale) && c->embed_scale > 0 &&
              isfinite(c->embed_scale)))
            return fe_error_set(err, FE_E_INVALID, "%s: gemma3 attention scale %g and embedding "
                                "scale %g must be positive and finite", s, c->attn_scale,
                                c->embed_scale);
    }
    if (c->bos_id < -1 || c->bos_id >= c->vocab)
        return fe_error_set(err, FE_E_INVALID, "%s: bos_token_id %d is outside the vocabulary "
                            "(0..%lld)", s, (int)c->bos_id, (long long)c->vocab - 1);
    if (c->n_eos < 0 || c->n_eos > FE_LM_MAX_EOS)
        return fe_error_set(err, FE_E_INVALID, "%s: %d eos ids; at most %d", s, c->n_eos,
                            FE_LM_MAX_EOS);
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] < 0 || c->eos_ids[i] >= c->vocab)
            return fe_error_set(err, FE_E_INVALID, "%s: eos_token_id %d is outside the "
                                "vocabulary (0..%lld)", s, (int)c->eos_ids[i],
                                (long long)c->vocab - 1);
    return FE_OK;
}

/* ---- config.json ---- */

typedef struct jctx {
    json_t *root;
    const char *what;
    fe_error *err;
} jctx;

static fe_status j_int(jctx *j, json_t *obj, const char *key, bool required, int64_t def,
                       int64_t *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fe_error_set(j->err, FE_E_FORMAT, "%s: the required key %s is missing; a "
                                "Llama-family config.json has it", j->what, key);
        *out = def;
        return FE_OK;
    }
    if (!json_is_integer(v))
        return fe_error_set(j->err, FE_E_FORMAT, "%s: %s must be an integer", j->what, key);
    *out = (int64_t)json_integer_value(v);
    return FE_OK;
}

static fe_status j_num(jctx *j, json_t *obj, const char *key, bool required, double def,
                       double *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fe_error_set(j->err, FE_E_FORMAT, "%s: the required key %s is missing",
                                j->what, key);
        *out = def;
        return FE_OK;
    }
    if (!json_is_number(v))
        return fe_error_set(j->err, FE_E_FORMAT, "%s: %s must be a number", j->what, key);
    *out = json_number_value(v);
    return FE_OK;
}

/* An id (or, for eos, a list of ids) that must fit in an i32. */
static fe_status j_id(jctx *j, json_t *v, const char *key, int32_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return fe_error_set(j->err, FE_E_FORMAT, "%s: %s must be a token id (a non-negative "
                            "integer) or null", j->what, key);
    *out = (int32_t)json_integer_value(v);
    return FE_OK;
}

static fe_status j_ids(jctx *j, fe_lm_config *c) {
    json_t *v = json_object_get(j->root, "bos_token_id");
    fe_status st;
    c->bos_id = -1;
    if (v && !json_is_null(v) && (st = j_id(j, v, "bos_token_id", &c->bos_id))) return st;
    v = json_object_get(j->root, "eos_token_id");
    c->n_eos = 0;
    if (!v || json_is_null(v)) return FE_OK;
    if (!json_is_array(v)) return j_id(j, v, "eos_token_id", &c->eos_ids[c->n_eos++]);
    if (json_array_size(v) > FE_LM_MAX_EOS)
        return fe_error_set(j->err, FE_E_FORMAT, "%s: eos_token_id lists %zu ids; ferrum keeps "
                            "at most %d", j->what, json_array_size(v), FE_LM_MAX_EOS);
    for (size_t i = 0; i < json_array_size(v); i++)
        if ((st = j_id(j, json_array_get(v, i), "eos_token_id", &c->eos_ids[c->n_eos++])))
            return st;
    return FE_OK;
}

static fe_status j_rope_scaling(jctx *j, fe_lm_config *c) {
    json_t *rs = json_object_get(j->root, "rope_scaling");
    if (!rs || json_is_null(rs)) return FE_OK;
    if (!json_is_object(rs))
        return fe_error_set(j->err, FE_E_FORMAT, "%s: rope_scaling must be an object or null",
                            j->what);
    json_t *t = json_object_get(rs, "rope_type");
    if (!t) t = json_object_get(rs, "type");
    if (!json_is_string(t))
        return fe_error_set(j->err, FE_E_FORMAT, "%s: rope_scaling needs a string rope_type "
                            "(\"llama3\", \"linear\" or \"default\")", j->what);
    const char *type = json_string_value(t);
    fe_status st;
    if (strcmp(type, "default") == 0) return FE_OK;
    if (strcmp(type, "linear") == 0) {
        c->rope_scaling.type = FE_LM_ROPE_LINEAR;
        return j_num(j, rs, "factor", true, 0, &c->rope_scaling.factor);
    }
    if (strcmp(type, "llama3") != 0)
        return fe_error_set(j->err, FE_E_UNSUPPORTED, "%s: rope_scaling type %s is not "
                            "supported; ferrum runs default, linear and llama3", j->what, type);
    c->rope_scaling.type = FE_LM_ROPE_LLAMA3;
    if ((st = j_num(j, rs, "factor", true, 0, &c->rope_scaling.factor)) ||
        (st = j_num(j, rs, "low_freq_factor", true, 0, &c->rope_scaling.low_freq_factor)) ||
        (st = j_num(j, rs, "high_freq_factor", true, 0, &c->rope_scaling.high_freq_factor)))
        return st;
    return j_int(j, rs, "original_max_position_embeddings", true, 0,
                 &c->rope_scaling.original_max_position_embeddings);
}

static fe_status j_arch(jctx *j, fe_lm_config *c) {
    json_t *mt = json_object_get(j->root, "model_type");
    json_t *archs = json_object_get(j->root, "architectures");
    const char *a = NULL;
    if (json_is_string(mt)) a = json_string_value(mt);
    else if (json_is_array(archs) && json_is_string(json_array_get(archs, 0)))
        a = strcmp(json_string_value(json_array_get(archs, 0)), "LlamaForCausalLM") == 0
                ? "llama" : json_string_value(json_array_get(archs, 0));
    if (a && strlen(a) >= sizeof c->architecture)
        return fe_error_set(j->err, FE_E_FORMAT, "%s: model_type is longer than %zu bytes",
                            j->what, sizeof c->architecture - 1);
    if (a && (strcmp(a, "bert") == 0 || strcmp(a, "BertModel") == 0))
        return fe_error_set(j->err, FE_E_UNSUPPORTED, "%s: model_type %s is a text encoder (BERT "
                            "family), not a causal LM: embed with it (ferrum embed MODEL --text "
                            "..., or fe_lm_encoder_open)", j->what, a);
    snprintf(c->architecture, sizeof c->architecture, "%s", a ? a : "");
    return FE_OK;
}

static fe_status from_root(jctx *j, fe_lm_config *c) {
    json_t *r = j->root;
    fe_status st;
    bool has_head_dim =
        json_object_get(r, "head_dim") && !json_is_null(json_object_get(r, "head_dim"));
    json_t *tie = json_object_get(r, "tie_word_embeddings");
    if (tie && !json_is_null(tie) && !json_is_boolean(tie))
        return fe_error_set(j->err, FE_E_FORMAT, "%s: tie_word_embeddings must be true or false",
                            j->what);
    c->tied_embeddings = json_is_true(tie);
    if ((st = j_arch(j, c)) || (st = j_int(j, r, "vocab_size", true, 0, &c->vocab)) ||
        (st = j_int(j, r, "hidden_size", true, 0, &c->hidden)) ||
        (st = j_int(j, r, "num_hidden_layers", true, 0, &c->n_layers)) ||
        (st = j_int(j, r, "num_attention_heads", true, 0, &c->n_heads)) ||
        (st = j_int(j, r, "num_key_value_heads", false, c->n_heads, &c->n_kv_heads)) ||
        (st = j_int(j, r, "intermediate_size", true, 0, &c->ffn)) ||
        (st = j_int(j, r, "max_position_embeddings", false, 2048, &c->max_context)) ||
        (st = j_num(j, r, "rms_norm_eps", false, 1e-6, &c->rms_eps)) ||
        (st = j_num(j, r, "rope_theta", false, 10000.0, &c->rope_theta)) ||
        (st = j_rope_scaling(j, c)) || (st = j_ids(j, c)))
        return st;
    if (has_head_dim) return j_int(j, r, "head_dim", true, 0, &c->head_dim);
    c->head_dim = c->n_heads > 0 ? c->hidden / c->n_heads : 0;
    return FE_OK;
}

/* Reads a parsed config.json; takes the reference to root. */
static fe_status from_json_root(json_t *root, const char *what, fe_lm_config *out,
                                fe_error *err) {
    jctx j = {.root = root, .what = what, .err = err};
    fe_lm_config c;
    memset(&c, 0, sizeof c);
    set_source(&c, what);
    fe_status st;
    if (!json_is_object(root))
        st = fe_error_set(err, FE_E_FORMAT, "%s: a config.json holds a JSON object", what);
    else if (!(st = from_root(&j, &c)))
        st = fe_lm_config_validate(&c, err);
    json_decref(root);
    if (!st) *out = c;
    return st;
}

fe_status fe_lm_config_from_json(const char *text, size_t len, const char *what,
                                 fe_lm_config *out, fe_error *err) {
    what = what ? what : "config.json";
    json_t *root = NULL;
    fe_status st = fe_json_parse(text, len, what, &root, err);
    return st ? st : from_json_root(root, what, out, err);
}

fe_status fe_lm_config_from_json_file(const char *path, fe_lm_config *out, fe_error *err) {
    size_t n = strlen(path);
    char *file = fe_malloc(n + sizeof "/config.json");
    if (!file) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", path);
    memcpy(file, path, n + 1);
    if (fe_path_is_dir(path)) memcpy(file + n, "/config.json", sizeof "/config.json");
    json_t *root = NULL;
    fe_status st = fe_json_load_file(file, &root, err);
    if (!st) st = from_json_root(root, file, out, err);
    fe_free(file);
    return st;
}
