/* lm/model/batch.c: the causal LM over many sequences (batch.h). The prefill chunk repeats
 * causal.c's prefill steps over the slot's cache (a per-call slot index windows the batched
 * cache), so its numbers are the single-sequence model's; the decode step multiplies B rows
 * at once, writes every row's key and value into its slot in one KVWrite step and attends
 * every row against its own slot in one SlotMHA step (the rows' slots and positions are
 * inputs of the call). */
#include "lm/model/batch.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/model/blocks.h"
#include "lm/model/causal.h" /* its dot-product choices (fe_causal_options) */
#include "lm/model/dots.h"
#include "lm/model/rope_table.h"

struct fe_batch {
    fe_device *dev;
    const fe_llama_weights *w;
    fe_batch_options o;
    fe_prefill_dots dots; /* the prefill's (lm/model/dots.h) */
    bool decode_int8;
    fe_graph *g;
    float *rope;        /* (max_seq_len, head_dim) */
    int32_t *chunk;     /* (C) the prefill input */
    int32_t *rows;      /* (slots) the decode inputs: tokens, */
    int32_t *slot_of;   /* (slots) each row's slot */
    int32_t *pos_of;    /* (slots) and position */
    int32_t **history;  /* per slot (max_seq_len): the tokens in its cache */
    int64_t *n_history;
    float *logits;      /* (slots, vocab) */
    fe_error err;
};

const char *fe_batch_message(const fe_batch *b) { return b->err.message; }
int64_t fe_batch_position(const fe_batch *b, int slot) { return b->n_history[slot]; }
/* The first row a prefill of tokens[0..n) runs: the chunk holding the first token that
 * differs from the cache (the last row always runs again, for its logits). */
static int64_t first_row(const fe_batch *b, int slot, const int32_t *tokens, int64_t n) {
    const int32_t *hist = b->history[slot];
    int64_t same = 0;
    while (same < n && same < b->n_history[slot] && tokens[same] == hist[same]) same++;
    if (same == n) same = n - 1;
    return same / b->o.chunk * b->o.chunk;
}

int64_t fe_batch_reusable(const fe_batch *b, int slot, const int32_t *tokens, int64_t n) {
    return slot >= 0 && slot < b->o.slots && n > 0 ? first_row(b, slot, tokens, n) : 0;
}
int64_t fe_batch_max_seq_len(const fe_batch *b) { return b->o.max_seq_len; }
fe_graph *fe_batch_graph(fe_batch *b) { return b->g; }

/* ---- the body, from lm/model/blocks.h: GEMM forms (the mode's decode is off), and the
 * GEMVs of layer_gemv named as blocks ---- */

static fe_h lw(fe_trace *t, int64_t l, const char *name) {
    return fe_block_layer_weight(t, l, name);
}

/* y = a W^T, a GEMM over the rows */
static fe_h project(fe_trace *t, fe_block_mode mm, fe_h dst, fe_h a, fe_h w) {
    return fe_block_project(t, mm, dst, fe_block_plain(a), w);
}

/* y = epilogue(W x) over the rows, x normalised in the prologue when norm is a tensor */
static fe_h gemv(fe_trace *t, fe_block_mode mm, fe_h w, fe_h x, fe_h norm, fe_h up, fe_h res,
                 const char *epilogue) {
    return fe_block_gemv(t, mm, FE_NO_TENSOR, w, (fe_block_act){x, norm}, up, res, epilogue);
}

/* The feed-forward half of a layer over every row, and the residual. */
static fe_h ffn(fe_trace *t, fe_block_mode mm, int64_t l, fe_h x) {
    fe_h h = fe_block_rmsnorm(t, x, lw(t, l, "ffn_norm"), mm.eps);
    fe_h a = fe_block_gated(t, mm, fe_block_plain(h), lw(t, l, "w_gate"), lw(t, l, "w_up"));
    return fe_block_project_add(t, mm, a, lw(t, l, "w_down"), x);
}

/* Layer l's KV cache: (2N, max_seq_len, n_kv_heads, head_dim) over N = slots + 1 (the last
 * one the sink), slot s's keys at [s] and its values at [N + s] (ops/mha/mha.h). */
