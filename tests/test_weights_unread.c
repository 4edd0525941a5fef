/* tests/test_weights_unread.c: the unread weight fill (src/lm/weights*.c over checkpoints
 * opened header-only: gguf.c, safetensors.c, checkpoint.c). A GGUF or safetensors file cut
 * off where its data begins still opens header-only — so no weight byte can have been read —
 * with the same tensor table as the whole file, every data NULL; headers that lie are still
 * errors; unread Llama weights have exactly the read fill's shapes and dtypes (norms f32,
 * as the read fill converts them) on tiny random checkpoints and on the real SmolLM2 GGUF;
 * whatever would read unread weights (the oracle, the writer, a call of the causal LM)
 * refuses with a message instead of crashing; and `ferrum draw --model` compiles a model's
 * graph from its headers alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../apps/ferrum/cli.h"
#include "core/alloc.h"
#include "lm/model/causal.h"
#include "lm/model/checkpoint.h"
#include "lm/eval/oracle.h"
#include "lm/model/weights_safetensors_write.h"
#include "lm/tokenizer/tokenizer.h"
#include "support/testing.h"
#include "support/lm_fixtures.h"
#include "support/tiny_llama.h"

/* ---- the readers ---- */

static void assert_same_gguf_tables(const fe_gguf *a, const fe_gguf *b) {
    assert_int_equal(fe_gguf_tensor_count(a), fe_gguf_tensor_count(b));
    assert_int_equal(fe_gguf_kv_count(a), fe_gguf_kv_count(b));
    for (size_t i = 0; i < fe_gguf_tensor_count(a); i++) {
        const fe_gguf_tensor *x = fe_gguf_tensor_at(a, i), *y = fe_gguf_tensor_at(b, i);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->ggml_type, y->ggml_type);
        assert_int_equal(x->readable, y->readable);
        if (x->readable) assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->rank, y->rank);
        assert_memory_equal(x->shape, y->shape, sizeof x->shape);
        assert_int_equal(x->n_elements, y->n_elements);
        assert_int_equal(x->n_bytes, y->n_bytes);
        assert_int_equal(x->offset, y->offset);
    }
}

static void gguf_header_only_opens_a_file_without_its_data(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){.output = true}, &lay);
    fe_gguf *whole = NULL, *head = NULL, *cut = NULL;
    fe_error err = {0};
    assert_int_equal(fe_gguf_open_memory(b.p, b.n, "tiny.gguf", &whole, &err), FE_OK);
    assert_false(fe_gguf_header_only(whole));
    /* the header alone: exactly the bytes before the data section, so a read past them
     * would be a heap overflow the sanitizers report */
    unsigned char *h = lmfix_copy(&b, lay.data_at);
    assert_int_equal(fe_gguf_open_memory(h, lay.data_at, "cut.gguf", &cut, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "runs past the end of the file"));
    assert_int_equal(fe_gguf_open_memory_header(h, lay.data_at, "cut.gguf", &head, &err), FE_OK);
    assert_true(fe_gguf_header_only(head));
    assert_same_gguf_tables(whole, head);
    for (size_t i = 0; i < fe_gguf_tensor_count(head); i++) {
        const fe_gguf_tensor *t = fe_gguf_tensor_at(head, i), *u = NULL;
        assert_null(t->data);
        if (t->readable) assert_int_equal(fe_gguf_tensor_get(head, t->name, &u, &err), FE_OK);
    }
    /* metadata reads as from the whole file */
    const char *x, *y;
    size_t nx, ny;
    assert_int_equal(fe_gguf_get_str(fe_gguf_find(whole, "general.architecture"), &x, &nx, &err), FE_OK);
    assert_int_equal(fe_gguf_get_str(fe_gguf_find(head, "general.architecture"), &y, &ny, &err), FE_OK);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    fe_gguf_close(head);
    /* the whole file opens header-only too, its data left alone */
    assert_int_equal(fe_gguf_open_memory_header(b.p, b.n, "tiny.gguf", &head, &err), FE_OK);
    assert_same_gguf_tables(whole, head);
    fe_gguf_close(head);
    /* but a header cut short is still an error */
    for (size_t n = 0; n < lay.data_at; n += 7) {
        fe_gguf *g = NULL;
        unsigned char *p = lmfix_copy(&b, n);
        fe_status st = fe_gguf_open_memory_header(p, n, "short.gguf", &g, &err);
        free(p);
        if (st == FE_OK) { /* only the alignment padding after the tensor table may go */
            assert_true(n >= lay.data_at - lay.alignment);
            fe_gguf_close(g);
            continue;
        }
        assert_int_equal(st, FE_E_FORMAT);
    }
    fe_gguf_close(whole);
    free(h);
    lmfix_free(&b);
}

