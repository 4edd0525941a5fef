/* lm/model/embedgemma.c: EmbeddingGemma's config (Gemma3TextModel config.json, presets), its
 * weights read from a sentence-transformers folder (body, 2_Dense, 3_Dense), random weights,
 * and their release (see embedgemma.h). Every tensor is converted once to f32 owned memory;
 * the RMSNorm weights become 1 + w. */
#include "lm/model/embedgemma.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/format/safetensors.h"

static bool path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ---- config ---- */

static fe_status key_int(json_t *r, const char *what, const char *key, bool required, int64_t def,
                         int64_t *out, fe_error *err) {
    json_t *v = json_object_get(r, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fe_error_set(err, FE_E_FORMAT, "%s: no \"%s\"; a Gemma3TextModel config.json "
                                "has it", what, key);
        *out = def;
        return FE_OK;
    }
    if (!json_is_integer(v))
        return fe_error_set(err, FE_E_FORMAT, "%s: \"%s\" must be an integer", what, key);
    *out = (int64_t)json_integer_value(v);
    return FE_OK;
}

static fe_status key_num(json_t *r, const char *what, const char *key, double def, double *out,
                         fe_error *err) {
    json_t *v = json_object_get(r, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return FE_OK;
    }
    if (!json_is_number(v))
        return fe_error_set(err, FE_E_FORMAT, "%s: \"%s\" must be a number", what, key);
    *out = json_number_value(v);
    return FE_OK;
}

/* Gemma 3's defaults where config.json leaves a key out (transformers' Gemma3TextConfig) */
static void gemma3_defaults(fe_lm_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->architecture, sizeof c->architecture, "gemma3_text");
    c->family = FE_LM_FAMILY_GEMMA3;
    c->tied_embeddings = true;
    c->bos_id = -1;
    c->rms_eps = 1e-6;
    c->rope_theta = 1e6;
    c->rope_theta_local = 1e4;
    c->swa_pattern = 6;
}

/* The attention scale and embedding scale that follow from the sizes */
static void derived(fe_lm_config *c, double query_pre_attn_scalar, int64_t *window) {
    c->attn_scale = 1.0 / sqrt(query_pre_attn_scalar);
    c->embed_scale = sqrt((double)c->hidden);
    *window = c->sliding_window / 2 + 1;
}

static fe_status check_layer_types(json_t *r, const char *what, fe_lm_config *c, fe_error *err) {
    json_t *lt = json_object_get(r, "layer_types");
    if (!lt || json_is_null(lt)) {
        int64_t p;
        fe_status st = key_int(r, what, "sliding_window_pattern", false, 6, &p, err);
        if (st) return st;
        c->swa_pattern = p;
        return FE_OK;
    }
    if (!json_is_array(lt) || (int64_t)json_array_size(lt) != c->n_layers)
        return fe_error_set(err, FE_E_FORMAT, "%s: \"layer_types\" must be a list of "
                            "num_hidden_layers (%lld) strings", what, (long long)c->n_layers);
    /* the pattern is the distance to the first full_attention layer, plus one */
    int64_t p = 0;
    for (size_t i = 0; i < json_array_size(lt) && !p; i++)
        if (json_is_string(json_array_get(lt, i)) &&
            !strcmp(json_string_value(json_array_get(lt, i)), "full_attention"))
            p = (int64_t)i + 1;
    if (!p) p = c->n_layers + 1; /* all local */
    c->swa_pattern = p;
    for (size_t i = 0; i < json_array_size(lt); i++) {
        const char *s = json_string_value(json_array_get(lt, i));
        bool local = fe_lm_layer_is_local(c, (int64_t)i);
        if (!s || strcmp(s, local ? "sliding_attention" : "full_attention") != 0)
            return fe_error_set(err, FE_E_UNSUPPORTED, "%s: layer_types[%zu] is %s; ferrum runs "
                                "Gemma 3's pattern (every %lld-th layer full_attention, the others "
                                "sliding_attention)", what, i, s ? s : "not a string", (long long)p);
    }
    return FE_OK;
}

/* transformers 5's rope_parameters: {"full_attention": {"rope_type": "default", "rope_theta":
 * ...}, "sliding_attention": {...}} (or one such entry for all layers); read over the older
 * rope_theta and rope_local_base_freq */
