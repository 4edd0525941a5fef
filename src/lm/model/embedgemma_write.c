/* lm/model/embedgemma_write.c: writing an EmbeddingGemma model as sentence-transformers saves
 * one (fe_embedgemma_write in embedgemma.h): F32 safetensors with HF's names and norms as w,
 * the Gemma3TextModel config.json, modules.json, 1_Pooling, 2_Dense, 3_Dense and the prompts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/model/embedgemma.h"

typedef struct named {
    char name[96];
    const fe_tensor *t;
    bool norm; /* held as 1 + w, written as w */
} named;

static fe_status write_safetensors(const char *path, const named *ts, int n, fe_error *err) {
    size_t cap = 256 + (size_t)n * 200, len = 0;
    char *hdr = fe_malloc(cap);
    if (!hdr) return fe_error_set(err, FE_E_NOMEM, "out of memory");
    uint64_t off = 0;
    len += (size_t)snprintf(hdr + len, cap - len, "{");
    for (int i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)fe_tensor_numel(ts[i].t) * 4;
        if (ts[i].t->rank == 1)
            len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],"
                                    "\"data_offsets\":[%llu,%llu]}", i ? "," : "", ts[i].name,
                                    (long long)ts[i].t->shape[0], (unsigned long long)off,
                                    (unsigned long long)(off + bytes));
        else
            len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],"
                                    "\"data_offsets\":[%llu,%llu]}", i ? "," : "", ts[i].name,
                                    (long long)ts[i].t->shape[0], (long long)ts[i].t->shape[1],
                                    (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while ((len + 8) % 64) hdr[len++] = ' ';
    FILE *f = fopen(path, "wb");
    fe_status st = f ? FE_OK : fe_error_set(err, FE_E_IO, "%s: %s", path, strerror(errno));
    uint64_t hl = len;
    if (!st && (fwrite(&hl, 8, 1, f) != 1 || fwrite(hdr, 1, len, f) != len))
        st = fe_error_set(err, FE_E_IO, "%s: write failed", path);
    for (int i = 0; !st && i < n; i++) {
        const float *d = ts[i].t->data;
        for (int64_t e = 0; !st && e < fe_tensor_numel(ts[i].t); e++) {
            float v = ts[i].norm ? d[e] - 1.0f : d[e];
            if (fwrite(&v, 4, 1, f) != 1) st = fe_error_set(err, FE_E_IO, "%s: write failed", path);
        }
    }
    if (f && fclose(f) != 0 && !st) st = fe_error_set(err, FE_E_IO, "%s: close failed", path);
    fe_free(hdr);
    return st;
}

static fe_status write_text(const char *dir, const char *name, const char *text, fe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return fe_error_set(err, FE_E_IO, "%s: %s", path, strerror(errno));
    bool ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    return ok ? FE_OK : fe_error_set(err, FE_E_IO, "%s: write failed", path);
}

static fe_status make_dir(const char *path, fe_error *err) {
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return fe_error_set(err, FE_E_IO, "%s: %s", path, strerror(errno));
    return FE_OK;
}

static const char *const hf_layer[] = {
    "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "self_attn.q_norm.weight",
    "self_attn.k_norm.weight", "post_attention_layernorm.weight",
    "pre_feedforward_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
    "mlp.down_proj.weight", "post_feedforward_layernorm.weight"};

