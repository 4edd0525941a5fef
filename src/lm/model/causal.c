/* lm/model/causal.c: the Llama-family causal LM as a graph (see causal.h). The body is written
 * plainly (RMSNorm, the products, RoPE, attention, the residual Add, SiLU and Mul, the Copy of
 * K and V into the caches) and the compiler's fold pass fuses it (the options' body). It
 * traces either version: with an input "tokens" (C) it is the prefill chunk (GEMMs over the
 * first n rows), without it the decode step (GEMVs, the token read from the carried tensor).
 * Both write V and the rotated K into the caches at [pos, pos + n) and attend over
 * [0, pos + n). */
#include "lm/model/causal.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/model/blocks.h"
#include "lm/model/dots.h"
#include "lm/model/gemma3.h"
#include "lm/model/rope_table.h"

struct fe_causal {
    fe_device *dev;
    const fe_llama_weights *w;
    fe_causal_options o;
    fe_prefill_dots dots; /* the prefill GEMMs' act_bf16 / act_int8 (o.prefill_dot resolved) */
    fe_graph *g;
    float *rope;        /* (max_seq_len, head_dim): cos then sin of the head_dim/2 angles */
    float *rope_local;  /* Gemma 3: the same for the local layers' base; else NULL */
    float *embed_scale; /* Gemma 3: (hidden) all sqrt(hidden), the embedding rows' factor */
    int32_t *chunk;     /* (C) the prefill input */
    int32_t *history;   /* (max_seq_len) the tokens now in the caches */
    int64_t n_history;
    int64_t reused;     /* rows the last prompt kept from the cache */
    int32_t last_token;
    int32_t host_token; /* (1) the input of the host-token decode step */
    float *last_logits; /* (vocab) */
    fe_error err;
};

fe_causal_options fe_causal_options_default(void) {
    return (fe_causal_options){.temperature = 0, .top_k = 0, .top_p = 1, .seed = 0};
}

const char *fe_causal_message(const fe_causal *m) { return m->err.message; }
int64_t fe_causal_position(const fe_causal *m) { return m->n_history; }
int64_t fe_causal_reused(const fe_causal *m) { return m->reused; }
int64_t fe_causal_max_seq_len(const fe_causal *m) { return m->o.max_seq_len; }
fe_graph *fe_causal_graph(fe_causal *m) { return m->g; }

