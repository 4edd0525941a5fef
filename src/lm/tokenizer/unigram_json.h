/* lm/tokenizer/unigram_json.h: a SentencePiece Unigram tokenizer (unigram.h) from a Hugging Face
 * tokenizer.json whose model is "Unigram", as the `tokenizers` package writes one for a
 * SentencePiece model (T5 and other encoders):
 *   model: vocab [[piece, score], ...] (id = index), unk_id, byte_fallback (then <0xXX>
 *     pieces are BYTE tokens);
 *   normalizer: null, Precompiled (the base64 charsmap, spm_normalize.h), Replace of a run of
 *     spaces (" {2,}" as Regex, or "  " as String) by " ", or a Sequence of these;
 *   pre_tokenizer: Metaspace with replacement "▁" and prepend_scheme "always" (a "▁" first
 *     unless the text starts with a space) or "never" (older files: add_prefix_space), alone
 *     or in a Sequence; split is immaterial (no piece has "▁" past its start);
 *   added_tokens: special ones CONTROL, others USER_DEFINED;
 *   post_processor: null, or a TemplateProcessing whose first item is a special token (the BOS);
 *     other tokens it adds (T5's </s>) are not added by encode.
 * Anything else is refused by name (FE_E_UNSUPPORTED), malformed JSON values with FE_E_FORMAT. */
#ifndef FE_LM_UNIGRAM_JSON_H
#define FE_LM_UNIGRAM_JSON_H

#include <jansson.h>

#include "ferrum/core.h"

struct fe_tokenizer;

/* Whether root (a parsed tokenizer.json) has model.type "Unigram". */
bool fe_unigram_json_is(json_t *root);

/* Builds the tokenizer root describes (borrowed for the call); `what` names it in messages.
 * *out is the caller's (fe_tokenizer_destroy); NULL on error. */
fe_status fe_unigram_json_build(json_t *root, const char *what, struct fe_tokenizer **out,
                                fe_error *err);

#endif
