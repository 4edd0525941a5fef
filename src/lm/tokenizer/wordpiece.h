/* lm/tokenizer/wordpiece.h: the WordPiece tokenizer of BERT-family encoders (BERT, MiniLM),
 * with BERT's normaliser and pre-tokenizer, as Hugging Face tokenizers runs them:
 *
 *   1. special added tokens ([CLS], [SEP], [MASK], ...) are found in the raw text first,
 *      leftmost then longest, and kept whole;
 *   2. each stretch between them is normalised (BertNormalizer): control characters, NUL and
 *      U+FFFD removed and whitespace made ' ' (clean_text); spaces put around CJK ideographs
 *      (handle_chinese_chars); NFD then nonspacing marks (Mn) dropped (strip_accents, which
 *      follows lowercase when the file leaves it null); lower-cased (full mapping);
 *   3. split on whitespace, and every punctuation character (ASCII punctuation or a Unicode
 *      P* category) made a word of its own (BertPreTokenizer);
 *   4. each word becomes the greedy longest-match pieces of the vocabulary, every piece after
 *      the first with the "##" prefix; a word with a character no piece covers, or longer than
 *      max_input_chars_per_word characters, is one [UNK];
 *   5. [CLS] first and [SEP] last (the TemplateProcessing / BertProcessing post-processor);
 *      with a maximum, the word pieces are cut so that the whole fits (sentence-transformers'
 *      truncation of a single text).
 * Unicode categories, NFD and case mapping come from utf8proc; the only ranges written here
 * are the CJK blocks BERT's definition names.
 *
 * Threads: read-only after creation; encode may run on many threads at once.
 *
 * Known limits: text must be valid UTF-8 (FE_E_INVALID naming the byte otherwise; Python's
 * str cannot hold such text either); the Unicode tables are utf8proc's (Unicode 15 in Debian
 * 12), while Hugging Face tokenizers classifies with older tables, so a character assigned
 * since (some recent emoji, which it takes for unassigned Cn and removes) can normalise
 * otherwise; pairs of texts (type ids 1) are not encoded. */
#ifndef FE_LM_WORDPIECE_H
#define FE_LM_WORDPIECE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_wordpiece fe_wordpiece;

/* Everything a WordPiece tokenizer is made of, borrowed for the call only. Start from
 * fe_wordpiece_spec_default(). */
typedef struct fe_wordpiece_spec {
    const char *const *tokens; /* n_tokens NUL-terminated UTF-8 token strings, id = index */
    int n_tokens;
    const char *unk, *cls, *sep; /* token strings ("[UNK]", "[CLS]", "[SEP]"); each must be in
                                    the vocabulary (cls/sep may be NULL: none added) */
    const char *prefix;          /* continuing_subword_prefix ("##") */
    int max_chars_per_word;      /* max_input_chars_per_word (100) */
    bool clean_text, chinese_chars, strip_accents, lowercase;
    const char *const *specials; /* special added tokens matched in raw text (may be NULL) */
    int n_specials;
    int64_t max_tokens;          /* the truncation maximum with [CLS] and [SEP] (0: none) */
} fe_wordpiece_spec;

/* Defaults: no tokens, [UNK]/[CLS]/[SEP], "##", 100, every normaliser step on, no maximum. */
fe_wordpiece_spec fe_wordpiece_spec_default(void);

/* Builds a tokenizer from a spec. FE_E_FORMAT naming the token and the rule when a token is
 * not valid UTF-8, is empty or given twice, or unk/cls/sep/a special is not in the
 * vocabulary; FE_E_INVALID for counts out of range; FE_E_NOMEM. Caller destroys *out. */
fe_status fe_wordpiece_create(const fe_wordpiece_spec *spec, fe_wordpiece **out, fe_error *err);

/* From a Hugging Face tokenizer.json whose model is WordPiece (normalizer BertNormalizer or
 * null, pre_tokenizer BertPreTokenizer, post_processor TemplateProcessing or BertProcessing
 * with [CLS] $A [SEP], truncation.max_length as the maximum). Anything else that would change
 * the ids is FE_E_UNSUPPORTED by name; malformed JSON FE_E_FORMAT naming the JSON path.
 * `what` names the text in messages. */
fe_status fe_wordpiece_from_json(const char *text, size_t len, const char *what,
                                 fe_wordpiece **out, fe_error *err);
/* The same from a file (FE_E_IO when it cannot be read). */
fe_status fe_wordpiece_load_json(const char *path, fe_wordpiece **out, fe_error *err);

/* NULL allowed. */
void fe_wordpiece_destroy(fe_wordpiece *w);

int32_t fe_wordpiece_n_vocab(const fe_wordpiece *w);
/* The id of token text[0..len), or -1. */
int32_t fe_wordpiece_find(const fe_wordpiece *w, const char *text, size_t len);
/* A token's text (NUL-terminated, lives as long as w); NULL when id is out of range. */
const char *fe_wordpiece_piece(const fe_wordpiece *w, int32_t id);
/* The maximum from the spec or file (0: none), and [CLS]/[SEP] ids (-1: none). */
int64_t fe_wordpiece_max_tokens(const fe_wordpiece *w);
int32_t fe_wordpiece_cls(const fe_wordpiece *w);
int32_t fe_wordpiece_sep(const fe_wordpiece *w);

/* The normaliser alone (step 2) over text[0..len): a new NUL-terminated string in *out
 * (caller fe_free()s) of *out_len bytes. FE_E_INVALID for text that is not UTF-8. */
fe_status fe_wordpiece_normalize(const fe_wordpiece *w, const char *text, size_t len, char **out,
                                 size_t *out_len, fe_error *err);

/* Encodes text[0..len) into a new array *ids (caller fe_free()s) of *n_ids ids: [CLS], the
 * pieces, [SEP], cut to max_tokens in all when max_tokens > 0 (0: the tokenizer's maximum;
 * < 0: none). FE_E_INVALID for text that is not UTF-8 (naming the byte) or a max_tokens
 * under 2 with [CLS] and [SEP]; FE_E_NOMEM. *ids is NULL on error. */
fe_status fe_wordpiece_encode(const fe_wordpiece *w, const char *text, size_t len,
                              int64_t max_tokens, int32_t **ids, size_t *n_ids, fe_error *err);

#endif
