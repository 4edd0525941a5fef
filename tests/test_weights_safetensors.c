/* tests/test_weights_safetensors.c: Llama weights through Hugging Face safetensors
 * (src/lm/model/weights_safetensors.c, src/lm/model/weights_safetensors_write.c): random tiny weights written as
 * a folder read back as identical tensors and the same config; the read-back model's
 * teacher-forced logits are those of the original, bit for bit, and match the float32
 * oracle in the rotate-half form; bf16/f16 norms come back as f32 the weights own; weights
 * in GGUF's interleaved q/k order are written back in HF's order; a missing, extra,
 * mis-shaped or mis-typed tensor is an error naming it, what was expected and what was
 * found; f32 norms the file leaves misaligned are copied; failed allocations are
 * FE_E_NOMEM; and `ferrum generate` writes, reruns and rereads a folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../apps/ferrum/cli.h"
#include "core/alloc.h"
#include "lm/model/causal.h"
#include "lm/eval/checks.h"
#include "lm/eval/oracle.h"
#include "lm/format/safetensors.h"
#include "lm/model/weights_safetensors_write.h"
#include "lm/model/weights.h"
#include "support/testing.h"
#include "support/cli_run.h"
#include "support/lm_fixtures.h"
#include "support/tiny_llama.h"

/* Every tensor of w, in a fixed order (lm_head last, only when untied). */
static int tensors_of(const fe_llama_weights *w, const fe_tensor **t) {
    int n = 0;
    t[n++] = &w->embed;
    t[n++] = &w->norm;
    for (int64_t l = 0; l < w->cfg.n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ts[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                                 &L->ffn_norm, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < 9; i++) t[n++] = ts[i];
    }
    if (!w->cfg.tied_embeddings) t[n++] = &w->lm_head;
    return n;
}

static void assert_same_tensor(const fe_tensor *a, const fe_tensor *b) {
    assert_int_equal(a->dtype, b->dtype);
    assert_int_equal(a->rank, b->rank);
    for (int d = 0; d < a->rank; d++) assert_int_equal(a->shape[d], b->shape[d]);
    assert_memory_equal(a->data, b->data, fe_dtype_bytes(a->dtype, fe_tensor_numel(a)));
}

/* A folder holding w; its config and weights read back through the real loaders. */
typedef struct folder {
    char dir[64];
    fe_lm_config cfg;
    fe_safetensors *st;
    fe_llama_weights w;
} folder;

static void write_and_read(const fe_llama_weights *w, folder *f) {
    fe_error err = {0};
    assert_true(lmfix_tmpdir(f->dir, sizeof f->dir));
    if (fe_llama_weights_write_safetensors(w, f->dir, &err) != FE_OK) fail_msg("%s", err.message);
    if (fe_lm_config_from_json_file(f->dir, &f->cfg, &err) != FE_OK) fail_msg("%s", err.message);
    if (fe_safetensors_open(f->dir, &f->st, &err) != FE_OK) fail_msg("%s", err.message);
    if (fe_llama_weights_from_safetensors(f->st, &f->cfg, &f->w, &err) != FE_OK)
        fail_msg("%s", err.message);
}

static void folder_close(folder *f) {
    fe_llama_weights_free(&f->w);
    fe_safetensors_close(f->st);
    lmfix_rmtree(f->dir);
}

