/* lm/model/weights.c: Llama weights from a GGUF file (names and shapes checked strictly; read, or
 * unread when the file was opened header-only) or drawn at random in the checkpoint's
 * shapes (see weights.h). */
#include "lm/model/weights.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/quant.h"

void fe_llama_weights_free(fe_llama_weights *w) {
    if (!w) return;
    fe_free(w->layers);
    fe_free(w->owned);
    w->layers = NULL;
    w->owned = NULL;
}

fe_status fe_llama_weights_check_read(const fe_llama_weights *w, const char *what, fe_error *err) {
    if (!w->unread) return FE_OK;
    return fe_error_set(err, FE_E_STATE, "%s needs the weights' data, but these weights are "
                        "unread (the checkpoint was opened header-only, for tracing); open it "
                        "with its data to run the model", what);
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Each tensor in the random layout: a shape, and how to draw it. */
typedef struct spec {
    fe_tensor *t;
    int rank;
    int64_t rows, cols;
    bool norm; /* a norm weight: near 1 */
} spec;

static int specs_of(const fe_lm_config *c, fe_llama_weights *w, spec *s) {
    int n = 0;
    int64_t d = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    s[n++] = (spec){&w->embed, 2, c->vocab, d, false};
    s[n++] = (spec){&w->norm, 1, d, 1, true};
    if (!c->tied_embeddings) s[n++] = (spec){&w->lm_head, 2, c->vocab, d, false};
    for (int64_t l = 0; l < c->n_layers; l++) {
        fe_llama_layer *L = &w->layers[l];
        s[n++] = (spec){&L->attn_norm, 1, d, 1, true};
        s[n++] = (spec){&L->wq, 2, q, d, false};
        s[n++] = (spec){&L->wk, 2, kv, d, false};
        s[n++] = (spec){&L->wv, 2, kv, d, false};
        s[n++] = (spec){&L->wo, 2, d, q, false};
        s[n++] = (spec){&L->ffn_norm, 1, d, 1, true};
        s[n++] = (spec){&L->w_gate, 2, c->ffn, d, false};
        s[n++] = (spec){&L->w_up, 2, c->ffn, d, false};
        s[n++] = (spec){&L->w_down, 2, d, c->ffn, false};
        if (c->family != FE_LM_FAMILY_GEMMA3) continue;
        s[n++] = (spec){&L->q_norm, 1, c->head_dim, 1, true};
        s[n++] = (spec){&L->k_norm, 1, c->head_dim, 1, true};
        s[n++] = (spec){&L->post_attn_norm, 1, d, 1, true};
        s[n++] = (spec){&L->post_ffn_norm, 1, d, 1, true};
    }
    return n;
}

/* The checks and the weight table both fills share; *s (caller frees) the layout. */
static fe_status layout(const fe_lm_config *cfg, fe_dtype dtype, fe_llama_weights *out, spec **s,
                        int *n, fe_error *err) {
    memset(out, 0, sizeof *out);
    *s = NULL;
    const fe_dtype_traits *tr = fe_dtype_info(dtype);
    if (dtype != FE_DTYPE_F32 && dtype != FE_DTYPE_BF16 && dtype != FE_DTYPE_Q8_0 &&
        dtype != FE_DTYPE_Q4_0 && dtype != FE_DTYPE_Q4_1)
        return fe_error_set(err, FE_E_DTYPE, "random weights are f32, bf16, q8_0, q4_0 or q4_1; "
                            "%s was asked", tr ? tr->name : "?");
    fe_status st = fe_lm_config_validate(cfg, err);
    if (st != FE_OK) return st;
    out->cfg = *cfg;
    out->layers = fe_calloc((size_t)cfg->n_layers, sizeof *out->layers);
    *s = fe_malloc(((size_t)cfg->n_layers * 13 + 3) * sizeof **s); /* Gemma 3: 13 a layer */
    if (!out->layers || !*s) {
        fe_free(*s);
        *s = NULL;
        fe_llama_weights_free(out);
        return fe_error_set(err, FE_E_NOMEM, "out of memory for the weight table");
    }
    *n = specs_of(cfg, out, *s);
    for (int i = 0; i < *n; i++)
        if (!(*s)[i].norm && (*s)[i].cols % tr->block != 0) {
            const int64_t cols = (*s)[i].cols;
            fe_free(*s);
            *s = NULL;
            fe_llama_weights_free(out);
            return fe_error_set(err, FE_E_SHAPE, "random %s weights need rows of whole %d-element "
                                "blocks; a matrix has %lld columns: give hidden, heads x head_dim "
                                "and ffn in multiples of %d, or f32 / bf16 weights", tr->name,
                                tr->block, (long long)cols, tr->block);
        }
    return FE_OK;
}

fe_status fe_llama_weights_shapes(const fe_lm_config *cfg, fe_dtype dtype, fe_llama_weights *out,
                                  fe_error *err) {
    spec *s;
    int n;
    fe_status st = layout(cfg, dtype, out, &s, &n, err);
    if (st != FE_OK) return st;
    for (int i = 0; i < n; i++) {
        int64_t shape[2] = {s[i].rows, s[i].cols};
        *s[i].t = fe_tensor_contiguous(NULL, s[i].norm ? FE_DTYPE_F32 : dtype, s[i].rank, shape);
    }
    if (cfg->tied_embeddings) out->lm_head = out->embed;
    out->unread = true;
    fe_free(s);
    return FE_OK;
}

fe_status fe_llama_weights_random(const fe_lm_config *cfg, fe_dtype dtype, uint64_t seed,
                                  fe_llama_weights *out, fe_error *err) {
    spec *s;
    int n;
    fe_status st = layout(cfg, dtype, out, &s, &n, err);
    if (st != FE_OK) return st;
    size_t total = 0;
    /* norms are f32 whatever the matrices are: the kernels read them as f32 */
    for (int i = 0; i < n; i++)
        total += (fe_dtype_bytes(s[i].norm ? FE_DTYPE_F32 : dtype, s[i].rows * s[i].cols) + 63) & ~(size_t)63;
    char *mem = fe_aligned_alloc(64, total);
    if (!mem) {
        fe_free(s);
        fe_llama_weights_free(out);
        return fe_error_set(err, FE_E_NOMEM, "out of memory for %zu bytes of random weights", total);
    }
    out->owned = mem;
    uint64_t rng = seed * 0x2545f4914f6cdd1dull + 1;
    for (int i = 0; i < n; i++) {
        int64_t cnt = s[i].rows * s[i].cols, shape[2] = {s[i].rows, s[i].cols};
        fe_dtype dt = s[i].norm ? FE_DTYPE_F32 : dtype;
        /* uniform in [-a, a] has std a / sqrt 3: std 1 / sqrt(fan_in) */
        double a = s[i].norm ? 0.1 : sqrt(3.0 / (double)s[i].cols);
        const bool blocks = fe_dtype_info(dt)->block > 1; /* drawn in f32, quantised a row at a time */
        float *row = blocks ? fe_malloc((size_t)s[i].cols * sizeof *row) : NULL;
        if (blocks && !row) {
            fe_free(s);
            fe_llama_weights_free(out);
            return fe_error_set(err, FE_E_NOMEM, "out of memory for a row of random weights");
        }
        for (int64_t e = 0; e < cnt; e++) {
            double u = (double)(splitmix(&rng) >> 11) / 9007199254740992.0 * 2 - 1;
            float v = (float)((s[i].norm ? 1.0 : 0.0) + a * u);
            if (blocks) {
                row[e % s[i].cols] = v;
                if ((e + 1) % s[i].cols == 0)
                    fe_quant_row(dt, row, mem + fe_dtype_bytes(dt, e + 1 - s[i].cols), s[i].cols);
            } else if (dt == FE_DTYPE_F32) ((float *)mem)[e] = v;
            else ((uint16_t *)mem)[e] = fe_f32_to_bf16(v);
        }
        fe_free(row);
        *s[i].t = fe_tensor_contiguous(mem, dt, s[i].rank, shape);
        mem += (fe_dtype_bytes(dt, cnt) + 63) & ~(size_t)63;
    }
    if (cfg->tied_embeddings) out->lm_head = out->embed;
    fe_free(s);
    return FE_OK;
}

int fe_llama_weights_tensors(const fe_llama_weights *w, const fe_tensor **out, int cap) {
    int n = 0;
#define PUT(t) (n < cap && out ? (void)(out[n] = (t)) : (void)0, n++)
    PUT(&w->embed);
    PUT(&w->norm);
    if (!w->cfg.tied_embeddings) PUT(&w->lm_head);
    if (w->rope_freqs.rank) PUT(&w->rope_freqs);
    for (int64_t l = 0; w->layers && l < w->cfg.n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ts[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                                 &L->ffn_norm, &L->w_gate, &L->w_up, &L->w_down,
                                 &L->q_norm, &L->k_norm, &L->post_attn_norm, &L->post_ffn_norm};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (ts[i]->rank) PUT(ts[i]); /* the Gemma norms are rank 0 for Llama */
    }
#undef PUT
    return n;
}

size_t fe_llama_weights_bytes(const fe_llama_weights *w) {
    int n = fe_llama_weights_tensors(w, NULL, 0);
    const fe_tensor **ts = fe_malloc((size_t)n * sizeof *ts);
    size_t bytes = 0;
    if (!ts) return 0;
    fe_llama_weights_tensors(w, ts, n);
    for (int i = 0; i < n; i++) bytes += fe_dtype_bytes(ts[i]->dtype, fe_tensor_numel(ts[i]));
    fe_free(ts);
    return bytes;
}

