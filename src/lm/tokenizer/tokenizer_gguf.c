/* lm/tokenizer/tokenizer_gguf.c: the tokenizer a GGUF file's metadata describes (tokenizer.ggml.*).
 *
 * Reads model "gpt2" (byte-level BPE): tokens (byte-level text; CONTROL and USER_DEFINED
 * ones raw text, as llama.cpp's converter writes them), token_type, merges ("left right",
 * split at the first space after the first byte, as llama.cpp does), pre (the split chain,
 * pretokenize.h), bos/eos_token_id and add_bos_token. And model "llama" (SentencePiece BPE,
 * spm.h: Gemma, Llama 2): tokens (raw text with "▁"), scores, token_type (CONTROL and UNKNOWN
 * tokens special, USER_DEFINED ones always matched, as llama.cpp's special-token partition
 * treats them), add_space_prefix (default true, llama.cpp's), bos/eos and add_bos_token.
 * And model "t5" (SentencePiece Unigram, unigram.h: T5 and other encoders), the same arrays
 * plus unknown_token_id, remove_extra_whitespaces (default false, llama.cpp's) and
 * precompiled_charsmap (u8 bytes, spm_normalize.h), run through SentencePiece's normaliser;
 * BYTE tokens give byte fallback.
 * The strings are borrowed from the mapping only during the call. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/gguf.h"
#include "lm/tokenizer/tokenizer_internal.h"

static fe_status opt_id(const fe_gguf *g, const char *key, int32_t n, int32_t *out,
                        fe_error *err) {
    const fe_gguf_kv *kv = fe_gguf_find(g, key);
    if (!kv) return FE_OK;
    int64_t v;
    fe_status st = fe_gguf_get_i64(kv, &v, err);
    if (st != FE_OK) return st;
    if (v < 0 || v >= n)
        return fe_error_set(err, FE_E_FORMAT, "%s: %s = %lld is not one of the %d tokens",
                            fe_gguf_path(g), key, (long long)v, (int)n);
    *out = (int32_t)v;
    return FE_OK;
}

/* SentencePiece BPE or Unigram: pieces, scores and types (and for Unigram the unknown token
 * and the normaliser) into fe_tokenizer_create_spm (no merges) */