static fe_status causal_body(fe_trace *t, const void *model) {
    const fe_causal *m = model;
    const fe_lm_config *c = &m->w->cfg;
    int64_t one = 1, hd = c->head_dim, S = m->o.max_seq_len;
    fe_val pos = fe_carried(t, "position");
    fe_h token = fe_carried_tensor(t, "token", FE_DTYPE_I32, 1, &one);
    bool decode = !fe_has_input(t, "tokens"), host_token = fe_has_input(t, "token");
    fe_block_mode mm = {.decode = decode,
                        .act_int8 = decode ? m->o.decode_dot != FE_DECODE_DOT_F32
                                           : m->dots.act_int8,
                        .eps = c->rms_eps, .bf16_dtypes = decode ? 0 : m->dots.bf16_dtypes,
                        .hand_fused = m->o.body == FE_BODY_HAND_FUSED};
    int64_t C = decode ? 1 : m->o.chunk;
    fe_val n = decode ? fe_const(1) : fe_scratchpad(t, "n");
    fe_h ids = host_token ? fe_input(t, "token") : decode ? token : fe_bound(t, fe_input(t, "tokens"), 0, n);
    fe_val end = fe_val_sum(t, pos, n);

    fe_h x = fe_take(t, fe_weight(t, "embed"), ids); /* (C, hidden), first n rows */
    fe_h rope = fe_weight(t, "rope");
    if (c->family == FE_LM_FAMILY_GEMMA3) {
        x = fe_block_apply(t, "RowwiseMul", x, fe_weight(t, "embed_scale"));
        fe_gemma3_io io = {.mm = mm, .pos = pos, .n = n, .end = end, .C = C, .S = S,
                           .kv_dtype = m->o.kv_dtype};
        fe_h rope_local = fe_weight(t, "rope_local");
        for (int64_t l = 0; l < c->n_layers; l++) {
            io.rope = fe_lm_layer_is_local(c, l) ? rope_local : rope;
            x = fe_gemma3_layer(t, c, &io, l, x);
        }
    }
    fe_setting form = FE_CHOICE("form", m->w->rope_interleaved ? "interleaved" : "rotate_half");
    int64_t qs[3] = {C, c->n_heads, hd}, ks[3] = {C, c->n_kv_heads, hd}, cs[3] = {S, c->n_kv_heads, hd};
    for (int64_t l = 0; c->family == FE_LM_FAMILY_LLAMA && l < c->n_layers; l++) {
        /* attention */
        fe_block_act h = fe_block_normed(t, mm, x, fe_block_layer_weight(t, l, "attn_norm"));
        fe_h wq = fe_block_layer_weight(t, l, "wq"), wk = fe_block_layer_weight(t, l, "wk");
        fe_h q = fe_reshape(t, fe_block_project(t, mm, FE_NO_TENSOR, h, wq), 3, qs);
        fe_h k = fe_reshape(t, fe_block_project(t, mm, FE_NO_TENSOR, h, wk), 3, ks);
        char path[64];
        snprintf(path, sizeof path, "layers.%lld.k_cache", (long long)l);
        fe_h kc = fe_state(t, path, m->o.kv_dtype, 3, cs);
        snprintf(path, sizeof path, "layers.%lld.v_cache", (long long)l);
        fe_h vc = fe_state(t, path, m->o.kv_dtype, 3, cs);
        /* the new rows of V and of K (rotated) are copied into the caches at [pos, pos + n)
         * (converted, where the caches are f16) */
        int64_t kv_flat[2] = {C, c->n_kv_heads * hd};
        fe_block_project(t, mm, fe_reshape(t, fe_window(t, vc, 0, pos, C, n), 2, kv_flat), h,
                         fe_block_layer_weight(t, l, "wv"));
        q = fe_block_rope(t, mm, FE_NO_TENSOR, q, rope, form, pos);
        fe_block_rope(t, mm, fe_window(t, kc, 0, pos, C, n), k, rope, form, pos);
        fe_h att_in[3] = {q, fe_bound(t, kc, 0, end), fe_bound(t, vc, 0, end)};
        fe_value_set off = {"q_offset", pos};
        fe_h att = fe_apply(t, "MHA", att_in, 3, NULL, 0, &off, 1);
        int64_t flat[2] = {C, c->n_heads * hd};
        fe_h wo = fe_block_layer_weight(t, l, "wo");
        x = fe_block_project_add(t, mm, fe_reshape(t, att, 2, flat), wo, x);
        /* feed-forward */
        h = fe_block_normed(t, mm, x, fe_block_layer_weight(t, l, "ffn_norm"));
        fe_h a = fe_block_gated(t, mm, h, fe_block_layer_weight(t, l, "w_gate"),
                                fe_block_layer_weight(t, l, "w_up"));
        x = fe_block_project_add(t, mm, a, fe_block_layer_weight(t, l, "w_down"), x);
    }
    /* the last row alone goes to the head */
    fe_h last = decode ? x : fe_window(t, x, 0, fe_val_add(n, -1), 1, fe_const(1));
    fe_h xn = fe_block_rmsnorm(t, last, fe_weight(t, "norm"), c->rms_eps);
    fe_h logits = fe_block_gemv(t, mm, FE_NO_TENSOR, fe_weight(t, "lm_head"), fe_block_plain(xn),
                                FE_NO_TENSOR, FE_NO_TENSOR, "none");
    fe_setting sp[4] = {{"temperature", m->o.temperature}, {"top_k", (double)m->o.top_k},
                        {"top_p", m->o.top_p}, {"seed", (double)m->o.seed}};
    fe_value_set draw = {"pos", end};
    fe_h next = fe_apply(t, "Sample", &logits, 1, sp, 4, &draw, 1);
    fe_output(t, logits);
    fe_output(t, next);
    fe_carry_tensor(t, "token", next);
    return fe_carry(t, "position", end);
}