static void written_folder_reads_back_identical_tensors(void **s) {
    (void)s;
    for (int v = 0; v < 4; v++) {
        bool tied = v & 1, llama3 = v & 2;
        fe_lm_config c = tiny_llama_config(tied, llama3);
        fe_dtype dt = v < 2 ? FE_DTYPE_F32 : FE_DTYPE_BF16;
        fe_llama_weights w;
        fe_error err = {0};
        assert_int_equal(fe_llama_weights_random(&c, dt, 5 + (uint64_t)v, &w, &err), FE_OK);
        folder f;
        write_and_read(&w, &f);
        tiny_llama_expect_same_config(&c, &f.cfg, 0);
        assert_false(f.w.rope_interleaved);
        const fe_tensor *a[64], *b[64];
        int n = tensors_of(&w, a);
        assert_int_equal(tensors_of(&f.w, b), n);
        /* every tensor is in the file, and only those */
        assert_int_equal(fe_safetensors_count(f.st), (size_t)n);
        for (int i = 0; i < n; i++) assert_same_tensor(a[i], b[i]);
        if (tied) assert_ptr_equal(f.w.lm_head.data, f.w.embed.data);
        /* f32 norms are mapped in place; nothing was copied */
        assert_null(f.w.owned);
        const fe_st_tensor *e = fe_safetensors_find(f.st, "model.layers.1.mlp.down_proj.weight");
        assert_non_null(e);
        assert_ptr_equal(f.w.layers[1].w_down.data, e->data);
        assert_int_equal((uintptr_t)e->data % fe_dtype_info(dt)->size, 0);
        folder_close(&f);
        fe_llama_weights_free(&w);
    }
}

static void teacher_forced(const fe_llama_weights *w, const int32_t *toks, int n, float *out) {
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 128;
    o.chunk = 16;
    o.prefill_dot = FE_PREFILL_DOT_F32; /* exact: the oracle bounds below are float32's */
    fe_causal *m = NULL;
    fe_error err = {0};
    if (fe_causal_create(test_dev, w, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    if (fe_causal_teacher_forced(m, toks, n, out) != FE_OK) fail_msg("%s", fe_causal_message(m));
    fe_causal_destroy(m);
}

static void read_back_model_gives_the_same_logits(void **s) {
    (void)s;
    for (int v = 0; v < 2; v++) {
        fe_lm_config c = tiny_llama_config(v == 0, true);
        fe_dtype dt = v == 0 ? FE_DTYPE_BF16 : FE_DTYPE_F32;
        fe_llama_weights w;
        fe_error err = {0};
        assert_int_equal(fe_llama_weights_random(&c, dt, 21, &w, &err), FE_OK);
        assert_false(w.rope_interleaved); /* random weights are in the rotate-half form too */
        folder f;
        write_and_read(&w, &f);
        const int n = 40;
        int32_t *toks = tiny_llama_tokens(n, c.vocab, 3);
        size_t bytes = (size_t)n * (size_t)c.vocab * sizeof(float);
        float *ref = malloc(bytes), *orig = malloc(bytes), *back = malloc(bytes);
        assert_int_equal(fe_oracle_logits(&w, toks, n, ref, &err), FE_OK);
        teacher_forced(&w, toks, n, orig);
        teacher_forced(&f.w, toks, n, back);
        assert_memory_equal(orig, back, bytes);
        fe_kl_stats k;
        assert_int_equal(fe_kl_compare(ref, back, n, c.vocab, &k), FE_OK);
        print_message("%s %s: read back vs oracle: KL mean %.3g max %.3g, top-1 mismatches %d/%d, "
                      "max |dlogit| %.3g of spread %.3g\n", v == 0 ? "tied" : "untied",
                      fe_dtype_info(dt)->name, k.mean, k.max, k.top1_mismatches, n,
                      k.max_abs_diff, k.spread);
        assert_true(k.spread > 1.0);
        assert_true(k.mean <= 1e-6);
        assert_int_equal(k.top1_mismatches, 0);
        free(toks), free(ref), free(orig), free(back);
        folder_close(&f);
        fe_llama_weights_free(&w);
    }
}

static void half_precision_norms_come_back_as_f32_the_weights_own(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 9, &w, &err), FE_OK);
    /* as most HF checkpoints store them: attn norms bf16, ffn norms f16 (final stays f32) */
    int64_t d = c.hidden;
    uint16_t *half = malloc((size_t)(2 * c.n_layers * d) * sizeof *half);
    for (int64_t l = 0; l < c.n_layers; l++) {
        uint16_t *a = half + 2 * l * d, *b = a + d;
        const float *fa = w.layers[l].attn_norm.data, *fb = w.layers[l].ffn_norm.data;
        for (int64_t e = 0; e < d; e++) a[e] = fe_f32_to_bf16(fa[e]), b[e] = fe_f32_to_f16(fb[e]);
        w.layers[l].attn_norm = fe_tensor_contiguous(a, FE_DTYPE_BF16, 1, &d);
        w.layers[l].ffn_norm = fe_tensor_contiguous(b, FE_DTYPE_F16, 1, &d);
    }
    folder f;
    write_and_read(&w, &f);
    assert_string_equal(fe_safetensors_find(f.st, "model.layers.0.input_layernorm.weight")->dtype_name,
                        "BF16");
    assert_non_null(f.w.owned);
    for (int64_t l = 0; l < c.n_layers; l++) {
        const fe_tensor *a = &f.w.layers[l].attn_norm, *b = &f.w.layers[l].ffn_norm;
        assert_int_equal(a->dtype, FE_DTYPE_F32);
        assert_int_equal(b->dtype, FE_DTYPE_F32);
        assert_int_equal(a->shape[0], d);
        for (int64_t e = 0; e < d; e++) {
            assert_true(((const float *)a->data)[e] == fe_bf16_to_f32(half[2 * l * d + e]));
            assert_true(((const float *)b->data)[e] == fe_f16_to_f32(half[2 * l * d + d + e]));
        }
        assert_int_equal((uintptr_t)a->data % 4, 0);
    }
    assert_same_tensor(&w.norm, &f.w.norm);
    /* the model runs on the converted norms */
    int32_t *toks = tiny_llama_tokens(8, c.vocab, 1);
    float *got = malloc((size_t)8 * (size_t)c.vocab * sizeof(float));
    teacher_forced(&f.w, toks, 8, got);
    free(toks), free(got);
    folder_close(&f);
    free(half);
    fe_llama_weights_free(&w);
}

