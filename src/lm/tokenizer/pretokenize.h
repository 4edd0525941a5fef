/* lm/tokenizer/pretokenize.h: the pre-tokenizer, a chain of split regexes run through PCRE2.
 *
 * Each regex splits its input "isolated", as Hugging Face's Split(behavior=Isolated) and
 * llama.cpp do: every match is a piece, and so is every stretch between matches. The chain
 * runs in order, each regex over each piece of the one before, and each piece is the whole
 * subject of the next regex (a lookahead at a piece's end sees the end). No regex at all
 * means the whole text is one piece.
 *
 * Patterns are compiled UTF-8 with Unicode properties (PCRE2_UTF | PCRE2_UCP, so \s, \d and
 * \p{L} mean what they mean in Oniguruma and Rust's regex) and PCRE2_MATCH_INVALID_UTF, so
 * text that is not valid UTF-8 is split too (an invalid byte matches nothing and ends up in a
 * between-matches piece) and encoding still round-trips every byte. Compiled patterns are
 * read-only after creation and shared by threads; match data is per call. All memory goes
 * through fe_malloc (a PCRE2 general context), JIT code aside. */
#ifndef FE_LM_PRETOKENIZE_H
#define FE_LM_PRETOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "ferrum/core.h"

enum { FE_PRETOK_MAX = 4 };

typedef struct fe_pretok {
    int n;
    void *re[FE_PRETOK_MAX]; /* pcre2_code_8 */
    void *gctx;              /* pcre2_general_context_8: fe_malloc / fe_free */
} fe_pretok;

/* The regexes by name. */
extern const char *const fe_pretok_gpt2;   /* GPT-2's, as HF ByteLevel(use_regex) has it */
extern const char *const fe_pretok_llama3; /* Llama 3's (Meta's tokenizer.json) */

/* Appends a split regex (pattern[0..len), Oniguruma/Perl syntax). `what` names the source in
 * messages. FE_E_FORMAT when it does not compile (message: the PCRE2 reason and offset),
 * FE_E_UNSUPPORTED past FE_PRETOK_MAX regexes, FE_E_NOMEM. */
fe_status fe_pretok_add(fe_pretok *p, const char *pattern, size_t len, const char *what,
                        fe_error *err);

/* Appends the chain of a GGUF tokenizer.ggml.pre name ("gpt2", "llama-bpe", "smollm" and
 * their llama.cpp aliases). *ignore_merges and *add_bos are set as llama.cpp sets them for
 * that name (both true for the Llama 3 family: a piece that is itself a token is not merged,
 * and prompts start with BOS). FE_E_UNSUPPORTED for a name ferrum does not know (the message
 * lists those it does). */
fe_status fe_pretok_add_named(fe_pretok *p, const char *name, size_t len, bool *ignore_merges,
                              bool *add_bos, fe_error *err);

/* Frees the regexes. A zeroed pretok is valid (no regex). */
void fe_pretok_deinit(fe_pretok *p);

/* Per-call match data, one for each regex. */
typedef struct fe_pretok_scratch {
    void *md[FE_PRETOK_MAX]; /* pcre2_match_data_8 */
} fe_pretok_scratch;

fe_status fe_pretok_scratch_init(const fe_pretok *p, fe_pretok_scratch *s);
void fe_pretok_scratch_deinit(fe_pretok_scratch *s);

/* Called once per final piece, in text order; a status other than FE_OK stops the split and
 * is returned. Pieces are never empty. */
typedef fe_status (*fe_piece_fn)(void *ctx, const char *s, size_t n);

/* Splits text[0..n) through the chain. FE_E_NOMEM, or FE_E_UNSUPPORTED when PCRE2 gives up on
 * a match (a resource limit), with the message in err. */
fe_status fe_pretok_split(const fe_pretok *p, fe_pretok_scratch *s, const char *text, size_t n,
                          fe_piece_fn fn, void *ctx, fe_error *err);

#endif
