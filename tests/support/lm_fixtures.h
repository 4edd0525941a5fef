/* tests/support/lm_fixtures.h: checkpoint bytes built in C for the src/lm tests: a tiny
 * Llama-shaped GGUF file (every readable tensor type, one unreadable, a rank-3 tensor, every
 * metadata value type) with the byte offsets of its fields recorded so tests can corrupt
 * them one at a time, small safetensors files, temp folders, and where the real SmolLM2
 * checkpoint lives. Test support only: allocation failures abort. */
#ifndef FE_TESTS_LM_FIXTURES_H
#define FE_TESTS_LM_FIXTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lmfix_buf {
    unsigned char *p;
    size_t n, cap;
} lmfix_buf;

void lmfix_put(lmfix_buf *b, const void *src, size_t n);
void lmfix_u32(lmfix_buf *b, uint32_t v);
void lmfix_u64(lmfix_buf *b, uint64_t v);
void lmfix_free(lmfix_buf *b);
/* Little-endian patches at byte offset `at`. */
void lmfix_set_u32(lmfix_buf *b, size_t at, uint32_t v);
void lmfix_set_u64(lmfix_buf *b, size_t at, uint64_t v);
/* A heap copy of the first n bytes, exactly n long, so sanitizers catch any overread. */
unsigned char *lmfix_copy(const lmfix_buf *b, size_t n);

/* ---- GGUF ---- */

enum { LMFIX_MAX_KV = 32, LMFIX_MAX_TENSORS = 12 };

typedef struct lmfix_tensor {
    const char *name;
    uint32_t ggml_type;
    uint32_t n_dims;
    uint64_t ne[4]; /* GGUF order: ne[0] innermost */
    size_t n_bytes;
} lmfix_tensor;

/* The tiny file's tensors, in file order (shared so tests can check every field). */
extern const lmfix_tensor lmfix_tiny_tensors[];
extern const size_t lmfix_tiny_n_tensors;
/* The tiny file's vocabulary (tokenizer.ggml.tokens), 8 entries, one of them empty. */
extern const char *const lmfix_tiny_tokens[];

typedef struct lmfix_gguf_opts {
    uint32_t version;   /* 0: 3 */
    uint32_t alignment; /* 0: no general.alignment entry (32 applies) */
    bool rope_freqs;    /* add a rope_freqs.weight tensor (f32, 4) */
    bool output;        /* add an output.weight tensor (untied) */
    bool no_vocab_size; /* leave out llama.vocab_size (the token list gives it) */
    uint32_t rot_dims;  /* llama.rope.dimension_count; 0: 8 (the head size) */
} lmfix_gguf_opts;

typedef struct lmfix_gguf_layout {
    size_t n_kv, n_tensors;
    size_t kv_at[LMFIX_MAX_KV];      /* each entry's key length field */
    size_t kv_type_at[LMFIX_MAX_KV]; /* each entry's value type field */
    const char *kv_key[LMFIX_MAX_KV];
    size_t tensor_at[LMFIX_MAX_TENSORS];   /* each tensor's name length field */
    size_t n_dims_at[LMFIX_MAX_TENSORS];   /* its n_dims field (dims follow) */
    size_t type_at[LMFIX_MAX_TENSORS];     /* its type field */
    size_t offset_at[LMFIX_MAX_TENSORS];   /* its offset field */
    uint64_t offset[LMFIX_MAX_TENSORS];    /* its data offset in the data section */
    size_t data_at;                        /* start of the data section */
    size_t alignment;
} lmfix_gguf_layout;

/* Builds the tiny GGUF into b (appending to an empty buffer). Tensor k's byte j is
 * lmfix_pattern(k, j); the file ends where the last tensor's data ends. */
void lmfix_gguf(lmfix_buf *b, const lmfix_gguf_opts *o, lmfix_gguf_layout *lay);
unsigned char lmfix_pattern(size_t k, size_t j);

/* ---- safetensors ---- */

typedef struct lmfix_st_tensor {
    const char *name, *dtype;
    int rank;
    int64_t shape[8];
    size_t elem_size;
} lmfix_st_tensor;

extern const lmfix_st_tensor lmfix_st_tensors[];
extern const size_t lmfix_st_n_tensors;

/* A safetensors file of tensors t[0..n) laid out in order (data byte j of tensor k is
 * lmfix_pattern(k + first_pattern, j)), the header padded with spaces to 8 bytes. */
void lmfix_safetensors(lmfix_buf *b, const lmfix_st_tensor *t, size_t n, size_t first_pattern);

/* ---- files ---- */

/* A new empty folder under /tmp; its path in buf. False on failure. */
bool lmfix_tmpdir(char *buf, size_t n);
/* Writes a file dir/name. False on failure. */
bool lmfix_write(const char *dir, const char *name, const void *p, size_t n);
/* Writes dir/tokenizer.json: a byte-level BPE with the 256 byte tokens (ids 0..255, one token
 * a byte, no merges), then, when chatml, <|im_start|> and <|im_end|> (256, 257, special),
 * then n_extra two-character tokens "a0", "a1", ... "b0"... (no merge makes them), so a
 * model's vocabulary can be covered. False on failure. */
bool lmfix_byte_tokenizer(const char *dir, bool chatml, int n_extra);
/* Removes dir and everything under it (links not followed). */
void lmfix_rmtree(const char *dir);

/* Where scripts/setup puts the SmolLM2 checkpoint:
 * ${FERRUM_CACHE_HOME:-$HOME/.cache/ferrum}/models/SmolLM2-135M-Instruct.Q4_1.gguf. */
const char *lmfix_smollm2_path(void);
/* The same for the Gemma 3 270M Q4_K_M checkpoint (gemma-3-270m-q4_k_m.gguf). */
const char *lmfix_gemma3_path(void);
const char *lmfix_need_gemma3(void);
/* Whether CI=true (a missing real checkpoint then fails instead of skipping). */
bool lmfix_in_ci(void);
/* The SmolLM2 checkpoint's path when it is there. When it is not: under CI=true the test
 * fails (a missing model is a failure there); elsewhere it says SKIP and returns NULL, and
 * the caller skip()s (or stops checking what needs the model). */
const char *lmfix_need_smollm2(void);
/* The all-MiniLM-L6-v2 folder scripts/fetch-model makes, when it holds model.safetensors; else
 * as lmfix_need_smollm2 (a failure under CI=true, a SKIP message and NULL otherwise). */
const char *lmfix_need_minilm(void);

#endif