/* rows of each head reordered rotate-half -> interleaved, as llama.cpp's converter does */
static void *interleave(const fe_tensor *t, int64_t heads, int64_t hd) {
    size_t row = fe_dtype_bytes(t->dtype, t->shape[1]);
    char *out = malloc(row * (size_t)t->shape[0]);
    const char *in = t->data;
    for (int64_t a = 0; a < heads; a++)
        for (int64_t h = 0; h < hd; h++) {
            int64_t j = h / (hd / 2), i = h % (hd / 2);
            memcpy(out + (size_t)(a * hd + 2 * i + j) * row, in + (size_t)(a * hd + h) * row, row);
        }
    return out;
}

static void interleaved_weights_are_written_in_rotate_half_order(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(false, true);
    fe_llama_weights w, g;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 4, &w, &err), FE_OK);
    g = w;
    g.rope_interleaved = true;
    g.owned = NULL;
    g.layers = malloc((size_t)c.n_layers * sizeof *g.layers);
    void *keep[8];
    for (int64_t l = 0; l < c.n_layers; l++) {
        g.layers[l] = w.layers[l];
        keep[2 * l] = interleave(&w.layers[l].wq, c.n_heads, c.head_dim);
        keep[2 * l + 1] = interleave(&w.layers[l].wk, c.n_kv_heads, c.head_dim);
        g.layers[l].wq.data = keep[2 * l];
        g.layers[l].wk.data = keep[2 * l + 1];
    }
    /* the interleaved weights are the same model (the oracle agrees) ... */
    const int n = 12;
    int32_t *toks = tiny_llama_tokens(n, c.vocab, 8);
    size_t bytes = (size_t)n * (size_t)c.vocab * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    assert_int_equal(fe_oracle_logits(&w, toks, n, a, &err), FE_OK);
    assert_int_equal(fe_oracle_logits(&g, toks, n, b, &err), FE_OK);
    assert_memory_equal(a, b, bytes);
    /* ... and written out they are the rotate-half original */
    folder f;
    write_and_read(&g, &f);
    const fe_tensor *x[64], *y[64];
    int cnt = tensors_of(&w, x);
    tensors_of(&f.w, y);
    for (int i = 0; i < cnt; i++) assert_same_tensor(x[i], y[i]);
    folder_close(&f);
    for (int64_t l = 0; l < 2 * c.n_layers; l++) free(keep[l]);
    free(g.layers), free(toks), free(a), free(b);
    fe_llama_weights_free(&w);
}