static fe_status build_spm(const fe_gguf *g, bool unigram, fe_tokenizer **out, fe_error *err) {
    const char *path = fe_gguf_path(g);
    const fe_gguf_kv *tokens = fe_gguf_find(g, "tokenizer.ggml.tokens");
    const fe_gguf_kv *types = fe_gguf_find(g, "tokenizer.ggml.token_type");
    const fe_gguf_kv *scores = fe_gguf_find(g, "tokenizer.ggml.scores");
    if (fe_gguf_array_type(tokens) != FE_GGUF_STRING)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.tokens is missing or not an "
                            "array of strings", path);
    size_t n = fe_gguf_array_len(tokens);
    if (n == 0 || n > FE_TOKENIZER_MAX_VOCAB)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.tokens has %zu tokens; a "
                            "vocabulary holds 1 to %d", path, n, FE_TOKENIZER_MAX_VOCAB);
    if (fe_gguf_array_type(scores) != FE_GGUF_F32 || fe_gguf_array_len(scores) != n)
        return fe_error_set(err, FE_E_FORMAT, "%s: a SentencePiece (\"%s\") tokenizer needs "
                            "tokenizer.ggml.scores, one f32 per token (%zu); the file has %s", path,
                            unigram ? "t5" : "llama", n, scores ? "another array" : "none");
    if (types && fe_gguf_array_len(types) != n)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.token_type has %zu entries for "
                            "%zu tokens", path, fe_gguf_array_len(types), n);
    fe_spm_spec spec = fe_spm_spec_default();
    if (unigram) spec.add_bos = false; /* T5-style encoders start without BOS, unless told */
    const char **strs = fe_malloc(n * sizeof *strs);
    size_t *lens = fe_malloc(n * sizeof *lens);
    float *sc = fe_malloc(n * sizeof *sc);
    int32_t *ty = fe_malloc(n * sizeof *ty);
    fe_status st = strs && lens && sc && ty ? FE_OK
                   : fe_error_set(err, FE_E_NOMEM, "%s: out of memory for %zu tokens", path, n);
    for (size_t i = 0; i < n && st == FE_OK; i++) {
        strs[i] = fe_gguf_array_str(tokens, i, &lens[i]);
        ty[i] = FE_TOKEN_NORMAL;
        if (fe_gguf_array_f32(scores, i, &sc[i]) != FE_OK ||
            (types && fe_gguf_array_i32(types, i, &ty[i]) != FE_OK))
            st = fe_error_set(err, FE_E_FORMAT, "%s: token %zu's score or type is not a number",
                              path, i);
    }
    const fe_gguf_kv *kv;
    if (st == FE_OK && (kv = fe_gguf_find(g, "tokenizer.ggml.add_space_prefix")))
        st = fe_gguf_get_bool(kv, &spec.add_space_prefix, err);
    if (st == FE_OK && (kv = fe_gguf_find(g, "tokenizer.ggml.add_bos_token")))
        st = fe_gguf_get_bool(kv, &spec.add_bos, err);
    if (st == FE_OK) st = opt_id(g, "tokenizer.ggml.bos_token_id", (int32_t)n, &spec.bos_id, err);
    if (st == FE_OK) st = opt_id(g, "tokenizer.ggml.eos_token_id", (int32_t)n, &spec.eos_id, err);
    if (st == FE_OK && unigram) {
        spec.unigram = spec.sp_normalize = true;
        st = opt_id(g, "tokenizer.ggml.unknown_token_id", (int32_t)n, &spec.unk_id, err);
        if (st == FE_OK && (kv = fe_gguf_find(g, "tokenizer.ggml.remove_extra_whitespaces")))
            st = fe_gguf_get_bool(kv, &spec.remove_extra_whitespaces, err);
        if (st == FE_OK && (kv = fe_gguf_find(g, "tokenizer.ggml.precompiled_charsmap"))) {
            spec.charsmap = fe_gguf_array_bytes(kv, &spec.charsmap_len);
            if (!spec.charsmap && fe_gguf_array_len(kv) > 0)
                st = fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.precompiled_charsmap is "
                                  "not an array of bytes (u8 or i8); write the model's "
                                  "NormalizerSpec.precompiled_charsmap as bytes", path);
        }
    }
    if (st == FE_OK) {
        spec.tokens = strs, spec.token_lens = lens, spec.scores = sc, spec.token_types = ty;
        spec.n_tokens = (int)n;
        st = fe_tokenizer_create_spm(&spec, out, err);
    }
    fe_free(strs);
    fe_free(lens);
    fe_free(sc);
    fe_free(ty);
    return st;
}