static void gguf_header_only_still_checks_offsets(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    fe_error err = {0};
    fe_gguf *g = NULL;
    struct { uint64_t offset; const char *needle; } cases[] = {
        {lay.offset[0] + 32 * 3, "overlap"},                /* onto the next tensors */
        {lay.offset[1] + 1, "not a multiple of the alignment"},
        {(uint64_t)1 << 62, "past 2^62"},
        {UINT64_MAX - 31, "past 2^62"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char *p = lmfix_copy(&b, b.n);
        lmfix_buf c = {p, b.n, b.n};
        lmfix_set_u64(&c, lay.offset_at[1], cases[i].offset);
        assert_int_equal(fe_gguf_open_memory_header(p, lay.data_at, "bad.gguf", &g, &err), FE_E_FORMAT);
        if (!strstr(err.message, cases[i].needle)) fail_msg("case %zu: %s", i, err.message);
        free(p);
    }
    lmfix_free(&b);
}

static void safetensors_header_only_opens_a_file_without_its_data(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_safetensors(&b, lmfix_st_tensors, lmfix_st_n_tensors, 0);
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--) hn = hn << 8 | b.p[i];
    size_t data_at = 8 + (size_t)hn;
    fe_safetensors *whole = NULL, *head = NULL, *cut = NULL;
    fe_error err = {0};
    assert_int_equal(fe_safetensors_open_memory(b.p, b.n, "t.safetensors", &whole, &err), FE_OK);
    unsigned char *h = lmfix_copy(&b, data_at);
    assert_int_equal(fe_safetensors_open_memory(h, data_at, "cut.safetensors", &cut, &err), FE_E_FORMAT);
    assert_int_equal(fe_safetensors_open_memory_header(h, data_at, "cut.safetensors", &head, &err), FE_OK);
    assert_true(fe_safetensors_header_only(head));
    assert_false(fe_safetensors_header_only(whole));
    assert_int_equal(fe_safetensors_count(whole), fe_safetensors_count(head));
    for (size_t i = 0; i < fe_safetensors_count(head); i++) {
        const fe_st_tensor *x = fe_safetensors_at(whole, i), *y = fe_safetensors_at(head, i);
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->dtype_name, y->dtype_name);
        assert_int_equal(x->rank, y->rank);
        assert_memory_equal(x->shape, y->shape, sizeof x->shape);
        assert_int_equal(x->n_bytes, y->n_bytes);
        assert_int_equal(x->offset, y->offset);
        assert_ptr_equal(x->data, b.p + x->offset);
        assert_null(y->data);
    }
    fe_safetensors_close(head);
    fe_safetensors_close(whole);
    free(h);
    lmfix_free(&b);
    /* headers that lie are still errors */
    static const char *const lies[][2] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "take 12 bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "begin <= end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]", "JSON"},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        lmfix_buf f = {0};
        lmfix_u64(&f, strlen(lies[i][0]));
        lmfix_put(&f, lies[i][0], strlen(lies[i][0]));
        fe_status st = fe_safetensors_open_memory_header(f.p, f.n, "lie.safetensors", &head, &err);
        assert_int_equal(st, FE_E_FORMAT);
        if (!strstr(err.message, lies[i][1])) fail_msg("case %zu: %s", i, err.message);
        lmfix_free(&f);
    }
}

/* ---- the weights ---- */

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
    t[n++] = &w->lm_head;
    if (w->rope_freqs.rank) t[n++] = &w->rope_freqs;
    return n;
}

