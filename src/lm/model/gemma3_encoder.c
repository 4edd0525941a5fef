/* lm/model/gemma3_encoder.c: the EmbeddingGemma encoder graph and its host-side head (see
 * gemma3_encoder.h). The body reads as the model is defined: embedding rows times
 * sqrt(hidden); per layer rmsnorm -> q, k, v projections over the packed rows, q and k normed
 * per head, q and k rotated by each row's position in its sentence (the rows of the layer's
 * cos/sin table gathered by position once a call) and every sentence's bidirectional attention
 * over its own rows in one SegmentedMHA step (local layers within the window); the output
 * projection normed and added (sandwich), rmsnorm -> GeGLU -> down, normed and added; the
 * final norm. Word: "n"; inputs ids and positions (rows), lengths (slots) as in encoder.c. */
#include "lm/model/gemma3_encoder.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/model/blocks.h"
#include "lm/model/rope_table.h"

struct fe_gemma3_encoder {
    const fe_embedgemma *m;
    fe_encoder_options o;
    int64_t rows;
    fe_graph *g;
    float *rope, *rope_local; /* (max_tokens, head_dim) cos/sin tables, global and local base */
    float *embed_scale;       /* (hidden) all sqrt(hidden) */
    int32_t *ids;
    int32_t *positions; /* (rows) each row's position in its sentence */
    int32_t *lengths;   /* (slots) each slot's sentence length in a call, 0 when empty */
    fe_error err;
};

const char *fe_gemma3_encoder_message(const fe_gemma3_encoder *e) { return e->err.message; }
int64_t fe_gemma3_encoder_max_tokens(const fe_gemma3_encoder *e) { return e->o.max_tokens; }
int fe_gemma3_encoder_slots(const fe_gemma3_encoder *e) { return e->o.slots; }
fe_graph *fe_gemma3_encoder_graph(fe_gemma3_encoder *e) { return e->g; }
int64_t fe_gemma3_encoder_dim(const fe_gemma3_encoder *e) {
    const fe_embedgemma *m = e->m;
    return m->n_dense ? m->dense[m->n_dense - 1].shape[0] : m->cfg.hidden;
}

/* the (R, heads, hd) projection of h by w, normed per head by nw, bounded to n rows; the raw
 * and normed rows live in states `name` and `name`_normed of (R * heads, hd) */
static fe_h head_normed(fe_trace *t, const fe_lm_config *c, fe_block_mode mm, int64_t R, fe_val n,
                        fe_block_act h, fe_h w, fe_h nw, int64_t heads, const char *name) {
    const int64_t hd = c->head_dim;
    int64_t flat[2] = {R * heads, hd}, proj[2] = {R, heads * hd}, three[3] = {R, heads, hd};
    char path[64];
    snprintf(path, sizeof path, "eg.%s", name);
    fe_h raw = fe_state(t, path, FE_DTYPE_F32, 2, flat);
    snprintf(path, sizeof path, "eg.%s_normed", name);
    fe_h normed = fe_state(t, path, FE_DTYPE_F32, 2, flat);
    fe_block_project(t, mm, fe_bound(t, fe_reshape(t, raw, 2, proj), 0, n), h, w);
    fe_val nr = fe_val_mul(n, heads);
    fe_h in[2] = {fe_bound(t, raw, 0, nr), nw};
    fe_setting eps = {"eps", c->rms_eps};
    fe_apply_into(t, fe_bound(t, normed, 0, nr), "RMSNorm", in, 2, &eps, 1, NULL, 0);
    return fe_bound(t, fe_reshape(t, normed, 3, three), 0, n);
}

static fe_h sandwich_add(fe_trace *t, const fe_lm_config *c, fe_h x, fe_h y, fe_h w) {
    return fe_block_apply(t, "ElementwiseAdd", x, fe_block_rmsnorm(t, y, w, c->rms_eps));
}