fe_status fe_embedgemma_write(const fe_embedgemma *m, const char *dir, fe_error *err) {
    const fe_lm_config *c = &m->cfg;
    fe_status st = make_dir(dir, err);
    int n = 0, cap = 2 + 13 * (int)c->n_layers;
    named *ts = fe_calloc((size_t)cap, sizeof *ts);
    if (!st && !ts) st = fe_error_set(err, FE_E_NOMEM, "out of memory");
    if (!st) {
        ts[n++] = (named){"embed_tokens.weight", &m->embed, false};
        ts[n++] = (named){"norm.weight", &m->norm, true};
        for (int64_t l = 0; l < c->n_layers; l++) {
            const fe_llama_layer *L = &m->layers[l];
            const fe_tensor *f[13] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->q_norm,
                                      &L->k_norm, &L->post_attn_norm, &L->ffn_norm, &L->w_gate,
                                      &L->w_up, &L->w_down, &L->post_ffn_norm};
            for (int i = 0; i < 13; i++) {
                ts[n] = (named){"", f[i], f[i]->rank == 1};
                snprintf(ts[n].name, sizeof ts[n].name, "layers.%lld.%s", (long long)l, hf_layer[i]);
                n++;
            }
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        st = write_safetensors(path, ts, n, err);
    }
    fe_free(ts);
    char text[4096];
    if (!st) {
        snprintf(text, sizeof text,
                 "{\"architectures\": [\"Gemma3TextModel\"], \"model_type\": \"gemma3_text\",\n"
                 " \"vocab_size\": %lld, \"hidden_size\": %lld, \"num_hidden_layers\": %lld,\n"
                 " \"num_attention_heads\": %lld, \"num_key_value_heads\": %lld, \"head_dim\": %lld,\n"
                 " \"intermediate_size\": %lld, \"max_position_embeddings\": %lld,\n"
                 " \"rms_norm_eps\": %.17g, \"rope_theta\": %.17g, \"rope_local_base_freq\": %.17g,\n"
                 " \"sliding_window\": %lld, \"sliding_window_pattern\": %lld,\n"
                 " \"query_pre_attn_scalar\": %.17g, \"hidden_activation\": \"gelu_pytorch_tanh\",\n"
                 " \"use_bidirectional_attention\": true, \"attn_logit_softcapping\": null,\n"
                 " \"final_logit_softcapping\": null, \"rope_scaling\": null, \"torch_dtype\": \"float32\"}\n",
                 (long long)c->vocab, (long long)c->hidden, (long long)c->n_layers,
                 (long long)c->n_heads, (long long)c->n_kv_heads, (long long)c->head_dim,
                 (long long)c->ffn, (long long)c->max_context, c->rms_eps, c->rope_theta,
                 c->rope_theta_local, (long long)c->sliding_window, (long long)c->swa_pattern,
                 1.0 / (c->attn_scale * c->attn_scale));
        st = write_text(dir, "config.json", text, err);
    }
    if (!st) {
        size_t len = (size_t)snprintf(text, sizeof text,
            "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},\n"
            " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}");
        for (int i = 0; i < m->n_dense; i++)
            len += (size_t)snprintf(text + len, sizeof text - len,
                                    ",\n {\"idx\": %d, \"name\": \"%d\", \"path\": \"%d_Dense\", \"type\": "
                                    "\"sentence_transformers.models.Dense\"}", 2 + i, 2 + i, 2 + i);
        snprintf(text + len, sizeof text - len,
                 ",\n {\"idx\": %d, \"name\": \"%d\", \"path\": \"%d_Normalize\", \"type\": "
                 "\"sentence_transformers.models.Normalize\"}]\n", 2 + m->n_dense, 2 + m->n_dense,
                 2 + m->n_dense);
        st = write_text(dir, "modules.json", text, err);
    }
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/1_Pooling", dir);
    if (!st) st = make_dir(sub, err);
    if (!st) {
        snprintf(text, sizeof text, "{\"word_embedding_dimension\": %lld, \"pooling_mode_cls_token\": false,"
                 " \"pooling_mode_mean_tokens\": true, \"pooling_mode_max_tokens\": false,"
                 " \"pooling_mode_mean_sqrt_len_tokens\": false, \"pooling_mode_weightedmean_tokens\": false,"
                 " \"pooling_mode_lasttoken\": false, \"include_prompt\": true}\n", (long long)c->hidden);
        st = write_text(sub, "config.json", text, err);
    }
    if (!st)
        st = write_text(dir, "config_sentence_transformers.json",
                        "{\"prompts\": {\"query\": \"task: search result | query: \", \"document\": "
                        "\"title: none | text: \"}, \"default_prompt_name\": null, "
                        "\"similarity_fn_name\": \"cosine\"}\n", err);
    for (int i = 0; !st && i < m->n_dense; i++) {
        snprintf(sub, sizeof sub, "%s/%d_Dense", dir, 2 + i);
        st = make_dir(sub, err);
        if (!st) {
            snprintf(text, sizeof text, "{\"in_features\": %lld, \"out_features\": %lld, \"bias\": false, "
                     "\"activation_function\": \"torch.nn.modules.linear.Identity\"}\n",
                     (long long)m->dense[i].shape[1], (long long)m->dense[i].shape[0]);
            st = write_text(sub, "config.json", text, err);
        }
        named one = {"linear.weight", &m->dense[i], false};
        char path[4200];
        snprintf(path, sizeof path, "%s/model.safetensors", sub);
        if (!st) st = write_safetensors(path, &one, 1, err);
    }
    snprintf(sub, sizeof sub, "%s/%d_Normalize", dir, 2 + m->n_dense);
    if (!st) st = make_dir(sub, err);
    return st;
}
