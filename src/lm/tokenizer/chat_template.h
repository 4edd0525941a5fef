/* lm/tokenizer/chat_template.h: a model's chat template, recognised rather than run. Checkpoints
 * carry the template as Jinja source (GGUF tokenizer.chat_template, or chat_template in a
 * Hugging Face tokenizer_config.json); ferrum does not evaluate Jinja but knows two
 * families by their markers and formats one user turn the way their templates do:
 *
 *   ChatML (SmolLM2, Qwen):  <|im_start|>system\n{system}<|im_end|>\n
 *                            <|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
 *   Llama 3:                 <|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>
 *                            <|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>
 *                            <|start_header_id|>assistant<|end_header_id|>\n\n
 *   Gemma:                   <start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n
 *                            <start_of_turn>model\n
 *                            (no system turn: the system prompt opens the first user turn;
 *                            the assistant's role is "model"; contents are trimmed)
 *
 * The system block is left out when there is no system prompt. A template that writes a
 * fixed system prompt when the conversation has none (SmolLM2's "You are a helpful AI
 * assistant named SmolLM, trained by Hugging Face") has it read out as default_system.
 * The BOS token is not written: the tokenizer adds it when the model wants it. */
#ifndef FE_LM_CHAT_TEMPLATE_H
#define FE_LM_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "ferrum/core.h"

struct fe_gguf;

typedef enum fe_chat_format {
    FE_CHAT_UNKNOWN = 0, /* a template ferrum does not know: use the prompt as it is */
    FE_CHAT_CHATML,
    FE_CHAT_LLAMA3,
    FE_CHAT_GEMMA,
} fe_chat_format;

typedef struct fe_chat_template {
    fe_chat_format format;
    char *default_system; /* fe_malloc'd, NUL-terminated; NULL when the template has none */
} fe_chat_template;

/* "ChatML", "Llama 3", "Gemma" or "unknown". */
const char *fe_chat_format_name(fe_chat_format f);
/* The special token that ends an assistant turn: "<|im_end|>", "<|eot_id|>"; NULL for
 * FE_CHAT_UNKNOWN. */
const char *fe_chat_end_marker(fe_chat_format f);
/* The special tokens a format's prompt is made of (its first marker: "<|im_start|>",
 * "<|start_header_id|>"): a tokenizer without it cannot encode the format. NULL for
 * FE_CHAT_UNKNOWN. */
const char *fe_chat_start_marker(fe_chat_format f);

/* Recognises Jinja template source text[0..len) (any bytes): ChatML when it holds
 * <|im_start|> and <|im_end|>, Llama 3 when it holds <|start_header_id|>,
 * <|end_header_id|> and <|eot_id|>, Gemma when it holds <start_of_turn> and <end_of_turn>; FE_CHAT_UNKNOWN when it holds neither set, or both.
 * Fills *out (deinit it); FE_E_NOMEM is the only error. */
fe_status fe_chat_template_recognize(const char *text, size_t len, fe_chat_template *out,
                                     fe_error *err);

/* The template in a tokenizer_config.json, given as text[0..len) (`what` names it in
 * messages) or as a file. chat_template may be a string, or a list of {"name", "template"}
 * objects (the form some models ship), of which the one named "default" is used.
 * FE_E_NOTFOUND when the file has no chat_template (or is null); FE_E_FORMAT, naming the
 * rule, when it is not JSON, not an object, or chat_template is neither a string nor such a
 * list, or the list has no "default" string template; FE_E_IO when the file cannot be read.
 * On error *out is FE_CHAT_UNKNOWN with no default, and needs no deinit. */
fe_status fe_chat_template_from_tokenizer_config(const char *text, size_t len, const char *what,
                                                 fe_chat_template *out, fe_error *err);
fe_status fe_chat_template_from_tokenizer_config_file(const char *path, fe_chat_template *out,
                                                      fe_error *err);

/* The template in a GGUF's tokenizer.chat_template: FE_E_NOTFOUND when there is none,
 * FE_E_FORMAT when it is not a string. On error *out as above. */
fe_status fe_chat_template_from_gguf(const struct fe_gguf *g, fe_chat_template *out,
                                     fe_error *err);

/* One user turn in template t's format, ready for the assistant's answer: a new
 * fe_malloc'd NUL-terminated string in *out. system: the system prompt; NULL means the
 * template's default (none when it has none), "" means none. FE_E_INVALID for
 * FE_CHAT_UNKNOWN (nothing to format), FE_E_NOMEM. */
fe_status fe_chat_template_apply(const fe_chat_template *t, const char *system, const char *user,
                                 char **out, fe_error *err);

/* A conversation in template t's format: each message a turn (role "system", "user" or
 * "assistant"; both strings borrowed for the call), then, when add_generation_prompt, the
 * assistant's header, ready for its answer. Without a leading system message the template's
 * default system prompt (if any) is written first; a system message with content "" means
 * no system prompt at all. A new fe_malloc'd NUL-terminated string in *out. FE_E_INVALID for
 * FE_CHAT_UNKNOWN or a message without a role or content, or with another role; FE_E_NOMEM. */
typedef struct fe_chat_message {
    const char *role, *content;
} fe_chat_message;
fe_status fe_chat_template_apply_messages(const fe_chat_template *t, const fe_chat_message *msgs,
                                          int n, bool add_generation_prompt, char **out,
                                          fe_error *err);

/* Frees what the template owns and zeroes it. NULL allowed. */
void fe_chat_template_deinit(fe_chat_template *t);

#endif
