/* lm/api/embed.c: fe_lm_encoder and fe_lm_embed (see ferrum/lm.h): a BERT-family folder
 * opened into its weights (mapped), WordPiece tokenizer, sentence-transformers settings and
 * the encoder graph; texts embedded a batch per graph call, pooled, cut and normalised.
 * An EmbeddingGemma folder (config.json model_type gemma3_text) opens instead into its
 * weights (embedgemma.h), its SentencePiece tokenizer.json (spm_json.h) and the Gemma 3
 * encoder graph (gemma3_encoder.h), whose head pools, runs the Dense layers, cuts and
 * normalises.
 *
 * Invariant: an open encoder owns everything it points to but a device given in the options;
 * the weights borrow the safetensors reader and live no longer than it. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "ferrum/lm.h"
#include "lm/format/mapped.h"
#include "lm/format/safetensors.h"
#include "lm/model/bert.h"
#include "lm/model/embedgemma.h"
#include "lm/model/encoder.h"
#include "lm/model/gemma3_encoder.h"
#include "lm/model/st_config.h"
#include "lm/tokenizer/bert_normalize.h"
#include "lm/tokenizer/spm_json.h"
#include "lm/tokenizer/wordpiece.h"

struct fe_lm_encoder {
    char *path;
    fe_device *dev;
    bool own_dev;
    fe_safetensors *st;
    fe_bert_weights w;
    fe_wordpiece *tok;
    fe_st_config stc;
    fe_encoder *enc;
    bool dot_bf16;             /* the BERT encoder's products in bf16 (the option resolved) */
    bool gemma;                /* an EmbeddingGemma folder: the four below, not w/tok/enc */
    fe_embedgemma eg;
    fe_tokenizer *spm;
    fe_spm_json_around around; /* the template's special tokens before and after the text */
    fe_gemma3_encoder *genc;
    int64_t max_tokens;
    char *scratch;      /* prompt + text */
    size_t scratch_cap;
    float *vec;         /* (hidden) one pooled vector before the cut */
    fe_error err;
};

static const char *const pooling_names[] = {"model", "mean", "cls", "last"};

fe_lm_encoder_options fe_lm_encoder_options_default(void) { return (fe_lm_encoder_options){0}; }
fe_lm_embed_options fe_lm_embed_options_default(void) {
    return (fe_lm_embed_options){.pooling = FE_LM_POOLING_MODEL, .dim = 0, .normalize = -1};
}
const char *fe_lm_encoder_message(const fe_lm_encoder *e) { return e ? e->err.message : "no encoder (NULL)"; }

void fe_lm_encoder_close(fe_lm_encoder *e) {
    if (!e) return;
    fe_encoder_destroy(e->enc);
    fe_gemma3_encoder_destroy(e->genc);
    fe_tokenizer_destroy(e->spm);
    fe_embedgemma_free(&e->eg);
    fe_wordpiece_destroy(e->tok);
    fe_bert_weights_free(&e->w);
    fe_safetensors_close(e->st);
    fe_st_config_deinit(&e->stc);
    if (e->own_dev) fe_device_destroy(e->dev);
    fe_free(e->path);
    fe_free(e->scratch);
    fe_free(e->vec);
    fe_free(e);
}

/* dir/name must exist: FE_E_NOTFOUND naming it and what the folder needs */
static fe_status need(const char *dir, const char *name, char *path, size_t n, fe_error *err) {
    snprintf(path, n, "%s/%s", dir, name);
    if (fe_path_is_file(path)) return FE_OK;
    return fe_error_set(err, FE_E_NOTFOUND, "%s: no %s; an encoder folder holds config.json, "
                        "model.safetensors and tokenizer.json (as sentence-transformers saves one)",
                        dir, name);
}

/* An EmbeddingGemma folder: its weights, tokenizer.json, the sentence-transformers settings
 * (Dense modules read by the weights' loader) and the Gemma 3 encoder graph */
