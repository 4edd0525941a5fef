/* lm/api/sampling.c: drawing the next token on the host, for what the device's Sample op does
 * not do: min_p and the repetition penalties (llama.cpp's definitions). Deterministic given
 * the seed: candidates are ordered by logit, then id, and the draw uses splitmix64. Only the
 * candidates that can be drawn are sorted (a vocabulary of 128k each token would cost more
 * than the decode step). */
#include "lm/api/api.h"

#include <math.h>
#include <stdlib.h>

fe_lm_sampling fe_lm_sampling_default(void) {
    return (fe_lm_sampling){.temperature = 0, .top_k = 0, .top_p = 1, .min_p = 0, .seed = 0,
                            .repeat_penalty = 1, .repeat_last_n = 64};
}

bool fe_lm_sampling_needs_host(const fe_lm_sampling *s) {
    return s->min_p > 0 || s->repeat_penalty != 1 || s->presence_penalty != 0 ||
           s->frequency_penalty != 0;
}

void fe_lm_host_sampler_init(fe_lm_host_sampler *h, const fe_lm_sampling *p) {
    h->p = *p;
    h->rng = p->seed ^ 0x9E3779B97F4A7C15ull;
}

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int by_logit(const void *a, const void *b) {
    const fe_lm_candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* repeat, presence and frequency penalties over the last tokens of history, into the
 * candidates (in id order) */
static void penalise(const fe_lm_sampling *p, fe_lm_candidate *c, const int32_t *history,
                     int64_t n, int64_t vocab, int32_t *counts) {
    int64_t back = p->repeat_last_n < 0 ? n : p->repeat_last_n < n ? p->repeat_last_n : n;
    const int32_t *w = history + n - back;
    for (int64_t i = 0; i < back; i++)
        if (w[i] >= 0 && w[i] < vocab) counts[w[i]] = 0;
    for (int64_t i = 0; i < back; i++)
        if (w[i] >= 0 && w[i] < vocab) counts[w[i]]++;
    for (int64_t i = 0; i < back; i++) {
        int32_t t = w[i];
        if (t < 0 || t >= vocab || counts[t] == 0) continue; /* done already */
        float x = c[t].logit;
        if (p->repeat_penalty != 1) x = x > 0 ? (float)(x / p->repeat_penalty) : (float)(x * p->repeat_penalty);
        x -= (float)(counts[t] * p->frequency_penalty + p->presence_penalty);
        c[t].logit = x;
        counts[t] = 0;
    }
}

int32_t fe_lm_host_sample(fe_lm_host_sampler *h, const float *logits, int64_t vocab,
                          const int32_t *history, int64_t n, fe_lm_candidate *cand,
                          int32_t *counts) {
    const fe_lm_sampling *p = &h->p;
    for (int64_t i = 0; i < vocab; i++) cand[i] = (fe_lm_candidate){logits[i], (int32_t)i};
    if (fe_lm_sampling_needs_host(p) && n > 0) penalise(p, cand, history, n, vocab, counts);
    if (!(p->temperature > 0)) {
        int64_t best = 0;
        for (int64_t i = 1; i < vocab; i++)
            if (cand[i].logit > cand[best].logit) best = i;
        return (int32_t)best;
    }
    /* only candidates that can matter are sorted: min_p's cut, else those within e^-40 of
     * the best (less changes no probability a double can hold next to it) */
    float best = cand[0].logit;
    for (int64_t i = 1; i < vocab; i++) best = cand[i].logit > best ? cand[i].logit : best;
    double cut = p->min_p > 0 ? best + p->temperature * log(p->min_p) : best - p->temperature * 40;
    int64_t kept_n = 0;
    for (int64_t i = 0; i < vocab; i++)
        if (cand[i].logit >= cut) cand[kept_n++] = cand[i];
    qsort(cand, (size_t)kept_n, sizeof *cand, by_logit);
    vocab = kept_n;
    int64_t k = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
    double top = cand[0].logit, sum = 0;
    for (int64_t i = 0; i < k; i++) {
        double e = exp((cand[i].logit - top) / p->temperature);
        cand[i].logit = (float)e; /* now the unnormalised probability */
        sum += e;
    }
    /* top_p: the smallest prefix holding top_p of the mass; min_p: p >= min_p * p_max */
    double kept = 0;
    int64_t m = 0;
    while (m < k) {
        if (p->min_p > 0 && cand[m].logit < p->min_p * cand[0].logit) break;
        kept += cand[m].logit;
        m++;
        if (p->top_p < 1 && kept >= p->top_p * sum) break;
    }
    double u = (double)(splitmix64(&h->rng) >> 11) * 0x1.0p-53 * kept;
    for (int64_t i = 0; i < m; i++) {
        u -= cand[i].logit;
        if (u < 0) return cand[i].id;
    }
    return cand[m - 1].id;
}
