/* lm/tokenizer/pretokenize.c: the split-regex chain over PCRE2 and the named chains of GGUF
 * tokenizer.ggml.pre (see pretokenize.h). Invariant: a split consumes its input in order and
 * hands out every byte exactly once, so the pieces concatenate back to the input. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "lm/tokenizer/pretokenize.h"

#include <pcre2.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

/* HF tokenizers' ByteLevel regex: llama.cpp's "gpt2" one plus a final \s+ (a lone whitespace
 * before a non-space, which llama.cpp leaves between matches; same pieces either way). */
const char *const fe_pretok_gpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const char *const fe_pretok_llama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const char *const digit_each = "\\p{N}";

/* llama.cpp's names (llama-vocab.cpp), grouped by the chain they select. */
static const struct named {
    const char *name;
    const char *const *chain[2]; /* run in order; NULL when the chain is shorter */
    bool llama3; /* llama.cpp: ignore_merges and add_bos */
} NAMED[] = {
    {"gpt2", {&fe_pretok_gpt2, NULL}, false},
    {"gpt-2", {&fe_pretok_gpt2, NULL}, false},
    {"mpt", {&fe_pretok_gpt2, NULL}, false},
    {"olmo", {&fe_pretok_gpt2, NULL}, false},
    {"jais", {&fe_pretok_gpt2, NULL}, false},
    {"llama3", {&fe_pretok_llama3, NULL}, true},
    {"llama-v3", {&fe_pretok_llama3, NULL}, true},
    {"llama-bpe", {&fe_pretok_llama3, NULL}, true},
    {"falcon3", {&fe_pretok_llama3, NULL}, true},
    {"pixtral", {&fe_pretok_llama3, NULL}, true},
    {"dbrx", {&fe_pretok_llama3, NULL}, false},
    {"smaug-bpe", {&fe_pretok_llama3, NULL}, false},
    {"smollm", {&digit_each, &fe_pretok_gpt2}, false},
    {"starcoder", {&digit_each, &fe_pretok_gpt2}, false},
    {"refact", {&digit_each, &fe_pretok_gpt2}, false},
    {"command-r", {&digit_each, &fe_pretok_gpt2}, false},
    {"codeshell", {&digit_each, &fe_pretok_gpt2}, false},
};

static void *pcre_alloc(PCRE2_SIZE n, void *data) {
    (void)data;
    return fe_malloc(n);
}

static void pcre_free(void *p, void *data) {
    (void)data;
    fe_free(p);
}

