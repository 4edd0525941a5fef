/* lm/model/encoder.c: the BERT-family encoder as a graph (see encoder.h). The body reads as the
 * model is defined: embeddings (word + position + token type 0), LayerNorm, then per layer
 * the q, k and v projections as one GEMM over the packed rows (wq, wk and wv stacked once at
 * create: one step, not three), bidirectional attention of every sentence over its own rows in
 * one SegmentedMHA step reading q, k and v as column views of it, the output projection with the residual, LayerNorm, the
 * GELU feed-forward with the residual, LayerNorm. Word: "n" (rows in all); input "lengths"
 * (slots): each slot's sentence length, 0 for an empty slot. */
#include "lm/model/encoder.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/model/blocks.h"

struct fe_encoder {
    const fe_bert_weights *w;
    fe_encoder_options o;
    int64_t rows;       /* slots * max_tokens: the packed rows the graph is compiled for */
    fe_graph *g;
    float *pos_type;    /* (max_tokens, hidden): position embedding + token type 0 */
    float *qkv;         /* per layer: wq, wk, wv stacked (3 hidden, hidden), then bq, bk, bv */
    uint16_t *bf16;     /* dot_bf16: the layer matrices in bf16, layer after layer */
    fe_tensor *mats;    /* (n_layers * 4) the matrices the GEMMs read, in matrix_names' order */
    fe_tensor *biases;  /* (n_layers) the stacked q|k|v biases */
    int32_t *ids;       /* (rows) the packed ids of a call */
    int32_t *positions; /* (rows) each row's position in its sentence */
    int32_t *lengths;   /* (slots) each slot's sentence length in a call, 0 when empty */
    fe_profile *profile; /* dot_bf16: bf16_profile, for every compile of the graph */
    fe_error err;
};

/* dot_bf16: the GEMMs' products in the packed bf16 design (bf16_dot = 1: k-pair panels and
 * 14 x 32 vdpbf16ps tiles) rather than the one GEMM resolves to (bf16_dot = 2, B's rows as
 * stored), which pays a reduction across lanes and a 4 x 6 epilogue per tile: every 12
 * steps at this encoder's K = 384. Measured on AMD EPYC (Zen 4), one worker, CPU time
 * (bench_gemm minilm cases), packed / rows at 128 and 4096 rows: the q|k|v product 1.08x and
 * 1.46x, the FFN's first (GELU) 1.53x and 1.69x, its second (K = 1536) 1.05x and 1.15x.
 * Not where the device has AMX-BF16: there GEMM resolves to its tiles (bf16_dot = 3). */
static const char bf16_profile[] =
    "{\"entries\": [{\"op\": \"GEMM\", \"when\": {\"act_bf16\": 1}, "
    "\"tunables\": {\"bf16_dot\": 1}}]}";

fe_encoder_options fe_encoder_options_default(void) {
    return (fe_encoder_options){.max_tokens = 0, .slots = 0, .packaging = FE_PACK_AUTO};
}

const char *fe_encoder_message(const fe_encoder *e) { return e->err.message; }
int64_t fe_encoder_max_tokens(const fe_encoder *e) { return e->o.max_tokens; }
int fe_encoder_slots(const fe_encoder *e) { return e->o.slots; }
fe_graph *fe_encoder_graph(fe_encoder *e) { return e->g; }

/* the per-call word of where sentence s starts (s >= 1) */
static const char *const start_word[FE_ENCODER_MAX_SLOTS] = {
    "o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9", "o10", "o11", "o12", "o13", "o14",
    "o15", "o16", "o17", "o18", "o19", "o20", "o21", "o22", "o23", "o24", "o25", "o26", "o27",
    "o28", "o29", "o30", "o31"};

