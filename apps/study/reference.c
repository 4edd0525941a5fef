/* apps/study/reference.c: the layer in plain float32 with double sums, read straight from
 * the definitions in layer.h, one loop per formula. It shares no code with the executors
 * (not even their GELU or LayerNorm), so a bug in one is not copied into the check. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

/* y (s, n) = x (s, k) W^T + b, W (n, k) */
static void linear(const float *x, const float *W, const float *b, float *y, int64_t s,
                   int64_t k, int64_t n) {
    for (int64_t r = 0; r < s; r++)
        for (int64_t c = 0; c < n; c++) {
            double acc = b[c];
            for (int64_t p = 0; p < k; p++) acc += (double)x[r * k + p] * W[c * k + p];
            y[r * n + c] = (float)acc;
        }
}

static void layernorm(const float *x, const float *g, const float *b, float *y, int64_t s,
                      int64_t h) {
    for (int64_t r = 0; r < s; r++) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < h; c++) mean += x[r * h + c];
        mean /= (double)h;
        for (int64_t c = 0; c < h; c++) var += (x[r * h + c] - mean) * (x[r * h + c] - mean);
        var /= (double)h;
        for (int64_t c = 0; c < h; c++)
            y[r * h + c] = (float)((x[r * h + c] - mean) / sqrt(var + 1e-5) * g[c] + b[c]);
    }
}

/* o (s, h) = softmax(q k^T / sqrt(d)) v per head; causal: key j <= query i */
static void attention(const float *q, const float *k, const float *v, float *o, int64_t s,
                      int64_t h, int64_t heads, bool causal, double *p) {
    const int64_t d = h / heads;
    for (int64_t hd = 0; hd < heads; hd++)
        for (int64_t i = 0; i < s; i++) {
            const int64_t keys = causal ? i + 1 : s;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < keys; j++) {
                double dot = 0;
                for (int64_t c = 0; c < d; c++)
                    dot += (double)q[i * h + hd * d + c] * k[j * h + hd * d + c];
                p[j] = dot / sqrt((double)d);
                if (p[j] > mx) mx = p[j];
            }
            for (int64_t j = 0; j < keys; j++) sum += p[j] = exp(p[j] - mx);
            for (int64_t c = 0; c < d; c++) {
                double acc = 0;
                for (int64_t j = 0; j < keys; j++) acc += p[j] * v[j * h + hd * d + c];
                o[i * h + hd * d + c] = (float)(acc / sum);
            }
        }
}