static fe_status body(fe_trace *t, const void *model) {
    const fe_gemma3_encoder *e = model;
    const fe_lm_config *c = &e->m->cfg;
    const int64_t R = e->rows, hd = c->head_dim;
    const fe_block_mode mm = {.eps = c->rms_eps, .hand_fused = e->o.body == FE_BODY_HAND_FUSED};
    fe_val n = fe_scratchpad(t, "n");
    fe_h ids = fe_bound(t, fe_input(t, "ids"), 0, n);
    fe_h positions = fe_bound(t, fe_input(t, "positions"), 0, n);
    fe_h lengths = fe_input(t, "lengths");
    fe_h x = fe_block_apply(t, "RowwiseMul", fe_take(t, fe_weight(t, "embed"), ids),
                            fe_weight(t, "embed_scale"));
    /* (R, hd): row r's cos/sin at its position in its sentence, for each base */
    fe_h rope = fe_take(t, fe_weight(t, "rope"), positions);
    fe_h rope_local = fe_take(t, fe_weight(t, "rope_local"), positions);
    int64_t qs[3] = {R, c->n_heads, hd}, ks[3] = {R, c->n_kv_heads, hd};
    int64_t vflat[2] = {R, c->n_kv_heads * hd}, aflat[2] = {R, c->n_heads * hd};
    fe_h qr = fe_state(t, "eg.q_rot", FE_DTYPE_F32, 3, qs);
    fe_h kr = fe_state(t, "eg.k_rot", FE_DTYPE_F32, 3, ks);
    fe_h vs = fe_state(t, "eg.v", FE_DTYPE_F32, 3, ks);
    fe_h att = fe_state(t, "eg.attention", FE_DTYPE_F32, 3, qs);
    fe_setting form = FE_CHOICE("form", "rotate_half");
    fe_value_set at0 = {"pos", fe_const(0)};
#define W(name) fe_block_layer_weight(t, l, name)
    for (int64_t l = 0; l < c->n_layers; l++) {
        const bool local = fe_lm_layer_is_local(c, l);
        fe_block_act h = fe_block_normed(t, mm, x, W("attn_norm"));
        fe_h q = head_normed(t, c, mm, R, n, h, W("wq"), W("q_norm"), c->n_heads, "q");
        fe_h k = head_normed(t, c, mm, R, n, h, W("wk"), W("k_norm"), c->n_kv_heads, "k");
        fe_block_project(t, mm, fe_bound(t, fe_reshape(t, vs, 2, vflat), 0, n), h, W("wv"));
        fe_setting ap[3] = {{"causal", 0}, {"scale", c->attn_scale}, {"window", (double)e->m->window}};
        fe_h qin[2] = {fe_bound(t, q, 0, n), local ? rope_local : rope};
        fe_h kin[2] = {fe_bound(t, k, 0, n), local ? rope_local : rope};
        fe_apply_into(t, fe_bound(t, qr, 0, n), "RoPE", qin, 2, &form, 1, &at0, 1);
        fe_apply_into(t, fe_bound(t, kr, 0, n), "RoPE", kin, 2, &form, 1, &at0, 1);
        fe_h in[4] = {fe_bound(t, qr, 0, n), fe_bound(t, kr, 0, n), fe_bound(t, vs, 0, n), lengths};
        fe_apply_into(t, fe_bound(t, att, 0, n), "SegmentedMHA", in, 4, ap, local ? 3 : 2, NULL,
                      0); /* each sentence over its own rows, local layers within the window */
        fe_h a = fe_reshape(t, fe_bound(t, att, 0, n), 2, aflat);
        fe_h o = fe_block_project(t, mm, FE_NO_TENSOR, fe_block_plain(a), W("wo"));
        x = sandwich_add(t, c, x, o, W("post_attn_norm"));
        h = fe_block_normed(t, mm, x, W("ffn_norm"));
        fe_h g = fe_block_geglu(t, mm, h, W("w_gate"), W("w_up"));
        fe_h f = fe_block_project(t, mm, FE_NO_TENSOR, fe_block_plain(g), W("w_down"));
        x = sandwich_add(t, c, x, f, W("post_ffn_norm"));
    }
#undef W
    fe_output(t, fe_block_rmsnorm(t, x, fe_weight(t, "norm"), c->rms_eps));
    return fe_trace_status(t);
}