static fe_status set_weights(fe_causal *m) {
    const fe_llama_weights *w = m->w;
    fe_status st = fe_graph_set_weight(m->g, "embed", w->embed);
    if (st == FE_OK) st = fe_graph_set_weight(m->g, "norm", w->norm);
    if (st == FE_OK) st = fe_graph_set_weight(m->g, "lm_head", w->lm_head);
    int64_t rs[2] = {m->o.max_seq_len, w->cfg.head_dim};
    if (st == FE_OK) st = fe_graph_set_weight(m->g, "rope", fe_tensor_contiguous(m->rope, FE_DTYPE_F32, 2, rs));
    if (st == FE_OK && m->rope_local)
        st = fe_graph_set_weight(m->g, "rope_local", fe_tensor_contiguous(m->rope_local, FE_DTYPE_F32, 2, rs));
    int64_t hidden = w->cfg.hidden;
    if (st == FE_OK && m->embed_scale)
        st = fe_graph_set_weight(m->g, "embed_scale", fe_tensor_contiguous(m->embed_scale, FE_DTYPE_F32, 1, &hidden));
    for (int64_t l = 0; st == FE_OK && l < w->cfg.n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        struct { const char *name; const fe_tensor *t; } ws[] = {
            {"attn_norm", &L->attn_norm}, {"wq", &L->wq}, {"wk", &L->wk}, {"wv", &L->wv},
            {"wo", &L->wo}, {"ffn_norm", &L->ffn_norm}, {"w_gate", &L->w_gate},
            {"w_up", &L->w_up}, {"w_down", &L->w_down}, {"q_norm", &L->q_norm},
            {"k_norm", &L->k_norm}, {"post_attn_norm", &L->post_attn_norm},
            {"post_ffn_norm", &L->post_ffn_norm},
        };
        for (size_t i = 0; st == FE_OK && i < sizeof ws / sizeof ws[0]; i++) {
            if (!ws[i].t->rank) continue; /* the Gemma norms of a Llama model */
            char path[64];
            snprintf(path, sizeof path, "layers.%lld.%s", (long long)l, ws[i].name);
            st = fe_graph_set_weight(m->g, path, *ws[i].t);
        }
    }
    return st == FE_OK ? FE_OK : fe_error_set(&m->err, st, "%s", fe_graph_message(m->g));
}

static fe_status compile_versions(fe_causal *m) {
    fe_compile_options co = fe_compile_options_default();
    co.packaging = m->o.packaging;
    co.verbose = m->o.verbose;
    co.profile = m->o.profile;
    co.layouts = m->o.layouts;
    fe_block_fold_options(m->o.body, m->o.fold_price, m->o.fold_user, &co);
    int64_t C = m->o.chunk;
    fe_named_tensor prefill = {"tokens", fe_tensor_contiguous(m->chunk, FE_DTYPE_I32, 1, &C)};
    fe_status st = fe_graph_compile(m->g, &prefill, 1, &co);
    if (st == FE_OK) st = fe_graph_compile(m->g, NULL, 0, &co);
    return st == FE_OK ? FE_OK : fe_error_set(&m->err, st, "%s", fe_graph_message(m->g));
}

fe_status fe_causal_create(fe_device *dev, const fe_llama_weights *w, const fe_causal_options *o,
                           fe_causal **out, fe_error *err) {
    *out = NULL;
    fe_causal *m = fe_calloc(1, sizeof *m);
    if (!m) return fe_error_set(err, FE_E_NOMEM, "causal LM: out of memory");
    m->dev = dev;
    m->w = w;
    m->o = o ? *o : fe_causal_options_default();
    const fe_lm_config *c = &w->cfg;
    if (m->o.max_seq_len <= 0) m->o.max_seq_len = c->max_context > 0 && c->max_context < 4096 ? c->max_context : 4096;
    /* a 512-token prompt in one call, as llama-bench's ubatch: each call reads every weight
     * and packs its int8 panels once, so 256 rows a call did it twice (perf, one worker: the
     * packing's share of a 512-token prompt 18 % -> 12.5 % for Llama 1B Q8_0, 10 % -> 6 % for
     * SmolLM2), for twice the graph scratch (26 -> 52 MiB and 5.6 -> 10.1 MiB) */
    if (m->o.chunk <= 0) m->o.chunk = 512;
    if (m->o.chunk > m->o.max_seq_len) m->o.chunk = m->o.max_seq_len;
    if (m->o.kv_dtype != FE_DTYPE_F32 && m->o.kv_dtype != FE_DTYPE_F16) {
        fe_dtype kvt = m->o.kv_dtype;
        fe_causal_destroy(m);
        return fe_error_set(err, FE_E_DTYPE, "a KV cache in %s: the cache keeps f32 or f16",
                            kvt < FE_DTYPE_COUNT ? fe_dtype_info(kvt)->name : "an unknown dtype");
    }
    const fe_status dots = fe_prefill_dots_resolve(m->o.prefill_dot, w, dev, &m->dots, err);
    if (dots != FE_OK) {
        fe_causal_destroy(m);
        return dots;
    }
    fe_status st = FE_OK;
    if (c->max_context > 0 && m->o.max_seq_len > c->max_context)
        st = fe_error_set(err, FE_E_INVALID, "max_seq_len %lld exceeds the model's context of %lld; "
                          "give at most %lld", (long long)m->o.max_seq_len, (long long)c->max_context,
                          (long long)c->max_context);
    m->rope = fe_aligned_alloc(64, (size_t)(m->o.max_seq_len * c->head_dim) * sizeof(float));
    m->chunk = fe_calloc((size_t)m->o.chunk, sizeof *m->chunk);
    m->history = fe_calloc((size_t)m->o.max_seq_len, sizeof *m->history);
    m->last_logits = fe_calloc((size_t)c->vocab, sizeof(float));
    if (st == FE_OK && (!m->rope || !m->chunk || !m->history || !m->last_logits))
        st = fe_error_set(err, FE_E_NOMEM, "causal LM: out of memory");
    if (st == FE_OK) st = fe_lm_rope_table(m->rope, m->o.max_seq_len, w, "causal LM", err);
    if (st == FE_OK && c->family == FE_LM_FAMILY_GEMMA3) {
        m->rope_local = fe_aligned_alloc(64, (size_t)(m->o.max_seq_len * c->head_dim) * sizeof(float));
        m->embed_scale = fe_malloc((size_t)c->hidden * sizeof(float));
        if (!m->rope_local || !m->embed_scale) st = fe_error_set(err, FE_E_NOMEM, "causal LM: out of memory");
        for (int64_t i = 0; st == FE_OK && i < c->hidden; i++) m->embed_scale[i] = (float)c->embed_scale;
        if (st == FE_OK) st = fe_rope_table(m->rope_local, m->o.max_seq_len, c->head_dim, c->rope_theta_local, NULL);
        if (st != FE_OK && err && err->status == FE_OK)
            fe_error_set(err, st, "causal LM: cannot build the local RoPE table (%s)", fe_status_str(st));
    }
    if (st == FE_OK) st = fe_graph_create(dev, "causal", causal_body, m, &m->g, err);
    if (st == FE_OK) st = set_weights(m);
    if (st == FE_OK) st = compile_versions(m);
    if (st != FE_OK) {
        if (err && m->err.status != FE_OK) *err = m->err;
        fe_causal_destroy(m);
        return st;
    }
    *out = m;
    return FE_OK;
}