static fe_status open_gemma(fe_lm_encoder *e, const char *dir, const fe_lm_encoder_options *o,
                            fe_error *err) {
    char path[4200];
    if (o->dot == FE_LM_ENCODER_DOT_BF16)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: bf16 dot products are built for the BERT "
                            "encoder only; run EmbeddingGemma in f32 (--dot f32 or auto)", dir);
    fe_status st = need(dir, "model.safetensors", path, sizeof path, err);
    if (st == FE_OK) st = fe_embedgemma_load(dir, &e->eg, err);
    if (st == FE_OK) st = need(dir, "tokenizer.json", path, sizeof path, err);
    fe_mapped file = {0};
    if (st == FE_OK) st = fe_mapped_open(path, &file, err);
    if (st == FE_OK) st = fe_spm_json_load((const char *)file.data, file.size, path, &e->spm, &e->around, err);
    fe_mapped_close(&file);
    if (st == FE_OK) st = fe_st_config_read_with_dense(dir, &e->stc, err);
    if (st != FE_OK) return st;
    const fe_lm_config *c = &e->eg.cfg;
    if (fe_tokenizer_n_vocab(e->spm) > c->vocab)
        return fe_error_set(err, FE_E_FORMAT, "%s/tokenizer.json has %d tokens but config.json's "
                            "vocab_size is %lld; the tokenizer belongs to another model", dir,
                            fe_tokenizer_n_vocab(e->spm), (long long)c->vocab);
    if (e->stc.pooling != FE_POOLING_MEAN)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: 1_Pooling asks for %s pooling; EmbeddingGemma "
                            "runs mean pooling before its Dense head", dir,
                            pooling_names[e->stc.pooling + 1]);
    int64_t max = o->max_tokens ? o->max_tokens : e->stc.max_seq_length ? e->stc.max_seq_length
                  : c->max_context < 512 ? c->max_context : 512;
    int64_t around = e->around.n_before + e->around.n_after;
    if (max <= around || max > c->max_context)
        return fe_error_set(err, FE_E_INVALID, "%s: max_tokens %lld is outside %lld..%lld (room for "
                            "the special tokens, and the model's max_position_embeddings); give a "
                            "value in that range", dir, (long long)max, (long long)around + 1,
                            (long long)c->max_context);
    e->max_tokens = max;
    e->gemma = true;
    fe_encoder_options eo = fe_encoder_options_default();
    eo.max_tokens = max;
    eo.slots = o->batch;
    return fe_gemma3_encoder_create(e->dev, &e->eg, &eo, &e->genc, err);
}

