/* lm/model/weights_safetensors_write.c: Llama weights out as a Hugging Face checkpoint folder (see
 * safetensors_write.h): model.safetensors with HF names, and config.json with LlamaConfig's
 * keys. Invariant of the file written: data offsets are contiguous from 0 in table order (as
 * safetensors' reference reader demands), f32 tensors come first so every 2-byte tensor that
 * follows stays aligned, and the header's padding puts the data at a 64-byte boundary. */
#include "lm/model/weights_safetensors_write.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"

enum { DATA_ALIGN = 64 };

typedef struct entry {
    char name[96];
    const fe_tensor *t;
    int64_t heads;  /* > 0: q/k rows to un-permute from interleaved pairs, per head */
    size_t offset;  /* from the start of the data */
} entry;

/* A growable text buffer; `failed` sticks after an allocation failure. */
typedef struct text {
    char *p;
    size_t n, cap;
    bool failed;
} text;

static void put(text *b, const char *fmt, ...) FE_PRINTF(2, 3);
static void put(text *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = true;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->n + (size_t)k) cap *= 2;
        char *np = fe_realloc(b->p, cap);
        if (!np) {
            b->failed = true;
            return;
        }
        b->p = np, b->cap = cap;
    }
}

/* A number as JSON, the shortest form that reads back as the same double, with a '.' or an
 * exponent so readers that keep JSON's int/float distinction (Python) see a float. The caller
 * passes finite numbers only (the config is validated). */
static void put_real(text *b, double v) {
    char s[40];
    if (v == (double)(int64_t)v && v > -1e15 && v < 1e15) {
        put(b, "%.1f", v); /* 500000.0, as Python writes it */
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(s, sizeof s, "%.*g", p, v);
        if (strtod(s, NULL) == v) break;
    }
    put(b, "%s%s", s, strpbrk(s, ".eEn") ? "" : ".0");
}

static const char *st_dtype(fe_dtype dt) {
    return dt == FE_DTYPE_F32    ? "F32"
           : dt == FE_DTYPE_BF16 ? "BF16"
           : dt == FE_DTYPE_F16  ? "F16"
                                 : NULL;
}

static int n_entries(const fe_lm_config *c) {
    return (int)(c->n_layers * 9 + 2 + !c->tied_embeddings);
}

/* The tensors in HF names, f32 ones first (stable within each group). */
static fe_status entries_of(const fe_llama_weights *w, entry *e, fe_error *err) {
    const fe_lm_config *c = &w->cfg;
    int n = 0;
    e[n++] = (entry){"model.embed_tokens.weight", &w->embed, 0, 0};
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const struct { const char *name; const fe_tensor *t; int64_t heads; } m[] = {
            {"input_layernorm", &L->attn_norm, 0},
            {"self_attn.q_proj", &L->wq, w->rope_interleaved ? c->n_heads : 0},
            {"self_attn.k_proj", &L->wk, w->rope_interleaved ? c->n_kv_heads : 0},
            {"self_attn.v_proj", &L->wv, 0},
            {"self_attn.o_proj", &L->wo, 0},
            {"post_attention_layernorm", &L->ffn_norm, 0},
            {"mlp.gate_proj", &L->w_gate, 0},
            {"mlp.up_proj", &L->w_up, 0},
            {"mlp.down_proj", &L->w_down, 0},
        };
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
            e[n] = (entry){"", m[i].t, m[i].heads, 0};
            snprintf(e[n++].name, sizeof e->name, "model.layers.%lld.%s.weight", (long long)l,
                     m[i].name);
        }
    }
    e[n++] = (entry){"model.norm.weight", &w->norm, 0, 0};
    if (!c->tied_embeddings) e[n++] = (entry){"lm_head.weight", &w->lm_head, 0, 0};
    for (int i = 0; i < n; i++) {
        const fe_tensor *t = e[i].t;
        if (!t->data || t->rank < 1 || t->rank > 2)
            return fe_error_set(err, FE_E_INVALID, "writing safetensors: tensor %s is absent or "
                                "not a vector or matrix", e[i].name);
        if (!st_dtype(t->dtype))
            return fe_error_set(err, FE_E_UNSUPPORTED, "writing safetensors: tensor %s is %s; "
                                "safetensors holds F32, BF16 or F16 (load a checkpoint in one "
                                "of those)", e[i].name, fe_dtype_info(t->dtype)->name);
        if (t->stride[t->rank - 1] != 1 || (t->rank == 2 && t->stride[0] != t->shape[1]))
            return fe_error_set(err, FE_E_INVALID, "writing safetensors: tensor %s is not "
                                "contiguous", e[i].name);
        if (e[i].heads && t->shape[0] != e[i].heads * c->head_dim)
            return fe_error_set(err, FE_E_SHAPE, "writing safetensors: tensor %s has %lld rows, "
                                "not %lld heads of %lld", e[i].name, (long long)t->shape[0],
                                (long long)e[i].heads, (long long)c->head_dim);
    }
    /* stable partition: f32 first */
    entry *tmp = fe_malloc((size_t)n * sizeof *tmp);
    if (!tmp) return fe_error_set(err, FE_E_NOMEM, "writing safetensors: out of memory");
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if ((e[i].t->dtype == FE_DTYPE_F32) == (pass == 0)) tmp[k++] = e[i];
    memcpy(e, tmp, (size_t)n * sizeof *e);
    fe_free(tmp);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        e[i].offset = off;
        off += fe_dtype_bytes(e[i].t->dtype, fe_tensor_numel(e[i].t));
    }
    return FE_OK;
}