static fe_status encoder_body(fe_trace *t, const void *model) {
    const fe_encoder *e = model;
    const fe_bert_config *c = &e->w->cfg;
    const int64_t R = e->rows;
    const fe_block_mode mm = {.bf16_dtypes = e->o.dot_bf16 ? FE_BLOCK_EVERY_DTYPE : 0,
                              .eps = c->ln_eps,
                              .hand_fused = e->o.body == FE_BODY_HAND_FUSED};
    fe_val n = fe_scratchpad(t, "n");
    fe_h lengths = fe_input(t, "lengths");
    fe_setting bidirectional = {"causal", 0};

    fe_h ids = fe_bound(t, fe_input(t, "ids"), 0, n), pos = fe_bound(t, fe_input(t, "positions"), 0, n);
    fe_h x = fe_block_apply(t, "ElementwiseAdd", fe_take(t, fe_weight(t, "word"), ids),
                            fe_take(t, fe_weight(t, "pos_type"), pos)); /* (R, H), n rows */
    x = fe_block_layernorm(t, x, fe_weight(t, "ln_w"), fe_weight(t, "ln_b"), c->ln_eps);
    const int64_t nh = c->n_heads;
    int64_t heads[3] = {R, nh, c->head_dim}, flat[2] = {R, c->hidden};
    int64_t heads3[3] = {R, 3 * nh, c->head_dim}; /* q|k|v heads of one row side by side */
    fe_h att = fe_state(t, "attention", FE_DTYPE_F32, 3, heads); /* (R, heads, head_dim) */
#define W(name) fe_block_layer_weight(t, l, name)
    for (int64_t l = 0; l < c->n_layers; l++) {
        fe_h p = fe_reshape(t, fe_block_linear(t, mm, x, W("wqkv"), W("bqkv"), FE_NO_TENSOR), 3, heads3);
        fe_h q = fe_at(t, p, 1, fe_const(0), fe_const(nh)); /* (R, heads, head_dim), rows 3H apart */
        fe_h k = fe_at(t, p, 1, fe_const(nh), fe_const(nh));
        fe_h v = fe_at(t, p, 1, fe_const(2 * nh), fe_const(nh));
        fe_h qkv[4] = {fe_bound(t, q, 0, n), fe_bound(t, k, 0, n), fe_bound(t, v, 0, n), lengths};
        fe_apply_into(t, fe_bound(t, att, 0, n), "SegmentedMHA", qkv, 4, &bidirectional, 1,
                      NULL, 0); /* each sentence over its own rows */
        fe_h a = fe_reshape(t, fe_bound(t, att, 0, n), 2, flat);
        x = fe_block_linear(t, mm, a, W("wo"), W("bo"), x);
        x = fe_block_layernorm(t, x, W("ln1_w"), W("ln1_b"), c->ln_eps);
        x = fe_block_ffn_gelu(t, mm, x, W("wi"), W("bi"), W("wf"), W("bf"), x);
        x = fe_block_layernorm(t, x, W("ln2_w"), W("ln2_b"), c->ln_eps);
    }
#undef W
    fe_output(t, x);
    return fe_trace_status(t);
}

/* the graph's layer matrices (the stacked q|k|v, then fe_bert_layer's wo, wi, wf) and vectors */
static const char *const matrix_names[4] = {"wqkv", "wo", "wi", "wf"};
static const int vector_fields[7] = {7, 8, 9, 11, 13, 14, 15}; /* bo ln1_w ln1_b bi bf ln2_w ln2_b */
static const char *const vector_names[7] = {"bo", "ln1_w", "ln1_b", "bi", "bf", "ln2_w", "ln2_b"};

/* wq, wk, wv (hidden, hidden) of each layer stacked into one (3 hidden, hidden) matrix and
 * bq, bk, bv into one (3 hidden) bias; the matrices (f32, or rounded to bf16 once, to nearest
 * even, for dot_bf16) into mats */