static fe_status open_parts(fe_lm_encoder *e, const fe_lm_encoder_options *o, fe_error *err) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", e->path);
    if (!fe_path_is_dir(dir)) { /* a file in the folder */
        char *slash = strrchr(dir, '/');
        if (!fe_path_is_file(dir))
            return fe_error_set(err, FE_E_NOTFOUND, "%s: no such folder or file; give the encoder's "
                                "folder (config.json, model.safetensors, tokenizer.json)", e->path);
        if (slash) *slash = '\0'; else snprintf(dir, sizeof dir, ".");
    }
    fe_bert_config c;
    fe_status st = need(dir, "config.json", path, sizeof path, err);
    if (st == FE_OK && fe_embedgemma_is_folder(dir)) return open_gemma(e, dir, o, err);
    if (st == FE_OK) st = fe_bert_config_from_file(path, &c, err);
    if (st == FE_OK) st = need(dir, "model.safetensors", path, sizeof path, err);
    if (st == FE_OK) st = fe_safetensors_open(path, &e->st, err);
    if (st == FE_OK) st = fe_bert_weights_from_safetensors(e->st, &c, &e->w, err);
    if (st == FE_OK) st = need(dir, "tokenizer.json", path, sizeof path, err);
    if (st == FE_OK) st = fe_wordpiece_load_json(path, &e->tok, err);
    if (st == FE_OK) st = fe_st_config_read(dir, &e->stc, err);
    if (st != FE_OK) return st;
    if (fe_wordpiece_n_vocab(e->tok) > c.vocab)
        return fe_error_set(err, FE_E_FORMAT, "%s/tokenizer.json has %d tokens but config.json's "
                            "vocab_size is %lld; the tokenizer belongs to another model", dir,
                            fe_wordpiece_n_vocab(e->tok), (long long)c.vocab);
    int64_t max = o->max_tokens ? o->max_tokens : e->stc.max_seq_length ? e->stc.max_seq_length
                  : fe_wordpiece_max_tokens(e->tok) ? fe_wordpiece_max_tokens(e->tok)
                  : c.max_positions < 512 ? c.max_positions : 512;
    if (max < 2 || max > c.max_positions)
        return fe_error_set(err, FE_E_INVALID, "%s: max_tokens %lld is outside 2..%lld (the model's "
                            "max_position_embeddings); give a value in that range", dir,
                            (long long)max, (long long)c.max_positions);
    e->max_tokens = max;
    fe_encoder_options eo = fe_encoder_options_default();
    eo.max_tokens = max;
    eo.slots = o->batch;
    const fe_device_info *dv = fe_device_get_info(e->dev);
    e->dot_bf16 = o->dot == FE_LM_ENCODER_DOT_BF16 ||
                  (o->dot == FE_LM_ENCODER_DOT_AUTO && dv->isa >= FE_ISA_AVX512 &&
                   dv->features.avx512bf16 && (dv->features.amx_bf16 || dv->bf16_dot_fast));
    eo.dot_bf16 = e->dot_bf16;
    e->vec = fe_malloc((size_t)c.hidden * sizeof *e->vec);
    if (!e->vec) return fe_error_set(err, FE_E_NOMEM, "out of memory");
    return fe_encoder_create(e->dev, &e->w, &eo, &e->enc, err);
}

fe_status fe_lm_encoder_open(const char *path, const fe_lm_encoder_options *opts, fe_lm_encoder **out,
                             fe_error *err) {
    if (out) *out = NULL;
    if (!path || !out) return fe_error_set(err, FE_E_INVALID, "fe_lm_encoder_open: give a path and out");
    fe_lm_encoder_options o = opts ? *opts : fe_lm_encoder_options_default();
    if (o.batch < 0 || o.batch > FE_ENCODER_MAX_SLOTS || o.threads < 0 || o.max_tokens < 0 ||
        o.dot < FE_LM_ENCODER_DOT_AUTO || o.dot > FE_LM_ENCODER_DOT_BF16)
        return fe_error_set(err, FE_E_INVALID, "%s: batch %d, threads %d, max_tokens %lld, dot %d; "
                            "give batch 0..%d (0: 8), threads >= 0, max_tokens >= 0 (0: the "
                            "model's) and a dot the header lists", path, o.batch, o.threads,
                            (long long)o.max_tokens, (int)o.dot, FE_ENCODER_MAX_SLOTS);
    fe_lm_encoder *e = fe_calloc(1, sizeof *e);
    if (!e || !(e->path = fe_strdup(path))) {
        fe_free(e);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", path);
    }
    fe_status st = FE_OK;
    if (o.device) {
        e->dev = o.device;
    } else {
        fe_device_options dop = fe_device_options_default();
        dop.n_workers = o.threads;
        st = fe_device_create(&dop, &e->dev, err);
        e->own_dev = st == FE_OK;
    }
    if (st == FE_OK) st = open_parts(e, &o, err);
    if (st != FE_OK) {
        fe_lm_encoder_close(e);
        return st;
    }
    *out = e;
    return FE_OK;
}

fe_graph *fe_lm_encoder_graph(fe_lm_encoder *e) {
    if (!e) return NULL;
    return e->gemma ? fe_gemma3_encoder_graph(e->genc) : fe_encoder_graph(e->enc);
}

