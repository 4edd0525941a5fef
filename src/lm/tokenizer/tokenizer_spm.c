/* lm/tokenizer/tokenizer_spm.c: a SentencePiece BPE (spm.h) or Unigram (unigram.h) tokenizer
 * built from plain arrays
 * (fe_spm_spec, tokenizer.h): pieces as raw text, scores, types; added tokens from the types
 * (CONTROL and UNKNOWN special, USER_DEFINED always matched), as llama.cpp's special-token
 * partition treats them. The GGUF loader (tokenizer_gguf.c) hands its arrays here. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/tokenizer/tokenizer_internal.h"

fe_spm_spec fe_spm_spec_default(void) {
    return (fe_spm_spec){.bos_id = -1, .eos_id = -1, .add_bos = true, .add_space_prefix = true,
                         .unk_id = -1};
}

fe_status fe_tokenizer_create_spm(const fe_spm_spec *spec, fe_tokenizer **out, fe_error *err) {
    const char *what = "SentencePiece tokenizer";
    *out = NULL;
    if (!spec || spec->n_tokens < 1 || !spec->tokens)
        return fe_error_set(err, FE_E_FORMAT, "%s: no tokens; give 1 to %d", what,
                            FE_TOKENIZER_MAX_VOCAB);
    if (!spec->scores)
        return fe_error_set(err, FE_E_FORMAT, "%s: no scores; SentencePiece merges by piece "
                            "score, one per token", what);
    fe_tokenizer *t;
    fe_status st = fe_tok_new(spec->n_tokens, what, &t, err);
    if (st != FE_OK) return st;
    t->spm = true;
    t->add_space_prefix = spec->add_space_prefix;
    t->scores = fe_malloc((size_t)spec->n_tokens * sizeof *t->scores);
    if (!t->scores) st = fe_error_set(err, FE_E_NOMEM, "%s: out of memory for scores", what);
    for (int i = 0; i < spec->n_tokens && st == FE_OK; i++) {
        int32_t ty = spec->token_types ? spec->token_types[i] : FE_TOKEN_NORMAL;
        if (ty < FE_TOKEN_NORMAL || ty > FE_TOKEN_BYTE) ty = FE_TOKEN_NORMAL;
        if (!isfinite(spec->scores[i])) {
            st = fe_error_set(err, FE_E_FORMAT, "%s: the score of token %d is not a finite "
                              "number", what, i);
            break;
        }
        t->scores[i] = spec->scores[i];
        const char *s = spec->tokens[i] ? spec->tokens[i] : "";
        size_t len = spec->token_lens ? spec->token_lens[i] : strlen(s);
        st = fe_tok_set(t, i, s, len, (fe_token_type)ty, false, false, what, err);
        bool added = ty == FE_TOKEN_CONTROL || ty == FE_TOKEN_USER_DEFINED || ty == FE_TOKEN_UNKNOWN;
        if (st == FE_OK && added)
            st = fe_tok_mark_added(t, i, ty != FE_TOKEN_USER_DEFINED, false, false, err);
    }
    if (st == FE_OK) st = fe_tok_index(t, what, err);
    if (st == FE_OK) st = fe_spm_finish(t, what, err);
    if (st == FE_OK && spec->sp_normalize) {
        t->sp_normalize = true;
        st = fe_spm_normalizer_init(&t->spm_norm, spec->charsmap, spec->charsmap ? spec->charsmap_len : 0,
                                    spec->remove_extra_whitespaces, what, err);
        t->spm_norm.collapse_spaces = spec->collapse_spaces;
    }
    t->prefix_unless_space = spec->prefix_unless_space;
    if (st == FE_OK && spec->unigram) {
        t->unigram = true;
        for (int i = 0; i < spec->n_tokens; i++) t->byte_fallback |= t->type[i] == FE_TOKEN_BYTE;
        t->unk_id = spec->unk_id;
        if (t->unk_id < -1 || t->unk_id >= spec->n_tokens)
            st = fe_error_set(err, FE_E_FORMAT, "%s: the unknown token %d is outside the %d "
                              "tokens; give its id or -1", what, (int)t->unk_id, spec->n_tokens);
        double lowest = 0;
        for (int i = 0; i < spec->n_tokens; i++)
            if (t->type[i] == FE_TOKEN_NORMAL && t->scores[i] < lowest) lowest = t->scores[i];
        t->unk_score = lowest - 10.0; /* llama.cpp's unknown_token_score_penalty */
    }
    if (st == FE_OK) {
        t->bos = spec->bos_id;
        t->eos = spec->eos_id;
        t->add_bos = spec->add_bos;
        if (t->bos < -1 || t->eos < -1)
            st = fe_error_set(err, FE_E_FORMAT, "%s: BOS %d / EOS %d; give an id or -1", what,
                              (int)t->bos, (int)t->eos);
    }
    if (st == FE_OK) st = fe_tok_finish(t, what, err);
    if (st != FE_OK) {
        fe_tokenizer_destroy(t);
        return st;
    }
    *out = t;
    return FE_OK;
}