static fe_status build(const fe_gguf *g, fe_tokenizer **out, fe_error *err) {
    const char *path = fe_gguf_path(g);
    const fe_gguf_kv *model = fe_gguf_find(g, "tokenizer.ggml.model");
    if (!model)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no tokenizer.ggml.model: the file carries "
                            "no tokenizer (load the model's tokenizer.json instead)", path);
    const char *name;
    size_t name_len;
    fe_status st = fe_gguf_get_str(model, &name, &name_len, err);
    if (st != FE_OK) return st;
    if (name_len == 5 && memcmp(name, "llama", 5) == 0) return build_spm(g, false, out, err);
    if (name_len == 2 && memcmp(name, "t5", 2) == 0) return build_spm(g, true, out, err);
    if (name_len != 4 || memcmp(name, "gpt2", 4) != 0)
        return fe_error_set(err, FE_E_UNSUPPORTED,
                            "%s: tokenizer.ggml.model is \"%.*s\"; ferrum reads \"gpt2\" "
                            "(byte-level BPE), \"llama\" (SentencePiece BPE) and \"t5\" "
                            "(SentencePiece Unigram) tokenizers",
                            path, (int)(name_len > 32 ? 32 : name_len), name);

    const fe_gguf_kv *tokens = fe_gguf_find(g, "tokenizer.ggml.tokens");
    const fe_gguf_kv *types = fe_gguf_find(g, "tokenizer.ggml.token_type");
    const fe_gguf_kv *merges = fe_gguf_find(g, "tokenizer.ggml.merges");
    if (fe_gguf_array_type(tokens) != FE_GGUF_STRING)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.tokens is missing or not an "
                            "array of strings", path);
    if (fe_gguf_array_type(merges) != FE_GGUF_STRING)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.merges is missing or not an "
                            "array of strings", path);
    size_t n = fe_gguf_array_len(tokens);
    if (n == 0 || n > FE_TOKENIZER_MAX_VOCAB)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.tokens has %zu tokens; a "
                            "vocabulary holds 1 to %d", path, n, FE_TOKENIZER_MAX_VOCAB);
    if (types && fe_gguf_array_len(types) != n)
        return fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.token_type has %zu entries for "
                            "%zu tokens", path, fe_gguf_array_len(types), n);
    size_t n_merges = fe_gguf_array_len(merges);
    if (n_merges > INT32_MAX)
        return fe_error_set(err, FE_E_FORMAT, "%s: %zu merges", path, n_merges);

    fe_tokenizer *t;
    st = fe_tok_new((int32_t)n, path, &t, err);
    for (size_t i = 0; i < n && st == FE_OK; i++) {
        int32_t ty = FE_TOKEN_NORMAL;
        if (types && fe_gguf_array_i32(types, i, &ty) != FE_OK) {
            st = fe_error_set(err, FE_E_FORMAT, "%s: tokenizer.ggml.token_type[%zu] is not an "
                              "integer", path, i);
            break;
        }
        if (ty < FE_TOKEN_NORMAL || ty > FE_TOKEN_BYTE) ty = FE_TOKEN_NORMAL;
        bool added = ty == FE_TOKEN_CONTROL || ty == FE_TOKEN_USER_DEFINED;
        size_t len;
        const char *s = fe_gguf_array_str(tokens, i, &len);
        st = fe_tok_set(t, (int32_t)i, s, len, (fe_token_type)ty, !added, false, path, err);
        if (st == FE_OK && added)
            st = fe_tok_mark_added(t, (int32_t)i, ty == FE_TOKEN_CONTROL, false, false, err);
    }
    if (st == FE_OK) st = fe_tok_index(t, path, err);
    if (st == FE_OK && fe_bpe_merges_init(&t->merges, n_merges) != FE_OK)
        st = fe_error_set(err, FE_E_NOMEM, "%s: out of memory for merges", path);
    for (size_t i = 0; i < n_merges && st == FE_OK; i++) {
        size_t len;
        const char *m = fe_gguf_array_str(merges, i, &len);
        char what[320];
        snprintf(what, sizeof what, "%.200s: tokenizer.ggml.merges[%zu]", path, i);
        st = fe_tok_merge_line(t, m, len, (int32_t)i, what, err);
    }

    /* The split chain; a file without tokenizer.ggml.pre predates it and meant GPT-2's. */
    const fe_gguf_kv *pre = fe_gguf_find(g, "tokenizer.ggml.pre");
    const char *pre_name = "gpt2";
    size_t pre_len = 4;
    if (st == FE_OK && pre) st = fe_gguf_get_str(pre, &pre_name, &pre_len, err);
    if (st == FE_OK && pre_len == 7 && memcmp(pre_name, "default", 7) == 0) {
        pre_name = "gpt2";
        pre_len = 4;
    }
    bool ignore = false, add_bos = false;
    if (st == FE_OK) st = fe_pretok_add_named(&t->pre, pre_name, pre_len, &ignore, &add_bos, err);
    if (st == FE_OK) st = opt_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos, err);
    if (st == FE_OK) st = opt_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err);
    const fe_gguf_kv *kv_bos = fe_gguf_find(g, "tokenizer.ggml.add_bos_token");
    if (st == FE_OK && kv_bos) st = fe_gguf_get_bool(kv_bos, &add_bos, err);
    if (st == FE_OK) {
        t->ignore_merges = ignore;
        t->add_bos = add_bos;
        st = fe_tok_finish(t, path, err);
    }
    if (st != FE_OK) {
        fe_tokenizer_destroy(t);
        return st;
    }
    *out = t;
    return FE_OK;
}

fe_status fe_tokenizer_from_gguf(const fe_gguf *g, fe_tokenizer **out, fe_error *err) {
    *out = NULL;
    return build(g, out, err);
}
