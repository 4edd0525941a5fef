/* lm/model/weights_safetensors.c: Llama weights from a Hugging Face safetensors checkpoint (see
 * weights.h): the HF name map (model.embed_tokens.weight, model.layers.N.self_attn.q_proj
 * .weight, ..., lm_head.weight), checked strictly both ways — every tensor the config asks
 * for is present with its exact shape and a dtype ferrum reads, and nothing else is in the
 * checkpoint.
 *
 * Invariant: matrices are views into the checkpoint's mappings (BF16/F16/F32, never copied);
 * norms are f32, either mapped (already f32 and aligned) or converted once into w->owned.
 * Unread (a checkpoint opened header-only): the same checks and dtypes, data NULL.
 * HF's q_proj/k_proj rows are in rotate-half order, so rope_interleaved is false. */
#include "lm/model/weights.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/safetensors.h"

/* The per-layer tensors, after "model.layers.N.". */
static const char *const layer_names[] = {
    "input_layernorm.weight",  "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight",
};
enum { N_LAYER_NAMES = sizeof layer_names / sizeof layer_names[0] };

/* Older conversions carry RoPE's inverse frequencies as a buffer; the config determines
 * them, so they are known and unused rather than unexpected. */
static const char ROTARY_BUFFER[] = "self_attn.rotary_emb.inv_freq";

/* The checkpoint, for messages: its first file. */
static const char *where(const fe_safetensors *st) {
    return fe_safetensors_count(st) ? fe_safetensors_at(st, 0)->file : "the checkpoint";
}

/* The tensor `name`, of the given shape, in BF16, F16 or F32, as a view (norms: any of the
 * three; the caller converts). */
static fe_status take(const fe_safetensors *st, const char *name, int rank, int64_t rows,
                      int64_t cols, fe_tensor *t, fe_error *err) {
    int64_t shape[2] = {rows, cols};
    const fe_st_tensor *s = fe_safetensors_find(st, name);
    char want[64], have[200];
    fe_shape_format(rank, shape, want, sizeof want);
    if (!s)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no tensor %s, which the config's Llama "
                            "model needs as %s; the checkpoint and config.json do not match, "
                            "or it is not a Hugging Face Llama checkpoint", where(st), name,
                            want);
    if (!s->readable || (s->dtype != FE_DTYPE_BF16 && s->dtype != FE_DTYPE_F16 &&
                         s->dtype != FE_DTYPE_F32))
        return fe_error_set(err, FE_E_DTYPE, "%s: tensor %s is %s but ferrum needs BF16, F16 or "
                            "F32 there; save the checkpoint in one of those (torch_dtype "
                            "bfloat16)", s->file, name, s->dtype_name);
    bool same = s->rank == rank;
    for (int d = 0; same && d < rank; d++) same = s->shape[d] == shape[d];
    if (!same) {
        fe_shape_format(s->rank, s->shape, have, sizeof have);
        return fe_error_set(err, FE_E_SHAPE, "%s: tensor %s is %s but the config wants %s; the "
                            "checkpoint and config.json do not match", s->file, name, have,
                            want);
    }
    /* norms (rank 1) may lie anywhere: norms_to_f32 copies what is not aligned f32. Unread,
     * the file offset stands for the address: mappings start page-aligned. */
    size_t elem = fe_dtype_info(s->dtype)->size;
    uint64_t at = s->data ? (uint64_t)(uintptr_t)s->data : s->offset;
    if (rank == 2 && at % elem != 0)
        return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s's data is not aligned to its "
                            "%zu-byte elements, so it cannot be used in place; save the "
                            "checkpoint again with safetensors' own writer", s->file, name, elem);
    *t = fe_tensor_contiguous((void *)s->data, s->dtype, rank, shape);
    return FE_OK;
}

/* Whether `name` is one the map expects (or knowingly ignores) for config c. */
static bool known(const char *name, const fe_lm_config *c) {
    if (!strcmp(name, "model.embed_tokens.weight") || !strcmp(name, "model.norm.weight") ||
        !strcmp(name, "lm_head.weight"))
        return true;
    static const char prefix[] = "model.layers.";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return false;
    const char *p = name + sizeof prefix - 1;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != '.')) return false;
    char *end;
    long long l = strtoll(p, &end, 10);
    if (*end != '.' || l < 0 || l >= c->n_layers) return false;
    for (int i = 0; i < N_LAYER_NAMES; i++)
        if (!strcmp(end + 1, layer_names[i])) return true;
    return !strcmp(end + 1, ROTARY_BUFFER);
}

/* The i-th of the 2 * n_layers + 1 norms: layer i / 2's attention (even i) or FFN (odd i)
 * norm, the final norm last. */
static fe_tensor *norm_at(fe_llama_weights *w, size_t i) {
    if (i == (size_t)(2 * w->cfg.n_layers)) return &w->norm;
    return i % 2 ? &w->layers[i / 2].ffn_norm : &w->layers[i / 2].attn_norm;
}

/* Points every norm at f32 data: mapped when it already is aligned f32, else converted once
 * into one block the weights own. Unread: declared f32, as the read fill would make them. */
