/* lm/model/config_gguf.c: a language-model config from GGUF metadata (see config.h).
 *
 * llama.cpp names the hyperparameters `<arch>.<name>` where <arch> is
 * general.architecture, so the same reader serves every Llama-shaped architecture; the
 * model decides which architectures it runs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "lm/model/config.h"

typedef struct gctx {
    const fe_gguf *g;
    const char *arch, *file;
    fe_error *err;
} gctx;

static const fe_gguf_kv *akv(gctx *x, const char *name, char *key, size_t n) {
    snprintf(key, n, "%s.%s", x->arch, name);
    return fe_gguf_find(x->g, key);
}

/* An unsigned `<arch>.name`; def when absent and not required. */
static fe_status g_int(gctx *x, const char *name, bool required, int64_t def, int64_t *out) {
    char key[96];
    const fe_gguf_kv *kv = akv(x, name, key, sizeof key);
    if (!kv) {
        if (required)
            return fe_error_set(x->err, FE_E_FORMAT, "%s: metadata %s is missing; the file was "
                                "not converted for a %s model (convert it again with llama.cpp)",
                                x->file, key, x->arch);
        *out = def;
        return FE_OK;
    }
    uint32_t v;
    fe_status st = fe_gguf_get_u32(kv, &v, x->err);
    if (!st) *out = v;
    return st;
}

static fe_status g_num(gctx *x, const char *name, bool required, double def, double *out) {
    char key[96];
    const fe_gguf_kv *kv = akv(x, name, key, sizeof key);
    if (!kv) {
        if (required)
            return fe_error_set(x->err, FE_E_FORMAT, "%s: metadata %s is missing; convert the "
                                "file again with llama.cpp", x->file, key);
        *out = def;
        return FE_OK;
    }
    float f;
    fe_status st = fe_gguf_get_f32(kv, &f, x->err);
    if (!st) *out = f;
    return st;
}

static fe_status g_rope(gctx *x, fe_lm_config *c) {
    char key[96];
    fe_status st;
    const fe_gguf_kv *kv = akv(x, "rope.scaling.type", key, sizeof key);
    if (kv) {
        const char *s;
        size_t n;
        if ((st = fe_gguf_get_str(kv, &s, &n, x->err))) return st;
        if (n == 4 && memcmp(s, "none", 4) == 0) {
            c->rope_scaling.type = FE_LM_ROPE_NONE;
        } else if (n == 6 && memcmp(s, "linear", 6) == 0) {
            c->rope_scaling.type = FE_LM_ROPE_LINEAR;
            if ((st = g_num(x, "rope.scaling.factor", true, 0, &c->rope_scaling.factor)))
                return st;
        } else {
            return fe_error_set(x->err, FE_E_UNSUPPORTED, "%s: %s is %.*s; ferrum runs none, "
                                "linear and llama3 (rope_freqs.weight) scaling", x->file, key,
                                (int)(n > 40 ? 40 : n), s);
        }
    } else if (akv(x, "rope.scale_linear", key, sizeof key)) {
        double f;
        if ((st = g_num(x, "rope.scale_linear", true, 1, &f))) return st;
        if (f != 1.0) c->rope_scaling.type = FE_LM_ROPE_LINEAR, c->rope_scaling.factor = f;
    }
    if (fe_gguf_tensor_find(x->g, "rope_freqs.weight")) {
        if (c->rope_scaling.type != FE_LM_ROPE_NONE)
            return fe_error_set(x->err, FE_E_UNSUPPORTED, "%s: both %s and a rope_freqs.weight "
                                "tensor; ferrum applies one RoPE scaling", x->file, key);
        c->rope_scaling.type = FE_LM_ROPE_FREQS_TENSOR;
    }
    return g_int(x, "rope.scaling.original_context_length", false, 0,
                 &c->rope_scaling.original_max_position_embeddings);
}

/* Token ids: bos, then eos, eot and eom (each once) as the ids that end generation. */
static fe_status g_ids(gctx *x, fe_lm_config *c) {
    uint32_t v;
    fe_status st;
    c->bos_id = -1;
    const fe_gguf_kv *kv = fe_gguf_find(x->g, "tokenizer.ggml.bos_token_id");
    if (kv) {
        if ((st = fe_gguf_get_u32(kv, &v, x->err))) return st;
        if (v > INT32_MAX)
            return fe_error_set(x->err, FE_E_FORMAT, "%s: tokenizer.ggml.bos_token_id %u is "
                                "not a token id", x->file, v);
        c->bos_id = (int32_t)v;
    }
    static const char *const ends[] = {"tokenizer.ggml.eos_token_id",
                                       "tokenizer.ggml.eot_token_id",
                                       "tokenizer.ggml.eom_token_id"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        if (!(kv = fe_gguf_find(x->g, ends[i]))) continue;
        if ((st = fe_gguf_get_u32(kv, &v, x->err))) return st;
        if (v > INT32_MAX)
            return fe_error_set(x->err, FE_E_FORMAT, "%s: %s %u is not a token id", x->file,
                                ends[i], v);
        bool seen = false;
        for (int k = 0; k < c->n_eos; k++) seen |= c->eos_ids[k] == (int32_t)v;
        if (!seen) c->eos_ids[c->n_eos++] = (int32_t)v;
    }
    return FE_OK;
}

