/* lm/eval/oracle.c: the Llama forward pass, plainly (see oracle.h). All positions go through one
 * layer before the next; attention is causal over the positions so far. Every dot product
 * accumulates in double; weights are decoded one row at a time with fe_dequant_row. */
#include "lm/eval/oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/quant.h"
#include "lm/eval/oracle_math.h"

static void rmsnorm(const float *x, const fe_tensor *w, int64_t d, double eps, float *out, float *row) {
    double ss = 0;
    for (int64_t k = 0; k < d; k++) ss += (double)x[k] * x[k];
    double inv = 1.0 / sqrt(ss / (double)d + eps);
    fe_dequant_row(w->dtype, w->data, row, d);
    for (int64_t k = 0; k < d; k++) out[k] = (float)(x[k] * inv * row[k]);
}

/* The rotary inverse frequencies, Llama 3 scaling as Hugging Face computes it. */
static void inv_freqs(const fe_lm_config *c, const fe_tensor *freq_factors, double *f) {
    int64_t hd = c->head_dim;
    for (int64_t i = 0; i < hd / 2; i++) {
        double freq = pow(c->rope_theta, -2.0 * (double)i / (double)hd);
        if (c->rope_scaling.type == FE_LM_ROPE_LLAMA3) {
            double factor = c->rope_scaling.factor, lo = c->rope_scaling.low_freq_factor;
            double hi = c->rope_scaling.high_freq_factor;
            double old = (double)c->rope_scaling.original_max_position_embeddings;
            double wavelen = 2 * M_PI / freq;
            if (wavelen > old / lo) {
                freq /= factor;
            } else if (wavelen >= old / hi) {
                double smooth = (old / wavelen - lo) / (hi - lo);
                freq = (1 - smooth) * freq / factor + smooth * freq;
            }
        } else if (c->rope_scaling.type == FE_LM_ROPE_LINEAR) {
            freq /= c->rope_scaling.factor;
        } else if (c->rope_scaling.type == FE_LM_ROPE_FREQS_TENSOR && freq_factors->data) {
            freq /= ((const float *)freq_factors->data)[i]; /* llama.cpp's per-frequency divisors */
        }
        f[i] = freq;
    }
}

/* Rotates one head vector v (hd) at position pos. */
static void rope(float *v, int64_t hd, int64_t pos, const double *freq, bool interleaved) {
    for (int64_t i = 0; i < hd / 2; i++) {
        double a = (double)pos * freq[i], c = cos(a), s = sin(a);
        int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + hd / 2;
        double x0 = v[i0], x1 = v[i1];
        v[i0] = (float)(x0 * c - x1 * s);
        v[i1] = (float)(x0 * s + x1 * c);
    }
}

