/* lm/model/weights_gguf.c: Llama weights from a GGUF file (see weights.h): llama.cpp's
 * tensor names and shapes checked strictly, views into the mapping (or unread, data NULL,
 * when the file was opened header-only). */
#include "lm/model/weights.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/gguf.h"

/* A GGUF tensor of the expected (ferrum-order) shape, as a view into the mapping. */
static fe_status take(const fe_gguf *g, const char *name, int rank, int64_t rows, int64_t cols,
                      fe_tensor *t, fe_error *err) {
    int64_t shape[2] = {rows, cols};
    const fe_gguf_tensor *gt;
    fe_status st = fe_gguf_tensor_expect(g, name, rank, shape, &gt, err);
    if (st != FE_OK) return st;
    *t = fe_tensor_contiguous((void *)gt->data, gt->dtype, rank, shape);
    if (rank == 2 && fe_dtype_info(gt->dtype)->block > 1 && cols % fe_dtype_info(gt->dtype)->block != 0)
        return fe_error_set(err, FE_E_FORMAT, "tensor %s: %lld columns are not whole %s blocks",
                            name, (long long)cols, fe_dtype_info(gt->dtype)->name);
    return FE_OK;
}

fe_status fe_llama_weights_from_gguf(const fe_gguf *g, const fe_lm_config *cfg,
                                     fe_llama_weights *out, fe_error *err) {
    memset(out, 0, sizeof *out);
    out->cfg = *cfg;
    /* llama.cpp's converter permutes Llama's q and k for GGML's rope; Gemma's are left as HF
     * has them (llama.cpp rotates them NeoX-style, halves) */
    out->rope_interleaved = cfg->family != FE_LM_FAMILY_GEMMA3;
    out->unread = fe_gguf_header_only(g);
    out->layers = fe_calloc((size_t)cfg->n_layers, sizeof *out->layers);
    if (!out->layers) return fe_error_set(err, FE_E_NOMEM, "out of memory for the weight table");
    int64_t d = cfg->hidden, q = cfg->n_heads * cfg->head_dim, kv = cfg->n_kv_heads * cfg->head_dim;
    fe_status st = take(g, "token_embd.weight", 2, cfg->vocab, d, &out->embed, err);
    if (st == FE_OK) st = take(g, "output_norm.weight", 1, d, 1, &out->norm, err);
    if (st == FE_OK) {
        if (fe_gguf_tensor_find(g, "output.weight")) st = take(g, "output.weight", 2, cfg->vocab, d, &out->lm_head, err);
        else out->lm_head = out->embed;
    }
    for (int64_t l = 0; st == FE_OK && l < cfg->n_layers; l++) {
        fe_llama_layer *L = &out->layers[l];
        struct { const char *name; int rank; int64_t rows, cols; fe_tensor *t; } want[] = {
            {"attn_norm", 1, d, 1, &L->attn_norm}, {"attn_q", 2, q, d, &L->wq},
            {"attn_k", 2, kv, d, &L->wk},          {"attn_v", 2, kv, d, &L->wv},
            {"attn_output", 2, d, q, &L->wo},      {"ffn_norm", 1, d, 1, &L->ffn_norm},
            {"ffn_gate", 2, cfg->ffn, d, &L->w_gate}, {"ffn_up", 2, cfg->ffn, d, &L->w_up},
            {"ffn_down", 2, d, cfg->ffn, &L->w_down},
        };
        for (size_t i = 0; st == FE_OK && i < sizeof want / sizeof want[0]; i++) {
            char name[96];
            snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)l, want[i].name);
            st = take(g, name, want[i].rank, want[i].rows, want[i].cols, want[i].t, err);
        }
        if (cfg->family != FE_LM_FAMILY_GEMMA3) continue;
        struct { const char *name; int64_t n; fe_tensor *t; } norms[] = {
            {"attn_q_norm", cfg->head_dim, &L->q_norm}, {"attn_k_norm", cfg->head_dim, &L->k_norm},
            {"post_attention_norm", d, &L->post_attn_norm}, {"post_ffw_norm", d, &L->post_ffn_norm},
        };
        for (size_t i = 0; st == FE_OK && i < sizeof norms / sizeof norms[0]; i++) {
            char name[96];
            snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)l, norms[i].name);
            st = take(g, name, 1, norms[i].n, 1, norms[i].t, err);
            if (st == FE_OK && norms[i].t->dtype != FE_DTYPE_F32)
                st = fe_error_set(err, FE_E_DTYPE, "%s must be f32 in the file", name);
        }
    }
    if (st == FE_OK && cfg->rope_scaling.type == FE_LM_ROPE_FREQS_TENSOR) {
        st = take(g, "rope_freqs.weight", 1, cfg->head_dim / 2, 1, &out->rope_freqs, err);
        if (st == FE_OK && out->rope_freqs.dtype != FE_DTYPE_F32)
            st = fe_error_set(err, FE_E_DTYPE, "rope_freqs.weight must be f32 in the file");
    }
    /* every norm is read as f32 by the kernels */
    for (int64_t l = 0; st == FE_OK && l < cfg->n_layers; l++)
        if (out->layers[l].attn_norm.dtype != FE_DTYPE_F32 || out->layers[l].ffn_norm.dtype != FE_DTYPE_F32)
            st = fe_error_set(err, FE_E_DTYPE, "blk.%lld norms must be f32 in the file", (long long)l);
    if (st == FE_OK && out->norm.dtype != FE_DTYPE_F32)
        st = fe_error_set(err, FE_E_DTYPE, "output_norm.weight must be f32 in the file");
    if (st != FE_OK) fe_llama_weights_free(out);
    return st;
}