static fe_h layer_cache(fe_trace *t, const fe_batch *b, int64_t l) {
    const fe_lm_config *c = &b->w->cfg;
    char path[64];
    snprintf(path, sizeof path, "layers.%lld.kv_cache", (long long)l);
    int64_t all[4] = {2 * (b->o.slots + 1), b->o.max_seq_len, c->n_kv_heads, c->head_dim};
    return fe_state(t, path, b->o.kv_dtype, 4, all);
}

/* Slot `slot`'s K or V cache of layer l: (max_seq_len, n_kv_heads, head_dim). */
static fe_h slot_cache(fe_trace *t, const fe_batch *b, int64_t l, const char *kv, fe_val slot) {
    const fe_lm_config *c = &b->w->cfg;
    int64_t one[3] = {b->o.max_seq_len, c->n_kv_heads, c->head_dim};
    fe_val at = kv[0] == 'v' ? fe_val_add(slot, b->o.slots + 1) : slot;
    return fe_reshape(t, fe_at(t, layer_cache(t, b, l), 0, at, fe_const(1)), 3, one);
}

/* The prefill chunk: causal.c's prefill steps, against slot's cache. */
static fe_status prefill_body(fe_trace *t, const fe_batch *b) {
    const fe_lm_config *c = &b->w->cfg;
    int64_t hd = c->head_dim, C = b->o.chunk;
    fe_block_mode mm = {.act_int8 = b->dots.act_int8,
                        .eps = c->rms_eps, .bf16_dtypes = b->dots.bf16_dtypes,
                        .hand_fused = b->o.body == FE_BODY_HAND_FUSED};
    fe_val slot = fe_scratchpad(t, "slot"), pos = fe_scratchpad(t, "position");
    fe_val n = fe_scratchpad(t, "n"), end = fe_val_sum(t, pos, n);
    fe_h x = fe_take(t, fe_weight(t, "embed"), fe_bound(t, fe_input(t, "tokens"), 0, n));
    fe_h rope = fe_weight(t, "rope");
    fe_setting form = FE_CHOICE("form", b->w->rope_interleaved ? "interleaved" : "rotate_half");
    int64_t qs[3] = {C, c->n_heads, hd}, ks[3] = {C, c->n_kv_heads, hd};
    for (int64_t l = 0; l < c->n_layers; l++) {
        fe_h h = fe_block_rmsnorm(t, x, lw(t, l, "attn_norm"), mm.eps);
        fe_h q = fe_reshape(t, project(t, mm, FE_NO_TENSOR, h, lw(t, l, "wq")), 3, qs);
        fe_h k = fe_reshape(t, project(t, mm, FE_NO_TENSOR, h, lw(t, l, "wk")), 3, ks);
        fe_h kc = slot_cache(t, b, l, "k", slot), vc = slot_cache(t, b, l, "v", slot);
        int64_t kv_flat[2] = {C, c->n_kv_heads * hd};
        project(t, mm, fe_reshape(t, fe_window(t, vc, 0, pos, C, n), 2, kv_flat), h, lw(t, l, "wv"));
        q = fe_block_rope(t, mm, FE_NO_TENSOR, q, rope, form, pos);
        fe_block_rope(t, mm, fe_window(t, kc, 0, pos, C, n), k, rope, form, pos);
        fe_h att_in[3] = {q, fe_bound(t, kc, 0, end), fe_bound(t, vc, 0, end)};
        fe_value_set off = {"q_offset", pos};
        fe_h att = fe_apply(t, "MHA", att_in, 3, NULL, 0, &off, 1);
        int64_t flat[2] = {C, c->n_heads * hd};
        x = fe_block_project_add(t, mm, fe_reshape(t, att, 2, flat), lw(t, l, "wo"), x);
        x = ffn(t, mm, l, x);
    }
    /* the last row alone goes to the head, through causal.c's GEMV (same settings) */
    fe_h last = fe_window(t, x, 0, fe_val_add(n, -1), 1, fe_const(1));
    fe_h xn = fe_block_rmsnorm(t, last, fe_weight(t, "norm"), c->rms_eps);
    fe_h none = FE_NO_TENSOR;
    fe_output(t, gemv(t, mm, fe_weight(t, "lm_head"), xn, none, none, none, "none"));
    return fe_trace_status(t);
}

/* What every decode layer reads: the rows' slots and positions (inputs, (B) each), the RoPE
 * table and its form. */