static fe_status rope_parameters(json_t *r, const char *what, fe_lm_config *c, fe_error *err) {
    json_t *rp = json_object_get(r, "rope_parameters");
    if (!rp || json_is_null(rp)) return FE_OK;
    if (!json_is_object(rp))
        return fe_error_set(err, FE_E_FORMAT, "%s: rope_parameters must be an object", what);
    static const char *const kinds[2] = {"full_attention", "sliding_attention"};
    double *theta[2] = {&c->rope_theta, &c->rope_theta_local};
    bool single = json_object_get(rp, "rope_type") || json_object_get(rp, "rope_theta");
    for (int i = 0; i < 2; i++) {
        json_t *e = single ? rp : json_object_get(rp, kinds[i]);
        if (!e) continue;
        const char *type = json_string_value(json_object_get(e, "rope_type"));
        json_t *t = json_object_get(e, "rope_theta");
        if (type && strcmp(type, "default") != 0)
            return fe_error_set(err, FE_E_UNSUPPORTED, "%s: rope_parameters%s%s has rope_type %s; "
                                "ferrum's EmbeddingGemma runs default (unscaled) RoPE", what,
                                single ? "" : ".", single ? "" : kinds[i], type);
        if (t && !(json_is_number(t) && json_number_value(t) > 0))
            return fe_error_set(err, FE_E_FORMAT, "%s: rope_parameters' rope_theta must be a "
                                "number > 0", what);
        if (t) *theta[i] = json_number_value(t);
        if (single) break; /* one entry: the global layers' (the local keep rope_local_base_freq) */
    }
    return FE_OK;
}

fe_status fe_embedgemma_config_from_json(const char *text, size_t len, const char *what,
                                         fe_lm_config *out, int64_t *window, fe_error *err) {
    what = what ? what : "config.json";
    json_t *r = NULL;
    fe_status st = fe_json_parse(text, len, what, &r, err);
    if (st) return st;
    fe_lm_config c;
    gemma3_defaults(&c);
    snprintf(c.source, sizeof c.source, "%s", what);
    double qpas = 0;
    json_t *mt = json_object_get(r, "model_type");
    json_t *act = json_object_get(r, "hidden_activation");
    json_t *bidir = json_object_get(r, "use_bidirectional_attention");
    json_t *rs = json_object_get(r, "rope_scaling");
    if (!json_is_object(r)) {
        st = fe_error_set(err, FE_E_FORMAT, "%s: a config.json holds a JSON object", what);
    } else if (!json_is_string(mt) || (strcmp(json_string_value(mt), "gemma3_text") != 0 &&
                                       strcmp(json_string_value(mt), "gemma3") != 0)) {
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: model_type is %s; an EmbeddingGemma folder "
                          "has \"gemma3_text\"", what, json_is_string(mt) ? json_string_value(mt) : "missing");
    } else if (act && !json_is_null(act) &&
               (!json_is_string(act) || strcmp(json_string_value(act), "gelu_pytorch_tanh") != 0)) {
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: hidden_activation must be gelu_pytorch_tanh "
                          "(Gemma 3's GeGLU)", what);
    } else if (!json_is_true(bidir)) {
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: use_bidirectional_attention is not true: a "
                          "causal Gemma 3 is a language model; run it with `ferrum generate`", what);
    } else if (rs && !json_is_null(rs)) {
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: rope_scaling is set; ferrum's EmbeddingGemma "
                          "runs unscaled RoPE (remove it or set it null)", what);
    }
    if (!st && json_is_true(json_object_get(r, "attention_bias")))
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: attention_bias is true; Gemma 3's projections "
                          "have no bias and ferrum runs them without", what);
    const char *const capping[] = {"attn_logit_softcapping", "final_logit_softcapping"};
    for (int i = 0; !st && i < 2; i++) {
        json_t *v = json_object_get(r, capping[i]);
        if (v && !json_is_null(v))
            st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: %s is set; Gemma 3 has no soft-capping "
                              "(set it null)", what, capping[i]);
    }
    if (!st) st = key_int(r, what, "vocab_size", true, 0, &c.vocab, err);
    if (!st) st = key_int(r, what, "hidden_size", true, 0, &c.hidden, err);
    if (!st) st = key_int(r, what, "num_hidden_layers", true, 0, &c.n_layers, err);
    if (!st) st = key_int(r, what, "num_attention_heads", true, 0, &c.n_heads, err);
    if (!st) st = key_int(r, what, "num_key_value_heads", true, 0, &c.n_kv_heads, err);
    if (!st) st = key_int(r, what, "head_dim", true, 0, &c.head_dim, err);
    if (!st) st = key_int(r, what, "intermediate_size", true, 0, &c.ffn, err);
    if (!st) st = key_int(r, what, "max_position_embeddings", false, 2048, &c.max_context, err);
    if (!st) st = key_int(r, what, "sliding_window", true, 0, &c.sliding_window, err);
    if (!st) st = key_num(r, what, "rms_norm_eps", 1e-6, &c.rms_eps, err);
    if (!st) st = key_num(r, what, "rope_theta", 1e6, &c.rope_theta, err);
    if (!st) st = key_num(r, what, "rope_local_base_freq", 1e4, &c.rope_theta_local, err);
    if (!st) st = rope_parameters(r, what, &c, err);
    if (!st) st = key_num(r, what, "query_pre_attn_scalar", (double)c.head_dim, &qpas, err);
    if (!st && !(qpas > 0))
        st = fe_error_set(err, FE_E_INVALID, "%s: query_pre_attn_scalar must be > 0", what);
    if (!st && c.sliding_window < 1)
        st = fe_error_set(err, FE_E_INVALID, "%s: sliding_window must be >= 1", what);
    if (!st) st = check_layer_types(r, what, &c, err);
    int64_t w = 0;
    if (!st) {
        derived(&c, qpas, &w);
        st = fe_lm_config_validate(&c, err);
    }
    json_decref(r);
    if (!st) {
        *out = c;
        *window = w;
    }
    return st;
}

