/* tests/test_gguf.c: the GGUF reader (src/lm/gguf*): a tiny file built in C is read back
 * field by field; every prefix of it, targeted corruptions of every header field and
 * random byte flips are clean FE_E_FORMAT errors, never crashes; failed allocations are
 * FE_E_NOMEM without leaks; and the real SmolLM2-135M checkpoint reads as expected
 * (skipped when it is not in the cache, failed under CI=true). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "lm/model/config.h"
#include "lm/format/gguf.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"

static fe_gguf *open_buf(const lmfix_buf *b, fe_error *err) {
    fe_gguf *g = NULL;
    fe_status st = fe_gguf_open_memory(b->p, b->n, "tiny.gguf", &g, err);
    if (st) fail_msg("tiny.gguf does not open: %s", err->message);
    return g;
}

/* Opens an exact-size heap copy of b (so overreads are caught) and returns the status. */
static fe_status try_open(const lmfix_buf *b, size_t n, fe_error *err) {
    unsigned char *p = lmfix_copy(b, n);
    fe_gguf *g = NULL;
    fe_status st = fe_gguf_open_memory(p, n, "bad.gguf", &g, err);
    if (!st) {
        /* whatever opened must be readable end to end */
        for (size_t i = 0; i < fe_gguf_tensor_count(g); i++) {
            const fe_gguf_tensor *t = fe_gguf_tensor_at(g, i);
            volatile unsigned char sink = 0;
            if (t->n_bytes) sink ^= ((const unsigned char *)t->data)[t->n_bytes - 1];
            (void)sink;
        }
        for (size_t i = 0; i < fe_gguf_kv_count(g); i++) {
            const fe_gguf_kv *kv = fe_gguf_kv_at(g, i);
            size_t len;
            for (size_t j = 0; j < fe_gguf_array_len(kv); j++) {
                const char *s = fe_gguf_array_str(kv, j, &len);
                volatile char sink = 0;
                if (s && len) sink ^= s[len - 1];
                (void)sink;
            }
        }
        fe_gguf_close(g);
    }
    free(p);
    return st;
}

