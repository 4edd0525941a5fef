/* tests/support/lm_fixtures.c: checkpoint bytes for the src/lm tests (see lm_fixtures.h). */
#include "lm_fixtures.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lm/tokenizer/bytelevel.h"

void lmfix_put(lmfix_buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

void lmfix_set_u32(lmfix_buf *b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

void lmfix_set_u64(lmfix_buf *b, size_t at, uint64_t v) {
    for (int i = 0; i < 8; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

void lmfix_u32(lmfix_buf *b, uint32_t v) {
    unsigned char x[4] = {0};
    lmfix_put(b, x, 4);
    lmfix_set_u32(b, b->n - 4, v);
}

void lmfix_u64(lmfix_buf *b, uint64_t v) {
    unsigned char x[8] = {0};
    lmfix_put(b, x, 8);
    lmfix_set_u64(b, b->n - 8, v);
}

void lmfix_free(lmfix_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

unsigned char *lmfix_copy(const lmfix_buf *b, size_t n) {
    unsigned char *p = malloc(n ? n : 1);
    if (!p) abort();
    if (n) memcpy(p, b->p, n);
    return p;
}

unsigned char lmfix_pattern(size_t k, size_t j) { return (unsigned char)(k * 37 + j * 7 + 1); }

/* ---- GGUF ---- */

const lmfix_tensor lmfix_tiny_tensors[] = {
    {"token_embd.weight", 8, 2, {32, 8}, 8 * 34},       /* Q8_0, ferrum (8, 32) */
    {"blk.0.attn_norm.weight", 0, 1, {32}, 128},        /* F32 */
    {"blk.0.attn_q.weight", 1, 2, {32, 2}, 128},        /* F16 */
    {"blk.0.attn_k.weight", 30, 2, {32, 2}, 128},       /* BF16 */
    {"blk.0.ffn_down.weight", 3, 2, {64, 2}, 4 * 20},   /* Q4_1 */
    {"blk.0.ffn_up.weight", 2, 2, {32, 3}, 3 * 18},     /* Q4_0 */
    {"blk.0.ffn_gate.weight", 13, 2, {256, 1}, 176},    /* Q5_K: not readable */
    {"blk.0.attn_v.weight", 0, 3, {4, 2, 2}, 64},       /* F32, ferrum (2, 2, 4) */
};
const size_t lmfix_tiny_n_tensors = sizeof lmfix_tiny_tensors / sizeof lmfix_tiny_tensors[0];

const char *const lmfix_tiny_tokens[] = {"<s>", "</s>",     "a",         "b",
                                         "ab",  "\xc3\xa9", "\xc4\xa0x", ""};

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 };

static void str(lmfix_buf *b, const char *s) {
    lmfix_u64(b, strlen(s));
    lmfix_put(b, s, strlen(s));
}

static void key(lmfix_buf *b, lmfix_gguf_layout *l, const char *k, uint32_t type) {
    l->kv_key[l->n_kv] = k;
    l->kv_at[l->n_kv] = b->n;
    str(b, k);
    l->kv_type_at[l->n_kv++] = b->n;
    lmfix_u32(b, type);
}

static void kv_u32(lmfix_buf *b, lmfix_gguf_layout *l, const char *k, uint32_t v) {
    key(b, l, k, T_U32);
    lmfix_u32(b, v);
}

static void kv_f32(lmfix_buf *b, lmfix_gguf_layout *l, const char *k, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    key(b, l, k, T_F32);
    lmfix_u32(b, u);
}

static void kv_str(lmfix_buf *b, lmfix_gguf_layout *l, const char *k, const char *v) {
    key(b, l, k, T_STR);
    str(b, v);
}

static void write_kvs(lmfix_buf *b, const lmfix_gguf_opts *o, lmfix_gguf_layout *l) {
    kv_str(b, l, "general.architecture", "llama");
    kv_str(b, l, "general.name", "tiny");
    if (o->alignment) kv_u32(b, l, "general.alignment", o->alignment);
    kv_u32(b, l, "llama.block_count", 1);
    kv_u32(b, l, "llama.context_length", 128);
    kv_u32(b, l, "llama.embedding_length", 32);
    kv_u32(b, l, "llama.feed_forward_length", 64);
    kv_u32(b, l, "llama.attention.head_count", 4);
    kv_u32(b, l, "llama.attention.head_count_kv", 2);
    kv_f32(b, l, "llama.rope.freq_base", 10000.0f);
    kv_f32(b, l, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (!o->no_vocab_size) kv_u32(b, l, "llama.vocab_size", 8);
    kv_u32(b, l, "llama.rope.dimension_count", o->rot_dims ? o->rot_dims : 8);
    kv_str(b, l, "tokenizer.ggml.model", "gpt2");
    key(b, l, "tokenizer.ggml.tokens", T_ARR);
    lmfix_u32(b, T_STR);
    lmfix_u64(b, 8);
    for (int i = 0; i < 8; i++) str(b, lmfix_tiny_tokens[i]);
    key(b, l, "tokenizer.ggml.token_type", T_ARR);
    lmfix_u32(b, T_I32);
    lmfix_u64(b, 8);
    for (int i = 0; i < 8; i++) lmfix_u32(b, (uint32_t)(i < 2 ? 3 : 1));
    key(b, l, "tokenizer.ggml.scores", T_ARR);
    lmfix_u32(b, T_F32);
    lmfix_u64(b, 8);
    for (int i = 0; i < 8; i++) {
        float f = -0.5f * (float)i;
        uint32_t u;
        memcpy(&u, &f, 4);
        lmfix_u32(b, u);
    }
    kv_u32(b, l, "tokenizer.ggml.bos_token_id", 1);
    kv_u32(b, l, "tokenizer.ggml.eos_token_id", 2);
    key(b, l, "tokenizer.ggml.add_bos_token", T_BOOL);
    lmfix_put(b, "\x01", 1);
    key(b, l, "test.i64", T_I64);
    lmfix_u64(b, (uint64_t)-5);
    key(b, l, "test.u64", T_U64);
    lmfix_u64(b, (uint64_t)1 << 40);
    key(b, l, "test.i8", T_I8);
    lmfix_put(b, "\xfd", 1); /* -3 */
    key(b, l, "test.u16", T_U16);
    lmfix_put(b, "\x34\x12", 2);
    key(b, l, "test.f64", T_F64);
    double d = 0.25;
    uint64_t u;
    memcpy(&u, &d, 8);
    lmfix_u64(b, u);
    key(b, l, "test.i16s", T_ARR);
    lmfix_u32(b, T_I16);
    lmfix_u64(b, 2);
    lmfix_put(b, "\xff\xff\x10\x00", 4); /* -1, 16 */
}

static const lmfix_tensor extra_rope = {"rope_freqs.weight", 0, 1, {4}, 16};
static const lmfix_tensor extra_output = {"output.weight", 8, 2, {32, 8}, 8 * 34};

void lmfix_gguf(lmfix_buf *b, const lmfix_gguf_opts *o, lmfix_gguf_layout *l) {
    memset(l, 0, sizeof *l);
    const lmfix_tensor *ts[LMFIX_MAX_TENSORS];
    size_t nt = 0;
    for (size_t i = 0; i < lmfix_tiny_n_tensors; i++) ts[nt++] = &lmfix_tiny_tensors[i];
    if (o->rope_freqs) ts[nt++] = &extra_rope;
    if (o->output) ts[nt++] = &extra_output;
    l->n_tensors = nt;
    l->alignment = o->alignment ? o->alignment : 32;
    lmfix_put(b, "GGUF", 4);
    lmfix_u32(b, o->version ? o->version : 3);
    lmfix_u64(b, nt);
    size_t n_kv_at = b->n;
    lmfix_u64(b, 0); /* patched below */
    write_kvs(b, o, l);
    lmfix_set_u64(b, n_kv_at, l->n_kv);
    uint64_t off = 0;
    for (size_t k = 0; k < nt; k++) {
        l->tensor_at[k] = b->n;
        str(b, ts[k]->name);
        l->n_dims_at[k] = b->n;
        lmfix_u32(b, ts[k]->n_dims);
        for (uint32_t d = 0; d < ts[k]->n_dims; d++) lmfix_u64(b, ts[k]->ne[d]);
        l->type_at[k] = b->n;
        lmfix_u32(b, ts[k]->ggml_type);
        l->offset_at[k] = b->n;
        l->offset[k] = off;
        lmfix_u64(b, off);
        off += (ts[k]->n_bytes + l->alignment - 1) / l->alignment * l->alignment;
    }
    while (b->n % l->alignment) lmfix_put(b, "", 1);
    l->data_at = b->n;
    for (size_t k = 0; k < nt; k++) {
        while (b->n < l->data_at + l->offset[k]) lmfix_put(b, "\0", 1);
        for (size_t j = 0; j < ts[k]->n_bytes; j++) {
            unsigned char c = lmfix_pattern(k, j);
            lmfix_put(b, &c, 1);
        }
    }
}

/* ---- safetensors ---- */

const lmfix_st_tensor lmfix_st_tensors[] = {
    {"model.embed_tokens.weight", "BF16", 2, {8, 4}, 2},
    {"model.norm.weight", "F32", 1, {4}, 4},
    {"model.layers.0.mlp.down_proj.weight", "F16", 2, {4, 6}, 2},
    {"position_ids", "I64", 2, {1, 3}, 8},
    {"scale", "F32", 0, {0}, 4},
};
const size_t lmfix_st_n_tensors = sizeof lmfix_st_tensors / sizeof lmfix_st_tensors[0];

static size_t st_bytes(const lmfix_st_tensor *t) {
    size_t n = t->elem_size;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->shape[d];
    return n;
}

void lmfix_safetensors(lmfix_buf *b, const lmfix_st_tensor *t, size_t n, size_t first) {
    char hdr[4096];
    size_t at = (size_t)snprintf(hdr, sizeof hdr, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t off = 0;
    for (size_t k = 0; k < n; k++) {
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                               t[k].name, t[k].dtype);
        for (int d = 0; d < t[k].rank; d++)
            at += (size_t)snprintf(hdr + at, sizeof hdr - at, d ? ",%lld" : "%lld",
                                   (long long)t[k].shape[d]);
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, "],\"data_offsets\":[%zu,%zu]}", off,
                               off + st_bytes(&t[k]));
        off += st_bytes(&t[k]);
    }
    at += (size_t)snprintf(hdr + at, sizeof hdr - at, "}");
    while (at % 8) hdr[at++] = ' ';
    lmfix_u64(b, at);
    lmfix_put(b, hdr, at);
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < st_bytes(&t[k]); j++) {
            unsigned char c = lmfix_pattern(k + first, j);
            lmfix_put(b, &c, 1);
        }
}

/* ---- files ---- */

bool lmfix_tmpdir(char *buf, size_t n) {
    if (snprintf(buf, n, "/tmp/ferrum-lm-XXXXXX") >= (int)n) return false;
    return mkdtemp(buf) != NULL;
}

bool lmfix_write(const char *dir, const char *name, const void *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static int rmtree_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0; /* on past what cannot be removed */
}

void lmfix_rmtree(const char *dir) {
    nftw(dir, rmtree_entry, 16, FTW_DEPTH | FTW_PHYS); /* children first, links not followed */
}

static const char *model_path(char *path, size_t n, const char *name) {
    const char *cache = getenv("FERRUM_CACHE_HOME");
    const char *home = getenv("HOME");
    if (cache && *cache) snprintf(path, n, "%s/models/%s", cache, name);
    else snprintf(path, n, "%s/.cache/ferrum/models/%s", home ? home : "", name);
    return path;
}

const char *lmfix_smollm2_path(void) {
    static char path[1024];
    return model_path(path, sizeof path, "SmolLM2-135M-Instruct.Q4_1.gguf");
}

const char *lmfix_gemma3_path(void) {
    static char path[1024];
    return model_path(path, sizeof path, "gemma-3-270m-q4_k_m.gguf");
}

const char *lmfix_need_gemma3(void) {
    const char *path = lmfix_gemma3_path();
    if (access(path, R_OK) == 0) return path;
    if (lmfix_in_ci()) fail_msg("%s is missing; scripts/setup fetches it (CI=true)", path);
    print_message("SKIP: %s is missing; run scripts/setup to fetch it\n", path);
    return NULL;
}

bool lmfix_in_ci(void) {
    const char *ci = getenv("CI");
    return ci && strcmp(ci, "true") == 0;
}

const char *lmfix_need_smollm2(void) {
    const char *path = lmfix_smollm2_path();
    if (access(path, R_OK) == 0) return path;
    if (lmfix_in_ci()) fail_msg("%s is missing; scripts/setup fetches it (CI=true)", path);
    print_message("SKIP: %s is missing; run scripts/setup to fetch it\n", path);
    return NULL;
}

const char *lmfix_need_minilm(void) {
    static char path[1024];
    char file[1100];
    const char *cache = getenv("FERRUM_CACHE_HOME");
    const char *home = getenv("HOME");
    if (cache && *cache)
        snprintf(path, sizeof path, "%s/models/all-MiniLM-L6-v2", cache);
    else
        snprintf(path, sizeof path, "%s/.cache/ferrum/models/all-MiniLM-L6-v2", home ? home : "");
    snprintf(file, sizeof file, "%s/model.safetensors", path);
    if (access(file, R_OK) == 0) return path;
    if (lmfix_in_ci()) fail_msg("%s is missing; scripts/setup fetches it (CI=true)", file);
    print_message("SKIP: %s is missing; run scripts/setup to fetch it\n", file);
    return NULL;
}

bool lmfix_byte_tokenizer(const char *dir, bool chatml, int n_extra) {
    char *p = malloc((size_t)(1 << 14) + (size_t)n_extra * 16);
    if (!p) return false;
    size_t n = (size_t)sprintf(p, "{\"added_tokens\": [%s], \"normalizer\": null, \"pre_tokenizer\": "
                                  "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                                  "\"use_regex\": true}, \"model\": {\"type\": \"BPE\", \"vocab\": {",
                               chatml ? "{\"id\": 256, \"content\": \"<|im_start|>\", \"special\": true}, "
                                        "{\"id\": 257, \"content\": \"<|im_end|>\", \"special\": true}"
                                      : "");
    for (int b = 0; b < 256; b++) {
        char c = (char)b, e[8];
        size_t k = fe_bytelevel_encode(&c, 1, e);
        bool esc = k == 1 && (e[0] == '"' || e[0] == '\\');
        n += (size_t)sprintf(p + n, "%s\"%s%.*s\": %d", b ? ", " : "", esc ? "\\" : "", (int)k, e, b);
    }
    if (chatml) n += (size_t)sprintf(p + n, ", \"<|im_start|>\": 256, \"<|im_end|>\": 257");
    for (int i = 0, id = chatml ? 258 : 256; i < n_extra; i++, id++)
        n += (size_t)sprintf(p + n, ", \"%c%c\": %d", 'a' + i / 10, '0' + i % 10, id);
    n += (size_t)sprintf(p + n, "}, \"merges\": []}}");
    bool ok = lmfix_write(dir, "tokenizer.json", p, n);
    free(p);
    return ok;
}