/* Same shapes, dtypes and config; the unread ones hold no data. */
static void assert_unread_like(const fe_llama_weights *read, const fe_llama_weights *unread) {
    assert_false(read->unread);
    assert_true(unread->unread);
    assert_null(unread->owned);
    assert_int_equal(read->rope_interleaved, unread->rope_interleaved);
    const fe_lm_config *x = &read->cfg, *y = &unread->cfg;
    assert_string_equal(x->architecture, y->architecture);
    int64_t xs[] = {x->vocab, x->hidden, x->n_layers, x->n_heads, x->n_kv_heads, x->head_dim,
                    x->ffn, x->max_context, x->rope_scaling.type, x->tied_embeddings, x->bos_id};
    int64_t ys[] = {y->vocab, y->hidden, y->n_layers, y->n_heads, y->n_kv_heads, y->head_dim,
                    y->ffn, y->max_context, y->rope_scaling.type, y->tied_embeddings, y->bos_id};
    assert_memory_equal(xs, ys, sizeof xs);
    assert_true(x->rms_eps == y->rms_eps && x->rope_theta == y->rope_theta);
    const fe_tensor *a[1024], *b[1024];
    assert_true(read->cfg.n_layers * 9 + 4 <= 1024);
    int n = tensors_of(read, a);
    assert_int_equal(tensors_of(unread, b), n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(a[i]->dtype, b[i]->dtype);
        assert_int_equal(a[i]->rank, b[i]->rank);
        assert_memory_equal(a[i]->shape, b[i]->shape, sizeof a[i]->shape);
        assert_memory_equal(a[i]->stride, b[i]->stride, sizeof a[i]->stride);
        assert_non_null(a[i]->data);
        assert_null(b[i]->data);
    }
}

/* Cuts path down to its first n bytes. */
static void cut_file(const char *path, off_t n) { assert_int_equal(truncate(path, n), 0); }

/* a model of random weights opened header-only (`ferrum info PRESET --random-weights`)
 * draws nothing and has the shapes it would have drawn */
static void unread_random_weights_have_the_drawn_shapes(void **s) {
    (void)s;
    for (int v = 0; v < 2; v++) {
        fe_lm_config c = tiny_llama_config(v == 0, v == 1);
        fe_dtype dt = v ? FE_DTYPE_F32 : FE_DTYPE_BF16;
        fe_llama_weights w, u;
        fe_error err = {0};
        assert_int_equal(fe_llama_weights_random(&c, dt, 3, &w, &err), FE_OK);
        assert_int_equal(fe_llama_weights_shapes(&c, dt, &u, &err), FE_OK);
        assert_unread_like(&w, &u);
        assert_int_equal(fe_llama_weights_bytes(&u), fe_llama_weights_bytes(&w));
        fe_llama_weights_free(&w);
        fe_llama_weights_free(&u);
    }
}

static void unread_safetensors_weights_have_the_read_shapes_and_dtypes(void **s) {
    (void)s;
    for (int v = 0; v < 2; v++) {
        fe_lm_config c = tiny_llama_config(v == 0, v == 1);
        fe_llama_weights w, r, u;
        fe_error err = {0};
        assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 3, &w, &err), FE_OK);
        /* half-precision norms, which the read fill converts to f32 */
        int64_t d = c.hidden;
        uint16_t *half = malloc((size_t)(c.n_layers * d) * sizeof *half);
        for (int64_t l = 0; l < c.n_layers; l++) {
            for (int64_t e = 0; e < d; e++)
                half[l * d + e] = fe_f32_to_bf16(((const float *)w.layers[l].attn_norm.data)[e]);
            w.layers[l].attn_norm = fe_tensor_contiguous(half + l * d, FE_DTYPE_BF16, 1, &d);
        }
        char dir[64], file[128];
        assert_true(lmfix_tmpdir(dir, sizeof dir));
        if (fe_llama_weights_write_safetensors(&w, dir, &err) != FE_OK) fail_msg("%s", err.message);
        fe_gguf *g = NULL;
        fe_safetensors *rs = NULL, *us = NULL;
        fe_lm_config rc, uc;
        if (fe_checkpoint_open(dir, false, &g, &rs, &rc, &r, &err) != FE_OK) fail_msg("%s", err.message);
        assert_null(g);
        assert_non_null(r.owned); /* the bf16 norms were converted */
        /* the file cut where its data begins: the data is gone, the header is all there is */
        snprintf(file, sizeof file, "%s/model.safetensors", dir);
        const fe_st_tensor *first = fe_safetensors_at(rs, 0);
        cut_file(file, (off_t)first->offset);
        if (fe_checkpoint_open(dir, true, &g, &us, &uc, &u, &err) != FE_OK) fail_msg("%s", err.message);
        assert_null(g);
        assert_true(fe_safetensors_header_only(us));
        assert_unread_like(&r, &u);
        for (int64_t l = 0; l < c.n_layers; l++) assert_int_equal(u.layers[l].attn_norm.dtype, FE_DTYPE_F32);
        fe_llama_weights_free(&u);
        fe_safetensors_close(us);
        /* read, the cut file is an error naming the rule, not a crash */
        fe_llama_weights x;
        assert_int_equal(fe_checkpoint_open(dir, false, &g, &us, &uc, &x, &err), FE_E_FORMAT);
        assert_non_null(strstr(err.message, "runs past"));
        assert_null(us);
        fe_llama_weights_free(&r);
        fe_safetensors_close(rs);
        lmfix_rmtree(dir);
        free(half);
        fe_llama_weights_free(&w);
    }
}