static fe_lm_pooling public_pooling(fe_pooling p) {
    return p == FE_POOLING_CLS ? FE_LM_POOLING_CLS : p == FE_POOLING_LAST ? FE_LM_POOLING_LAST : FE_LM_POOLING_MEAN;
}

static fe_status gemma_info(const fe_lm_encoder *e, fe_lm_encoder_info *out) {
    const fe_lm_config *c = &e->eg.cfg;
    size_t bytes = 0;
    bytes += (size_t)(fe_tensor_numel(&e->eg.embed) + fe_tensor_numel(&e->eg.norm)) * 4;
    for (int i = 0; i < e->eg.n_dense; i++) bytes += (size_t)fe_tensor_numel(&e->eg.dense[i]) * 4;
    for (int64_t l = 0; l < c->n_layers; l++) {
        const fe_llama_layer *L = &e->eg.layers[l];
        const fe_tensor *ts[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_norm,
                                 &L->w_gate, &L->w_up, &L->w_down, &L->q_norm, &L->k_norm,
                                 &L->post_attn_norm, &L->post_ffn_norm};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) bytes += (size_t)fe_tensor_numel(ts[i]) * 4;
    }
    *out = (fe_lm_encoder_info){
        .path = e->path, .architecture = "gemma3_text", .tokenizer = "SentencePiece BPE",
        .vocab = c->vocab, .hidden = fe_gemma3_encoder_dim(e->genc), .n_layers = c->n_layers,
        .n_heads = c->n_heads, .ffn = c->ffn, .max_tokens = e->max_tokens,
        .batch = fe_gemma3_encoder_slots(e->genc), .pooling = FE_LM_POOLING_MEAN,
        .pooling_name = pooling_names[FE_LM_POOLING_MEAN], .normalize = e->stc.normalize,
        .n_prompts = e->stc.n_prompts, .prompt_names = (const char *const *)e->stc.prompt_name,
        .default_prompt = e->stc.default_prompt, .weight_bytes = bytes,
    };
    return FE_OK;
}

fe_status fe_lm_encoder_get_info(const fe_lm_encoder *e, fe_lm_encoder_info *out) {
    if (!e || !out) return FE_E_INVALID;
    if (e->gemma) return gemma_info(e, out);
    const fe_bert_config *c = &e->w.cfg;
    size_t bytes = 0;
    const fe_tensor *top[] = {&e->w.word, &e->w.position, &e->w.type, &e->w.ln_w, &e->w.ln_b};
    for (size_t i = 0; i < 5; i++) bytes += (size_t)fe_tensor_numel(top[i]) * 4;
    for (int64_t l = 0; l < c->n_layers; l++)
        for (int i = 0; i < 16; i++) bytes += (size_t)fe_tensor_numel(&e->w.layers[l].wq + i) * 4;
    fe_lm_pooling p = public_pooling(e->stc.pooling);
    *out = (fe_lm_encoder_info){
        .path = e->path, .architecture = "bert", .tokenizer = "WordPiece", .vocab = c->vocab,
        .hidden = c->hidden, .n_layers = c->n_layers, .n_heads = c->n_heads, .ffn = c->ffn,
        .max_tokens = e->max_tokens, .batch = fe_encoder_slots(e->enc), .pooling = p,
        .pooling_name = pooling_names[p], .normalize = e->stc.normalize, .dot_bf16 = e->dot_bf16,
        .n_prompts = e->stc.n_prompts, .prompt_names = (const char *const *)e->stc.prompt_name,
        .default_prompt = e->stc.default_prompt, .weight_bytes = bytes,
    };
    return FE_OK;
}