static fe_status io_error(fe_error *err, const char *what, const char *path) {
    return fe_error_set(err, FE_E_IO, "writing safetensors: cannot %s %s: %s", what, path,
                        strerror(errno));
}

/* One tensor's bytes; q/k rows of interleaved weights go out in rotate-half order: HF row
 * a*hd + j*hd/2 + i is the interleaved row a*hd + 2i + j. */
static bool write_tensor(FILE *f, const entry *e, int64_t hd) {
    const fe_tensor *t = e->t;
    const char *p = t->data;
    if (!e->heads) {
        size_t n = fe_dtype_bytes(t->dtype, fe_tensor_numel(t));
        return fwrite(p, 1, n, f) == n;
    }
    size_t row = fe_dtype_bytes(t->dtype, t->shape[1]);
    for (int64_t a = 0; a < e->heads; a++)
        for (int64_t h = 0; h < hd; h++) {
            int64_t j = h / (hd / 2), i = h % (hd / 2);
            if (fwrite(p + (size_t)(a * hd + 2 * i + j) * row, 1, row, f) != row) return false;
        }
    return true;
}

/* Writes `body` to dir/name through a temporary file and a rename. */
typedef fe_status (*writer)(FILE *f, const void *ctx, fe_error *err);

static fe_status write_file(const char *dir, const char *name, writer fn, const void *ctx,
                            fe_error *err) {
    size_t n = strlen(dir) + strlen(name) + 8;
    char *path = fe_malloc(2 * n);
    if (!path) return fe_error_set(err, FE_E_NOMEM, "writing safetensors: out of memory");
    char *tmp = path + n;
    snprintf(path, n, "%s/%s", dir, name);
    snprintf(tmp, n, "%s/.%s~", dir, name);
    fe_status st = FE_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        st = io_error(err, "create", tmp);
    } else {
        st = fn(f, ctx, err);
        if (st == FE_OK && fflush(f) != 0) st = io_error(err, "write", tmp);
        if (fclose(f) != 0 && st == FE_OK) st = io_error(err, "write", tmp);
        if (st == FE_OK && rename(tmp, path) != 0) st = io_error(err, "rename into", path);
        if (st != FE_OK) remove(tmp);
    }
    fe_free(path);
    return st;
}

typedef struct model_ctx {
    const fe_llama_weights *w;
    const entry *e;
    int n;
} model_ctx;