static void unread_smollm2_weights_match_the_read_ones(void **s) {
    (void)s;
    const char *path = lmfix_need_smollm2();
    if (!path) skip();
    fe_gguf *g = NULL, *ug = NULL;
    fe_safetensors *st = NULL;
    fe_lm_config c, uc;
    fe_llama_weights r, u;
    fe_error err = {0};
    if (fe_checkpoint_open(path, false, &g, &st, &c, &r, &err) != FE_OK) fail_msg("%s", err.message);
    /* copy the header alone, up to the first tensor's data: ~1% of the file */
    uint64_t data_at = UINT64_MAX;
    for (size_t i = 0; i < fe_gguf_tensor_count(g); i++)
        if (fe_gguf_tensor_at(g, i)->offset < data_at) data_at = fe_gguf_tensor_at(g, i)->offset;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *head = malloc(data_at);
    assert_int_equal(fread(head, 1, data_at, f), data_at);
    fclose(f);
    char dir[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_write(dir, "head.gguf", head, data_at));
    char cut[128];
    snprintf(cut, sizeof cut, "%s/head.gguf", dir);
    if (fe_checkpoint_open(cut, true, &ug, &st, &uc, &u, &err) != FE_OK) fail_msg("%s", err.message);
    assert_unread_like(&r, &u);
    /* the tokenizer lives in the header too */
    fe_tokenizer *tok = NULL;
    assert_int_equal(fe_tokenizer_from_gguf(ug, &tok, &err), FE_OK);
    assert_true(fe_tokenizer_find(tok, "<|im_start|>", 12) >= 0);
    fe_tokenizer_destroy(tok);
    fe_llama_weights_free(&u);
    fe_gguf_close(ug);
    fe_llama_weights_free(&r);
    fe_gguf_close(g);
    lmfix_rmtree(dir);
    free(head);
}