fe_status fe_embedgemma_preset(const char *name, fe_lm_config *out, int64_t *window,
                               int64_t *dense_mid, fe_error *err) {
    fe_lm_config c;
    gemma3_defaults(&c);
    if (!strcmp(name, "embeddinggemma-300m")) {
        c.vocab = 262144, c.hidden = 768, c.n_layers = 24, c.n_heads = 3, c.n_kv_heads = 1;
        c.head_dim = 256, c.ffn = 1152, c.sliding_window = 512, c.max_context = 2048;
        *dense_mid = 3072;
    } else if (!strcmp(name, "embeddinggemma-tiny")) {
        /* 8 layers so a global layer sits among locals; a window of 9 (radius 5) that
         * short sentences cross */
        c.vocab = 300, c.hidden = 64, c.n_layers = 8, c.n_heads = 4, c.n_kv_heads = 2;
        c.head_dim = 16, c.ffn = 96, c.sliding_window = 9, c.max_context = 64;
        *dense_mid = 160;
    } else {
        return fe_error_set(err, FE_E_NOTFOUND, "no EmbeddingGemma preset %s; the presets are "
                            "embeddinggemma-300m and embeddinggemma-tiny", name);
    }
    snprintf(c.source, sizeof c.source, "preset %s", name);
    derived(&c, (double)c.head_dim, window);
    *out = c;
    return fe_lm_config_validate(&c, err);
}

bool fe_embedgemma_is_folder(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *r = NULL;
    if (fe_json_load_file(path, &r, NULL) != FE_OK) return false;
    json_t *mt = json_object_get(r, "model_type");
    bool yes = json_is_string(mt) && (!strcmp(json_string_value(mt), "gemma3_text") ||
                                      !strcmp(json_string_value(mt), "gemma3"));
    json_decref(r);
    return yes;
}

/* ---- weights ---- */

static float *own(fe_embedgemma *m, size_t n) {
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? 2 * m->cap_owned : 64;
        void **p = fe_realloc(m->owned, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        m->owned = p, m->cap_owned = cap;
    }
    float *f = fe_aligned_alloc(64, (n ? n : 1) * sizeof(float));
    if (f) m->owned[m->n_owned++] = f;
    return f;
}

void fe_embedgemma_free(fe_embedgemma *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) fe_free(m->owned[i]);
    fe_free(m->owned);
    fe_free(m->layers);
    memset(m, 0, sizeof *m);
}

/* the tensors of layer L in the order of layer_names */
static const char *const layer_names[] = {
    "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "self_attn.q_norm.weight",
    "self_attn.k_norm.weight", "post_attention_layernorm.weight",
    "pre_feedforward_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
    "mlp.down_proj.weight", "post_feedforward_layernorm.weight"};
enum { N_LAYER = 13 };

static fe_tensor *layer_field(fe_llama_layer *L, int i) {
    fe_tensor *f[N_LAYER] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->q_norm,
                             &L->k_norm, &L->post_attn_norm, &L->ffn_norm, &L->w_gate,
                             &L->w_up, &L->w_down, &L->post_ffn_norm};
    return f[i];
}

