/* lm/eval/embedgemma_oracle.c: EmbeddingGemma's encoder, plainly (see embedgemma_oracle.h).
 * Written from the architecture's description, not from the graph's blocks: embedding times
 * sqrt(hidden); per layer rmsnorm -> q, k, v; q and k normed per head and rotated
 * (rotate-half, position i from 0) with the layer's base; softmax of q . k * attn_scale over
 * every key of the sentence (local layers: keys j with |i - j| < window); output projection,
 * normed and added; rmsnorm -> gelu_tanh(gate) * up -> down, normed and added; the final
 * norm. Norm weights as held (1 + w). Double accumulation. */
#include "lm/eval/embedgemma_oracle.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/eval/oracle_math.h"

/* out (n, rows) = x (n, in) W^T, W f32 (rows, in) */
static void matmul(const fe_tensor *w, const float *x, int n, float *out) {
    const int64_t rows = w->shape[0], in = w->shape[1];
    const float *W = w->data;
    for (int i = 0; i < n; i++)
        for (int64_t r = 0; r < rows; r++) {
            double acc = 0;
            for (int64_t k = 0; k < in; k++) acc += (double)W[r * in + k] * x[(int64_t)i * in + k];
            out[(int64_t)i * rows + r] = (float)acc;
        }
}

fe_status fe_oracle_embedgemma_hidden(const fe_embedgemma *m, const int32_t *tokens, int n,
                                      float *x, fe_error *err) {
    const fe_lm_config *c = &m->cfg;
    const int64_t d = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads, f = c->ffn;
    const int64_t qd = nh * hd, kvd = nkv * hd;
    const size_t N = (size_t)n;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab)
            return fe_error_set(err, FE_E_BOUNDS, "oracle: id %d outside the vocabulary", tokens[i]);
    float *h = fe_malloc(N * (size_t)d * 4), *q = fe_malloc(N * (size_t)qd * 4);
    float *k = fe_malloc(N * (size_t)kvd * 4), *v = fe_malloc(N * (size_t)kvd * 4);
    float *att = fe_malloc(N * (size_t)qd * 4), *g = fe_malloc(N * (size_t)f * 4);
    float *u = fe_malloc(N * (size_t)f * 4), *tmp = fe_malloc(N * (size_t)d * 4);
    double *score = fe_malloc(N * sizeof *score);
    fe_status st = FE_OK;
    if (!h || !q || !k || !v || !att || !g || !u || !tmp || !score) {
        st = fe_error_set(err, FE_E_NOMEM, "oracle: out of memory for %d tokens", n);
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < d; e++)
            x[i * d + e] = (float)(((const float *)m->embed.data)[tokens[i] * d + e] * sqrt((double)d));
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &m->layers[l];
        const bool local = fe_lm_layer_is_local(c, l);
        const double theta = local ? c->rope_theta_local : c->rope_theta;
        memcpy(h, x, N * (size_t)d * 4);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(h + i * d, &L->attn_norm, d, c->rms_eps);
        matmul(&L->wq, h, n, q);
        matmul(&L->wk, h, n, k);
        matmul(&L->wv, h, n, v);
        for (int i = 0; i < n; i++) {
            for (int64_t a = 0; a < nh; a++) {
                fe_oracle_rmsnorm(q + i * qd + a * hd, &L->q_norm, hd, c->rms_eps);
                fe_oracle_rope_half(q + i * qd + a * hd, hd, i, theta);
            }
            for (int64_t a = 0; a < nkv; a++) {
                fe_oracle_rmsnorm(k + i * kvd + a * hd, &L->k_norm, hd, c->rms_eps);
                fe_oracle_rope_half(k + i * kvd + a * hd, hd, i, theta);
            }
        }
        for (int i = 0; i < n; i++)
            for (int64_t a = 0; a < nh; a++) {
                const int64_t kvh = a / (nh / nkv);
                const float *qi = q + i * qd + a * hd;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    bool in = !local || (j > i - m->window && j < i + m->window);
                    double s = 0;
                    for (int64_t e = 0; e < hd; e++) s += (double)qi[e] * k[j * kvd + kvh * hd + e];
                    score[j] = in ? s * c->attn_scale : -INFINITY;
                    if (score[j] > mx) mx = score[j];
                }
                for (int j = 0; j < n; j++) sum += (score[j] = exp(score[j] - mx));
                for (int64_t e = 0; e < hd; e++) {
                    double o = 0;
                    for (int j = 0; j < n; j++) o += score[j] * v[j * kvd + kvh * hd + e];
                    att[i * qd + a * hd + e] = (float)(o / sum);
                }
            }
        matmul(&L->wo, att, n, tmp);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(tmp + i * d, &L->post_attn_norm, d, c->rms_eps);
        for (int64_t e = 0; e < (int64_t)N * d; e++) x[e] += tmp[e];
        memcpy(h, x, N * (size_t)d * 4);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(h + i * d, &L->ffn_norm, d, c->rms_eps);
        matmul(&L->w_gate, h, n, g);
        matmul(&L->w_up, h, n, u);
        for (int64_t e = 0; e < (int64_t)N * f; e++) g[e] = (float)(fe_oracle_gelu_tanh(g[e]) * u[e]);
        matmul(&L->w_down, g, n, tmp);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(tmp + i * d, &L->post_ffn_norm, d, c->rms_eps);
        for (int64_t e = 0; e < (int64_t)N * d; e++) x[e] += tmp[e];
    }
    for (int i = 0; i < n; i++) fe_oracle_rmsnorm(x + i * d, &m->norm, d, c->rms_eps);
done:
    fe_free(h), fe_free(q), fe_free(k), fe_free(v), fe_free(att);
    fe_free(g), fe_free(u), fe_free(tmp), fe_free(score);
    return st;
}