static void expect_format(const lmfix_buf *b, const char *needle) {
    fe_error err = {0};
    fe_status st = try_open(b, b->n, &err);
    if (st != FE_E_FORMAT) fail_msg("expected FE_E_FORMAT (%s), got %s", needle, fe_status_str(st));
    if (!strstr(err.message, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.message, needle);
    assert_non_null(strstr(err.message, "bad.gguf"));
}

static void gguf_reads_every_field_of_a_small_file(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    char dir[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_write(dir, "tiny.gguf", b.p, b.n));
    char path[128];
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    fe_gguf *g = NULL;
    fe_error err;
    assert_int_equal(fe_gguf_open(path, &g, &err), FE_OK);
    assert_string_equal(fe_gguf_path(g), path);
    assert_int_equal(fe_gguf_version(g), 3);
    assert_int_equal(fe_gguf_alignment(g), 32);
    assert_int_equal(fe_gguf_size(g), b.n);
    assert_int_equal(fe_gguf_kv_count(g), lay.n_kv);
    for (size_t i = 0; i < lay.n_kv; i++) {
        assert_string_equal(fe_gguf_kv_key(fe_gguf_kv_at(g, i)), lay.kv_key[i]);
        assert_ptr_equal(fe_gguf_find(g, lay.kv_key[i]), fe_gguf_kv_at(g, i));
    }
    assert_null(fe_gguf_kv_at(g, lay.n_kv));
    assert_null(fe_gguf_find(g, "llama.no_such_key"));

    const char *str;
    size_t len;
    uint32_t u;
    int64_t i64;
    float f;
    bool bo;
    assert_int_equal(fe_gguf_get_str(fe_gguf_find(g, "general.architecture"), &str, &len, &err),
                     FE_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(str, "llama", 5);
    assert_int_equal(fe_gguf_get_u32(fe_gguf_find(g, "llama.block_count"), &u, &err), FE_OK);
    assert_int_equal(u, 1);
    assert_int_equal(fe_gguf_get_f32(fe_gguf_find(g, "llama.rope.freq_base"), &f, &err), FE_OK);
    assert_true(f == 10000.0f);
    assert_int_equal(fe_gguf_get_bool(fe_gguf_find(g, "tokenizer.ggml.add_bos_token"), &bo, &err),
                     FE_OK);
    assert_true(bo);
    assert_int_equal(fe_gguf_get_i64(fe_gguf_find(g, "test.i64"), &i64, &err), FE_OK);
    assert_int_equal(i64, -5);
    assert_int_equal(fe_gguf_get_i64(fe_gguf_find(g, "test.i8"), &i64, &err), FE_OK);
    assert_int_equal(i64, -3);
    assert_int_equal(fe_gguf_get_u32(fe_gguf_find(g, "test.u16"), &u, &err), FE_OK);
    assert_int_equal(u, 0x1234);
    assert_int_equal(fe_gguf_get_i64(fe_gguf_find(g, "test.u64"), &i64, &err), FE_OK);
    assert_int_equal(i64, (int64_t)1 << 40);
    assert_int_equal(fe_gguf_get_f32(fe_gguf_find(g, "test.f64"), &f, &err), FE_OK);
    assert_true(f == 0.25f);
    assert_int_equal(fe_gguf_kv_type(fe_gguf_find(g, "test.f64")), FE_GGUF_F64);

    const fe_gguf_kv *tok = fe_gguf_find(g, "tokenizer.ggml.tokens");
    assert_int_equal(fe_gguf_array_len(tok), 8);
    assert_int_equal(fe_gguf_array_type(tok), FE_GGUF_STRING);
    for (size_t i = 0; i < 8; i++) {
        const char *t = fe_gguf_array_str(tok, i, &len);
        assert_non_null(t);
        assert_int_equal(len, strlen(lmfix_tiny_tokens[i]));
        assert_memory_equal(t, lmfix_tiny_tokens[i], len);
    }
    assert_null(fe_gguf_array_str(tok, 8, &len));
    assert_int_equal(len, 0);
    const fe_gguf_kv *types = fe_gguf_find(g, "tokenizer.ggml.token_type");
    const fe_gguf_kv *scores = fe_gguf_find(g, "tokenizer.ggml.scores");
    for (size_t i = 0; i < 8; i++) {
        int32_t v;
        assert_int_equal(fe_gguf_array_i32(types, i, &v), FE_OK);
        assert_int_equal(v, i < 2 ? 3 : 1);
        assert_int_equal(fe_gguf_array_f32(scores, i, &f), FE_OK);
        assert_true(f == -0.5f * (float)i);
    }
    int32_t v;
    assert_int_equal(fe_gguf_array_i32(fe_gguf_find(g, "test.i16s"), 0, &v), FE_OK);
    assert_int_equal(v, -1);
    assert_int_equal(fe_gguf_array_i32(fe_gguf_find(g, "test.i16s"), 1, &v), FE_OK);
    assert_int_equal(v, 16);

    assert_int_equal(fe_gguf_tensor_count(g), lmfix_tiny_n_tensors);
    for (size_t k = 0; k < lmfix_tiny_n_tensors; k++) {
        const lmfix_tensor *e = &lmfix_tiny_tensors[k];
        const fe_gguf_tensor *t = fe_gguf_tensor_at(g, k);
        assert_string_equal(t->name, e->name);
        assert_ptr_equal(fe_gguf_tensor_find(g, e->name), t);
        assert_int_equal(t->ggml_type, e->ggml_type);
        assert_int_equal(t->rank, (int)e->n_dims);
        int64_t n = 1;
        for (uint32_t d = 0; d < e->n_dims; d++) {
            assert_int_equal(t->shape[e->n_dims - 1 - d], (int64_t)e->ne[d]);
            n *= (int64_t)e->ne[d];
        }
        assert_int_equal(t->n_elements, n);
        assert_int_equal(t->n_bytes, e->n_bytes);
        assert_int_equal(t->offset, lay.data_at + lay.offset[k]);
        assert_int_equal(t->offset % 32, 0);
        for (size_t j = 0; j < t->n_bytes; j++)
            assert_int_equal(((const unsigned char *)t->data)[j], lmfix_pattern(k, j));
    }
    static const struct {
        const char *name;
        fe_dtype dt;
        const char *type;
    } want[] = {{"token_embd.weight", FE_DTYPE_Q8_0, "Q8_0"},
                {"blk.0.attn_norm.weight", FE_DTYPE_F32, "F32"},
                {"blk.0.attn_q.weight", FE_DTYPE_F16, "F16"},
                {"blk.0.attn_k.weight", FE_DTYPE_BF16, "BF16"},
                {"blk.0.ffn_down.weight", FE_DTYPE_Q4_1, "Q4_1"},
                {"blk.0.ffn_up.weight", FE_DTYPE_Q4_0, "Q4_0"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const fe_gguf_tensor *t;
        assert_int_equal(fe_gguf_tensor_get(g, want[i].name, &t, &err), FE_OK);
        assert_true(t->readable);
        assert_int_equal(t->dtype, want[i].dt);
        assert_string_equal(t->type_name, want[i].type);
    }
    const fe_gguf_tensor *t;
    assert_int_equal(fe_gguf_tensor_expect(g, "token_embd.weight", 2, (int64_t[]){8, 32}, &t, &err),
                     FE_OK);
    assert_int_equal(
        fe_gguf_tensor_expect(g, "blk.0.attn_v.weight", 3, (int64_t[]){2, 2, 4}, &t, &err), FE_OK);
    assert_int_equal(fe_gguf_tensor_expect(g, "token_embd.weight", 2, (int64_t[]){32, 8}, &t, &err),
                     FE_E_SHAPE);
    assert_null(t);
    assert_non_null(strstr(err.message, "(8, 32)"));
    assert_non_null(strstr(err.message, "(32, 8)"));
    fe_gguf_close(g);
    lmfix_rmtree(dir);
    lmfix_free(&b);
}

static void gguf_refuses_unreadable_types_by_name(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    fe_error err;
    fe_gguf *g = open_buf(&b, &err);
    const fe_gguf_tensor *t = fe_gguf_tensor_find(g, "blk.0.ffn_gate.weight");
    assert_non_null(t);
    assert_false(t->readable);
    assert_string_equal(t->type_name, "Q5_K");
    assert_int_equal(t->n_bytes, 176);
    assert_int_equal(fe_gguf_tensor_get(g, "blk.0.ffn_gate.weight", &t, &err), FE_E_UNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(err.message, "tensor blk.0.ffn_gate.weight has type Q5_K"));
    assert_non_null(strstr(err.message, "Q8_0/Q4_1/BF16"));
    assert_int_equal(fe_gguf_tensor_get(g, "blk.9.nothing", &t, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "blk.9.nothing"));
    fe_gguf_close(g);
    lmfix_free(&b);
}

static void gguf_getters_check_types_and_ranges(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    fe_error err;
    fe_gguf *g = open_buf(&b, &err);
    uint32_t u = 77;
    float f;
    bool bo;
    const char *str;
    size_t len;
    int32_t v;
    assert_int_equal(fe_gguf_get_u32(fe_gguf_find(g, "general.name"), &u, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "general.name is a string"));
    assert_int_equal(u, 77);
    assert_int_equal(fe_gguf_get_u32(fe_gguf_find(g, "test.i64"), &u, &err), FE_E_FORMAT);
    assert_int_equal(fe_gguf_get_u32(fe_gguf_find(g, "test.u64"), &u, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "test.u64"));
    assert_int_equal(fe_gguf_get_f32(fe_gguf_find(g, "llama.block_count"), &f, &err), FE_E_FORMAT);
    assert_int_equal(fe_gguf_get_bool(fe_gguf_find(g, "llama.block_count"), &bo, &err),
                     FE_E_FORMAT);
    assert_int_equal(fe_gguf_get_str(fe_gguf_find(g, "tokenizer.ggml.tokens"), &str, &len, &err),
                     FE_E_FORMAT);
    assert_non_null(strstr(err.message, "array of string"));
    assert_int_equal(fe_gguf_get_u32(NULL, &u, &err), FE_E_NOTFOUND);
    assert_int_equal(fe_gguf_array_len(fe_gguf_find(g, "general.name")), 0);
    assert_int_equal(fe_gguf_array_len(NULL), 0);
    assert_int_equal(fe_gguf_array_type(NULL), FE_GGUF_TYPE_COUNT);
    assert_null(fe_gguf_array_str(fe_gguf_find(g, "tokenizer.ggml.scores"), 0, &len));
    assert_int_equal(fe_gguf_array_i32(fe_gguf_find(g, "tokenizer.ggml.tokens"), 0, &v),
                     FE_E_DTYPE);
    assert_int_equal(fe_gguf_array_i32(fe_gguf_find(g, "tokenizer.ggml.token_type"), 8, &v),
                     FE_E_BOUNDS);
    assert_int_equal(fe_gguf_array_f32(fe_gguf_find(g, "tokenizer.ggml.token_type"), 0, &f),
                     FE_E_DTYPE);
    assert_int_equal(fe_gguf_array_f32(fe_gguf_find(g, "general.name"), 0, &f), FE_E_DTYPE);
    assert_string_equal(fe_gguf_type_name(FE_GGUF_STRING), "string");
    assert_string_equal(fe_gguf_type_name((fe_gguf_type)99), "?");
    fe_gguf_close(g);
    lmfix_free(&b);
}

static void gguf_honours_general_alignment(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){.alignment = 64, .version = 2}, &lay);
    fe_error err;
    fe_gguf *g = open_buf(&b, &err);
    assert_int_equal(fe_gguf_version(g), 2);
    assert_int_equal(fe_gguf_alignment(g), 64);
    for (size_t k = 0; k < fe_gguf_tensor_count(g); k++) {
        const fe_gguf_tensor *t = fe_gguf_tensor_at(g, k);
        assert_int_equal(t->offset % 64, 0);
        assert_int_equal(((const unsigned char *)t->data)[0], lmfix_pattern(k, 0));
    }
    fe_gguf_close(g);
    lmfix_free(&b);
}

static void gguf_every_truncation_is_a_clean_error(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    for (size_t n = 0; n < b.n; n++) {
        fe_error err = {0};
        fe_status st = try_open(&b, n, &err);
        if (st != FE_E_FORMAT)
            fail_msg("a file cut at %zu of %zu bytes gave %s", n, b.n, fe_status_str(st));
        assert_non_null(strstr(err.message, "bad.gguf"));
    }
    fe_error err;
    assert_int_equal(try_open(&b, b.n, &err), FE_OK);
    lmfix_free(&b);
}

/* Rebuilds the tiny file, applies one patch, expects FE_E_FORMAT naming `needle`. */
typedef void (*patch_fn)(lmfix_buf *b, const lmfix_gguf_layout *l);

static void corrupt(patch_fn patch, const char *needle) {
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    patch(&b, &lay);
    expect_format(&b, needle);
    lmfix_free(&b);
}

static size_t kv_index(const lmfix_gguf_layout *l, const char *key) {
    for (size_t i = 0; i < l->n_kv; i++)
        if (!strcmp(l->kv_key[i], key)) return i;
    fail_msg("no key %s in the fixture", key);
    return 0;
}

static void p_magic(lmfix_buf *b, const lmfix_gguf_layout *l) { (void)l, b->p[0] = 'X'; }
static void p_v1(lmfix_buf *b, const lmfix_gguf_layout *l) { (void)l, lmfix_set_u32(b, 4, 1); }
static void p_v9(lmfix_buf *b, const lmfix_gguf_layout *l) { (void)l, lmfix_set_u32(b, 4, 9); }
static void p_bigend(lmfix_buf *b, const lmfix_gguf_layout *l) {
    (void)l, lmfix_set_u32(b, 4, 0x03000000);
}
static void p_ntensors(lmfix_buf *b, const lmfix_gguf_layout *l) {
    (void)l, lmfix_set_u64(b, 8, (uint64_t)1 << 62);
}
static void p_nkv(lmfix_buf *b, const lmfix_gguf_layout *l) {
    (void)l, lmfix_set_u64(b, 16, UINT64_MAX);
}
static void p_nkv_more(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, 16, l->n_kv + 1);
}
static void p_keylen(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->kv_at[3], (uint64_t)1 << 63);
}
static void p_keylen0(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->kv_at[0], 0);
}
static void p_key_utf8(lmfix_buf *b, const lmfix_gguf_layout *l) { b->p[l->kv_at[2] + 8] = 0xff; }
static void p_key_nul(lmfix_buf *b, const lmfix_gguf_layout *l) { b->p[l->kv_at[2] + 9] = 0; }
static void p_key_dup(lmfix_buf *b, const lmfix_gguf_layout *l) {
    memcpy(b->p + l->kv_at[kv_index(l, "test.u16")] + 8, "test.i64", 8);
}
static void p_kv_type(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->kv_type_at[4], 13);
}
static void p_strlen(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->kv_type_at[kv_index(l, "general.name")] + 4, UINT64_MAX - 3);
}
static void p_arr_type(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->kv_type_at[kv_index(l, "tokenizer.ggml.tokens")] + 4, 42);
}
static void p_arr_nested(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->kv_type_at[kv_index(l, "tokenizer.ggml.token_type")] + 4, 9);
}
static void p_arr_count(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->kv_type_at[kv_index(l, "tokenizer.ggml.scores")] + 8, (uint64_t)1 << 61);
}
static void p_arr_elem_len(lmfix_buf *b, const lmfix_gguf_layout *l) {
    /* the first token's length */
    lmfix_set_u64(b, l->kv_type_at[kv_index(l, "tokenizer.ggml.tokens")] + 16, 1u << 20);
}
/* Renames llama.block_count (17 bytes, a u32) to general.alignment and sets it. */
static void set_alignment(lmfix_buf *b, const lmfix_gguf_layout *l, uint32_t v) {
    size_t i = kv_index(l, "llama.block_count");
    memcpy(b->p + l->kv_at[i] + 8, "general.alignment", 17);
    lmfix_set_u32(b, l->kv_type_at[i] + 4, v);
}
static void p_align0(lmfix_buf *b, const lmfix_gguf_layout *l) { set_alignment(b, l, 0); }
static void p_align48(lmfix_buf *b, const lmfix_gguf_layout *l) { set_alignment(b, l, 48); }
static void p_name_utf8(lmfix_buf *b, const lmfix_gguf_layout *l) {
    b->p[l->tensor_at[1] + 8] = 0xc0;
}
static void p_name_dup(lmfix_buf *b, const lmfix_gguf_layout *l) {
    memcpy(b->p + l->tensor_at[3] + 8, "blk.0.attn_q", 12); /* attn_k -> attn_q */
}
static void p_ndims0(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->n_dims_at[1], 0);
}
static void p_ndims5(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->n_dims_at[1], 5);
}
static void p_dim_huge(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->n_dims_at[1] + 4, ((uint64_t)1 << 41));
}
static void p_dim_product(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->n_dims_at[0] + 4, (uint64_t)1 << 32);
    lmfix_set_u64(b, l->n_dims_at[0] + 12, (uint64_t)1 << 32);
}
static void p_dim_negative(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->n_dims_at[2] + 4, UINT64_MAX);
}
static void p_type_removed(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->type_at[1], 4);
}
static void p_type_unknown(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u32(b, l->type_at[1], 1000);
}
static void p_block(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->n_dims_at[0] + 4, 33); /* Q8_0 rows of 33 */
}
static void p_unaligned(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->offset_at[2], l->offset[2] + 4);
}
static void p_past_end(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->offset_at[2], (uint64_t)1 << 20);
}
static void p_offset_huge(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->offset_at[2], UINT64_MAX - 31);
}
static void p_overlap(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->offset_at[3], l->offset[2]);
}
static void p_overlap_inside(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->offset_at[1], l->offset[0] + 64); /* inside token_embd's 272 bytes */
}
static void p_size_past(lmfix_buf *b, const lmfix_gguf_layout *l) {
    lmfix_set_u64(b, l->n_dims_at[7] + 4, 1024); /* the last tensor grows past the end */
}

