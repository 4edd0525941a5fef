/* lm/tokenizer/chat_template.c: recognising a chat template by its markers, reading it from
 * tokenizer_config.json or GGUF metadata, and formatting one user turn (see
 * chat_template.h).
 *
 * A default system prompt is read only where the template spells it out as one string
 * literal: the format's system header, its newline(s), then text with no quote, NUL, Jinja
 * tag or expression before the end marker, the header starting right after the literal's
 * opening quote. Anything built from variables (Llama 3.1's dated preamble) is not a
 * default this reader claims to know. */
#include "lm/tokenizer/chat_template.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/format/gguf.h"

typedef struct format_markers {
    const char *name;
    const char *needed[3];   /* every one must appear in the template */
    const char *system_head; /* the system turn's header, before its newlines */
    int newlines;            /* after a header */
    const char *end;         /* ends a turn */
    const char *user_head, *assistant_head;
} format_markers;

static const format_markers formats[] = {
    [FE_CHAT_UNKNOWN] = {.name = "unknown"},
    [FE_CHAT_CHATML] = {"ChatML", {"<|im_start|>", "<|im_end|>", NULL}, "<|im_start|>system", 1,
                        "<|im_end|>", "<|im_start|>user", "<|im_start|>assistant"},
    [FE_CHAT_LLAMA3] = {"Llama 3", {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
                        "<|start_header_id|>system<|end_header_id|>", 2, "<|eot_id|>",
                        "<|start_header_id|>user<|end_header_id|>",
                        "<|start_header_id|>assistant<|end_header_id|>"},
    [FE_CHAT_GEMMA] = {"Gemma", {"<start_of_turn>", "<end_of_turn>", NULL}, NULL, 1,
                       "<end_of_turn>", "<start_of_turn>user", "<start_of_turn>model"},
};

const char *fe_chat_format_name(fe_chat_format f) {
    return (unsigned)f <= FE_CHAT_GEMMA ? formats[f].name : "unknown";
}

const char *fe_chat_end_marker(fe_chat_format f) {
    return f != FE_CHAT_UNKNOWN && (unsigned)f <= FE_CHAT_GEMMA ? formats[f].end : NULL;
}

const char *fe_chat_start_marker(fe_chat_format f) {
    return f != FE_CHAT_UNKNOWN && (unsigned)f <= FE_CHAT_GEMMA ? formats[f].needed[0] : NULL;
}

static const char *find(const char *s, size_t n, const char *needle) {
    return memmem(s, n, needle, strlen(needle));
}

static bool holds_all(const char *text, size_t len, const format_markers *m) {
    for (int i = 0; i < 3 && m->needed[i]; i++)
        if (!find(text, len, m->needed[i])) return false;
    return true;
}

/* A newline in template source: a real one, or the two characters \n of a string escape.
 * Its length at p, or 0. */
static size_t newline_at(const char *p, const char *end) {
    if (p < end && *p == '\n') return 1;
    if (end - p >= 2 && p[0] == '\\' && p[1] == 'n') return 2;
    return 0;
}

/* The literal text of a default system prompt starting at p (see the file comment), into
 * a new string in *out (NULL when the text there is not one literal). False when out of
 * memory. */
static bool literal_until(const char *p, const char *end, char quote, const char *stop,
                          char **out) {
    *out = NULL;
    const char *close = find(p, (size_t)(end - p), stop);
    if (!close || close == p) return true;
    char *s = fe_malloc((size_t)(close - p) + 1);
    if (!s) return false;
    size_t n = 0;
    for (const char *q = p; q < close; q++) {
        char c = *q;
        bool tag = c == '{' && q + 1 < close && (q[1] == '{' || q[1] == '%' || q[1] == '#');
        if (c == quote || c == '\0' || tag) {
            fe_free(s);
            return true;
        }
        if (c == '\\' && q + 1 < close) {
            c = *++q;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        s[n++] = c;
    }
    s[n] = '\0';
    *out = s;
    return true;
}

static fe_status default_system(const char *text, size_t len, const format_markers *m,
                                char **out, fe_error *err) {
    const char *end = text + len, *p = text;
    size_t head = strlen(m->system_head);
    *out = NULL;
    while ((p = find(p, (size_t)(end - p), m->system_head)) != NULL) {
        const char *at = p;
        p += head;
        if (at == text || (at[-1] != '\'' && at[-1] != '"')) continue;
        const char *q = p;
        int lines = 0;
        for (size_t k; lines < m->newlines && (k = newline_at(q, end)) > 0; lines++) q += k;
        if (lines < m->newlines) continue;
        if (!literal_until(q, end, at[-1], m->end, out))
            return fe_error_set(err, FE_E_NOMEM, "chat template: out of memory");
        if (*out) return FE_OK;
    }
    return FE_OK;
}

fe_status fe_chat_template_recognize(const char *text, size_t len, fe_chat_template *out,
                                     fe_error *err) {
    *out = (fe_chat_template){FE_CHAT_UNKNOWN, NULL};
    if (!text) return FE_OK;
    bool chatml = holds_all(text, len, &formats[FE_CHAT_CHATML]);
    bool llama3 = holds_all(text, len, &formats[FE_CHAT_LLAMA3]);
    bool gemma = holds_all(text, len, &formats[FE_CHAT_GEMMA]);
    if (chatml + llama3 + gemma != 1) return FE_OK; /* none, or several: not one ferrum knows */
    fe_chat_format f = chatml ? FE_CHAT_CHATML : llama3 ? FE_CHAT_LLAMA3 : FE_CHAT_GEMMA;
    char *sys = NULL;
    fe_status st = gemma ? FE_OK : default_system(text, len, &formats[f], &sys, err);
    if (st != FE_OK) return st;
    *out = (fe_chat_template){f, sys};
    return FE_OK;
}

/* chat_template as HF writes it: a string, or [{"name": ..., "template": ...}, ...]. */
static fe_status from_json(json_t *root, const char *what, fe_chat_template *out,
                           fe_error *err) {
    if (!json_is_object(root))
        return fe_error_set(err, FE_E_FORMAT, "%s: not a JSON object; a tokenizer_config.json "
                            "is one", what);
    json_t *t = json_object_get(root, "chat_template");
    if (!t || json_is_null(t))
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no chat_template", what);
    if (json_is_string(t))
        return fe_chat_template_recognize(json_string_value(t), json_string_length(t), out, err);
    if (!json_is_array(t))
        return fe_error_set(err, FE_E_FORMAT, "%s: chat_template is neither a string nor a list "
                            "of {\"name\", \"template\"} objects", what);
    size_t i;
    json_t *e;
    json_array_foreach(t, i, e) {
        json_t *name = json_object_get(e, "name"), *tpl = json_object_get(e, "template");
        if (!json_is_string(name) || strcmp(json_string_value(name), "default") != 0) continue;
        if (!json_is_string(tpl))
            return fe_error_set(err, FE_E_FORMAT, "%s: chat_template's \"default\" entry has no "
                                "\"template\" string", what);
        return fe_chat_template_recognize(json_string_value(tpl), json_string_length(tpl), out,
                                          err);
    }
    return fe_error_set(err, FE_E_FORMAT, "%s: chat_template is a list of %zu templates, none "
                        "of them named \"default\" with a \"template\" string", what,
                        json_array_size(t));
}

fe_status fe_chat_template_from_tokenizer_config(const char *text, size_t len, const char *what,
                                                 fe_chat_template *out, fe_error *err) {
    *out = (fe_chat_template){FE_CHAT_UNKNOWN, NULL};
    json_t *root = NULL;
    fe_status st = fe_json_parse(text, len, what, &root, err);
    if (st == FE_OK) st = from_json(root, what, out, err);
    json_decref(root);
    return st;
}

fe_status fe_chat_template_from_tokenizer_config_file(const char *path, fe_chat_template *out,
                                                      fe_error *err) {
    *out = (fe_chat_template){FE_CHAT_UNKNOWN, NULL};
    json_t *root = NULL;
    fe_status st = fe_json_load_file(path, &root, err);
    if (st == FE_OK) st = from_json(root, path, out, err);
    json_decref(root);
    return st;
}

fe_status fe_chat_template_from_gguf(const fe_gguf *g, fe_chat_template *out, fe_error *err) {
    *out = (fe_chat_template){FE_CHAT_UNKNOWN, NULL};
    const fe_gguf_kv *kv = fe_gguf_find(g, "tokenizer.chat_template");
    if (!kv)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no tokenizer.chat_template", fe_gguf_path(g));
    const char *s;
    size_t n;
    fe_status st = fe_gguf_get_str(kv, &s, &n, err);
    return st == FE_OK ? fe_chat_template_recognize(s, n, out, err) : st;
}

/* Message i has a role (system, user or assistant) and content. */
static fe_status check_message(const fe_chat_message *msgs, int i, fe_error *err) {
    if (!msgs[i].role || !msgs[i].content)
        return fe_error_set(err, FE_E_INVALID, "chat template: message %d has no %s", i,
                            msgs[i].role ? "content" : "role");
    if (strcmp(msgs[i].role, "system") != 0 && strcmp(msgs[i].role, "user") != 0 &&
        strcmp(msgs[i].role, "assistant") != 0)
        return fe_error_set(err, FE_E_INVALID, "chat template: message %d has role \"%s\"; "
                            "give system, user or assistant", i, msgs[i].role);
    return FE_OK;
}

/* Gemma's template: no system turn (a system message opens the first user turn, followed by
 * a blank line), "model" for the assistant, each content trimmed of surrounding whitespace */
static fe_status apply_gemma(const fe_chat_message *msgs, int n, bool add_generation_prompt,
                             char **out, fe_error *err) {
    if (n < 0 || (n && !msgs))
        return fe_error_set(err, FE_E_INVALID, "chat template: %d messages; give 0 or more", n);
    size_t cap = 64;
    for (int i = 0; i < n; i++) {
        fe_status st = check_message(msgs, i, err);
        if (st != FE_OK) return st;
        if (i > 0 && msgs[i].role[0] == 's')
            return fe_error_set(err, FE_E_INVALID, "chat template: message %d is a system "
                                "message; Gemma takes one only first", i);
        cap += strlen(msgs[i].content) + 48;
    }
    char *s = fe_malloc(cap);
    if (!s) return fe_error_set(err, FE_E_NOMEM, "chat template: out of memory");
    size_t o = 0;
    const char *prefix = NULL;
    size_t prefix_n = 0;
    for (int i = 0; i < n; i++) {
        const char *c = msgs[i].content, *e = c + strlen(c);
        while (c < e && (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r')) c++;
        while (e > c && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) e--;
        if (msgs[i].role[0] == 's') {
            prefix = c, prefix_n = (size_t)(e - c);
            continue;
        }
        const char *role = msgs[i].role[0] == 'u' ? "user" : "model";
        o += (size_t)snprintf(s + o, cap - o, "<start_of_turn>%s\n", role);
        if (prefix && prefix_n) o += (size_t)snprintf(s + o, cap - o, "%.*s\n\n", (int)prefix_n, prefix);
        prefix = NULL;
        o += (size_t)snprintf(s + o, cap - o, "%.*s<end_of_turn>\n", (int)(e - c), c);
    }
    if (add_generation_prompt) snprintf(s + o, cap - o, "<start_of_turn>model\n");
    else s[o] = 0;
    *out = s;
    return FE_OK;
}

fe_status fe_chat_template_apply_messages(const fe_chat_template *t, const fe_chat_message *msgs,
                                          int n, bool add_generation_prompt, char **out,
                                          fe_error *err) {
    *out = NULL;
    if (t->format == FE_CHAT_GEMMA) return apply_gemma(msgs, n, add_generation_prompt, out, err);
    if (t->format != FE_CHAT_CHATML && t->format != FE_CHAT_LLAMA3)
        return fe_error_set(err, FE_E_INVALID, "chat template: the format is unknown, so there "
                            "is nothing to format; use the prompt as it is");
    if (n < 0 || (n && !msgs))
        return fe_error_set(err, FE_E_INVALID, "chat template: %d messages; give 0 or more", n);
    const format_markers *m = &formats[t->format];
    const char *nl = m->newlines == 2 ? "\n\n" : "\n";
    /* ChatML ends each turn with a newline after the marker; Llama 3 does not */
    const char *after = t->format == FE_CHAT_CHATML ? "\n" : "";
    bool has_system = n > 0 && msgs[0].role && strcmp(msgs[0].role, "system") == 0;
    const char *dflt = has_system ? NULL : t->default_system;
    size_t cap = (dflt ? strlen(dflt) : 0) + 128;
    for (int i = 0; i < n; i++) {
        fe_status st = check_message(msgs, i, err);
        if (st != FE_OK) return st;
        cap += strlen(msgs[i].content) + 96;
    }
    char *s = fe_malloc(cap);
    if (!s) return fe_error_set(err, FE_E_NOMEM, "chat template: out of memory");
    size_t o = 0;
    if (dflt && *dflt) o += (size_t)snprintf(s + o, cap - o, "%s%s%s%s%s", m->system_head, nl, dflt, m->end, after);
    for (int i = 0; i < n; i++) {
        const char *r = msgs[i].role;
        const char *head = r[0] == 's' ? m->system_head : r[0] == 'u' ? m->user_head : m->assistant_head;
        if (r[0] == 's' && !*msgs[i].content) continue; /* "" means no system prompt */
        o += (size_t)snprintf(s + o, cap - o, "%s%s%s%s%s", head, nl, msgs[i].content, m->end, after);
    }
    if (add_generation_prompt) snprintf(s + o, cap - o, "%s%s", m->assistant_head, nl);
    else s[o] = 0;
    *out = s;
    return FE_OK;
}

fe_status fe_chat_template_apply(const fe_chat_template *t, const char *system, const char *user,
                                 char **out, fe_error *err) {
    fe_chat_message msgs[2] = {{"system", system}, {"user", user}};
    return system ? fe_chat_template_apply_messages(t, msgs, 2, true, out, err)
                  : fe_chat_template_apply_messages(t, msgs + 1, 1, true, out, err);
}

void fe_chat_template_deinit(fe_chat_template *t) {
    if (!t) return;
    fe_free(t->default_system);
    *t = (fe_chat_template){FE_CHAT_UNKNOWN, NULL};
}