static fe_status norms_to_f32(fe_llama_weights *w, fe_error *err) {
    const int64_t L = w->cfg.n_layers, d = w->cfg.hidden;
    size_t n_norms = (size_t)(2 * L + 1), need = 0;
    if (w->unread) {
        for (size_t i = 0; i < n_norms; i++) *norm_at(w, i) = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &d);
        return FE_OK;
    }
    for (size_t i = 0; i < n_norms; i++) {
        const fe_tensor *t = norm_at(w, i);
        need += t->dtype != FE_DTYPE_F32 || (uintptr_t)t->data % 4 != 0;
    }
    if (!need) return FE_OK;
    float *mem = fe_aligned_alloc(64, need * (size_t)d * sizeof(float));
    if (!mem)
        return fe_error_set(err, FE_E_NOMEM, "out of memory for %zu norms of %lld floats",
                            need, (long long)d);
    w->owned = mem;
    for (size_t i = 0; i < n_norms; i++) {
        fe_tensor *t = norm_at(w, i);
        if (t->dtype == FE_DTYPE_F32 && (uintptr_t)t->data % 4 == 0) continue;
        const unsigned char *src = t->data;
        for (int64_t e = 0; e < d; e++) {
            uint16_t h;
            float f;
            if (t->dtype == FE_DTYPE_F32) {
                memcpy(&f, src + 4 * e, 4);
            } else {
                memcpy(&h, src + 2 * e, 2);
                f = t->dtype == FE_DTYPE_BF16 ? fe_bf16_to_f32(h) : fe_f16_to_f32(h);
            }
            mem[e] = f;
        }
        *t = fe_tensor_contiguous(mem, FE_DTYPE_F32, 1, &d);
        mem += d;
    }
    return FE_OK;
}

fe_status fe_llama_weights_from_safetensors(const fe_safetensors *st, const fe_lm_config *cfg,
                                            fe_llama_weights *out, fe_error *err) {
    memset(out, 0, sizeof *out);
    fe_status s = fe_lm_config_validate(cfg, err);
    if (s != FE_OK) return s;
    out->cfg = *cfg;
    out->rope_interleaved = false; /* HF's Llama rotates halves: pairs (i, i + hd/2) */
    out->source = (void *)st;
    out->source_kind = 2;
    out->unread = fe_safetensors_header_only(st);
    out->layers = fe_calloc((size_t)cfg->n_layers, sizeof *out->layers);
    if (!out->layers) return fe_error_set(err, FE_E_NOMEM, "out of memory for the weight table");
    const int64_t d = cfg->hidden, q = cfg->n_heads * cfg->head_dim,
                  kv = cfg->n_kv_heads * cfg->head_dim, f = cfg->ffn;
    s = take(st, "model.embed_tokens.weight", 2, cfg->vocab, d, &out->embed, err);
    if (s == FE_OK) s = take(st, "model.norm.weight", 1, d, 1, &out->norm, err);
    if (s == FE_OK) {
        /* a tied checkpoint may still carry lm_head.weight (a copy); it is not read */
        if (cfg->tied_embeddings) out->lm_head = out->embed;
        else s = take(st, "lm_head.weight", 2, cfg->vocab, d, &out->lm_head, err);
    }
    for (int64_t l = 0; s == FE_OK && l < cfg->n_layers; l++) {
        fe_llama_layer *L = &out->layers[l];
        struct { int rank; int64_t rows, cols; fe_tensor *t; } want[N_LAYER_NAMES] = {
            {1, d, 1, &L->attn_norm}, {2, q, d, &L->wq},      {2, kv, d, &L->wk},
            {2, kv, d, &L->wv},       {2, d, q, &L->wo},      {1, d, 1, &L->ffn_norm},
            {2, f, d, &L->w_gate},    {2, f, d, &L->w_up},    {2, d, f, &L->w_down},
        };
        for (int i = 0; s == FE_OK && i < N_LAYER_NAMES; i++) {
            char name[128];
            snprintf(name, sizeof name, "model.layers.%lld.%s", (long long)l, layer_names[i]);
            s = take(st, name, want[i].rank, want[i].rows, want[i].cols, want[i].t, err);
        }
    }
    /* nothing the map does not know: a tensor left over means a different architecture or
     * a config that disagrees with the checkpoint (more layers, biases, ...) */
    size_t n = fe_safetensors_count(st);
    for (size_t i = 0; s == FE_OK && i < n; i++) {
        const fe_st_tensor *t = fe_safetensors_at(st, i);
        if (known(t->name, cfg)) continue;
        size_t others = 0;
        for (size_t j = i + 1; j < n; j++) others += !known(fe_safetensors_at(st, j)->name, cfg);
        char more[64] = "";
        if (others) snprintf(more, sizeof more, " (and %zu more after it)", others);
        s = fe_error_set(err, FE_E_FORMAT, "%s: tensor %s (%s)%s is not part of a Llama model "
                         "with this config (%lld layers, tie_word_embeddings %s); the "
                         "checkpoint and config.json do not match, or the model is not a "
                         "Llama", t->file, t->name, t->dtype_name, more,
                         (long long)cfg->n_layers, cfg->tied_embeddings ? "true" : "false");
    }
    if (s == FE_OK) s = norms_to_f32(out, err);
    if (s != FE_OK) fe_llama_weights_free(out);
    return s;
}