static void gguf_corrupt_fields_are_clean_errors(void **s) {
    (void)s;
    corrupt(p_magic, "not a GGUF file");
    corrupt(p_v1, "version 1");
    corrupt(p_v9, "version 9");
    corrupt(p_bigend, "big-endian");
    corrupt(p_ntensors, "tensors, more than");
    corrupt(p_nkv, "metadata entries");
    corrupt(p_nkv_more, "bad.gguf");
    corrupt(p_keylen, "bytes long");
    corrupt(p_keylen0, "is empty");
    corrupt(p_key_utf8, "UTF-8");
    corrupt(p_key_nul, "UTF-8");
    corrupt(p_key_dup, "appears twice");
    corrupt(p_kv_type, "not a GGUF type");
    corrupt(p_strlen, "bytes long");
    corrupt(p_arr_type, "not a GGUF type");
    corrupt(p_arr_nested, "array of arrays");
    corrupt(p_arr_count, "holds 2305843009213693952 elements");
    corrupt(p_arr_elem_len, "element 0 of tokenizer.ggml.tokens");
    corrupt(p_align0, "general.alignment is 0");
    corrupt(p_align48, "general.alignment is 48");
    corrupt(p_name_utf8, "UTF-8");
    corrupt(p_name_dup, "tensor blk.0.attn_q.weight appears twice");
    corrupt(p_ndims0, "0 dimensions");
    corrupt(p_ndims5, "5 dimensions");
    corrupt(p_dim_huge, "2^40");
    corrupt(p_dim_product, "2^40");
    corrupt(p_dim_negative, "2^40");
    corrupt(p_type_removed, "GGML type 4");
    corrupt(p_type_unknown, "GGML type 1000");
    corrupt(p_block, "not a multiple of Q8_0's block of 32");
    corrupt(p_unaligned, "not a multiple of the alignment 32");
    corrupt(p_past_end, "past the end of the file");
    corrupt(p_offset_huge, "past the end of the file");
    corrupt(p_overlap, "overlap");
    corrupt(p_overlap_inside, "tensors token_embd.weight and blk.0.attn_norm.weight overlap");
    corrupt(p_size_past, "past the end of the file");
}