/* ---- malformed checkpoints, built as tensor tables ---- */

typedef struct table {
    lmfix_st_tensor t[32];
    char names[32][80];
    size_t n;
} table;

static void add(table *tb, const char *name, const char *dtype, int64_t rows, int64_t cols) {
    lmfix_st_tensor *t = &tb->t[tb->n];
    snprintf(tb->names[tb->n], sizeof tb->names[0], "%s", name);
    memset(t, 0, sizeof *t);
    t->name = tb->names[tb->n];
    t->dtype = dtype;
    t->rank = cols ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->elem_size = !strcmp(dtype, "F32") ? 4 : !strcmp(dtype, "I64") ? 8 : !strcmp(dtype, "U8") ? 1 : 2;
    tb->n++;
}

/* The tiny model's HF table (bf16 matrices, f32 norms), lm_head when untied. */
static void hf_table(const fe_lm_config *c, table *tb) {
    tb->n = 0;
    int64_t d = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    add(tb, "model.embed_tokens.weight", "BF16", c->vocab, d);
    for (int64_t l = 0; l < c->n_layers; l++) {
        char p[80];
#define L(suffix, dt, r, k) \
    (snprintf(p, sizeof p, "model.layers.%lld." suffix, (long long)l), add(tb, p, dt, r, k))
        L("input_layernorm.weight", "F32", d, 0);
        L("self_attn.q_proj.weight", "BF16", q, d);
        L("self_attn.k_proj.weight", "BF16", kv, d);
        L("self_attn.v_proj.weight", "BF16", kv, d);
        L("self_attn.o_proj.weight", "BF16", d, q);
        L("post_attention_layernorm.weight", "F32", d, 0);
        L("mlp.gate_proj.weight", "BF16", c->ffn, d);
        L("mlp.up_proj.weight", "BF16", c->ffn, d);
        L("mlp.down_proj.weight", "BF16", d, c->ffn);
#undef L
    }
    add(tb, "model.norm.weight", "F32", d, 0);
    if (!c->tied_embeddings) add(tb, "lm_head.weight", "BF16", c->vocab, d);
}

static lmfix_st_tensor *find_entry(table *tb, const char *name) {
    for (size_t i = 0; i < tb->n; i++)
        if (!strcmp(tb->t[i].name, name)) return &tb->t[i];
    fail_msg("no %s in the table", name);
    return NULL;
}

static void drop(table *tb, const char *name) {
    lmfix_st_tensor *t = find_entry(tb, name);
    size_t i = (size_t)(t - tb->t);
    for (; i + 1 < tb->n; i++) {
        tb->t[i] = tb->t[i + 1];
        memcpy(tb->names[i], tb->names[i + 1], sizeof tb->names[0]);
        tb->t[i].name = tb->names[i];
    }
    tb->n--;
}

/* Loads the table; returns the status, the message in err. */
static fe_status load_table(const fe_lm_config *c, const table *tb, fe_error *err) {
    lmfix_buf b = {0};
    lmfix_safetensors(&b, tb->t, tb->n, 0);
    fe_safetensors *st = NULL;
    fe_status s = fe_safetensors_open_memory(b.p, b.n, "tiny.safetensors", &st, err);
    if (s != FE_OK) fail_msg("the table did not open: %s", err->message);
    fe_llama_weights w;
    s = fe_llama_weights_from_safetensors(st, c, &w, err);
    if (s == FE_OK) fe_llama_weights_free(&w);
    fe_safetensors_close(st);
    lmfix_free(&b);
    return s;
}

static void expect_error(const fe_lm_config *c, const table *tb, fe_status want, const char *a,
                         const char *b, const char *d) {
    fe_error err = {0};
    fe_status s = load_table(c, tb, &err);
    print_message("%s: %s\n", fe_status_str(s), err.message);
    assert_int_equal(s, want);
    const char *parts[] = {a, b, d};
    for (int i = 0; i < 3; i++)
        if (parts[i] && !strstr(err.message, parts[i]))
            fail_msg("the message does not say \"%s\": %s", parts[i], err.message);
}