static bool is_norm(int i) { return i == 0 || (i >= 5 && i <= 8) || i == 12; }

static void layer_shape(const fe_lm_config *c, int i, int64_t *rows, int64_t *cols) {
    const int64_t d = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    const int64_t s[N_LAYER][2] = {{d, 1}, {q, d}, {kv, d}, {kv, d}, {d, q}, {c->head_dim, 1},
                                   {c->head_dim, 1}, {d, 1}, {d, 1}, {c->ffn, d}, {c->ffn, d},
                                   {d, c->ffn}, {d, 1}};
    *rows = s[i][0], *cols = s[i][1];
}

/* The tensor `name` of st as f32 owned by m, checked to be (rows, cols) (cols 1: a vector);
 * plus_one: a Gemma RMSNorm weight, stored as 1 + w. */
static fe_status take(fe_embedgemma *m, const fe_safetensors *st, const char *name, int64_t rows,
                      int64_t cols, bool plus_one, fe_tensor *t, fe_error *err) {
    const fe_st_tensor *s = fe_safetensors_find(st, name);
    int rank = cols == 1 ? 1 : 2;
    int64_t shape[2] = {rows, cols};
    char want[64], have[128];
    fe_shape_format(rank, shape, want, sizeof want);
    const char *file = fe_safetensors_count(st) ? fe_safetensors_at(st, 0)->file : "the checkpoint";
    if (!s)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no tensor %s, which EmbeddingGemma needs as "
                            "%s; the checkpoint and config.json do not match", file, name, want);
    if (!s->readable || (s->dtype != FE_DTYPE_F32 && s->dtype != FE_DTYPE_BF16 &&
                         s->dtype != FE_DTYPE_F16))
        return fe_error_set(err, FE_E_DTYPE, "%s: tensor %s is %s; ferrum reads F32, BF16 or F16 "
                            "there", s->file, name, s->dtype_name);
    bool same = s->rank == rank;
    for (int d = 0; same && d < rank; d++) same = s->shape[d] == shape[d];
    if (!same) {
        fe_shape_format(s->rank, s->shape, have, sizeof have);
        return fe_error_set(err, FE_E_SHAPE, "%s: tensor %s is %s but the config wants %s; the "
                            "checkpoint and its config.json do not match", s->file, name, have, want);
    }
    size_t n = (size_t)(rows * cols);
    float *f = own(m, n);
    if (!f) return fe_error_set(err, FE_E_NOMEM, "out of memory for tensor %s", name);
    const unsigned char *src = s->data;
    for (size_t e = 0; e < n; e++) {
        float v;
        uint16_t h;
        if (s->dtype == FE_DTYPE_F32) {
            memcpy(&v, src + 4 * e, 4);
        } else {
            memcpy(&h, src + 2 * e, 2);
            v = s->dtype == FE_DTYPE_BF16 ? fe_bf16_to_f32(h) : fe_f16_to_f32(h);
        }
        f[e] = plus_one ? 1.0f + v : v;
    }
    *t = fe_tensor_contiguous(f, FE_DTYPE_F32, rank, shape);
    return FE_OK;
}

/* the name under the body's prefix ("" or "model.") */
static void body_name(char *out, size_t n, const char *prefix, const char *name) {
    snprintf(out, n, "%s%s", prefix, name);
}

static fe_status known_or_refuse(const fe_safetensors *st, const fe_lm_config *c,
                                 const char *prefix, fe_error *err) {
    size_t n = fe_safetensors_count(st);
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < n; i++) {
        const fe_st_tensor *t = fe_safetensors_at(st, i);
        const char *p = t->name;
        bool ok = false;
        if (!strncmp(p, prefix, pl)) {
            p += pl;
            if (!strcmp(p, "embed_tokens.weight") || !strcmp(p, "norm.weight")) ok = true;
            else if (!strncmp(p, "layers.", 7) && p[7] >= '0' && p[7] <= '9') {
                char *end;
                long long l = strtoll(p + 7, &end, 10);
                for (int k = 0; *end == '.' && l < c->n_layers && k < N_LAYER && !ok; k++)
                    ok = !strcmp(end + 1, layer_names[k]);
            }
        }
        if (!ok)
            return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s is not part of a Gemma 3 text "
                                "model of %lld layers; the checkpoint and config.json do not "
                                "match", t->file, t->name, (long long)c->n_layers);
    }
    return FE_OK;
}