fe_status fe_oracle_logits(const fe_llama_weights *w, const int32_t *tokens, int n, float *logits,
                           fe_error *err) {
    const fe_lm_config *c = &w->cfg;
    int64_t d = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads, f = c->ffn;
    int64_t qd = nh * hd, kvd = nkv * hd, widest = d > f ? d : f;
    fe_status ok = fe_llama_weights_check_read(w, "the oracle", err);
    if (ok != FE_OK) return ok;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab)
            return fe_error_set(err, FE_E_BOUNDS, "oracle: token %d at position %d is outside the "
                                "vocabulary of %lld", tokens[i], i, (long long)c->vocab);
    if (c->family == FE_LM_FAMILY_GEMMA3) return fe_oracle_gemma3_logits(w, tokens, n, logits, err);
    size_t N = (size_t)n;
    float *x = fe_malloc(N * (size_t)d * 4), *h = fe_malloc(N * (size_t)d * 4);
    float *q = fe_malloc(N * (size_t)qd * 4), *k = fe_malloc(N * (size_t)kvd * 4);
    float *v = fe_malloc(N * (size_t)kvd * 4), *att = fe_malloc(N * (size_t)qd * 4);
    float *g = fe_malloc(N * (size_t)f * 4), *u = fe_malloc(N * (size_t)f * 4);
    float *row = fe_malloc((size_t)(widest > qd ? widest : qd) * 4), *tmp = fe_malloc(N * (size_t)d * 4);
    double *freq = fe_malloc((size_t)hd / 2 * sizeof *freq), *score = fe_malloc(N * sizeof *score);
    fe_status st = FE_OK;
    if (!x || !h || !q || !k || !v || !att || !g || !u || !row || !tmp || !freq || !score) {
        st = fe_error_set(err, FE_E_NOMEM, "oracle: out of memory for %d positions", n);
        goto done;
    }
    inv_freqs(c, &w->rope_freqs, freq);
    for (int i = 0; i < n; i++) /* x = embed[token] */
        fe_dequant_row(w->embed.dtype,
                       (const char *)w->embed.data + fe_dtype_bytes(w->embed.dtype, (int64_t)tokens[i] * d),
                       x + (int64_t)i * d, d);
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        /* attention: h = rmsnorm(x); q, k, v; rotate; causal softmax(q k / sqrt(hd)) v */
        for (int i = 0; i < n; i++) rmsnorm(x + i * d, &L->attn_norm, d, c->rms_eps, h + i * d, row);
        fe_oracle_matmul(&L->wq, h, n, q, row);
        fe_oracle_matmul(&L->wk, h, n, k, row);
        fe_oracle_matmul(&L->wv, h, n, v, row);
        for (int i = 0; i < n; i++) {
            for (int64_t a = 0; a < nh; a++) rope(q + i * qd + a * hd, hd, i, freq, w->rope_interleaved);
            for (int64_t a = 0; a < nkv; a++) rope(k + i * kvd + a * hd, hd, i, freq, w->rope_interleaved);
        }
        for (int i = 0; i < n; i++)
            for (int64_t a = 0; a < nh; a++) {
                int64_t kvh = a / (nh / nkv);
                const float *qi = q + i * qd + a * hd;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int64_t e = 0; e < hd; e++) s += (double)qi[e] * k[j * kvd + kvh * hd + e];
                    score[j] = s / sqrt((double)hd);
                    if (score[j] > mx) mx = score[j];
                }
                for (int j = 0; j <= i; j++) sum += (score[j] = exp(score[j] - mx));
                for (int64_t e = 0; e < hd; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += score[j] * v[j * kvd + kvh * hd + e];
                    att[i * qd + a * hd + e] = (float)(o / sum);
                }
            }
        fe_oracle_matmul(&L->wo, att, n, tmp, row);
        for (int64_t e = 0; e < (int64_t)N * d; e++) x[e] += tmp[e];
        /* feed-forward: x += down(silu(gate(h)) * up(h)), h = rmsnorm(x) */
        for (int i = 0; i < n; i++) rmsnorm(x + i * d, &L->ffn_norm, d, c->rms_eps, h + i * d, row);
        fe_oracle_matmul(&L->w_gate, h, n, g, row);
        fe_oracle_matmul(&L->w_up, h, n, u, row);
        for (int64_t e = 0; e < (int64_t)N * f; e++) g[e] = (float)(g[e] / (1.0 + exp(-(double)g[e])) * u[e]);
        fe_oracle_matmul(&L->w_down, g, n, tmp, row);
        for (int64_t e = 0; e < (int64_t)N * d; e++) x[e] += tmp[e];
    }
    for (int i = 0; i < n; i++) rmsnorm(x + i * d, &w->norm, d, c->rms_eps, h + i * d, row);
    {
        /* the head, row by row (vocab rows of hidden) */
        int64_t V = c->vocab;
        float *hrow = fe_malloc((size_t)d * 4);
        if (!hrow) {
            st = fe_error_set(err, FE_E_NOMEM, "oracle: out of memory");
            goto done;
        }
        for (int64_t r = 0; r < V; r++) {
            fe_dequant_row(w->lm_head.dtype,
                           (const char *)w->lm_head.data + fe_dtype_bytes(w->lm_head.dtype, r * d), hrow, d);
            for (int i = 0; i < n; i++) {
                double acc = 0;
                for (int64_t e = 0; e < d; e++) acc += (double)hrow[e] * h[i * d + e];
                logits[(int64_t)i * V + r] = (float)acc;
            }
        }
        fe_free(hrow);
    }
done:
    fe_free(x), fe_free(h), fe_free(q), fe_free(k), fe_free(v), fe_free(att);
    fe_free(g), fe_free(u), fe_free(row), fe_free(tmp), fe_free(freq), fe_free(score);
    return st;
}