static void malformed_checkpoints_are_errors_naming_the_tensor(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, false), u = tiny_llama_config(false, false);
    table tb;
    fe_error err = {0};
    hf_table(&c, &tb);
    assert_int_equal(load_table(&c, &tb, &err), FE_OK);
    /* a tied checkpoint may carry lm_head (not read), and old rotary buffers are skipped */
    add(&tb, "lm_head.weight", "BF16", c.vocab, c.hidden);
    add(&tb, "model.layers.1.self_attn.rotary_emb.inv_freq", "F32", c.head_dim / 2, 0);
    assert_int_equal(load_table(&c, &tb, &err), FE_OK);

    hf_table(&c, &tb);
    drop(&tb, "model.layers.1.mlp.up_proj.weight");
    expect_error(&c, &tb, FE_E_NOTFOUND, "model.layers.1.mlp.up_proj.weight", "(160, 64)", NULL);
    hf_table(&u, &tb);
    drop(&tb, "lm_head.weight");
    expect_error(&u, &tb, FE_E_NOTFOUND, "lm_head.weight", "(320, 64)", NULL);

    hf_table(&c, &tb);
    add(&tb, "model.layers.2.self_attn.q_proj.weight", "BF16", 64, 64); /* a third layer */
    expect_error(&c, &tb, FE_E_FORMAT, "model.layers.2.self_attn.q_proj.weight", "2 layers", NULL);
    hf_table(&c, &tb);
    add(&tb, "model.layers.0.self_attn.q_proj.bias", "BF16", 64, 0);
    add(&tb, "model.layers.0.self_attn.k_proj.bias", "BF16", 32, 0);
    expect_error(&c, &tb, FE_E_FORMAT, "model.layers.0.self_attn.q_proj.bias", "1 more", NULL);
    hf_table(&c, &tb);
    add(&tb, "model.layers.01.mlp.up_proj.weight", "BF16", 160, 64); /* not a canonical index */
    expect_error(&c, &tb, FE_E_FORMAT, "model.layers.01.mlp.up_proj.weight", NULL, NULL);

    hf_table(&c, &tb);
    find_entry(&tb, "model.layers.0.self_attn.k_proj.weight")->shape[1] = 63;
    expect_error(&c, &tb, FE_E_SHAPE, "model.layers.0.self_attn.k_proj.weight", "(32, 63)",
                 "(32, 64)");
    hf_table(&c, &tb);
    lmfix_st_tensor *nt = find_entry(&tb, "model.norm.weight");
    nt->rank = 2, nt->shape[1] = 1;
    expect_error(&c, &tb, FE_E_SHAPE, "model.norm.weight", "(64, 1)", "(64)");

    hf_table(&c, &tb);
    lmfix_st_tensor *t = find_entry(&tb, "model.layers.1.mlp.gate_proj.weight");
    t->dtype = "I64", t->elem_size = 8;
    expect_error(&c, &tb, FE_E_DTYPE, "model.layers.1.mlp.gate_proj.weight", "I64", "BF16, F16 or F32");
    hf_table(&c, &tb);
    t = find_entry(&tb, "model.layers.0.post_attention_layernorm.weight");
    t->dtype = "U8", t->elem_size = 1;
    expect_error(&c, &tb, FE_E_DTYPE, "model.layers.0.post_attention_layernorm.weight", "U8", NULL);

    /* a config that breaks its own rules is refused before any tensor is read */
    fe_lm_config bad = c;
    bad.n_heads = 3;
    hf_table(&c, &tb);
    assert_int_equal(load_table(&bad, &tb, &err), FE_E_INVALID);
}