static fe_status stack_matrices(fe_encoder *e, fe_error *err) {
    const fe_bert_weights *w = e->w;
    const int64_t L = w->cfg.n_layers, H = w->cfg.hidden, per = 3 * H * H + 3 * H;
    e->qkv = fe_aligned_alloc(64, (size_t)(L * per) * sizeof *e->qkv);
    e->mats = fe_calloc((size_t)L * 4, sizeof *e->mats);
    e->biases = fe_calloc((size_t)L, sizeof *e->biases);
    if (!e->qkv || !e->mats || !e->biases)
        return fe_error_set(err, FE_E_NOMEM, "encoder: out of memory for the q|k|v matrices");
    for (int64_t l = 0; l < L; l++) {
        const fe_bert_layer *ly = &w->layers[l];
        float *m = e->qkv + l * per, *b = m + 3 * H * H;
        const fe_tensor *parts[3][2] = {{&ly->wq, &ly->bq}, {&ly->wk, &ly->bk}, {&ly->wv, &ly->bv}};
        for (int i = 0; i < 3; i++) {
            memcpy(m + i * H * H, parts[i][0]->data, (size_t)(H * H) * sizeof *m);
            memcpy(b + i * H, parts[i][1]->data, (size_t)H * sizeof *b);
        }
        int64_t ms[2] = {3 * H, H}, bs = 3 * H;
        e->mats[l * 4] = fe_tensor_contiguous(m, FE_DTYPE_F32, 2, ms);
        e->biases[l] = fe_tensor_contiguous(b, FE_DTYPE_F32, 1, &bs);
        e->mats[l * 4 + 1] = ly->wo, e->mats[l * 4 + 2] = ly->wi, e->mats[l * 4 + 3] = ly->wf;
    }
    if (!e->o.dot_bf16) return FE_OK;
    size_t total = 0;
    for (int i = 0; i < 4; i++) total += (size_t)fe_tensor_numel(&e->mats[i]);
    e->bf16 = fe_aligned_alloc(64, total * (size_t)L * sizeof *e->bf16);
    if (!e->bf16) return fe_error_set(err, FE_E_NOMEM, "encoder: out of memory for bf16 matrices");
    uint16_t *p = e->bf16;
    for (int64_t i = 0; i < L * 4; i++) {
        fe_tensor *t = &e->mats[i];
        int64_t n = fe_tensor_numel(t);
        for (int64_t k = 0; k < n; k++) p[k] = fe_f32_to_bf16(((const float *)t->data)[k]);
        *t = fe_tensor_contiguous(p, FE_DTYPE_BF16, 2, t->shape);
        p += n;
    }
    return FE_OK;
}

/* the graph's inputs: ids and positions (rows), lengths (slots) */
static void inputs_of(fe_encoder *e, fe_named_tensor in[3]) {
    const int64_t slots = e->o.slots;
    in[0] = (fe_named_tensor){"ids", fe_tensor_contiguous(e->ids, FE_DTYPE_I32, 1, &e->rows)};
    in[1] = (fe_named_tensor){"positions", fe_tensor_contiguous(e->positions, FE_DTYPE_I32, 1, &e->rows)};
    in[2] = (fe_named_tensor){"lengths", fe_tensor_contiguous(e->lengths, FE_DTYPE_I32, 1, &slots)};
}

static fe_status set_weights(fe_encoder *e) {
    const fe_bert_weights *w = e->w;
    int64_t ps[2] = {e->o.max_tokens, w->cfg.hidden};
    struct { const char *name; fe_tensor t; } top[] = {
        {"word", w->word}, {"ln_w", w->ln_w}, {"ln_b", w->ln_b},
        {"pos_type", fe_tensor_contiguous(e->pos_type, FE_DTYPE_F32, 2, ps)},
    };
    fe_status st = FE_OK;
    for (size_t i = 0; st == FE_OK && i < sizeof top / sizeof top[0]; i++)
        st = fe_graph_set_weight(e->g, top[i].name, top[i].t);
    for (int64_t l = 0; st == FE_OK && l < w->cfg.n_layers; l++)
        for (int i = 0; st == FE_OK && i < 12; i++) {
            char path[64];
            const char *name = i < 4 ? matrix_names[i] : i == 4 ? "bqkv" : vector_names[i - 5];
            snprintf(path, sizeof path, "layers.%lld.%s", (long long)l, name);
            fe_tensor t = i < 4    ? e->mats[l * 4 + i]
                          : i == 4 ? e->biases[l]
                                   : (&w->layers[l].wq)[vector_fields[i - 5]];
            st = fe_graph_set_weight(e->g, path, t);
        }
    return st == FE_OK ? FE_OK : fe_error_set(&e->err, st, "%s", fe_graph_message(e->g));
}

