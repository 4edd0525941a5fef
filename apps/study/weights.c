/* apps/study/weights.c: a layer's weights and inputs drawn from a seed (see layer.h). The
 * generator is splitmix64, so a seed gives the same numbers on every machine; the host
 * comparison script reads the same buffers from the files the study writes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static void fill(float *p, int64_t n, double lo, double hi, uint64_t *s) {
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(lo + (hi - lo) * (double)(next(s) >> 11) * 0x1.0p-53);
}

bool study_weights_init(study_weights *w, const study_shape *s, unsigned long long seed) {
    memset(w, 0, sizeof *w);
    w->shape = *s;
    const int64_t h = s->hidden, i = s->ffn;
    float **mats[] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->w_up, &w->w_down};
    const int64_t mat_n[] = {h * h, h * h, h * h, h * h, i * h, h * i};
    float **vecs[] = {&w->bq, &w->bk, &w->bv, &w->bo, &w->b_up, &w->b_down,
                      &w->ln1_w, &w->ln1_b, &w->ln2_w, &w->ln2_b, &w->bqkv};
    const int64_t vec_n[] = {h, h, h, h, i, h, h, h, h, h, 3 * h};
    bool ok = true;
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
        ok = ok && (*mats[k] = malloc((size_t)mat_n[k] * sizeof(float)));
        w->bytes += (size_t)mat_n[k] * sizeof(float);
    }
    for (size_t k = 0; k < sizeof vecs / sizeof vecs[0]; k++) {
        ok = ok && (*vecs[k] = malloc((size_t)vec_n[k] * sizeof(float)));
        if (k < 10) w->bytes += (size_t)vec_n[k] * sizeof(float);
    }
    ok = ok && (w->wqkv = malloc((size_t)(3 * h * h) * sizeof(float)));
    if (!ok) {
        study_weights_deinit(w);
        return false;
    }
    uint64_t st = seed;
    const double ah = 1.0 / sqrt((double)h), ai = 1.0 / sqrt((double)i);
    fill(w->wq, h * h, -ah, ah, &st);
    fill(w->wk, h * h, -ah, ah, &st);
    fill(w->wv, h * h, -ah, ah, &st);
    fill(w->wo, h * h, -ah, ah, &st);
    fill(w->w_up, i * h, -ah, ah, &st);
    fill(w->w_down, h * i, -ai, ai, &st);
    fill(w->bq, h, -0.1, 0.1, &st);
    fill(w->bk, h, -0.1, 0.1, &st);
    fill(w->bv, h, -0.1, 0.1, &st);
    fill(w->bo, h, -0.1, 0.1, &st);
    fill(w->b_up, i, -0.1, 0.1, &st);
    fill(w->b_down, h, -0.1, 0.1, &st);
    fill(w->ln1_w, h, 0.5, 1.5, &st);
    fill(w->ln1_b, h, -0.1, 0.1, &st);
    fill(w->ln2_w, h, 0.5, 1.5, &st);
    fill(w->ln2_b, h, -0.1, 0.1, &st);
    memcpy(w->wqkv, w->wq, (size_t)(h * h) * sizeof(float));
    memcpy(w->wqkv + h * h, w->wk, (size_t)(h * h) * sizeof(float));
    memcpy(w->wqkv + 2 * h * h, w->wv, (size_t)(h * h) * sizeof(float));
    memcpy(w->bqkv, w->bq, (size_t)h * sizeof(float));
    memcpy(w->bqkv + h, w->bk, (size_t)h * sizeof(float));
    memcpy(w->bqkv + 2 * h, w->bv, (size_t)h * sizeof(float));
    return true;
}

void study_weights_deinit(study_weights *w) {
    float *all[] = {w->wq, w->wk, w->wv, w->wo, w->bq, w->bk, w->bv, w->bo, w->wqkv,
                    w->bqkv, w->w_up, w->b_up, w->w_down, w->b_down, w->ln1_w, w->ln1_b,
                    w->ln2_w, w->ln2_b};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) free(all[k]);
    memset(w, 0, sizeof *w);
}

void study_input_fill(float *x, const study_shape *s, unsigned long long seed) {
    uint64_t st = seed ^ 0x5eedull;
    fill(x, s->seq * s->hidden, -1.0, 1.0, &st);
}