static void misaligned_f32_norms_are_copied_aligned(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, false);
    table tb;
    hf_table(&c, &tb);
    /* 6 bytes of an ignored buffer first: every f32 tensor after it is 2 bytes off */
    add(&tb, "model.layers.0.self_attn.rotary_emb.inv_freq", "BF16", 3, 0);
    lmfix_st_tensor last = tb.t[tb.n - 1];
    char name[80];
    memcpy(name, tb.names[tb.n - 1], sizeof name);
    for (size_t i = tb.n - 1; i > 0; i--) {
        tb.t[i] = tb.t[i - 1];
        memcpy(tb.names[i], tb.names[i - 1], sizeof name);
        tb.t[i].name = tb.names[i];
    }
    tb.t[0] = last;
    memcpy(tb.names[0], name, sizeof name);
    tb.t[0].name = tb.names[0];
    lmfix_buf b = {0};
    lmfix_safetensors(&b, tb.t, tb.n, 0);
    fe_safetensors *st = NULL;
    fe_error err = {0};
    fe_llama_weights w;
    assert_int_equal(fe_safetensors_open_memory(b.p, b.n, "odd.safetensors", &st, &err), FE_OK);
    if (fe_llama_weights_from_safetensors(st, &c, &w, &err) != FE_OK) fail_msg("%s", err.message);
    const fe_st_tensor *n = fe_safetensors_find(st, "model.norm.weight");
    assert_int_not_equal((uintptr_t)n->data % 4, 0);
    assert_ptr_not_equal(w.norm.data, n->data);
    assert_int_equal((uintptr_t)w.norm.data % 4, 0);
    assert_memory_equal(w.norm.data, n->data, n->n_bytes);
    fe_llama_weights_free(&w);
    fe_safetensors_close(st);
    lmfix_free(&b);
}

static void failed_allocations_are_nomem(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(false, true);
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 2, &w, &err), FE_OK);
    /* bf16 norms, so the loader has a conversion to allocate */
    int64_t d = c.hidden;
    uint16_t *half = malloc((size_t)d * sizeof *half);
    for (int64_t e = 0; e < d; e++) half[e] = fe_f32_to_bf16(((const float *)w.norm.data)[e]);
    fe_tensor f32norm = w.norm;
    w.norm = fe_tensor_contiguous(half, FE_DTYPE_BF16, 1, &d);
    char dir[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    for (long k = 1;; k++) {
        fe_alloc_fail_at(k);
        fe_status st = fe_llama_weights_write_safetensors(&w, dir, &err);
        fe_alloc_fail_at(0);
        if (st == FE_OK) break;
        assert_int_equal(st, FE_E_NOMEM);
        assert_true(k < 100);
    }
    fe_safetensors *sf = NULL;
    assert_int_equal(fe_safetensors_open(dir, &sf, &err), FE_OK);
    for (long k = 1;; k++) {
        fe_llama_weights r;
        fe_alloc_fail_at(k);
        fe_status st = fe_llama_weights_from_safetensors(sf, &c, &r, &err);
        fe_alloc_fail_at(0);
        if (st == FE_OK) {
            assert_non_null(r.owned);
            fe_llama_weights_free(&r);
            break;
        }
        assert_int_equal(st, FE_E_NOMEM);
        assert_true(k < 100);
    }
    fe_safetensors_close(sf);
    lmfix_rmtree(dir);
    w.norm = f32norm;
    free(half);
    fe_llama_weights_free(&w);
}

/* ---- `ferrum generate` ---- */

static int code;
static char out[1 << 14], errs[1 << 14];

#define RUN(...) CLI_RUN_INTO(code, out, errs, __VA_ARGS__)

