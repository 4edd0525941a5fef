/* lm/eval/oracle_gemma3.c: the Gemma 3 forward pass, plainly, for fe_oracle_logits (oracle.h)
 * when the config's family is Gemma 3. Written from the architecture's description, not from
 * the graph's blocks: embedding times sqrt(hidden); per layer rmsnorm -> q, k, v; q and k
 * normed per head (QK-norm) and rotated (rotate-half) with the layer's base; causal softmax of
 * q . k * attn_scale over the keys in the window (local layers: the last sliding_window
 * positions); output projection, normed (sandwich) and added; rmsnorm -> gelu_tanh(gate) * up
 * -> down, normed and added; final norm; the tied head. The norm weights are used as the file
 * stores them (1 + w: weights.h). Double accumulation, weights decoded row by row. */
#include "lm/eval/oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/quant.h"
#include "lm/eval/oracle_math.h"

fe_status fe_oracle_gemma3_logits(const fe_llama_weights *w, const int32_t *tokens, int n,
                                  float *logits, fe_error *err) {
    const fe_lm_config *c = &w->cfg;
    const int64_t d = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads, f = c->ffn;
    const int64_t qd = nh * hd, kvd = nkv * hd, widest = d > f ? d : f;
    const size_t N = (size_t)n;
    float *x = fe_malloc(N * (size_t)d * 4), *h = fe_malloc(N * (size_t)d * 4);
    float *q = fe_malloc(N * (size_t)qd * 4), *k = fe_malloc(N * (size_t)kvd * 4);
    float *v = fe_malloc(N * (size_t)kvd * 4), *att = fe_malloc(N * (size_t)qd * 4);
    float *g = fe_malloc(N * (size_t)f * 4), *u = fe_malloc(N * (size_t)f * 4);
    float *row = fe_malloc((size_t)(widest > qd ? widest : qd) * 4), *tmp = fe_malloc(N * (size_t)d * 4);
    double *score = fe_malloc(N * sizeof *score);
    fe_status st = FE_OK;
    if (!x || !h || !q || !k || !v || !att || !g || !u || !row || !tmp || !score) {
        st = fe_error_set(err, FE_E_NOMEM, "oracle: out of memory for %d positions", n);
        goto done;
    }
    for (int i = 0; i < n; i++) { /* x = embed[token] * sqrt(hidden) */
        float *xi = x + (int64_t)i * d;
        fe_dequant_row(w->embed.dtype,
                       (const char *)w->embed.data + fe_dtype_bytes(w->embed.dtype, (int64_t)tokens[i] * d),
                       xi, d);
        for (int64_t e = 0; e < d; e++) xi[e] = (float)(xi[e] * sqrt((double)d));
    }
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const bool local = fe_lm_layer_is_local(c, l);
        const double theta = local ? c->rope_theta_local : c->rope_theta;
        memcpy(h, x, N * (size_t)d * 4);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(h + i * d, &L->attn_norm, d, c->rms_eps);
        fe_oracle_matmul(&L->wq, h, n, q, row);
        fe_oracle_matmul(&L->wk, h, n, k, row);
        fe_oracle_matmul(&L->wv, h, n, v, row);
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
                const int first = local && i >= c->sliding_window ? i - (int)c->sliding_window + 1 : 0;
                const float *qi = q + i * qd + a * hd;
                double mx = -INFINITY, sum = 0;
                for (int j = first; j <= i; j++) {
                    double s = 0;
                    for (int64_t e = 0; e < hd; e++) s += (double)qi[e] * k[j * kvd + kvh * hd + e];
                    score[j] = s * c->attn_scale;
                    if (score[j] > mx) mx = score[j];
                }
                for (int j = first; j <= i; j++) sum += (score[j] = exp(score[j] - mx));
                for (int64_t e = 0; e < hd; e++) {
                    double o = 0;
                    for (int j = first; j <= i; j++) o += score[j] * v[j * kvd + kvh * hd + e];
                    att[i * qd + a * hd + e] = (float)(o / sum);
                }
            }
        fe_oracle_matmul(&L->wo, att, n, tmp, row);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(tmp + i * d, &L->post_attn_norm, d, c->rms_eps);
        for (int64_t e = 0; e < (int64_t)N * d; e++) x[e] += tmp[e];
        memcpy(h, x, N * (size_t)d * 4);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(h + i * d, &L->ffn_norm, d, c->rms_eps);
        fe_oracle_matmul(&L->w_gate, h, n, g, row);
        fe_oracle_matmul(&L->w_up, h, n, u, row);
        for (int64_t e = 0; e < (int64_t)N * f; e++) g[e] = (float)(fe_oracle_gelu_tanh(g[e]) * u[e]);
        fe_oracle_matmul(&L->w_down, g, n, tmp, row);
        for (int i = 0; i < n; i++) fe_oracle_rmsnorm(tmp + i * d, &L->post_ffn_norm, d, c->rms_eps);
        for (int64_t e = 0; e < (int64_t)N * d; e++) x[e] += tmp[e];
    }
    for (int i = 0; i < n; i++) fe_oracle_rmsnorm(x + i * d, &w->norm, d, c->rms_eps);
    for (int64_t r = 0; r < c->vocab; r++) { /* the head, row by row */
        fe_dequant_row(w->lm_head.dtype,
                       (const char *)w->lm_head.data + fe_dtype_bytes(w->lm_head.dtype, r * d), row, d);
        for (int i = 0; i < n; i++) {
            double acc = 0;
            for (int64_t e = 0; e < d; e++) acc += (double)row[e] * x[i * d + e];
            logits[(int64_t)i * c->vocab + r] = (float)acc;
        }
    }
done:
    fe_free(x), fe_free(h), fe_free(q), fe_free(k), fe_free(v), fe_free(att);
    fe_free(g), fe_free(u), fe_free(row), fe_free(tmp), fe_free(score);
    return st;
}
