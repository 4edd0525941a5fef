/* lm/api/chat.c: the model's chat template: which one (chosen once, at open, with the reason
 * kept as a note the caller can print), conversations formatted in it, and the tokens that
 * end a turn.
 *
 * The rules: the template is read from tokenizer_config.json beside the tokenizer given (or
 * beside a safetensors checkpoint), else from the GGUF's metadata. A template ferrum knows
 * (ChatML, Llama 3) is used when the tokenizer has its special tokens; one it does not know
 * means the prompt is used as it is. Without a template (or with one that cannot be read),
 * the format whose special tokens the tokenizer has; otherwise none. */
#include "lm/api/api.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/mapped.h"
#include "lm/model/checkpoint.h"

static fe_lm_chat_format lm_format(fe_chat_format f) {
    return f == FE_CHAT_CHATML   ? FE_LM_CHAT_CHATML
           : f == FE_CHAT_LLAMA3 ? FE_LM_CHAT_LLAMA3
           : f == FE_CHAT_GEMMA  ? FE_LM_CHAT_GEMMA
                                 : FE_LM_CHAT_UNKNOWN;
}

static bool has_token(const fe_lm_model *m, const char *text) {
    return text && fe_tokenizer_find(m->tok, text, strlen(text)) >= 0;
}

/* The template from tokenizer_config.json or the GGUF; *where says which (fe_malloc'd).
 * FE_E_NOTFOUND when there is none. */
static fe_status read_template(fe_lm_model *m, const char *tokenizer_path, char **where,
                               fe_error *err) {
    char *path = tokenizer_path ? fe_checkpoint_beside(tokenizer_path, "tokenizer_config.json")
                 : m->st        ? fe_checkpoint_beside(m->path, "tokenizer_config.json")
                                : NULL;
    fe_status st = FE_E_NOTFOUND;
    char buf[1100];
    if (path && fe_path_is_file(path)) {
        snprintf(buf, sizeof buf, "%s", path);
        st = fe_chat_template_from_tokenizer_config_file(path, &m->chat, err);
    } else if (m->gguf) {
        snprintf(buf, sizeof buf, "%s (tokenizer.chat_template)", m->path);
        st = fe_chat_template_from_gguf(m->gguf, &m->chat, err);
    }
    fe_free(path);
    *where = st == FE_E_NOTFOUND ? NULL : fe_strdup(buf);
    return st;
}

void fe_lm_chat_resolve(fe_lm_model *m, const char *tokenizer_path) {
    char *note = m->chat_note;
    size_t n = sizeof m->chat_note;
    m->chat_format = FE_LM_CHAT_NONE;
    if (!m->tok) {
        snprintf(note, n, "no tokenizer, so no chat template");
        return;
    }
    fe_error err = {0};
    char *where = NULL;
    fe_status st = read_template(m, tokenizer_path, &where, &err);
    const char *w = where ? where : "the checkpoint";
    if (st == FE_OK && m->chat.format == FE_CHAT_UNKNOWN) {
        m->chat_format = FE_LM_CHAT_UNKNOWN;
        snprintf(note, n, "the chat template in %s is not one ferrum knows (ChatML, Llama 3); "
                 "using the prompt as it is", w);
    } else if (st == FE_OK && !has_token(m, fe_chat_start_marker(m->chat.format))) {
        m->chat_format = FE_LM_CHAT_UNKNOWN;
        snprintf(note, n, "the chat template in %s is %s, but the tokenizer has no %s token; "
                 "using the prompt as it is", w, fe_chat_format_name(m->chat.format),
                 fe_chat_start_marker(m->chat.format));
        fe_chat_template_deinit(&m->chat);
    } else if (st == FE_OK) {
        m->chat_format = lm_format(m->chat.format);
        snprintf(note, n, "chat template %s, from %s", fe_chat_format_name(m->chat.format), w);
        m->chat_source = where;
        where = NULL;
    } else {
        fe_chat_template_deinit(&m->chat);
        m->chat.format = has_token(m, fe_chat_start_marker(FE_CHAT_CHATML))   ? FE_CHAT_CHATML
                         : has_token(m, fe_chat_start_marker(FE_CHAT_LLAMA3)) ? FE_CHAT_LLAMA3
                         : has_token(m, fe_chat_start_marker(FE_CHAT_GEMMA))  ? FE_CHAT_GEMMA
                                                                              : FE_CHAT_UNKNOWN;
        m->chat_format = m->chat.format == FE_CHAT_UNKNOWN ? FE_LM_CHAT_NONE : lm_format(m->chat.format);
        char why[700];
        if (st != FE_E_NOTFOUND) snprintf(why, sizeof why, "%s; ignoring it", err.message);
        else snprintf(why, sizeof why, "no chat template in the checkpoint");
        const char *name = fe_chat_format_name(m->chat.format);
        if (m->chat.format != FE_CHAT_UNKNOWN)
            snprintf(note, n, "%s; the tokenizer has %s's special tokens, so using %s", why, name, name);
        else
            snprintf(note, n, "%s, and the tokenizer has neither ChatML's nor Llama 3's special "
                     "tokens; using the prompt as it is", why);
    }
    fe_free(where);
}

fe_status fe_lm_chat_apply(fe_lm_model *m, const fe_lm_message *msgs, int n,
                           bool add_generation_prompt, char **text) {
    if (!m) return FE_E_INVALID;
    fe_error_clear(&m->err);
    if (!text) return fe_error_set(&m->err, FE_E_INVALID, "chat: give a place for the text");
    *text = NULL;
    if (m->chat.format == FE_CHAT_UNKNOWN)
        return fe_error_set(&m->err, FE_E_STATE, "chat: %s", m->chat_note);
    if (n < 0 || (n > 0 && !msgs))
        return fe_error_set(&m->err, FE_E_INVALID, "chat: %d messages%s; give 0 or more", n,
                            n > 0 ? " at NULL" : "");
    fe_chat_message *cm = fe_malloc(((size_t)n + 1) * sizeof *cm);
    if (!cm) return fe_error_set(&m->err, FE_E_NOMEM, "chat: out of memory");
    for (int i = 0; i < n; i++) cm[i] = (fe_chat_message){msgs[i].role, msgs[i].content};
    fe_status st = fe_chat_template_apply_messages(&m->chat, cm, n, add_generation_prompt, text, &m->err);
    fe_free(cm);
    return st;
}

static int add_unique(int32_t *ids, int n, int32_t id) {
    if (id < 0) return n;
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return n;
    ids[n] = id;
    return n + 1;
}

int fe_lm_model_stop_tokens(const fe_lm_model *m, int32_t *out, int cap) {
    if (!m || !m->tok) return 0; /* no tokenizer: ids only, nothing ends the text */
    int32_t ids[FE_LM_MAX_EOS + 2];
    int n = add_unique(ids, 0, fe_tokenizer_eos(m->tok));
    for (int i = 0; i < m->cfg.n_eos; i++) n = add_unique(ids, n, m->cfg.eos_ids[i]);
    const char *end = fe_chat_end_marker(m->chat.format);
    if (end) n = add_unique(ids, n, fe_tokenizer_find(m->tok, end, strlen(end)));
    if (!out) return n;
    if (n > cap) n = cap > 0 ? cap : 0;
    memcpy(out, ids, (size_t)n * sizeof *ids);
    return n;
}