static char *slurp(const char *dir, const char *name, size_t *n) {
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    char *p = malloc(*n + 1);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static void generate_writes_and_runs_a_safetensors_folder(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, true);
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 1, &w, &err), FE_OK);
    folder shapes;
    write_and_read(&w, &shapes); /* a config.json to draw shapes from */
    char cfg[128], dir[64], again[64], file[192], sub[96];
    snprintf(cfg, sizeof cfg, "%s/config.json", shapes.dir);
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_tmpdir(again, sizeof again));
    snprintf(sub, sizeof sub, "%s/m", dir); /* created by the writer */
    RUN("generate", cfg, "--random-weights", "3", "--dtype", "f32", "--write-safetensors", sub);
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(out, "model.safetensors"));
    /* the folder runs, matching the oracle, with its weights read into memory by default and
     * from the mapped file with --mmap */
    RUN("generate", sub, "--prompt-len", "6", "--num-tokens", "3", "--check-accuracy");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "top-1 mismatches 0/"));
    assert_non_null(strstr(errs, "ferrum: weights in memory"));
    assert_non_null(strstr(errs, "MiB in memory)"));
    RUN("generate", sub, "--prompt-len", "6", "--num-tokens", "3", "--check-accuracy", "--mmap");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "top-1 mismatches 0/"));
    assert_non_null(strstr(errs, "ferrum: weights mapped from the file, as asked"));
    assert_non_null(strstr(errs, "MiB mapped)"));
    /* the prompt in chunks of 4 rows (6 = 4 + 2) gives the same answer; a chunk of 0 is refused */
    RUN("generate", sub, "--prompt-len", "6", "--num-tokens", "3", "--chunk", "4", "--check-accuracy");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "top-1 mismatches 0/"));
    RUN("generate", sub, "--prompt-len", "6", "--chunk", "0");
    assert_int_equal(code, 2);
    assert_non_null(strstr(errs, "--chunk \"0\" is not valid; give an integer in 1..65536"));
    /* a text prompt needs a tokenizer: tokenizer.json beside the checkpoint is the one */
    RUN("generate", sub, "--prompt", "hi there", "--num-tokens", "3");
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "needs a tokenizer"));
    assert_true(lmfix_byte_tokenizer(sub, false, 0));
    RUN("generate", sub, "--prompt", "hi there", "--num-tokens", "3");
    if (code != 0) fail_msg("%s", errs);
    assert_non_null(strstr(errs, "prompt 8 tokens")); /* one token a byte */
    /* so does the lone file, with config.json beside it */
    snprintf(file, sizeof file, "%s/model.safetensors", sub);
    RUN("generate", file, "--prompt-ids", "1,2,3", "--num-tokens", "2");
    if (code != 0) fail_msg("%s", errs);
    /* a loaded checkpoint written again is the same file */
    RUN("generate", sub, "--write-safetensors", again);
    if (code != 0) fail_msg("%s", errs);
    size_t n1, n2;
    char *a = slurp(sub, "model.safetensors", &n1), *b = slurp(again, "model.safetensors", &n2);
    assert_true(n1 > 0);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a), free(b);
    /* a config that disagrees with the checkpoint: the missing tensor is named */
    static const char three[] =
        "{\"model_type\": \"llama\", \"vocab_size\": 320, \"hidden_size\": 64, "
        "\"intermediate_size\": 160, \"num_hidden_layers\": 3, \"num_attention_heads\": 4, "
        "\"num_key_value_heads\": 2, \"tie_word_embeddings\": true}";
    assert_true(lmfix_write(again, "config.json", three, strlen(three)));
    RUN("generate", again, "--num-tokens", "1");
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "model.layers.2.input_layernorm.weight"));
    /* usage errors */
    RUN("generate", sub, "--write-safetensors", again, "--prompt-len", "3");
    assert_int_equal(code, 2);
    RUN("generate", sub, "--write-safetensors");
    assert_int_equal(code, 2);
    RUN("generate", "nothing.bin", "--num-tokens", "1");
    assert_int_equal(code, 1);
    assert_non_null(strstr(errs, "safetensors"));
    RUN("generate", "--help");
    assert_int_equal(code, 0);
    assert_non_null(strstr(out, "--write-safetensors DIR"));
    lmfix_rmtree(sub);
    lmfix_rmtree(dir);
    lmfix_rmtree(again);
    folder_close(&shapes);
    fe_llama_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(written_folder_reads_back_identical_tensors),
        cmocka_unit_test(read_back_model_gives_the_same_logits),
        cmocka_unit_test(half_precision_norms_come_back_as_f32_the_weights_own),
        cmocka_unit_test(interleaved_weights_are_written_in_rotate_half_order),
        cmocka_unit_test(malformed_checkpoints_are_errors_naming_the_tensor),
        cmocka_unit_test(misaligned_f32_norms_are_copied_aligned),
        cmocka_unit_test(failed_allocations_are_nomem),
        cmocka_unit_test(generate_writes_and_runs_a_safetensors_folder),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