static fe_status set_weights(fe_gemma3_encoder *e) {
    const fe_embedgemma *m = e->m;
    int64_t rs[2] = {e->o.max_tokens, m->cfg.head_dim}, H = m->cfg.hidden;
    fe_status st = fe_graph_set_weight(e->g, "embed", m->embed);
    if (!st) st = fe_graph_set_weight(e->g, "norm", m->norm);
    if (!st) st = fe_graph_set_weight(e->g, "rope", fe_tensor_contiguous(e->rope, FE_DTYPE_F32, 2, rs));
    if (!st) st = fe_graph_set_weight(e->g, "rope_local", fe_tensor_contiguous(e->rope_local, FE_DTYPE_F32, 2, rs));
    if (!st) st = fe_graph_set_weight(e->g, "embed_scale", fe_tensor_contiguous(e->embed_scale, FE_DTYPE_F32, 1, &H));
    for (int64_t l = 0; !st && l < m->cfg.n_layers; l++) {
        const fe_llama_layer *L = &m->layers[l];
        struct { const char *name; const fe_tensor *t; } ws[] = {
            {"attn_norm", &L->attn_norm}, {"wq", &L->wq}, {"wk", &L->wk}, {"wv", &L->wv},
            {"wo", &L->wo}, {"ffn_norm", &L->ffn_norm}, {"w_gate", &L->w_gate},
            {"w_up", &L->w_up}, {"w_down", &L->w_down}, {"q_norm", &L->q_norm},
            {"k_norm", &L->k_norm}, {"post_attn_norm", &L->post_attn_norm},
            {"post_ffn_norm", &L->post_ffn_norm}};
        for (size_t i = 0; !st && i < sizeof ws / sizeof ws[0]; i++) {
            char path[64];
            snprintf(path, sizeof path, "layers.%lld.%s", (long long)l, ws[i].name);
            st = fe_graph_set_weight(e->g, path, *ws[i].t);
        }
    }
    return st == FE_OK ? FE_OK : fe_error_set(&e->err, st, "%s", fe_graph_message(e->g));
}

/* the graph's inputs: ids and positions (rows), lengths (slots) */
static void inputs_of(fe_gemma3_encoder *e, fe_named_tensor in[3]) {
    const int64_t slots = e->o.slots;
    in[0] = (fe_named_tensor){"ids", fe_tensor_contiguous(e->ids, FE_DTYPE_I32, 1, &e->rows)};
    in[1] = (fe_named_tensor){"positions", fe_tensor_contiguous(e->positions, FE_DTYPE_I32, 1, &e->rows)};
    in[2] = (fe_named_tensor){"lengths", fe_tensor_contiguous(e->lengths, FE_DTYPE_I32, 1, &slots)};
}

fe_status fe_gemma3_encoder_create(fe_device *dev, const fe_embedgemma *m,
                                   const fe_encoder_options *o, fe_gemma3_encoder **out,
                                   fe_error *err) {
    *out = NULL;
    fe_encoder_options opt = o ? *o : fe_encoder_options_default();
    const fe_lm_config *c = &m->cfg;
    if (opt.max_tokens == 0) opt.max_tokens = c->max_context < 512 ? c->max_context : 512;
    if (opt.slots == 0) opt.slots = 8;
    if (opt.dot_bf16)
        return fe_error_set(err, FE_E_UNSUPPORTED, "EmbeddingGemma encoder: bf16 dot products "
                            "are not built for it; use f32 (the default)");
    if (opt.max_tokens < 1 || opt.max_tokens > c->max_context)
        return fe_error_set(err, FE_E_INVALID, "encoder: max_tokens %lld is outside 1..%lld (the "
                            "model's max_position_embeddings); give a value in that range",
                            (long long)opt.max_tokens, (long long)c->max_context);
    if (opt.slots < 1 || opt.slots > FE_ENCODER_MAX_SLOTS)
        return fe_error_set(err, FE_E_INVALID, "encoder: a batch of %d sentences; give 1..%d",
                            opt.slots, FE_ENCODER_MAX_SLOTS);
    fe_gemma3_encoder *e = fe_calloc(1, sizeof *e);
    if (!e) return fe_error_set(err, FE_E_NOMEM, "encoder: out of memory");
    e->m = m;
    e->o = opt;
    e->rows = opt.slots * opt.max_tokens;
    size_t table = (size_t)(opt.max_tokens * c->head_dim) * sizeof(float);
    e->rope = fe_aligned_alloc(64, table);
    e->rope_local = fe_aligned_alloc(64, table);
    e->embed_scale = fe_aligned_alloc(64, (size_t)c->hidden * sizeof(float));
    e->ids = fe_calloc((size_t)e->rows, sizeof *e->ids);
    e->positions = fe_calloc((size_t)e->rows, sizeof *e->positions);
    e->lengths = fe_calloc((size_t)opt.slots, sizeof *e->lengths);
    fe_status st = e->rope && e->rope_local && e->embed_scale && e->ids && e->positions && e->lengths
                       ? FE_OK : fe_error_set(err, FE_E_NOMEM, "encoder: out of memory");
    for (int64_t i = 0; !st && i < c->hidden; i++) e->embed_scale[i] = (float)c->embed_scale;
    if (!st) st = fe_rope_table(e->rope, opt.max_tokens, c->head_dim, c->rope_theta, NULL);
    if (!st) st = fe_rope_table(e->rope_local, opt.max_tokens, c->head_dim, c->rope_theta_local, NULL);
    if (!st) st = fe_graph_create(dev, "embedgemma", body, e, &e->g, err);
    if (!st) st = set_weights(e);
    if (!st) {
        fe_compile_options co = fe_compile_options_default();
        co.packaging = opt.packaging;
        co.verbose = opt.verbose;
        fe_block_fold_options(opt.body, NULL, NULL, &co);
        fe_named_tensor in[3];
        inputs_of(e, in);
        st = fe_graph_compile(e->g, in, 3, &co);
        if (st) fe_error_set(&e->err, st, "%s", fe_graph_message(e->g));
    }
    if (st) {
        if (err && e->err.status != FE_OK) *err = e->err;
        fe_gemma3_encoder_destroy(e);
        return st;
    }
    *out = e;
    return FE_OK;
}