typedef struct rows_ctx {
    const fe_batch *b;
    int64_t B;
    fe_h slots, positions, rope;
    fe_setting form;
} rows_ctx;

/* Every row's key (turned by RoPE) and value into its slot at its position, one KVWrite step;
 * every row's query turned and attending its slot's keys up to it, one SlotMHA step. Per row
 * the arithmetic of the single-sequence step's RoPE, KV write and MHA of that row.
 * q (B, heads, hd), k, v (B, kv, hd); returns the attention (B, heads, hd). */
static fe_h attend_rows(fe_trace *t, const rows_ctx *rc, int64_t l, fe_h q, fe_h k, fe_h v) {
    fe_h kv = layer_cache(t, rc->b, l);
    fe_h write_in[5] = {k, v, rc->slots, rc->positions, rc->rope};
    fe_apply_into(t, kv, "KVWrite", write_in, 5, &rc->form, 1, NULL, 0);
    fe_h att_in[5] = {q, kv, rc->slots, rc->positions, rc->rope};
    return fe_apply(t, "SlotMHA", att_in, 5, &rc->form, 1, NULL, 0);
}

/* One layer over B rows as causal.c's decode step does it: GEMVs over the rows (the fold
 * pass puts the RMSNorm in their prologue and the epilogues in). Per row the same arithmetic
 * as a decode step of one row. */
static fe_h layer_gemv(fe_trace *t, const rows_ctx *rc, fe_block_mode mm, int64_t l, fe_h x) {
    const fe_lm_config *c = &rc->b->w->cfg;
    int64_t B = rc->B, hd = c->head_dim;
    int64_t qs[3] = {B, c->n_heads, hd}, ks[3] = {B, c->n_kv_heads, hd}, flat[2] = {B, c->n_heads * hd};
    mm.decode = true;
    fe_h none = FE_NO_TENSOR;
    fe_block_act h = fe_block_normed(t, mm, x, lw(t, l, "attn_norm"));
    fe_h q = fe_reshape(t, fe_block_project(t, mm, none, h, lw(t, l, "wq")), 3, qs);
    fe_h k = fe_reshape(t, fe_block_project(t, mm, none, h, lw(t, l, "wk")), 3, ks);
    fe_h v = fe_reshape(t, fe_block_project(t, mm, none, h, lw(t, l, "wv")), 3, ks);
    fe_h att = attend_rows(t, rc, l, q, k, v);
    x = fe_block_project_add(t, mm, fe_reshape(t, att, 2, flat), lw(t, l, "wo"), x);
    h = fe_block_normed(t, mm, x, lw(t, l, "ffn_norm"));
    fe_h a = fe_block_gated(t, mm, h, lw(t, l, "w_gate"), lw(t, l, "w_up"));
    return fe_block_project_add(t, mm, a, lw(t, l, "w_down"), x);
}

/* The decode step: B rows (the inputs' length: one version per compiled size), row r the
 * token rows[r] in slot slots[r] at position positions[r]. Its products are GEMVs over the
 * rows, each weight block read and decoded once for up to 8 rows (GEMV's batches_per_pass),
 * its KV write and attention one step each for all rows; per row bit-identical to the
 * single-sequence decode step. */
static fe_status decode_body(fe_trace *t, const fe_batch *b) {
    const fe_lm_config *c = &b->w->cfg;
    int64_t shape[FE_MAX_RANK];
    fe_shape(t, fe_input(t, "rows"), shape);
    rows_ctx rc = {.b = b, .B = shape[0], .slots = fe_input(t, "slots"),
                   .positions = fe_input(t, "positions"), .rope = fe_weight(t, "rope"),
                   .form = FE_CHOICE("form", b->w->rope_interleaved ? "interleaved" : "rotate_half")};
    fe_block_mode mm = {.act_int8 = b->decode_int8, .eps = c->rms_eps,
                        .hand_fused = b->o.body == FE_BODY_HAND_FUSED};
    fe_h x = fe_take(t, fe_weight(t, "embed"), fe_input(t, "rows")); /* (B, hidden) */
    for (int64_t l = 0; l < c->n_layers; l++)
        x = layer_gemv(t, &rc, mm, l, x);
    fe_h xn = fe_block_rmsnorm(t, x, fe_weight(t, "norm"), c->rms_eps);
    fe_h none = FE_NO_TENSOR;
    fe_h head = fe_weight(t, "lm_head");
    fe_output(t, gemv(t, mm, head, xn, none, none, none, "none")); /* (B, vocab) */
    return fe_trace_status(t);
}