/* The prompt o asks for: NULL for none; FE_E_INVALID naming the prompts the model has */
static fe_status prompt_of(fe_lm_encoder *e, const fe_lm_embed_options *o, const char **prompt) {
    const char *name = o->prompt_name ? o->prompt_name : e->stc.default_prompt;
    *prompt = NULL;
    if (!name || !*name) return FE_OK;
    if ((*prompt = fe_st_config_prompt(&e->stc, name))) return FE_OK;
    char have[512] = "";
    size_t k = 0;
    for (int i = 0; i < e->stc.n_prompts && k < sizeof have; i++)
        k += (size_t)snprintf(have + k, sizeof have - k, "%s%s", i ? ", " : "", e->stc.prompt_name[i]);
    return fe_error_set(&e->err, FE_E_INVALID, "the model has no prompt named \"%.60s\"; %s%s", name,
                        e->stc.n_prompts ? "its prompts are " : "it has none (its folder's "
                        "config_sentence_transformers.json names none): give no prompt name",
                        have);
}

/* EmbeddingGemma: the template's tokens around the pieces of scratch[0..len), the pieces cut
 * so that all fit in max_tokens (as Hugging Face truncates: the specials kept) */
static fe_status tokenize_gemma(fe_lm_encoder *e, size_t len, size_t index, int32_t **ids,
                                size_t *n, bool *cut) {
    fe_error err = {0};
    int32_t *body = NULL;
    size_t nb = 0;
    fe_status st = fe_tokenizer_encode_alloc(e->spm, e->scratch, len, false, false, &body, &nb, &err);
    if (st != FE_OK) return fe_error_set(&e->err, st, "text %zu: %s", index, err.message);
    const fe_spm_json_around *a = &e->around;
    size_t room = (size_t)e->max_tokens - (size_t)(a->n_before + a->n_after);
    *cut = nb > room;
    if (*cut) nb = room;
    *n = (size_t)a->n_before + nb + (size_t)a->n_after;
    *ids = fe_malloc(*n * sizeof **ids);
    if (!*ids) {
        fe_free(body);
        return fe_error_set(&e->err, FE_E_NOMEM, "out of memory for text %zu", index);
    }
    memcpy(*ids, a->before, (size_t)a->n_before * sizeof **ids);
    if (nb) memcpy(*ids + a->n_before, body, nb * sizeof **ids);
    memcpy(*ids + a->n_before + nb, a->after, (size_t)a->n_after * sizeof **ids);
    fe_free(body);
    return FE_OK;
}

/* The ids of prompt + text, cut at max_tokens; *cut when the text was longer */
static fe_status tokenize(fe_lm_encoder *e, const char *prompt, const char *text, size_t index,
                          int32_t **ids, size_t *n, bool *cut) {
    size_t pl = prompt ? strlen(prompt) : 0, tl = strlen(text);
    if (e->scratch_cap < pl + tl + 1) {
        char *p = fe_realloc(e->scratch, pl + tl + 1);
        if (!p) return fe_error_set(&e->err, FE_E_NOMEM, "out of memory for text %zu", index);
        e->scratch = p, e->scratch_cap = pl + tl + 1;
    }
    if (pl) memcpy(e->scratch, prompt, pl);
    memcpy(e->scratch + pl, text, tl);
    fe_error err = {0};
    if (e->gemma) return tokenize_gemma(e, pl + tl, index, ids, n, cut);
    fe_status st = fe_wordpiece_encode(e->tok, e->scratch, pl + tl, -1, ids, n, &err);
    if (st != FE_OK) return fe_error_set(&e->err, st, "text %zu: %s", index, err.message);
    *cut = (int64_t)*n > e->max_tokens;
    if (*cut) { /* keep [CLS] and the first pieces, end with [SEP] */
        (*ids)[e->max_tokens - 1] = (*ids)[*n - 1];
        *n = (size_t)e->max_tokens;
    }
    return FE_OK;
}

fe_status fe_lm_encoder_tokenize(fe_lm_encoder *e, const char *text, const fe_lm_embed_options *o,
                                 int32_t **ids, size_t *n) {
    if (!e) return FE_E_INVALID;
    fe_error_clear(&e->err);
    if (!text || !ids || !n) return fe_error_set(&e->err, FE_E_INVALID, "tokenize: give text, ids and n");
    fe_lm_embed_options d = fe_lm_embed_options_default();
    const char *prompt;
    bool cut;
    fe_status st = prompt_of(e, o ? o : &d, &prompt);
    return st == FE_OK ? tokenize(e, prompt, text, 0, ids, n, &cut) : st;
}