fe_status fe_encoder_create(fe_device *dev, const fe_bert_weights *w, const fe_encoder_options *o,
                            fe_encoder **out, fe_error *err) {
    *out = NULL;
    fe_encoder_options opt = o ? *o : fe_encoder_options_default();
    const fe_bert_config *c = &w->cfg;
    if (opt.max_tokens == 0) opt.max_tokens = c->max_positions < 256 ? c->max_positions : 256;
    if (opt.slots == 0) opt.slots = 8;
    if (opt.max_tokens < 1 || opt.max_tokens > c->max_positions)
        return fe_error_set(err, FE_E_INVALID, "encoder: max_tokens %lld is outside 1..%lld (the "
                            "model's max_position_embeddings); give a value in that range",
                            (long long)opt.max_tokens, (long long)c->max_positions);
    if (opt.slots < 1 || opt.slots > FE_ENCODER_MAX_SLOTS)
        return fe_error_set(err, FE_E_INVALID, "encoder: a batch of %d sentences; give 1..%d",
                            opt.slots, FE_ENCODER_MAX_SLOTS);
    fe_encoder *e = fe_calloc(1, sizeof *e);
    if (!e) return fe_error_set(err, FE_E_NOMEM, "encoder: out of memory");
    e->w = w;
    e->o = opt;
    e->rows = opt.slots * opt.max_tokens;
    const int64_t H = c->hidden;
    e->pos_type = fe_aligned_alloc(64, (size_t)(opt.max_tokens * H) * sizeof(float));
    e->ids = fe_calloc((size_t)e->rows, sizeof *e->ids);
    e->positions = fe_calloc((size_t)e->rows, sizeof *e->positions);
    e->lengths = fe_calloc((size_t)opt.slots, sizeof *e->lengths);
    fe_status st = e->pos_type && e->ids && e->positions && e->lengths ? FE_OK
                   : fe_error_set(err, FE_E_NOMEM, "encoder: out of memory");
    for (int64_t p = 0; st == FE_OK && p < opt.max_tokens; p++)
        for (int64_t i = 0; i < H; i++)
            e->pos_type[p * H + i] = ((const float *)w->position.data)[p * H + i] +
                                     ((const float *)w->type.data)[i];
    if (st == FE_OK) st = stack_matrices(e, err);
    if (st == FE_OK) st = fe_graph_create(dev, "encoder", encoder_body, e, &e->g, err);
    if (st == FE_OK) st = set_weights(e);
    /* (where the device has AMX-BF16, the GEMM's own default, its tiles, beats both) */
    if (st == FE_OK && opt.dot_bf16 && !fe_device_get_info(dev)->features.amx_bf16)
        st = fe_profile_parse(bf16_profile, sizeof bf16_profile - 1, &e->profile, err);
    if (st == FE_OK) {
        fe_compile_options co = fe_compile_options_default();
        co.packaging = opt.packaging;
        co.verbose = opt.verbose;
        co.profile = e->profile;
        fe_block_fold_options(opt.body, NULL, NULL, &co);
        fe_named_tensor in[3];
        inputs_of(e, in);
        st = fe_graph_compile(e->g, in, 3, &co);
        if (st != FE_OK) fe_error_set(&e->err, st, "%s", fe_graph_message(e->g));
    }
    if (st != FE_OK) {
        if (err && e->err.status != FE_OK) *err = e->err;
        fe_encoder_destroy(e);
        return st;
    }
    *out = e;
    return FE_OK;
}

