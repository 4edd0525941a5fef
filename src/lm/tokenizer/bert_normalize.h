/* lm/tokenizer/bert_normalize.h: BERT's text normaliser (Hugging Face BertNormalizer) and the
 * character classes of its pre-tokenizer (BertPreTokenizer), over utf8proc's Unicode tables.
 * See wordpiece.h for the steps and their order. */
#ifndef FE_LM_BERT_NORMALIZE_H
#define FE_LM_BERT_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_bert_norm {
    bool clean_text, chinese_chars, strip_accents, lowercase;
} fe_bert_norm;

/* FE_OK when text[0..len) is valid UTF-8; FE_E_INVALID naming the first bad byte otherwise. */
fe_status fe_utf8_check(const char *text, size_t len, fe_error *err);

/* Normalises text[0..len) (valid UTF-8) into a new NUL-terminated string *out (caller
 * fe_free()s) of *out_len bytes. FE_E_INVALID for text that is not UTF-8; FE_E_NOMEM. */
fe_status fe_bert_normalize(const fe_bert_norm *o, const char *text, size_t len, char **out,
                            size_t *out_len, fe_error *err);

/* Rust's char::is_whitespace (Unicode White_Space): what BertPreTokenizer splits on */
bool fe_bert_is_whitespace(int32_t cp);
/* ASCII punctuation or a Unicode punctuation category (Pc Pd Ps Pe Pi Pf Po): a word of its
 * own in BertPreTokenizer */
bool fe_bert_is_punctuation(int32_t cp);

#endif