/* The ids input `index` runs as: the tokens of texts[index] (with the prompt), or a copy of
 * given[index] checked against the vocabulary and max_tokens. */
static fe_status input_ids(fe_lm_encoder *e, const char *prompt, const char *const *texts,
                           const int32_t *const *given, const size_t *given_n, size_t index,
                           int32_t **ids, size_t *len, bool *cut) {
    if (texts) {
        if (!texts[index]) return fe_error_set(&e->err, FE_E_INVALID, "embed: text %zu is NULL", index);
        return tokenize(e, prompt, texts[index], index, ids, len, cut);
    }
    const int64_t vocab = e->gemma ? e->eg.cfg.vocab : e->w.cfg.vocab;
    size_t n = given_n[index];
    *cut = false;
    if (!given[index] || n == 0 || (int64_t)n > e->max_tokens)
        return fe_error_set(&e->err, FE_E_INVALID, "embed: input %zu has %zu token ids; give 1..%lld "
                            "(the encoder's max_tokens)", index, n, (long long)e->max_tokens);
    for (size_t k = 0; k < n; k++)
        if (given[index][k] < 0 || given[index][k] >= vocab)
            return fe_error_set(&e->err, FE_E_INVALID, "embed: input %zu, id %zu is %d, outside the "
                                "vocabulary of %lld", index, k, given[index][k], (long long)vocab);
    if (!(*ids = fe_malloc(n * sizeof **ids)))
        return fe_error_set(&e->err, FE_E_NOMEM, "out of memory for input %zu", index);
    memcpy(*ids, given[index], n * sizeof **ids);
    *len = n;
    return FE_OK;
}

