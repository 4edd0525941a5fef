/* lm/model/bert_weights.c: BERT weights from a safetensors checkpoint or drawn at random (see
 * bert.h). The name map is checked both ways: every tensor the config asks for is there with
 * its exact shape, and nothing unknown is. Invariant: every tensor handed out is f32 and
 * 4-byte aligned (mapped in place when the file has it so, converted into owned memory
 * otherwise). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/safetensors.h"
#include "lm/model/bert.h"

/* Per layer, after "encoder.layer.N.", in fe_bert_layer's field order */
static const char *const layer_names[] = {
    "attention.self.query.weight", "attention.self.query.bias",
    "attention.self.key.weight", "attention.self.key.bias",
    "attention.self.value.weight", "attention.self.value.bias",
    "attention.output.dense.weight", "attention.output.dense.bias",
    "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
    "intermediate.dense.weight", "intermediate.dense.bias",
    "output.dense.weight", "output.dense.bias",
    "output.LayerNorm.weight", "output.LayerNorm.bias",
};
enum { N_LAYER = sizeof layer_names / sizeof layer_names[0] };

/* The shape of layer tensor i: (rows, cols), cols 0 for a vector */
static void layer_shape(const fe_bert_config *c, int i, int64_t *rows, int64_t *cols) {
    bool vec = i % 2 == 1 || i == 8 || i == 14;
    *rows = i == 10 || i == 11 ? c->ffn : c->hidden;
    *cols = vec ? 0 : i == 12 ? c->ffn : c->hidden;
}

static fe_tensor *layer_field(fe_bert_layer *L, int i) { return &L->wq + i; }

void fe_bert_weights_free(fe_bert_weights *w) {
    if (!w) return;
    for (int i = 0; i < w->n_owned; i++) fe_free(w->owned[i]);
    fe_free(w->owned);
    fe_free(w->layers);
    memset(w, 0, sizeof *w);
}

static float *own(fe_bert_weights *w, size_t n) {
    if (w->n_owned == w->cap_owned) {
        int cap = w->cap_owned ? 2 * w->cap_owned : 32;
        void **o = fe_realloc(w->owned, (size_t)cap * sizeof *o);
        if (!o) return NULL;
        w->owned = o, w->cap_owned = cap;
    }
    float *p = fe_aligned_alloc(64, n * sizeof(float));
    if (p) w->owned[w->n_owned++] = p;
    return p;
}

static fe_status init(const fe_bert_config *cfg, fe_bert_weights *w, fe_error *err) {
    memset(w, 0, sizeof *w);
    w->cfg = *cfg;
    w->layers = fe_calloc((size_t)cfg->n_layers, sizeof *w->layers);
    return w->layers ? FE_OK : fe_error_set(err, FE_E_NOMEM, "BERT weights: out of memory");
}

/* ---- from safetensors ---- */

typedef struct loader {
    const fe_safetensors *st;
    const char *prefix; /* "" or "bert." */
    fe_bert_weights *w;
    fe_error *err;
} loader;

static fe_status take(loader *l, const char *name, int64_t rows, int64_t cols, fe_tensor *t) {
    char full[160], want[64], have[200];
    snprintf(full, sizeof full, "%s%s", l->prefix, name);
    int rank = cols ? 2 : 1;
    int64_t shape[2] = {rows, cols};
    fe_shape_format(rank, shape, want, sizeof want);
    const fe_st_tensor *s = fe_safetensors_find(l->st, full);
    if (!s)
        return fe_error_set(l->err, FE_E_NOTFOUND, "%s: no tensor %s, which the config's BERT "
                            "model needs as %s; the checkpoint and config.json do not match",
                            l->w->cfg.source, full, want);
    if (!s->readable || (s->dtype != FE_DTYPE_F32 && s->dtype != FE_DTYPE_BF16 &&
                         s->dtype != FE_DTYPE_F16))
        return fe_error_set(l->err, FE_E_DTYPE, "%s: tensor %s is %s but ferrum's BERT needs F32, "
                            "BF16 or F16", s->file, full, s->dtype_name);
    bool same = s->rank == rank;
    for (int d = 0; same && d < rank; d++) same = s->shape[d] == shape[d];
    if (!same) {
        fe_shape_format(s->rank, s->shape, have, sizeof have);
        return fe_error_set(l->err, FE_E_SHAPE, "%s: tensor %s is %s but the config wants %s; the "
                            "checkpoint and config.json do not match", s->file, full, have, want);
    }
    if (!s->data)
        return fe_error_set(l->err, FE_E_STATE, "%s: tensor %s has no data (opened header-only); "
                            "open the checkpoint with its data", s->file, full);
    int64_t n = s->n_elements;
    if (s->dtype == FE_DTYPE_F32 && (uintptr_t)s->data % 4 == 0) {
        *t = fe_tensor_contiguous((void *)s->data, FE_DTYPE_F32, rank, shape);
        return FE_OK;
    }
    float *p = own(l->w, (size_t)n);
    if (!p) return fe_error_set(l->err, FE_E_NOMEM, "BERT weights: out of memory for %s", full);
    const unsigned char *src = s->data;
    size_t es = fe_dtype_info(s->dtype)->size;
    for (int64_t i = 0; i < n; i++) {
        if (s->dtype == FE_DTYPE_F32) {
            memcpy(&p[i], src + i * 4, 4);
        } else {
            uint16_t h;
            memcpy(&h, src + (size_t)i * es, 2);
            p[i] = s->dtype == FE_DTYPE_BF16 ? fe_bf16_to_f32(h) : fe_f16_to_f32(h);
        }
    }
    *t = fe_tensor_contiguous(p, FE_DTYPE_F32, rank, shape);
    return FE_OK;
}