static fe_status batch_body(fe_trace *t, const void *model) {
    const fe_batch *b = model;
    return fe_has_input(t, "tokens") ? prefill_body(t, b) : decode_body(t, b);
}

/* ---- building ---- */

static fe_status set_weights(fe_batch *b) {
    const fe_llama_weights *w = b->w;
    fe_status st = fe_graph_set_weight(b->g, "embed", w->embed);
    if (st == FE_OK) st = fe_graph_set_weight(b->g, "norm", w->norm);
    if (st == FE_OK) st = fe_graph_set_weight(b->g, "lm_head", w->lm_head);
    int64_t rs[2] = {b->o.max_seq_len, w->cfg.head_dim};
    if (st == FE_OK) st = fe_graph_set_weight(b->g, "rope", fe_tensor_contiguous(b->rope, FE_DTYPE_F32, 2, rs));
    for (int64_t l = 0; st == FE_OK && l < w->cfg.n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        struct { const char *name; const fe_tensor *t; } ws[] = {
            {"attn_norm", &L->attn_norm}, {"wq", &L->wq}, {"wk", &L->wk}, {"wv", &L->wv},
            {"wo", &L->wo}, {"ffn_norm", &L->ffn_norm}, {"w_gate", &L->w_gate},
            {"w_up", &L->w_up}, {"w_down", &L->w_down},
        };
        for (size_t i = 0; st == FE_OK && i < sizeof ws / sizeof ws[0]; i++) {
            char path[64];
            snprintf(path, sizeof path, "layers.%lld.%s", (long long)l, ws[i].name);
            st = fe_graph_set_weight(b->g, path, *ws[i].t);
        }
    }
    return st == FE_OK ? FE_OK : fe_error_set(&b->err, st, "%s", fe_graph_message(b->g));
}

/* The decode step's inputs for B rows: tokens, slots, positions. */
static void decode_inputs(fe_batch *b, int64_t B, fe_named_tensor in[3]) {
    in[0] = (fe_named_tensor){"rows", fe_tensor_contiguous(b->rows, FE_DTYPE_I32, 1, &B)};
    in[1] = (fe_named_tensor){"slots", fe_tensor_contiguous(b->slot_of, FE_DTYPE_I32, 1, &B)};
    in[2] = (fe_named_tensor){"positions", fe_tensor_contiguous(b->pos_of, FE_DTYPE_I32, 1, &B)};
}

static fe_status compile_versions(fe_batch *b) {
    fe_compile_options co = fe_compile_options_default();
    co.packaging = b->o.packaging;
    co.profile = b->o.profile;
    co.layouts = b->o.layouts;
    fe_block_fold_options(b->o.body, NULL, NULL, &co);
    int64_t C = b->o.chunk;
    fe_named_tensor prefill = {"tokens", fe_tensor_contiguous(b->chunk, FE_DTYPE_I32, 1, &C)};
    fe_status st = fe_graph_compile(b->g, &prefill, 1, &co);
    /* decode versions of 1, 2, 4 ... rows and of every slot: a step with few sequences
     * pays for those, not for every slot */
    for (int64_t B = 1; st == FE_OK; B = B * 2 < b->o.slots ? B * 2 : b->o.slots) {
        fe_named_tensor decode[3];
        decode_inputs(b, B, decode);
        st = fe_graph_compile(b->g, decode, 3, &co);
        if (B == b->o.slots) break;
    }
    return st == FE_OK ? FE_OK : fe_error_set(&b->err, st, "%s", fe_graph_message(b->g));
}

/* The dot products as fe_causal_create resolves them. */
static fe_status resolve_dots(fe_batch *b, fe_device *dev, fe_error *err) {
    b->decode_int8 = b->o.decode_dot != FE_DECODE_DOT_F32;
    return fe_prefill_dots_resolve(b->o.prefill_dot, b->w, dev, &b->dots, err);
}