static float gelu(double x, bool erf_form) {
    if (erf_form) return (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
    return (float)(0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
}

/* out = Attn(u) */
static void attn_block(const study_weights *w, const float *u, float *out, float *q, float *k,
                       float *v, float *a, double *p) {
    const study_shape *s = &w->shape;
    const int64_t S = s->seq, h = s->hidden;
    linear(u, w->wq, w->bq, q, S, h, h);
    linear(u, w->wk, w->bk, k, S, h, h);
    linear(u, w->wv, w->bv, v, S, h, h);
    attention(q, k, v, a, S, h, s->heads, s->kind == STUDY_GPT2, p);
    linear(a, w->wo, w->bo, out, S, h, h);
}

/* out = FFN(u) */
static void ffn_block(const study_weights *w, const float *u, float *out, float *mid) {
    const study_shape *s = &w->shape;
    const int64_t S = s->seq, h = s->hidden, i = s->ffn;
    linear(u, w->w_up, w->b_up, mid, S, h, i);
    for (int64_t e = 0; e < S * i; e++) mid[e] = gelu(mid[e], s->kind == STUDY_BERT);
    linear(mid, w->w_down, w->b_down, out, S, i, h);
}

/* out (h) = FFN(u (h)) for one row; mid (i) scratch */
static void ffn_block_row(const study_weights *w, const float *u, float *out, float *mid) {
    const int64_t h = w->shape.hidden, i = w->shape.ffn;
    linear(u, w->w_up, w->b_up, mid, 1, h, i);
    for (int64_t e = 0; e < i; e++) mid[e] = gelu(mid[e], w->shape.kind == STUDY_BERT);
    linear(mid, w->w_down, w->b_down, out, 1, i, h);
}

bool study_reference(const study_weights *w, const float *x, float *y) {
    const study_shape *s = &w->shape;
    const size_t sh = (size_t)(s->seq * s->hidden) * sizeof(float);
    float *q = malloc(sh), *k = malloc(sh), *v = malloc(sh), *a = malloc(sh), *t = malloc(sh);
    float *x1 = calloc(1, sh), *n = calloc(1, sh); /* calloc: gcc cannot see layernorm fill them */
    float *mid = malloc((size_t)(s->seq * s->ffn) * sizeof(float));
    double *p = malloc((size_t)s->seq * sizeof(double));
    bool ok = q && k && v && a && t && x1 && n && mid && p;
    const int64_t e_n = s->seq * s->hidden;
    if (ok && s->kind == STUDY_BERT) {
        attn_block(w, x, t, q, k, v, a, p);
        for (int64_t e = 0; e < e_n; e++) t[e] += x[e];
        layernorm(t, w->ln1_w, w->ln1_b, x1, s->seq, s->hidden);
        ffn_block(w, x1, t, mid);
        for (int64_t e = 0; e < e_n; e++) t[e] += x1[e];
        layernorm(t, w->ln2_w, w->ln2_b, y, s->seq, s->hidden);
    } else if (ok) {
        layernorm(x, w->ln1_w, w->ln1_b, n, s->seq, s->hidden);
        attn_block(w, n, t, q, k, v, a, p);
        for (int64_t e = 0; e < e_n; e++) x1[e] = x[e] + t[e];
        layernorm(x1, w->ln2_w, w->ln2_b, n, s->seq, s->hidden);
        ffn_block(w, n, t, mid);
        for (int64_t e = 0; e < e_n; e++) y[e] = x1[e] + t[e];
    }
    free(q), free(k), free(v), free(a), free(t), free(x1), free(n), free(mid), free(p);
    return ok;
}

/* one query row at position pos over keys [0, keys): o (h) */
static void attend_row(const float *q, const float *k, const float *v, float *o, int64_t keys,
                       int64_t h, int64_t heads, double *p) {
    const int64_t d = h / heads;
    for (int64_t hd = 0; hd < heads; hd++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < keys; j++) {
            double dot = 0;
            for (int64_t c = 0; c < d; c++) dot += (double)q[hd * d + c] * k[j * h + hd * d + c];
            p[j] = dot / sqrt((double)d);
            if (p[j] > mx) mx = p[j];
        }
        for (int64_t j = 0; j < keys; j++) sum += p[j] = exp(p[j] - mx);
        for (int64_t c = 0; c < d; c++) {
            double acc = 0;
            for (int64_t j = 0; j < keys; j++) acc += p[j] * v[j * h + hd * d + c];
            o[hd * d + c] = (float)(acc / sum);
        }
    }
}

bool study_reference_rows(const study_weights *w, const float *x, const int64_t *rows, int n_rows,
                          float *y) {
    const study_shape *s = &w->shape;
    const int64_t S = s->seq, h = s->hidden, i = s->ffn;
    const size_t sh = (size_t)(S * h) * sizeof(float);
    float *k = malloc(sh), *v = malloc(sh), *n = calloc(1, sh);
    float *u = malloc((size_t)h * 4), *q = malloc((size_t)h * 4), *a = malloc((size_t)h * 4);
    float *t = malloc((size_t)h * 4), *x1 = malloc((size_t)h * 4), *m = malloc((size_t)i * 4);
    double *p = malloc((size_t)S * sizeof(double));
    bool ok = k && v && n && u && q && a && t && x1 && m && p;
    const bool gpt2 = s->kind == STUDY_GPT2;
    if (ok) {
        /* K and V of every row: from x (BERT) or LN1(x) (GPT-2) */
        const float *src = x;
        if (gpt2) layernorm(x, w->ln1_w, w->ln1_b, n, S, h), src = n;
        linear(src, w->wk, w->bk, k, S, h, h);
        linear(src, w->wv, w->bv, v, S, h, h);
        for (int r = 0; r < n_rows; r++) {
            const int64_t row = rows[r];
            const float *xr = x + row * h;
            memcpy(u, src + row * h, (size_t)h * 4);
            linear(u, w->wq, w->bq, q, 1, h, h);
            attend_row(q, k, v, a, gpt2 ? row + 1 : S, h, s->heads, p);
            linear(a, w->wo, w->bo, t, 1, h, h);
            for (int64_t c = 0; c < h; c++) t[c] += xr[c];
            float *yr = y + (int64_t)r * h;
            if (!gpt2) {
                layernorm(t, w->ln1_w, w->ln1_b, x1, 1, h);
                ffn_block_row(w, x1, t, m);
                for (int64_t c = 0; c < h; c++) t[c] += x1[c];
                layernorm(t, w->ln2_w, w->ln2_b, yr, 1, h);
            } else {
                memcpy(x1, t, (size_t)h * 4);
                layernorm(x1, w->ln2_w, w->ln2_b, u, 1, h);
                ffn_block_row(w, u, t, m);
                for (int64_t c = 0; c < h; c++) yr[c] = x1[c] + t[c];
            }
        }
    }
    free(k), free(v), free(n), free(u), free(q), free(a), free(t), free(x1), free(m), free(p);
    return ok;
}