void fe_causal_destroy(fe_causal *m) {
    if (!m) return;
    fe_graph_destroy(m->g);
    fe_free(m->rope);
    fe_free(m->rope_local);
    fe_free(m->embed_scale);
    fe_free(m->chunk);
    fe_free(m->history);
    fe_free(m->last_logits);
    fe_free(m);
}

/* One prefill call: rows tokens[0..n) at position pos (n <= chunk). */
static fe_status prefill_call(fe_causal *m, const int32_t *tokens, int64_t n, int64_t pos) {
    memcpy(m->chunk, tokens, (size_t)n * sizeof *tokens);
    int64_t C = m->o.chunk;
    fe_named_tensor in = {"tokens", fe_tensor_contiguous(m->chunk, FE_DTYPE_I32, 1, &C)};
    fe_word words[2] = {{"n", n}, {"position", pos}};
    fe_tensor outs[2];
    int n_out = 0;
    fe_status st = fe_graph_call(m->g, &in, 1, words, 2, outs, 2, &n_out);
    if (st != FE_OK) return fe_error_set(&m->err, st, "%s", fe_graph_message(m->g));
    memcpy(m->last_logits, outs[0].data, (size_t)m->w->cfg.vocab * sizeof(float));
    m->last_token = *(const int32_t *)outs[1].data;
    return FE_OK;
}

/* the cached chunks before the first token that differs (the last row must run again for its
 * logits) */
int64_t fe_causal_reusable(const fe_causal *m, const int32_t *tokens, int64_t n) {
    if (n < 1) return 0;
    int64_t same = 0;
    while (same < n && same < m->n_history && tokens[same] == m->history[same]) same++;
    if (same == n) same = n - 1;
    return same / m->o.chunk * m->o.chunk;
}

fe_status fe_causal_prompt(fe_causal *m, const int32_t *tokens, int64_t n, const float **logits,
                           int32_t *next) {
    fe_error_clear(&m->err);
    if (n < 1 || n > m->o.max_seq_len)
        return fe_error_set(&m->err, FE_E_BOUNDS, "a prompt of %lld tokens; give 1..%lld (max_seq_len)",
                            (long long)n, (long long)m->o.max_seq_len);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->w->cfg.vocab)
            return fe_error_set(&m->err, FE_E_BOUNDS, "token %d at %lld is outside the vocabulary of "
                                "%lld", tokens[i], (long long)i, (long long)m->w->cfg.vocab);
    const int64_t start = fe_causal_reusable(m, tokens, n);
    m->reused = start;
    for (int64_t pos = start; pos < n; pos += m->o.chunk) {
        int64_t rows = n - pos < m->o.chunk ? n - pos : m->o.chunk;
        fe_status st = prefill_call(m, tokens + pos, rows, pos);
        if (st != FE_OK) return st;
    }
    memcpy(m->history, tokens, (size_t)n * sizeof *tokens);
    m->n_history = n;
    if (logits) *logits = m->last_logits;
    if (next) *next = m->last_token;
    return FE_OK;
}