void fe_encoder_destroy(fe_encoder *e) {
    if (!e) return;
    fe_graph_destroy(e->g);
    fe_profile_destroy(e->profile);
    fe_free(e->pos_type);
    fe_free(e->qkv);
    fe_free(e->bf16);
    fe_free(e->mats);
    fe_free(e->biases);
    fe_free(e->ids);
    fe_free(e->positions);
    fe_free(e->lengths);
    fe_free(e);
}

const char *fe_encoder_start_word(int s) { return start_word[s]; }

fe_status fe_encoder_pack(const int32_t *const *ids, const int64_t *lens, int n_seqs, int slots,
                          int64_t max_tokens, int64_t vocab, int32_t *ids_out,
                          int32_t *positions_out, fe_word *words, fe_error *err) {
    if (n_seqs < 1 || n_seqs > slots)
        return fe_error_set(err, FE_E_BOUNDS, "encoder: a call of %d sentences; this encoder "
                            "takes 1..%d (its batch)", n_seqs, slots);
    int64_t row = 0;
    for (int s = 0; s < slots; s++) {
        if (s > 0) words[s - 1] = (fe_word){start_word[s], row}; /* empty slots start at the end */
        if (s >= n_seqs) continue;
        if (lens[s] < 1 || lens[s] > max_tokens)
            return fe_error_set(err, FE_E_BOUNDS, "encoder: sentence %d has %lld tokens; give "
                                "1..%lld (max_tokens)", s, (long long)lens[s], (long long)max_tokens);
        for (int64_t i = 0; i < lens[s]; i++) {
            if (ids[s][i] < 0 || ids[s][i] >= vocab)
                return fe_error_set(err, FE_E_BOUNDS, "encoder: sentence %d: id %d at %lld is "
                                    "outside the vocabulary of %lld", s, ids[s][i], (long long)i,
                                    (long long)vocab);
            ids_out[row + i] = ids[s][i];
            if (positions_out) positions_out[row + i] = (int32_t)i;
        }
        row += lens[s];
    }
    words[slots - 1] = (fe_word){"n", row};
    return FE_OK;
}

fe_status fe_encoder_forward(fe_encoder *e, const int32_t *const *ids, const int64_t *lens,
                             int n_seqs, const float **hidden) {
    fe_error_clear(&e->err);
    fe_word words[FE_ENCODER_MAX_SLOTS];
    fe_status st = fe_encoder_pack(ids, lens, n_seqs, e->o.slots, e->o.max_tokens, e->w->cfg.vocab,
                                   e->ids, e->positions, words, &e->err);
    if (st != FE_OK) return st;
    for (int s = 0; s < e->o.slots; s++) e->lengths[s] = s < n_seqs ? (int32_t)lens[s] : 0;
    fe_named_tensor in[3];
    inputs_of(e, in);
    fe_tensor outs[1];
    int n_out = 0; /* the graph's one word is "n", the last of the packed words */
    st = fe_graph_call(e->g, in, 3, &words[e->o.slots - 1], 1, outs, 1, &n_out);
    if (st != FE_OK) return fe_error_set(&e->err, st, "%s", fe_graph_message(e->g));
    *hidden = outs[0].data;
    return FE_OK;
}

void fe_encoder_pool(const float *h, int64_t n, int64_t H, fe_pooling pooling, int64_t dim,
                     bool normalize, float *out) {
    if (dim <= 0 || dim > H) dim = H;
    for (int64_t i = 0; i < dim; i++) {
        double v = 0;
        if (pooling == FE_POOLING_MEAN) {
            for (int64_t r = 0; r < n; r++) v += h[r * H + i];
            v /= (double)n;
        } else {
            v = h[(pooling == FE_POOLING_CLS ? 0 : n - 1) * H + i];
        }
        out[i] = (float)v;
    }
    if (!normalize) return;
    double ss = 0;
    for (int64_t i = 0; i < dim; i++) ss += (double)out[i] * out[i];
    double scale = 1.0 / fmax(sqrt(ss), 1e-12); /* torch's F.normalize: x / max(|x|, eps) */
    for (int64_t i = 0; i < dim; i++) out[i] = (float)(out[i] * scale);
}