static void gguf_random_corruptions_never_crash(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    unsigned char *orig = lmfix_copy(&b, b.n);
    test_rng r = {42};
    int ok = 0, bad = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(b.p, orig, b.n);
        int flips = 1 + (int)(test_rng_next(&r) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(test_rng_next(&r) % lay.data_at); /* the header */
            b.p[at] = (unsigned char)test_rng_next(&r);
        }
        fe_error err;
        fe_status st = try_open(&b, b.n, &err);
        if (st == FE_OK) ok++;
        else if (st == FE_E_FORMAT) bad++;
        else fail_msg("iteration %d: %s (%s)", it, fe_status_str(st), err.message);
    }
    assert_true(bad > 1000);
    assert_true(ok > 0); /* flips inside string values still open */
    free(orig);
    lmfix_free(&b);
}

static void gguf_failed_allocations_are_clean(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_gguf_layout lay;
    lmfix_gguf(&b, &(lmfix_gguf_opts){0}, &lay);
    for (long n = 1;; n++) {
        fe_gguf *g = NULL;
        fe_error err;
        fe_alloc_fail_at(n);
        fe_status st = fe_gguf_open_memory(b.p, b.n, "tiny.gguf", &g, &err);
        fe_alloc_fail_at(0);
        if (st == FE_OK) {
            assert_true(n > 5);
            fe_gguf_close(g);
            break;
        }
        assert_int_equal(st, FE_E_NOMEM);
        assert_null(g);
    }
    fe_gguf *g = NULL;
    fe_error err;
    assert_int_equal(fe_gguf_open("/nonexistent/x.gguf", &g, &err), FE_E_IO);
    assert_non_null(strstr(err.message, "/nonexistent/x.gguf"));
    assert_int_equal(fe_gguf_open("/tmp", &g, &err), FE_E_IO);
    assert_null(g);
    lmfix_free(&b);
}