fe_status fe_batch_create(fe_device *dev, const fe_llama_weights *w, const fe_batch_options *o,
                          fe_batch **out, fe_error *err) {
    *out = NULL;
    const fe_lm_config *c = &w->cfg;
    if (o->slots < 1 || o->slots > FE_BATCH_MAX_ROWS)
        return fe_error_set(err, FE_E_INVALID, "batch: %d slots; give 1..%d", o->slots,
                            FE_BATCH_MAX_ROWS);
    if (o->max_seq_len < 1 || (c->max_context > 0 && o->max_seq_len > c->max_context))
        return fe_error_set(err, FE_E_INVALID, "batch: max_seq_len %lld; give 1..%lld (the model's "
                            "context)", (long long)o->max_seq_len, (long long)c->max_context);
    if (o->kv_dtype != FE_DTYPE_F32 && o->kv_dtype != FE_DTYPE_F16)
        return fe_error_set(err, FE_E_DTYPE, "batch: a KV cache in %s; the cache keeps f32 or f16",
                            o->kv_dtype < FE_DTYPE_COUNT ? fe_dtype_info(o->kv_dtype)->name
                                                         : "an unknown dtype");
    fe_batch *b = fe_calloc(1, sizeof *b);
    if (!b) return fe_error_set(err, FE_E_NOMEM, "batch: out of memory");
    b->dev = dev;
    b->w = w;
    b->o = *o;
    if (b->o.chunk <= 0) b->o.chunk = 256;
    if (b->o.chunk > b->o.max_seq_len) b->o.chunk = b->o.max_seq_len;
    fe_status st = resolve_dots(b, dev, err);
    b->rope = fe_aligned_alloc(64, (size_t)(b->o.max_seq_len * c->head_dim) * sizeof(float));
    b->chunk = fe_calloc((size_t)b->o.chunk, sizeof *b->chunk);
    b->rows = fe_calloc((size_t)o->slots, sizeof *b->rows);
    b->slot_of = fe_calloc((size_t)o->slots, sizeof *b->slot_of);
    b->pos_of = fe_calloc((size_t)o->slots, sizeof *b->pos_of);
    b->history = fe_calloc((size_t)o->slots, sizeof *b->history);
    b->n_history = fe_calloc((size_t)o->slots, sizeof *b->n_history);
    b->logits = fe_calloc((size_t)(o->slots * c->vocab), sizeof(float));
    bool ok = b->rope && b->chunk && b->rows && b->slot_of && b->pos_of && b->history &&
              b->n_history && b->logits;
    for (int i = 0; ok && i < o->slots; i++)
        ok = (b->history[i] = fe_calloc((size_t)b->o.max_seq_len, sizeof **b->history)) != NULL;
    if (st == FE_OK && !ok) st = fe_error_set(err, FE_E_NOMEM, "batch: out of memory");
    if (st == FE_OK) st = fe_lm_rope_table(b->rope, b->o.max_seq_len, b->w, "batch", err);
    if (st == FE_OK) st = fe_graph_create(dev, "batch", batch_body, b, &b->g, err);
    if (st == FE_OK) st = set_weights(b);
    if (st == FE_OK) st = compile_versions(b);
    if (st != FE_OK) {
        if (err && b->err.status != FE_OK) *err = b->err;
        fe_batch_destroy(b);
        return st;
    }
    *out = b;
    return FE_OK;
}

void fe_batch_destroy(fe_batch *b) {
    if (!b) return;
    fe_graph_destroy(b->g);
    if (b->history)
        for (int i = 0; i < b->o.slots; i++) fe_free(b->history[i]);
    fe_free(b->history);
    fe_free(b->n_history);
    fe_free(b->rope);
    fe_free(b->chunk);
    fe_free(b->rows);
    fe_free(b->slot_of);
    fe_free(b->pos_of);
    fe_free(b->logits);
    fe_free(b);
}

/* ---- calling ---- */

