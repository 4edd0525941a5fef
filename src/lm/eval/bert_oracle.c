/* lm/eval/bert_oracle.c: the BERT oracle (see bert_oracle.h), read top to bottom as the model
 * is defined: embeddings and their LayerNorm, then per layer self-attention over every token
 * of the sentence, residual and LayerNorm, GELU (erf) feed-forward, residual and LayerNorm. */
#include "lm/eval/bert_oracle.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

static const float *f32(const fe_tensor *t) { return (const float *)t->data; }

/* y (n, out) = x (n, in) W^T + b, W (out, in) */
static void linear(const float *x, int64_t n, int64_t in, const fe_tensor *w, const fe_tensor *b,
                   int64_t out, float *y) {
    for (int64_t r = 0; r < n; r++)
        for (int64_t o = 0; o < out; o++) {
            double acc = f32(b)[o];
            for (int64_t i = 0; i < in; i++) acc += (double)x[r * in + i] * f32(w)[o * in + i];
            y[r * out + o] = (float)acc;
        }
}

/* x (n, h) = LayerNorm(x) * w + b, in place */
static void layernorm(float *x, int64_t n, int64_t h, const fe_tensor *w, const fe_tensor *b, double eps) {
    for (int64_t r = 0; r < n; r++) {
        float *v = x + r * h;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < h; i++) mean += v[i];
        mean /= (double)h;
        for (int64_t i = 0; i < h; i++) var += (v[i] - mean) * (v[i] - mean);
        double rstd = 1.0 / sqrt(var / (double)h + eps);
        for (int64_t i = 0; i < h; i++) v[i] = (float)((v[i] - mean) * rstd * f32(w)[i] + f32(b)[i]);
    }
}

fe_status fe_bert_oracle_forward(const fe_bert_weights *w, const int32_t *ids, int64_t n,
                                 float *out, fe_error *err) {
    const fe_bert_config *c = &w->cfg;
    const int64_t H = c->hidden, F = c->ffn, nh = c->n_heads, hd = c->head_dim;
    if (n < 1 || n > c->max_positions)
        return fe_error_set(err, FE_E_BOUNDS, "BERT oracle: %lld tokens; give 1..%lld", (long long)n,
                            (long long)c->max_positions);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return fe_error_set(err, FE_E_BOUNDS, "BERT oracle: id %d at %lld is outside the "
                                "vocabulary of %lld", ids[i], (long long)i, (long long)c->vocab);
    float *x = out;                                 /* (n, H) */
    float *q = fe_malloc((size_t)(n * H) * sizeof *q), *k = fe_malloc((size_t)(n * H) * sizeof *k);
    float *v = fe_malloc((size_t)(n * H) * sizeof *v), *a = fe_malloc((size_t)(n * H) * sizeof *a);
    float *t = fe_malloc((size_t)(n * H) * sizeof *t), *f = fe_malloc((size_t)(n * F) * sizeof *f);
    double *p = fe_malloc((size_t)n * sizeof *p);
    fe_status st = q && k && v && a && t && f && p ? FE_OK
                   : fe_error_set(err, FE_E_NOMEM, "BERT oracle: out of memory");
    if (st != FE_OK) goto done;
    /* embeddings: word + position + token type 0 */
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < H; i++)
            x[r * H + i] = (float)((double)f32(&w->word)[ids[r] * H + i] + f32(&w->position)[r * H + i] +
                                   f32(&w->type)[i]);
    layernorm(x, n, H, &w->ln_w, &w->ln_b, c->ln_eps);
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_bert_layer *L = &w->layers[l];
        linear(x, n, H, &L->wq, &L->bq, H, q);
        linear(x, n, H, &L->wk, &L->bk, H, k);
        linear(x, n, H, &L->wv, &L->bv, H, v);
        /* every token attends every token of the sentence */
        for (int64_t h = 0; h < nh; h++)
            for (int64_t i = 0; i < n; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < n; j++) {
                    double d = 0;
                    for (int64_t e = 0; e < hd; e++) d += (double)q[i * H + h * hd + e] * k[j * H + h * hd + e];
                    p[j] = d / sqrt((double)hd);
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j < n; j++) sum += p[j] = exp(p[j] - mx);
                for (int64_t e = 0; e < hd; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < n; j++) acc += p[j] * v[j * H + h * hd + e];
                    a[i * H + h * hd + e] = (float)(acc / sum);
                }
            }
        linear(a, n, H, &L->wo, &L->bo, H, t);
        for (int64_t i = 0; i < n * H; i++) x[i] += t[i];
        layernorm(x, n, H, &L->ln1_w, &L->ln1_b, c->ln_eps);
        linear(x, n, H, &L->wi, &L->bi, F, f);
        for (int64_t i = 0; i < n * F; i++) f[i] = (float)(0.5 * f[i] * (1.0 + erf(f[i] / sqrt(2.0))));
        linear(f, n, F, &L->wf, &L->bf, H, t);
        for (int64_t i = 0; i < n * H; i++) x[i] += t[i];
        layernorm(x, n, H, &L->ln2_w, &L->ln2_b, c->ln_eps);
    }
done:
    fe_free(q), fe_free(k), fe_free(v), fe_free(a), fe_free(t), fe_free(f), fe_free(p);
    return st;
}