void fe_gemma3_encoder_destroy(fe_gemma3_encoder *e) {
    if (!e) return;
    fe_graph_destroy(e->g);
    fe_free(e->rope);
    fe_free(e->rope_local);
    fe_free(e->embed_scale);
    fe_free(e->ids);
    fe_free(e->positions);
    fe_free(e->lengths);
    fe_free(e);
}

fe_status fe_gemma3_encoder_forward(fe_gemma3_encoder *e, const int32_t *const *ids,
                                    const int64_t *lens, int n_seqs, const float **hidden) {
    fe_error_clear(&e->err);
    fe_word words[FE_ENCODER_MAX_SLOTS];
    fe_status st = fe_encoder_pack(ids, lens, n_seqs, e->o.slots, e->o.max_tokens, e->m->cfg.vocab,
                                   e->ids, e->positions, words, &e->err);
    if (st != FE_OK) return st;
    for (int s = 0; s < e->o.slots; s++) e->lengths[s] = s < n_seqs ? (int32_t)lens[s] : 0;
    fe_named_tensor in[3];
    inputs_of(e, in);
    fe_tensor outs[1];
    int n_out = 0; /* the graph's one word is "n", the last of the packed words */
    st = fe_graph_call(e->g, in, 3, &words[e->o.slots - 1], 1, outs, 1, &n_out);
    if (st) return fe_error_set(&e->err, st, "%s", fe_graph_message(e->g));
    *hidden = outs[0].data;
    return FE_OK;
}

fe_status fe_gemma3_encoder_embed(const fe_embedgemma *m, const float *h, int64_t n, int64_t dim,
                                  bool normalize, float *out) {
    const int64_t H = m->cfg.hidden;
    int64_t width = H, widest = H;
    for (int i = 0; i < m->n_dense; i++)
        if (m->dense[i].shape[0] > widest) widest = m->dense[i].shape[0];
    double *a = fe_malloc((size_t)widest * sizeof *a), *b = fe_malloc((size_t)widest * sizeof *b);
    if (!a || !b) {
        fe_free(a), fe_free(b);
        return FE_E_NOMEM;
    }
    for (int64_t i = 0; i < H; i++) {
        double v = 0;
        for (int64_t r = 0; r < n; r++) v += h[r * H + i];
        a[i] = v / (double)n;
    }
    for (int d = 0; d < m->n_dense; d++) { /* b = W a, W (out, in) */
        const float *w = m->dense[d].data;
        int64_t rows = m->dense[d].shape[0];
        for (int64_t r = 0; r < rows; r++) {
            double acc = 0;
            for (int64_t k = 0; k < width; k++) acc += (double)w[r * width + k] * a[k];
            b[r] = acc;
        }
        width = rows;
        double *t = a;
        a = b, b = t;
    }
    if (dim <= 0 || dim > width) dim = width;
    double ss = 0;
    for (int64_t i = 0; i < dim; i++) ss += a[i] * a[i];
    double scale = normalize ? 1.0 / fmax(sqrt(ss), 1e-12) : 1.0;
    for (int64_t i = 0; i < dim; i++) out[i] = (float)(a[i] * scale);
    fe_free(a), fe_free(b);
    return FE_OK;
}