/* Whether `name` (without the prefix) is a tensor the map reads or knowingly skips */
static bool known(const char *name, int64_t n_layers) {
    static const char *const top[] = {
        "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias", "embeddings.position_ids", "pooler.dense.weight",
        "pooler.dense.bias",
    };
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (strcmp(name, top[i]) == 0) return true;
    long long l;
    int used = 0;
    if (sscanf(name, "encoder.layer.%lld.%n", &l, &used) != 1 || used == 0 || l < 0 || l >= n_layers)
        return false;
    for (int i = 0; i < N_LAYER; i++)
        if (strcmp(name + used, layer_names[i]) == 0) return true;
    return false;
}

fe_status fe_bert_weights_from_safetensors(const fe_safetensors *st, const fe_bert_config *cfg,
                                           fe_bert_weights *out, fe_error *err) {
    fe_status s = init(cfg, out, err);
    if (s != FE_OK) return s;
    loader l = {st, fe_safetensors_find(st, "bert.embeddings.word_embeddings.weight") ? "bert." : "",
                out, err};
    for (size_t i = 0; s == FE_OK && i < fe_safetensors_count(st); i++) {
        const char *name = fe_safetensors_at(st, i)->name;
        size_t pn = strlen(l.prefix);
        if (strncmp(name, l.prefix, pn) != 0 || !known(name + pn, cfg->n_layers))
            s = fe_error_set(err, FE_E_FORMAT, "%s: tensor %s is not part of a BERT model of %lld "
                             "layers (a head or another architecture?); give a BertModel "
                             "checkpoint", fe_safetensors_at(st, i)->file, name,
                             (long long)cfg->n_layers);
    }
    const fe_bert_config *c = cfg;
    if (s == FE_OK) s = take(&l, "embeddings.word_embeddings.weight", c->vocab, c->hidden, &out->word);
    if (s == FE_OK) s = take(&l, "embeddings.position_embeddings.weight", c->max_positions, c->hidden, &out->position);
    if (s == FE_OK) s = take(&l, "embeddings.token_type_embeddings.weight", c->type_vocab, c->hidden, &out->type);
    if (s == FE_OK) s = take(&l, "embeddings.LayerNorm.weight", c->hidden, 0, &out->ln_w);
    if (s == FE_OK) s = take(&l, "embeddings.LayerNorm.bias", c->hidden, 0, &out->ln_b);
    for (int64_t layer = 0; s == FE_OK && layer < c->n_layers; layer++)
        for (int i = 0; s == FE_OK && i < N_LAYER; i++) {
            char name[128];
            int64_t rows, cols;
            layer_shape(c, i, &rows, &cols);
            snprintf(name, sizeof name, "encoder.layer.%lld.%s", (long long)layer, layer_names[i]);
            s = take(&l, name, rows, cols, layer_field(&out->layers[layer], i));
        }
    if (s != FE_OK) fe_bert_weights_free(out);
    return s;
}

/* ---- random ---- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A tensor of rows x cols (cols 0: a vector) drawn uniform in centre +- half */
static fe_status draw(fe_bert_weights *w, uint64_t *rng, int64_t rows, int64_t cols, double centre,
                      double half, fe_tensor *t, fe_error *err) {
    int64_t n = rows * (cols ? cols : 1), shape[2] = {rows, cols};
    float *p = own(w, (size_t)n);
    if (!p) return fe_error_set(err, FE_E_NOMEM, "BERT weights: out of memory");
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(centre + half * ((double)(splitmix(rng) >> 11) / 9007199254740992.0 * 2 - 1));
    *t = fe_tensor_contiguous(p, FE_DTYPE_F32, cols ? 2 : 1, shape);
    return FE_OK;
}

fe_status fe_bert_weights_random(const fe_bert_config *c, uint64_t seed, fe_bert_weights *out,
                                 fe_error *err) {
    fe_status s = init(c, out, err);
    uint64_t rng = seed;
    if (s == FE_OK) s = draw(out, &rng, c->vocab, c->hidden, 0, 1.0, &out->word, err);
    if (s == FE_OK) s = draw(out, &rng, c->max_positions, c->hidden, 0, 0.3, &out->position, err);
    if (s == FE_OK) s = draw(out, &rng, c->type_vocab, c->hidden, 0, 0.3, &out->type, err);
    if (s == FE_OK) s = draw(out, &rng, c->hidden, 0, 1, 0.2, &out->ln_w, err);
    if (s == FE_OK) s = draw(out, &rng, c->hidden, 0, 0, 0.1, &out->ln_b, err);
    for (int64_t layer = 0; s == FE_OK && layer < c->n_layers; layer++)
        for (int i = 0; s == FE_OK && i < N_LAYER; i++) {
            int64_t rows, cols;
            layer_shape(c, i, &rows, &cols);
            bool ln = i == 8 || i == 14;
            /* uniform in +-sqrt(3)/sqrt(fan_in) has std 1/sqrt(fan_in) */
            double half = cols ? 1.7320508 / sqrt((double)cols) : ln ? 0.2 : 0.1;
            s = draw(out, &rng, rows, cols, ln ? 1 : 0, half, layer_field(&out->layers[layer], i), err);
        }
    if (s != FE_OK) fe_bert_weights_free(out);
    return s;
}