/* fe_lm_embed and fe_lm_embed_ids: texts (tokenized here) or given ids */
static fe_status embed_inputs(fe_lm_encoder *e, const char *const *texts, const int32_t *const *given,
                              const size_t *given_n, size_t n, const fe_lm_embed_options *opts,
                              float *out, int64_t *dim_out, fe_lm_embed_stats *stats) {
    if (!e) return FE_E_INVALID;
    fe_error_clear(&e->err);
    fe_lm_embed_options o = opts ? *opts : fe_lm_embed_options_default();
    const int64_t H = e->gemma ? fe_gemma3_encoder_dim(e->genc) : e->w.cfg.hidden;
    if ((n && ((!texts && (!given || !given_n)) || !out)))
        return fe_error_set(&e->err, FE_E_INVALID, "embed: give the inputs and room for their vectors");
    if (o.dim < 0 || o.dim > H)
        return fe_error_set(&e->err, FE_E_INVALID, "embed: dim %lld is outside 1..%lld (the model's "
                            "hidden size); give a value in that range, or 0 for all", (long long)o.dim,
                            (long long)H);
    if (o.pooling < FE_LM_POOLING_MODEL || o.pooling > FE_LM_POOLING_LAST || o.normalize < -1 || o.normalize > 1)
        return fe_error_set(&e->err, FE_E_INVALID, "embed: pooling %d or normalize %d is not one the "
                            "header lists", (int)o.pooling, o.normalize);
    const char *prompt;
    fe_status st = prompt_of(e, &o, &prompt);
    if (st != FE_OK) return st;
    const int64_t dim = o.dim ? o.dim : H;
    if (dim_out) *dim_out = dim;
    fe_pooling pool = o.pooling == FE_LM_POOLING_MODEL ? e->stc.pooling
                      : o.pooling == FE_LM_POOLING_CLS ? FE_POOLING_CLS
                      : o.pooling == FE_LM_POOLING_LAST ? FE_POOLING_LAST : FE_POOLING_MEAN;
    bool normalize = o.normalize < 0 ? e->stc.normalize : o.normalize == 1;
    if (e->gemma && pool != FE_POOLING_MEAN)
        return fe_error_set(&e->err, FE_E_UNSUPPORTED, "embed: EmbeddingGemma pools by mean before "
                            "its Dense head; give --pooling mean (or none: the model's)");
    const int slots = e->gemma ? fe_gemma3_encoder_slots(e->genc) : fe_encoder_slots(e->enc);
    int32_t *ids[FE_ENCODER_MAX_SLOTS] = {0};
    for (size_t first = 0; st == FE_OK && first < n; first += (size_t)slots) {
        int k = n - first < (size_t)slots ? (int)(n - first) : slots;
        int64_t lens[FE_ENCODER_MAX_SLOTS];
        uint64_t t0 = fe_time_ns();
        for (int s = 0; st == FE_OK && s < k; s++) {
            size_t len = 0;
            bool cut = false;
            st = input_ids(e, prompt, texts, given, given_n, first + (size_t)s, &ids[s], &len, &cut);
            lens[s] = (int64_t)len;
            if (st == FE_OK && stats) stats->tokens += lens[s], stats->truncated += cut;
        }
        const float *h = NULL;
        uint64_t t1 = fe_time_ns();
        if (stats) stats->tokenize_ns += t1 - t0;
        if (e->gemma) {
            const int64_t hidden = e->eg.cfg.hidden;
            if (st == FE_OK &&
                fe_gemma3_encoder_forward(e->genc, (const int32_t *const *)ids, lens, k, &h) != FE_OK)
                st = fe_error_set(&e->err, FE_E_BOUNDS, "%s", fe_gemma3_encoder_message(e->genc));
            if (stats) stats->graph_ns += fe_time_ns() - t1;
            for (int s = 0; st == FE_OK && s < k; s++) {
                if (fe_gemma3_encoder_embed(&e->eg, h, lens[s], dim, normalize,
                                            out + (first + (size_t)s) * (size_t)dim) != FE_OK)
                    st = fe_error_set(&e->err, FE_E_NOMEM, "embed: out of memory");
                h += lens[s] * hidden;
            }
            for (int s = 0; s < k; s++) fe_free(ids[s]), ids[s] = NULL;
            continue;
        }
        if (st == FE_OK && fe_encoder_forward(e->enc, (const int32_t *const *)ids, lens, k, &h) != FE_OK)
            st = fe_error_set(&e->err, FE_E_BOUNDS, "%s", fe_encoder_message(e->enc));
        if (stats) stats->graph_ns += fe_time_ns() - t1;
        for (int s = 0; st == FE_OK && s < k; s++) {
            fe_encoder_pool(h, lens[s], H, pool, dim, normalize, out + (first + (size_t)s) * (size_t)dim);
            h += lens[s] * H;
        }
        for (int s = 0; s < k; s++) fe_free(ids[s]), ids[s] = NULL;
    }
    return st;
}

fe_status fe_lm_embed(fe_lm_encoder *e, const char *const *texts, size_t n,
                      const fe_lm_embed_options *o, float *out, int64_t *dim, fe_lm_embed_stats *stats) {
    if (e && n && !texts) return fe_error_set(&e->err, FE_E_INVALID, "embed: give the texts");
    return embed_inputs(e, texts, NULL, NULL, n, o, out, dim, stats);
}

fe_status fe_lm_embed_ids(fe_lm_encoder *e, const int32_t *const *ids, const size_t *n_ids, size_t n,
                          const fe_lm_embed_options *o, float *out, int64_t *dim, fe_lm_embed_stats *stats) {
    if (e && n && (!ids || !n_ids)) return fe_error_set(&e->err, FE_E_INVALID, "embed: give the ids and their lengths");
    return embed_inputs(e, NULL, ids, n_ids, n, o, out, dim, stats);
}