static void smollm2_gguf_reads_as_expected(void **s) {
    (void)s;
    const char *path = lmfix_need_smollm2();
    if (!path) skip();
    fe_gguf *g = NULL;
    fe_error err;
    if (fe_gguf_open(path, &g, &err)) fail_msg("%s", err.message);
    assert_int_equal(fe_gguf_version(g), 3);
    assert_int_equal(fe_gguf_tensor_count(g), 272);
    assert_int_equal(fe_gguf_array_len(fe_gguf_find(g, "tokenizer.ggml.tokens")), 49152);
    fe_lm_config c;
    if (fe_lm_config_from_gguf(g, &c, &err)) fail_msg("%s", err.message);
    assert_string_equal(c.architecture, "llama");
    assert_int_equal(c.n_layers, 30);
    assert_int_equal(c.hidden, 576);
    assert_int_equal(c.n_heads, 9);
    assert_int_equal(c.n_kv_heads, 3);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.ffn, 1536);
    assert_int_equal(c.vocab, 49152);
    assert_int_equal(c.max_context, 8192);
    assert_true(c.tied_embeddings);
    assert_true(c.rope_theta == 100000.0);
    assert_true(fabs(c.rms_eps - 1e-5) < 1e-12);
    assert_int_equal(c.rope_scaling.type, FE_LM_ROPE_NONE);
    assert_int_equal(c.bos_id, 1);
    assert_int_equal(c.n_eos, 1);
    assert_int_equal(c.eos_ids[0], 2);
    fe_lm_config p;
    assert_int_equal(fe_lm_config_preset("smollm2-135m", &p, &err), FE_OK);
    assert_int_equal(p.vocab, c.vocab);
    assert_int_equal(p.hidden, c.hidden);
    assert_int_equal(p.n_layers, c.n_layers);
    assert_int_equal(p.n_heads, c.n_heads);
    assert_int_equal(p.n_kv_heads, c.n_kv_heads);
    assert_int_equal(p.head_dim, c.head_dim);
    assert_int_equal(p.ffn, c.ffn);
    assert_int_equal(p.max_context, c.max_context);
    assert_true(p.rope_theta == c.rope_theta);

    const fe_gguf_tensor *t;
    assert_int_equal(
        fe_gguf_tensor_expect(g, "token_embd.weight", 2, (int64_t[]){49152, 576}, &t, &err), FE_OK);
    assert_int_equal(t->dtype, FE_DTYPE_Q8_0);
    assert_int_equal(
        fe_gguf_tensor_expect(g, "blk.0.ffn_down.weight", 2, (int64_t[]){576, 1536}, &t, &err),
        FE_OK);
    assert_int_equal(t->dtype, FE_DTYPE_Q4_1);
    assert_null(fe_gguf_tensor_find(g, "output.weight"));
    int counts[FE_DTYPE_COUNT] = {0};
    const unsigned char *base = fe_gguf_tensor_at(g, 0)->data;
    base -= fe_gguf_tensor_at(g, 0)->offset;
    for (size_t i = 0; i < fe_gguf_tensor_count(g); i++) {
        t = fe_gguf_tensor_at(g, i);
        assert_true(t->readable);
        counts[t->dtype]++;
        assert_true(t->offset + t->n_bytes <= fe_gguf_size(g));
        assert_ptr_equal(t->data, base + t->offset);
        assert_int_equal(t->offset % fe_gguf_alignment(g), 0);
        assert_int_equal(t->n_bytes, fe_dtype_bytes(t->dtype, t->n_elements));
    }
    assert_int_equal(counts[FE_DTYPE_Q8_0], 1);
    assert_int_equal(counts[FE_DTYPE_Q4_1], 210);
    assert_int_equal(counts[FE_DTYPE_F32], 61);
    fe_gguf_close(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gguf_reads_every_field_of_a_small_file),
        cmocka_unit_test(gguf_refuses_unreadable_types_by_name),
        cmocka_unit_test(gguf_getters_check_types_and_ranges),
        cmocka_unit_test(gguf_honours_general_alignment),
        cmocka_unit_test(gguf_every_truncation_is_a_clean_error),
        cmocka_unit_test(gguf_corrupt_fields_are_clean_errors),
        cmocka_unit_test(gguf_random_corruptions_never_crash),
        cmocka_unit_test(gguf_failed_allocations_are_clean),
        cmocka_unit_test(smollm2_gguf_reads_as_expected),
    };
    return cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
}