typedef struct loop_ctx {
    fe_causal *m;
    fe_token_fn fn;
    void *user;
} loop_ctx;

static int on_step(void *user, int step, const fe_tensor *outs, int n) {
    loop_ctx *c = user;
    (void)step, (void)n;
    fe_causal *m = c->m;
    int32_t tok = *(const int32_t *)outs[1].data;
    /* the token just fed is now in the caches */
    if (m->n_history < m->o.max_seq_len) m->history[m->n_history++] = m->last_token;
    m->last_token = tok;
    return c->fn ? c->fn(c->user, tok, outs[0].data) : 0;
}

fe_status fe_causal_decode(fe_causal *m, int n, fe_token_fn fn, void *user) {
    fe_error_clear(&m->err);
    if (m->n_history == 0)
        return fe_error_set(&m->err, FE_E_STATE, "decode needs a prompt first (fe_causal_prompt)");
    if (m->n_history + n > m->o.max_seq_len)
        return fe_error_set(&m->err, FE_E_BOUNDS, "%lld tokens in the cache plus %d more pass "
                            "max_seq_len %lld; give a larger --max-seq-len or fewer tokens",
                            (long long)m->n_history, n, (long long)m->o.max_seq_len);
    loop_ctx c = {m, fn, user};
    fe_word pos = {"position", m->n_history};
    fe_status st = fe_graph_loop(m->g, NULL, 0, &pos, 1, n, on_step, &c);
    return st == FE_OK ? FE_OK : fe_error_set(&m->err, st, "%s", fe_graph_message(m->g));
}

fe_status fe_causal_step(fe_causal *m, int32_t token, const float **logits, int32_t *next) {
    fe_error_clear(&m->err);
    if (m->n_history == 0)
        return fe_error_set(&m->err, FE_E_STATE, "a step needs a prompt first (fe_causal_prompt)");
    if (m->n_history >= m->o.max_seq_len)
        return fe_error_set(&m->err, FE_E_BOUNDS, "the KV cache is full (%lld rows, max_seq_len); "
                            "give a larger max_seq_len", (long long)m->o.max_seq_len);
    if (token < 0 || token >= m->w->cfg.vocab)
        return fe_error_set(&m->err, FE_E_BOUNDS, "token %d is outside the vocabulary of %lld",
                            token, (long long)m->w->cfg.vocab);
    m->host_token = token;
    int64_t one = 1;
    fe_named_tensor in = {"token", fe_tensor_contiguous(&m->host_token, FE_DTYPE_I32, 1, &one)};
    fe_word pos = {"position", m->n_history};
    fe_tensor outs[2];
    int n_out = 0;
    fe_status st = fe_graph_call(m->g, &in, 1, &pos, 1, outs, 2, &n_out);
    if (st != FE_OK) return fe_error_set(&m->err, st, "%s", fe_graph_message(m->g));
    memcpy(m->last_logits, outs[0].data, (size_t)m->w->cfg.vocab * sizeof(float));
    m->last_token = *(const int32_t *)outs[1].data;
    m->history[m->n_history++] = token;
    if (logits) *logits = m->last_logits;
    if (next) *next = m->last_token;
    return FE_OK;
}

fe_status fe_causal_teacher_forced(fe_causal *m, const int32_t *tokens, int64_t n, float *out) {
    fe_error_clear(&m->err);
    if (n < 1 || n > m->o.max_seq_len)
        return fe_error_set(&m->err, FE_E_BOUNDS, "%lld tokens; give 1..%lld", (long long)n,
                            (long long)m->o.max_seq_len);
    int64_t V = m->w->cfg.vocab;
    for (int64_t i = 0; i < n; i++) {
        fe_status st = prefill_call(m, tokens + i, 1, i);
        if (st != FE_OK) return st;
        memcpy(out + i * V, m->last_logits, (size_t)V * sizeof(float));
        m->history[i] = tokens[i];
    }
    m->n_history = n;
    return FE_OK;
}