fe_status fe_pretok_add(fe_pretok *p, const char *pattern, size_t len, const char *what,
                        fe_error *err) {
    if (p->n >= FE_PRETOK_MAX)
        return fe_error_set(err, FE_E_UNSUPPORTED,
                            "%s: more than %d split regexes in the pre-tokenizer chain; ferrum "
                            "runs at most %d",
                            what, FE_PRETOK_MAX, FE_PRETOK_MAX);
    if (!p->gctx) {
        p->gctx = pcre2_general_context_create(pcre_alloc, pcre_free, NULL);
        if (!p->gctx) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    }
    pcre2_compile_context *cc = pcre2_compile_context_create(p->gctx);
    if (!cc) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, cc);
    pcre2_compile_context_free(cc);
    if (!re) {
        if (code == PCRE2_ERROR_HEAP_FAILED || code == PCRE2_ERROR_NOMEMORY)
            return fe_error_set(err, FE_E_NOMEM, "%s: out of memory compiling a regex", what);
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(code, msg, sizeof msg) < 0) strcpy((char *)msg, "?");
        return fe_error_set(err, FE_E_FORMAT,
                            "%s: pre-tokenizer regex does not compile at offset %zu: %s (the "
                            "pattern must be PCRE2/Oniguruma syntax)",
                            what, (size_t)at, (const char *)msg);
    }
    /* Faster matching when the JIT is there; without it (or out of memory) the interpreter
     * gives the same pieces. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    p->re[p->n++] = re;
    return FE_OK;
}

fe_status fe_pretok_add_named(fe_pretok *p, const char *name, size_t len, bool *ignore_merges,
                              bool *add_bos, fe_error *err) {
    for (size_t i = 0; i < sizeof NAMED / sizeof NAMED[0]; i++) {
        const struct named *e = &NAMED[i];
        if (strlen(e->name) != len || memcmp(e->name, name, len) != 0) continue;
        for (int k = 0; k < 2 && e->chain[k]; k++) {
            const char *re = *e->chain[k];
            fe_status st = fe_pretok_add(p, re, strlen(re), e->name, err);
            if (st != FE_OK) return st;
        }
        *ignore_merges = *add_bos = e->llama3;
        return FE_OK;
    }
    char known[512];
    size_t o = 0;
    known[0] = 0;
    for (size_t i = 0; i < sizeof NAMED / sizeof NAMED[0]; i++)
        o += (size_t)snprintf(known + o, sizeof known - o, "%s%s", i ? ", " : "", NAMED[i].name);
    return fe_error_set(err, FE_E_UNSUPPORTED,
                        "pre-tokenizer \"%.*s\" is not one ferrum knows (%s); convert the "
                        "model with one of these or load its tokenizer.json",
                        (int)(len > 64 ? 64 : len), name, known);
}

void fe_pretok_deinit(fe_pretok *p) {
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->re[i]);
    pcre2_general_context_free(p->gctx);
    memset(p, 0, sizeof *p);
}

fe_status fe_pretok_scratch_init(const fe_pretok *p, fe_pretok_scratch *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < p->n; i++) {
        s->md[i] = pcre2_match_data_create_from_pattern(p->re[i], p->gctx);
        if (!s->md[i]) {
            fe_pretok_scratch_deinit(s);
            return FE_E_NOMEM;
        }
    }
    return FE_OK;
}

void fe_pretok_scratch_deinit(fe_pretok_scratch *s) {
    for (int i = 0; i < FE_PRETOK_MAX; i++) pcre2_match_data_free(s->md[i]);
    memset(s, 0, sizeof *s);
}

static fe_status split(const fe_pretok *p, fe_pretok_scratch *s, int level, const char *text,
                       size_t n, fe_piece_fn fn, void *ctx, fe_error *err);

static fe_status piece(const fe_pretok *p, fe_pretok_scratch *s, int level, const char *text,
                       size_t n, fe_piece_fn fn, void *ctx, fe_error *err) {
    if (n == 0) return FE_OK;
    if (level + 1 == p->n) return fn(ctx, text, n);
    return split(p, s, level + 1, text, n, fn, ctx, err);
}

static fe_status split(const fe_pretok *p, fe_pretok_scratch *s, int level, const char *text,
                       size_t n, fe_piece_fn fn, void *ctx, fe_error *err) {
    pcre2_match_data *md = s->md[level];
    size_t pos = 0; /* everything before pos has been handed out */
    while (pos < n) {
        /* PCRE2_NOTEMPTY: an empty match would split nothing and stall */
        int rc = pcre2_match(p->re[level], (PCRE2_SPTR)text, n, pos, PCRE2_NOTEMPTY, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            if (rc == PCRE2_ERROR_NOMEMORY)
                return fe_error_set(err, FE_E_NOMEM, "tokenizer: out of memory splitting text");
            PCRE2_UCHAR msg[160];
            if (pcre2_get_error_message(rc, msg, sizeof msg) < 0) strcpy((char *)msg, "?");
            return fe_error_set(err, FE_E_UNSUPPORTED,
                                "tokenizer: the pre-tokenizer regex gave up at byte %zu of a "
                                "%zu-byte piece: %s",
                                pos, n, (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        fe_status st = piece(p, s, level, text + pos, ms - pos, fn, ctx, err);
        if (st == FE_OK) st = piece(p, s, level, text + ms, me - ms, fn, ctx, err);
        if (st != FE_OK) return st;
        pos = me;
    }
    return piece(p, s, level, text + pos, n - pos, fn, ctx, err);
}

fe_status fe_pretok_split(const fe_pretok *p, fe_pretok_scratch *s, const char *text, size_t n,
                          fe_piece_fn fn, void *ctx, fe_error *err) {
    if (n == 0) return FE_OK;
    if (p->n == 0) return fn(ctx, text, n);
    return split(p, s, 0, text, n, fn, ctx, err);
}