static fe_status load_body(fe_embedgemma *m, const fe_safetensors *st, fe_error *err) {
    const fe_lm_config *c = &m->cfg;
    const char *prefix = fe_safetensors_find(st, "model.embed_tokens.weight") ? "model." : "";
    char name[160];
    body_name(name, sizeof name, prefix, "embed_tokens.weight");
    fe_status s = take(m, st, name, c->vocab, c->hidden, false, &m->embed, err);
    body_name(name, sizeof name, prefix, "norm.weight");
    if (!s) s = take(m, st, name, c->hidden, 1, true, &m->norm, err);
    for (int64_t l = 0; !s && l < c->n_layers; l++)
        for (int i = 0; !s && i < N_LAYER; i++) {
            int64_t rows, cols;
            layer_shape(c, i, &rows, &cols);
            snprintf(name, sizeof name, "%slayers.%lld.%s", prefix, (long long)l, layer_names[i]);
            s = take(m, st, name, rows, cols, is_norm(i), layer_field(&m->layers[l], i), err);
        }
    return s ? s : known_or_refuse(st, c, prefix, err);
}

/* One Dense module folder: config.json (in/out features, no bias, Identity) and its
 * linear.weight (out, in). */
static fe_status load_dense(fe_embedgemma *m, const char *dir, const char *sub, int64_t in,
                            int64_t *out_features, fe_tensor *t, fe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/config.json", dir, sub);
    json_t *r = NULL;
    fe_status st = fe_json_load_file(path, &r, err);
    if (st == FE_E_IO)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: modules.json lists a Dense module in %s but "
                            "%s cannot be read; copy the whole sentence-transformers folder",
                            dir, sub, path);
    if (st) return st;
    int64_t fin = 0, fout = 0;
    json_t *bias = json_object_get(r, "bias");
    json_t *act = json_object_get(r, "activation_function");
    if (!st) st = key_int(r, path, "in_features", true, 0, &fin, err);
    if (!st) st = key_int(r, path, "out_features", true, 0, &fout, err);
    if (!st && json_is_true(bias))
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: bias is true; EmbeddingGemma's Dense "
                          "layers have none and ferrum runs them without", path);
    if (!st && act && !json_is_null(act) &&
        (!json_is_string(act) || !strstr(json_string_value(act), "Identity")))
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: activation_function is %s; ferrum runs "
                          "the Identity activation EmbeddingGemma's Dense layers have", path,
                          json_is_string(act) ? json_string_value(act) : "not a string");
    if (!st && fin != in)
        st = fe_error_set(err, FE_E_SHAPE, "%s: in_features is %lld but what comes before it has "
                          "%lld values", path, (long long)fin, (long long)in);
    if (!st && (fout < 1 || fout > 1 << 20))
        st = fe_error_set(err, FE_E_INVALID, "%s: out_features %lld is outside 1..%d", path,
                          (long long)fout, 1 << 20);
    json_decref(r);
    if (st) return st;
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, sub);
    fe_safetensors *s = NULL;
    if (!path_exists(path)) {
        char bin[4096];
        snprintf(bin, sizeof bin, "%s/%s/pytorch_model.bin", dir, sub);
        if (path_exists(bin))
            return fe_error_set(err, FE_E_UNSUPPORTED, "%s: the Dense weights are a pickle; ferrum "
                                "reads model.safetensors (save the model again with "
                                "safe_serialization=True)", bin);
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no such file; modules.json lists the Dense "
                            "module %s, whose weights it holds: copy the whole "
                            "sentence-transformers folder", path, sub);
    }
    st = fe_safetensors_open(path, &s, err);
    if (st) return st;
    st = take(m, s, "linear.weight", fout, in, false, t, err);
    for (size_t i = 0; !st && i < fe_safetensors_count(s); i++)
        if (strcmp(fe_safetensors_at(s, i)->name, "linear.weight") != 0)
            st = fe_error_set(err, FE_E_FORMAT, "%s: tensor %s is not part of a Dense layer "
                              "without bias (linear.weight alone)", path, fe_safetensors_at(s, i)->name);
    fe_safetensors_close(s);
    *out_features = fout;
    return st;
}