/* Gemma 3's extras, as llama.cpp's gemma3 model reads them: every sixth layer global (the
 * pattern's default), local ones with RoPE base 10000 unless the file says, q . k scaled by
 * 1 / sqrt(head_dim) (query_pre_attn_scalar = head_dim for every size but 27B, which llama.cpp
 * recognises by its 62 layers), the embedding by sqrt(hidden); <end_of_turn> ends a turn. */
static fe_status gemma3(gctx *x, fe_lm_config *c) {
    fe_status st;
    c->family = FE_LM_FAMILY_GEMMA3;
    if ((st = g_int(x, "attention.sliding_window", false, 0, &c->sliding_window)) ||
        (st = g_int(x, "attention.sliding_window_pattern", false, 6, &c->swa_pattern)) ||
        (st = g_num(x, "rope.freq_base_swa", false, 10000.0, &c->rope_theta_local)))
        return st;
    c->attn_scale = c->n_layers == 62 ? 1.0 / sqrt((double)(c->hidden / c->n_heads))
                                      : 1.0 / sqrt((double)c->head_dim);
    c->embed_scale = sqrt((double)c->hidden);
    const fe_gguf_kv *tokens = fe_gguf_find(x->g, "tokenizer.ggml.tokens");
    for (size_t i = 0; tokens && i < fe_gguf_array_len(tokens) && i < 1024; i++) {
        size_t len;
        const char *s = fe_gguf_array_str(tokens, i, &len);
        if (s && len == 13 && memcmp(s, "<end_of_turn>", 13) == 0 && c->n_eos < FE_LM_MAX_EOS) {
            bool seen = false;
            for (int k = 0; k < c->n_eos; k++) seen |= c->eos_ids[k] == (int32_t)i;
            if (!seen) c->eos_ids[c->n_eos++] = (int32_t)i;
            break;
        }
    }
    return FE_OK;
}

static fe_status from_gguf(gctx *x, fe_lm_config *c) {
    fe_status st;
    if ((st = g_int(x, "block_count", true, 0, &c->n_layers)) ||
        (st = g_int(x, "embedding_length", true, 0, &c->hidden)) ||
        (st = g_int(x, "feed_forward_length", true, 0, &c->ffn)) ||
        (st = g_int(x, "attention.head_count", true, 0, &c->n_heads)) ||
        (st = g_int(x, "attention.head_count_kv", false, c->n_heads, &c->n_kv_heads)) ||
        (st = g_int(x, "context_length", true, 0, &c->max_context)) ||
        (st = g_num(x, "attention.layer_norm_rms_epsilon", true, 0, &c->rms_eps)) ||
        (st = g_num(x, "rope.freq_base", false, 10000.0, &c->rope_theta)) ||
        (st = g_int(x, "attention.key_length", false, c->n_heads ? c->hidden / c->n_heads : 0,
                    &c->head_dim)) ||
        (st = g_rope(x, c)) || (st = g_ids(x, c)))
        return st;
    int64_t rot;
    if ((st = g_int(x, "rope.dimension_count", false, c->head_dim, &rot))) return st;
    if (rot != c->head_dim)
        return fe_error_set(x->err, FE_E_UNSUPPORTED, "%s: %s.rope.dimension_count is %lld but "
                            "head_dim is %lld; ferrum rotates whole heads (no partial rotary)",
                            x->file, x->arch, (long long)rot, (long long)c->head_dim);
    const fe_gguf_kv *tokens = fe_gguf_find(x->g, "tokenizer.ggml.tokens");
    int64_t n_tokens = (int64_t)fe_gguf_array_len(tokens);
    if ((st = g_int(x, "vocab_size", false, n_tokens, &c->vocab))) return st;
    if (c->vocab == 0)
        return fe_error_set(x->err, FE_E_FORMAT, "%s: neither %s.vocab_size nor "
                            "tokenizer.ggml.tokens gives the vocabulary size; convert the file "
                            "again with llama.cpp", x->file, x->arch);
    c->tied_embeddings = fe_gguf_tensor_find(x->g, "output.weight") == NULL;
    return strcmp(x->arch, "gemma3") == 0 ? gemma3(x, c) : FE_OK;
}

fe_status fe_lm_config_from_gguf(const fe_gguf *g, fe_lm_config *out, fe_error *err) {
    const char *file = fe_gguf_path(g);
    const char *arch;
    size_t n;
    const fe_gguf_kv *kv = fe_gguf_find(g, "general.architecture");
    if (!kv)
        return fe_error_set(err, FE_E_FORMAT, "%s: metadata general.architecture is missing; "
                            "convert the file again with llama.cpp", file);
    fe_status st = fe_gguf_get_str(kv, &arch, &n, err);
    if (st) return st;
    bool ok = n > 0 && n < FE_LM_ARCH_MAX;
    for (size_t i = 0; ok && i < n; i++) ok = arch[i] > ' ' && arch[i] < 0x7f && arch[i] != '.';
    if (!ok)
        return fe_error_set(err, FE_E_FORMAT, "%s: general.architecture is not a short name "
                            "like \"llama\"; convert the file again with llama.cpp", file);
    fe_lm_config c;
    memset(&c, 0, sizeof c);
    memcpy(c.architecture, arch, n);
    snprintf(c.source, sizeof c.source, "%s", file);
    gctx x = {.g = g, .arch = c.architecture, .file = file, .err = err};
    if ((st = from_gguf(&x, &c)) || (st = fe_lm_config_validate(&c, err))) return st;
    *out = c;
    return FE_OK;
}