static void unread_weights_are_refused_by_what_reads_them(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(false, true);
    fe_llama_weights w, u;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_F32, 4, &w, &err), FE_OK);
    char dir[64], file[128], out[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_tmpdir(out, sizeof out));
    if (fe_llama_weights_write_safetensors(&w, dir, &err) != FE_OK) fail_msg("%s", err.message);
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    cut_file(file, 8); /* the header's length, nothing more: no header either */
    fe_gguf *g = NULL;
    fe_safetensors *st = NULL;
    fe_lm_config uc;
    assert_int_equal(fe_checkpoint_open(dir, true, &g, &st, &uc, &u, &err), FE_E_FORMAT);
    assert_int_equal(fe_llama_weights_write_safetensors(&w, dir, &err), FE_OK);
    assert_int_equal(fe_checkpoint_open(dir, true, &g, &st, &uc, &u, &err), FE_OK);
    assert_int_equal(fe_llama_weights_check_read(&w, "x", &err), FE_OK);
    /* the oracle and the writer refuse by name */
    int32_t toks[3] = {1, 2, 3};
    float *logits = malloc((size_t)(3 * c.vocab) * sizeof *logits);
    assert_int_equal(fe_oracle_logits(&u, toks, 3, logits, &err), FE_E_STATE);
    assert_non_null(strstr(err.message, "the oracle"));
    assert_non_null(strstr(err.message, "unread"));
    assert_int_equal(fe_llama_weights_write_safetensors(&u, out, &err), FE_E_STATE);
    assert_non_null(strstr(err.message, "unread"));
    /* the causal LM compiles over them (for drawing) and refuses every call, naming the
     * weight; nothing reads a NULL weight */
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 32;
    o.chunk = 8;
    fe_causal *m = NULL;
    if (fe_causal_create(test_dev, &u, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    int32_t next;
    assert_int_equal(fe_causal_prompt(m, toks, 3, NULL, &next), FE_E_STATE);
    assert_non_null(strstr(fe_causal_message(m), "has no data (unread weights"));
    assert_int_equal(fe_causal_teacher_forced(m, toks, 3, logits), FE_E_STATE);
    assert_int_equal(fe_causal_prompt(m, toks, 3, NULL, &next), FE_E_STATE);
    fe_causal_destroy(m);
    free(logits);
    fe_llama_weights_free(&u);
    fe_safetensors_close(st);
    lmfix_rmtree(out);
    lmfix_rmtree(dir);
    fe_llama_weights_free(&w);
}

/* `ferrum draw --model` on a checkpoint whose data is gone: the graph, never the weights */
static void draw_model_compiles_the_graph_from_the_headers_alone(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(true, false);
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_llama_weights_random(&c, FE_DTYPE_BF16, 6, &w, &err), FE_OK);
    char dir[64], out[64], file[128];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_tmpdir(out, sizeof out));
    if (fe_llama_weights_write_safetensors(&w, dir, &err) != FE_OK) fail_msg("%s", err.message);
    fe_safetensors *st = NULL;
    assert_int_equal(fe_safetensors_open(dir, &st, &err), FE_OK);
    size_t data_at = fe_safetensors_at(st, 0)->offset;
    fe_safetensors_close(st);
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    cut_file(file, (off_t)data_at);
    FILE *o = tmpfile(), *e = tmpfile();
    fe_cli_io io = {o, e, NULL};
    const char *argv[] = {"ferrum", "draw", "--out", out, "--model", dir, "--max-seq-len", "64"};
    int code = fe_cli_main(8, (char **)argv, &io);
    char msg[4096] = "";
    rewind(e);
    msg[fread(msg, 1, sizeof msg - 1, e)] = '\0';
    if (code != 0) fail_msg("%s", msg);
    fclose(o), fclose(e);
    snprintf(file, sizeof file, "%s/causal.dot", out);
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char *dot = calloc(1, 1 << 20);
    assert_true(fread(dot, 1, (1 << 20) - 1, f) > 0);
    fclose(f);
    /* every layer: layer 0 drawn, layer 1 (its repeat) folded into one node */
    assert_non_null(strstr(dot, "weight layers.0.w_down"));
    assert_non_null(strstr(dot, "layer 1: same as layer 0"));
    assert_non_null(strstr(dot, "version 1")); /* both versions: prefill chunk and decode step */
    free(dot);
    const char *bad[] = {"ferrum", "draw", "--model", dir, "chain"};
    o = tmpfile(), e = tmpfile();
    io = (fe_cli_io){o, e, NULL};
    assert_int_equal(fe_cli_main(5, (char **)bad, &io), 2);
    fclose(o), fclose(e);
    lmfix_rmtree(out);
    lmfix_rmtree(dir);
    fe_llama_weights_free(&w);
}

static void checkpoint_paths_of_no_known_form_are_refused(void **s) {
    (void)s;
    fe_gguf *g = (fe_gguf *)&g;
    fe_safetensors *st = (fe_safetensors *)&st;
    fe_lm_config c;
    fe_llama_weights w;
    fe_error err = {0};
    assert_int_equal(fe_checkpoint_open("model.bin", true, &g, &st, &c, &w, &err), FE_E_INVALID);
    assert_null(g);
    assert_null(st);
    assert_non_null(strstr(err.message, ".gguf"));
    assert_int_equal(fe_checkpoint_open("/nonexistent/m.gguf", true, &g, &st, &c, &w, &err), FE_E_IO);
    assert_int_equal(fe_checkpoint_open("/nonexistent/m.safetensors", false, &g, &st, &c, &w, &err),
                     FE_E_IO);
    assert_non_null(strstr(err.message, "config.json"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gguf_header_only_opens_a_file_without_its_data),
        cmocka_unit_test(gguf_header_only_still_checks_offsets),
        cmocka_unit_test(safetensors_header_only_opens_a_file_without_its_data),
        cmocka_unit_test(unread_random_weights_have_the_drawn_shapes),
        cmocka_unit_test(unread_safetensors_weights_have_the_read_shapes_and_dtypes),
        cmocka_unit_test(unread_smollm2_weights_match_the_read_ones),
        cmocka_unit_test(unread_weights_are_refused_by_what_reads_them),
        cmocka_unit_test(draw_model_compiles_the_graph_from_the_headers_alone),
        cmocka_unit_test(checkpoint_paths_of_no_known_form_are_refused),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