fe_status fe_batch_prefill(fe_batch *b, int slot, const int32_t *tokens, int64_t n,
                           int64_t max_chunks, bool *done, const float **logits) {
    fe_error_clear(&b->err);
    *done = false;
    if (slot < 0 || slot >= b->o.slots)
        return fe_error_set(&b->err, FE_E_BOUNDS, "slot %d; give 0..%d", slot, b->o.slots - 1);
    if (n < 1 || n > b->o.max_seq_len)
        return fe_error_set(&b->err, FE_E_BOUNDS, "a prompt of %lld tokens; give 1..%lld (max_seq_len)",
                            (long long)n, (long long)b->o.max_seq_len);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= b->w->cfg.vocab)
            return fe_error_set(&b->err, FE_E_BOUNDS, "token %d at %lld is outside the vocabulary "
                                "of %lld", tokens[i], (long long)i, (long long)b->w->cfg.vocab);
    int32_t *hist = b->history[slot];
    int64_t start = first_row(b, slot, tokens, n), C = b->o.chunk;
    for (int64_t pos = start, k = 0; pos < n && (max_chunks <= 0 || k < max_chunks); pos += C, k++) {
        int64_t rows = n - pos < C ? n - pos : C;
        memcpy(b->chunk, tokens + pos, (size_t)rows * sizeof *tokens);
        fe_named_tensor in = {"tokens", fe_tensor_contiguous(b->chunk, FE_DTYPE_I32, 1, &C)};
        fe_word words[3] = {{"slot", slot}, {"n", rows}, {"position", pos}};
        fe_tensor outs[1];
        int n_out = 0;
        fe_status st = fe_graph_call(b->g, &in, 1, words, 3, outs, 1, &n_out);
        if (st != FE_OK) {
            b->n_history[slot] = 0; /* what the cache holds is unknown now */
            return fe_error_set(&b->err, st, "%s", fe_graph_message(b->g));
        }
        memcpy(hist + pos, tokens + pos, (size_t)rows * sizeof *tokens);
        b->n_history[slot] = pos + rows;
        if (pos + rows == n) {
            memcpy(b->logits, outs[0].data, (size_t)b->w->cfg.vocab * sizeof(float));
            *done = true;
            if (logits) *logits = b->logits;
        }
    }
    return FE_OK;
}

fe_status fe_batch_decode(fe_batch *b, const int *slots, const int32_t *tokens, int n_rows,
                          const float **logits) {
    fe_error_clear(&b->err);
    if (n_rows < 1 || n_rows > b->o.slots)
        return fe_error_set(&b->err, FE_E_BOUNDS, "%d rows; give 1..%d", n_rows, b->o.slots);
    int B = 1; /* the smallest version that holds the rows */
    while (B < n_rows) B *= 2;
    if (B > b->o.slots) B = b->o.slots;
    bool used[FE_BATCH_MAX_ROWS] = {0};
    for (int r = 0; r < B; r++) {
        int s = r < n_rows ? slots[r] : b->o.slots; /* rows past n_rows: the sink slot */
        int64_t p = 0;
        if (r < n_rows) {
            if (s < 0 || s >= b->o.slots || used[s])
                return fe_error_set(&b->err, FE_E_BOUNDS, "row %d: slot %d; give distinct slots in "
                                    "0..%d", r, s, b->o.slots - 1);
            used[s] = true;
            p = b->n_history[s];
            if (p == 0)
                return fe_error_set(&b->err, FE_E_STATE, "slot %d has no prompt; prefill it first", s);
            if (p >= b->o.max_seq_len)
                return fe_error_set(&b->err, FE_E_BOUNDS, "slot %d's cache is full (%lld rows, "
                                    "max_seq_len)", s, (long long)b->o.max_seq_len);
            if (tokens[r] < 0 || tokens[r] >= b->w->cfg.vocab)
                return fe_error_set(&b->err, FE_E_BOUNDS, "row %d: token %d is outside the "
                                    "vocabulary of %lld", r, tokens[r], (long long)b->w->cfg.vocab);
        }
        b->rows[r] = r < n_rows ? tokens[r] : 0;
        b->slot_of[r] = s;
        b->pos_of[r] = (int32_t)p;
    }
    fe_named_tensor in[3];
    decode_inputs(b, B, in);
    fe_tensor outs[1];
    int n_out = 0;
    fe_status st = fe_graph_call(b->g, in, 3, NULL, 0, outs, 1, &n_out);
    if (st != FE_OK) return fe_error_set(&b->err, st, "%s", fe_graph_message(b->g));
    memcpy(b->logits, outs[0].data, (size_t)(n_rows * b->w->cfg.vocab) * sizeof(float));
    for (int r = 0; r < n_rows; r++) b->history[slots[r]][b->n_history[slots[r]]++] = tokens[r];
    if (logits) *logits = b->logits;
    return FE_OK;
}