/* Which Dense folders modules.json lists, in order (at most 2); 0 when none or no file. */
static fe_status dense_modules(const char *dir, char subs[2][256], int *n, fe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/modules.json", dir);
    *n = 0;
    if (!path_exists(path)) return FE_OK;
    json_t *r = NULL;
    fe_status st = fe_json_load_file(path, &r, err);
    if (st) return st;
    for (size_t i = 0; !st && json_is_array(r) && i < json_array_size(r); i++) {
        json_t *mod = json_array_get(r, i);
        json_t *type = json_object_get(mod, "type"), *p = json_object_get(mod, "path");
        if (!json_is_string(type) || !strstr(json_string_value(type), "Dense")) continue;
        if (*n == 2 || !json_is_string(p) || strlen(json_string_value(p)) >= 256 ||
            strstr(json_string_value(p), ".."))
            st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: module %zu: ferrum runs at most two "
                              "Dense modules, each in a folder of the model", path, i);
        else
            snprintf(subs[(*n)++], 256, "%s", json_string_value(p));
    }
    json_decref(r);
    return st;
}

fe_status fe_embedgemma_load(const char *dir, fe_embedgemma *out, fe_error *err) {
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *r = NULL;
    fe_status st = fe_json_load_file(path, &r, err);
    if (st) return st;
    char *text = json_dumps(r, 0);
    json_decref(r);
    if (!text) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", path);
    st = fe_embedgemma_config_from_json(text, strlen(text), path, &out->cfg, &out->window, err);
    free(text);
    if (st) return st;
    out->layers = fe_calloc((size_t)out->cfg.n_layers, sizeof *out->layers);
    if (!out->layers) return fe_error_set(err, FE_E_NOMEM, "out of memory for the weight table");
    fe_safetensors *s = NULL;
    st = fe_safetensors_open(dir, &s, err);
    if (!st) st = load_body(out, s, err);
    fe_safetensors_close(s);
    char subs[2][256];
    int n = 0;
    if (!st) st = dense_modules(dir, subs, &n, err);
    int64_t width = out->cfg.hidden;
    for (int i = 0; !st && i < n; i++)
        st = load_dense(out, dir, subs[i], width, &width, &out->dense[i], err);
    if (!st) out->n_dense = n;
    if (st) fe_embedgemma_free(out);
    return st;
}

/* ---- random ---- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform with std 1/sqrt(cols) for a matrix, 1 + U(-0.1, 0.1) for a norm (held as 1 + w) */
static fe_status draw(fe_embedgemma *m, uint64_t *rng, int64_t rows, int64_t cols, bool norm,
                      fe_tensor *t, fe_error *err) {
    float *f = own(m, (size_t)(rows * cols));
    if (!f) return fe_error_set(err, FE_E_NOMEM, "out of memory for random weights");
    double a = norm ? 0.1 : sqrt(3.0 / (double)cols);
    for (int64_t e = 0; e < rows * cols; e++) {
        double u = (double)(splitmix(rng) >> 11) / 9007199254740992.0 * 2 - 1;
        f[e] = (float)((norm ? 1.0 : 0.0) + a * u);
    }
    int64_t shape[2] = {rows, cols};
    *t = fe_tensor_contiguous(f, FE_DTYPE_F32, cols == 1 ? 1 : 2, shape);
    return FE_OK;
}

fe_status fe_embedgemma_random(const fe_lm_config *cfg, int64_t window, int64_t dense_mid,
                               uint64_t seed, fe_embedgemma *out, fe_error *err) {
    memset(out, 0, sizeof *out);
    fe_status st = fe_lm_config_validate(cfg, err);
    if (st) return st;
    out->cfg = *cfg;
    out->window = window;
    out->layers = fe_calloc((size_t)cfg->n_layers, sizeof *out->layers);
    if (!out->layers) return fe_error_set(err, FE_E_NOMEM, "out of memory for the weight table");
    uint64_t rng = seed * 0x2545f4914f6cdd1dull + 1;
    st = draw(out, &rng, cfg->vocab, cfg->hidden, false, &out->embed, err);
    if (!st) st = draw(out, &rng, cfg->hidden, 1, true, &out->norm, err);
    for (int64_t l = 0; !st && l < cfg->n_layers; l++)
        for (int i = 0; !st && i < N_LAYER; i++) {
            int64_t rows, cols;
            layer_shape(cfg, i, &rows, &cols);
            st = draw(out, &rng, rows, cols, is_norm(i), layer_field(&out->layers[l], i), err);
        }
    if (!st && dense_mid > 0) {
        st = draw(out, &rng, dense_mid, cfg->hidden, false, &out->dense[0], err);
        if (!st) st = draw(out, &rng, cfg->hidden, dense_mid, false, &out->dense[1], err);
        out->n_dense = 2;
    }
    if (st) fe_embedgemma_free(out);
    return st;
}