static fe_status write_model(FILE *f, const void *ctx, fe_error *err) {
    const model_ctx *m = ctx;
    text h = {0};
    put(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < m->n; i++) {
        const fe_tensor *t = m->e[i].t;
        size_t bytes = fe_dtype_bytes(t->dtype, fe_tensor_numel(t));
        put(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld", m->e[i].name, st_dtype(t->dtype),
            (long long)t->shape[0]);
        if (t->rank == 2) put(&h, ",%lld", (long long)t->shape[1]);
        put(&h, "],\"data_offsets\":[%zu,%zu]}", m->e[i].offset, m->e[i].offset + bytes);
    }
    put(&h, "}");
    while (!h.failed && (8 + h.n) % DATA_ALIGN) put(&h, " ");
    fe_status st = FE_OK;
    if (h.failed) {
        st = fe_error_set(err, FE_E_NOMEM, "writing safetensors: out of memory for the header");
    } else {
        unsigned char len[8];
        for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
        bool ok = fwrite(len, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
        for (int i = 0; ok && i < m->n; i++) ok = write_tensor(f, &m->e[i], m->w->cfg.head_dim);
        if (!ok) st = fe_error_set(err, FE_E_IO, "writing safetensors: writing model.safetensors "
                                   "failed: %s", strerror(errno));
    }
    fe_free(h.p);
    return st;
}

static const char *torch_dtype(fe_dtype dt) {
    return dt == FE_DTYPE_F32 ? "float32" : dt == FE_DTYPE_F16 ? "float16" : "bfloat16";
}

static fe_status write_config(FILE *f, const void *ctx, fe_error *err) {
    const fe_llama_weights *w = ctx;
    const fe_lm_config *c = &w->cfg;
    text b = {0};
    put(&b, "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n");
    put(&b, "  \"vocab_size\": %lld,\n  \"hidden_size\": %lld,\n  \"intermediate_size\": %lld,\n",
        (long long)c->vocab, (long long)c->hidden, (long long)c->ffn);
    put(&b, "  \"num_hidden_layers\": %lld,\n  \"num_attention_heads\": %lld,\n"
        "  \"num_key_value_heads\": %lld,\n  \"head_dim\": %lld,\n", (long long)c->n_layers,
        (long long)c->n_heads, (long long)c->n_kv_heads, (long long)c->head_dim);
    put(&b, "  \"hidden_act\": \"silu\",\n  \"max_position_embeddings\": %lld,\n",
        (long long)c->max_context);
    put(&b, "  \"rms_norm_eps\": ");
    put_real(&b, c->rms_eps);
    put(&b, ",\n  \"rope_theta\": ");
    put_real(&b, c->rope_theta);
    put(&b, ",\n  \"rope_scaling\": ");
    if (c->rope_scaling.type == FE_LM_ROPE_NONE) {
        put(&b, "null");
    } else if (c->rope_scaling.type == FE_LM_ROPE_LINEAR) {
        put(&b, "{\"rope_type\": \"linear\", \"factor\": ");
        put_real(&b, c->rope_scaling.factor);
        put(&b, "}");
    } else {
        put(&b, "{\"rope_type\": \"llama3\", \"factor\": ");
        put_real(&b, c->rope_scaling.factor);
        put(&b, ", \"low_freq_factor\": ");
        put_real(&b, c->rope_scaling.low_freq_factor);
        put(&b, ", \"high_freq_factor\": ");
        put_real(&b, c->rope_scaling.high_freq_factor);
        put(&b, ", \"original_max_position_embeddings\": %lld}",
            (long long)c->rope_scaling.original_max_position_embeddings);
    }
    put(&b, ",\n  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n"
        "  \"mlp_bias\": false,\n  \"initializer_range\": 0.02,\n  \"pretraining_tp\": 1,\n"
        "  \"use_cache\": true,\n  \"tie_word_embeddings\": %s,\n",
        c->tied_embeddings ? "true" : "false");
    if (c->bos_id >= 0) put(&b, "  \"bos_token_id\": %d,\n", (int)c->bos_id);
    else put(&b, "  \"bos_token_id\": null,\n");
    if (c->n_eos == 0) put(&b, "  \"eos_token_id\": null,\n");
    else if (c->n_eos == 1) put(&b, "  \"eos_token_id\": %d,\n", (int)c->eos_ids[0]);
    else
        for (int i = 0; i < c->n_eos; i++)
            put(&b, "%s%d%s", i ? ", " : "  \"eos_token_id\": [", (int)c->eos_ids[i],
                i + 1 == c->n_eos ? "],\n" : "");
    put(&b, "  \"torch_dtype\": \"%s\"\n}\n", torch_dtype(w->embed.dtype));
    fe_status st = FE_OK;
    if (b.failed)
        st = fe_error_set(err, FE_E_NOMEM, "writing safetensors: out of memory for config.json");
    else if (fwrite(b.p, 1, b.n, f) != b.n)
        st = fe_error_set(err, FE_E_IO, "writing safetensors: writing config.json failed: %s",
                          strerror(errno));
    fe_free(b.p);
    return st;
}

fe_status fe_llama_weights_write_safetensors(const fe_llama_weights *w, const char *dir,
                                             fe_error *err) {
    const fe_lm_config *c = &w->cfg;
    fe_status st = fe_lm_config_validate(c, err);
    if (st != FE_OK) return st;
    if (c->rope_scaling.type == FE_LM_ROPE_FREQS_TENSOR)
        return fe_error_set(err, FE_E_UNSUPPORTED, "writing safetensors: %s scales RoPE by a "
                            "GGUF rope_freqs tensor, which config.json cannot express", c->source);
    if (!w->layers)
        return fe_error_set(err, FE_E_INVALID, "writing safetensors: the weights are empty");
    if ((st = fe_llama_weights_check_read(w, "writing safetensors", err)) != FE_OK) return st;
    struct stat sb;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return io_error(err, "create the folder", dir);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fe_error_set(err, FE_E_IO, "writing safetensors: %s is not a folder", dir);
    int n = n_entries(c);
    entry *e = fe_malloc((size_t)n * sizeof *e);
    if (!e) return fe_error_set(err, FE_E_NOMEM, "writing safetensors: out of memory");
    st = entries_of(w, e, err);
    model_ctx m = {w, e, n};
    if (st == FE_OK) st = write_file(dir, "model.safetensors", write_model, &m, err);
    if (st == FE_OK) st = write_file(dir, "config.json", write_config, w, err);
    fe_free(e);
    return st;
}
