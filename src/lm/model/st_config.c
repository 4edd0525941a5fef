/* lm/model/st_config.c: a sentence-transformers folder's embedding settings (see st_config.h).
 * Each file is optional; when present it is read strictly. */
#include "lm/model/st_config.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lm/format/mapped.h"

/* The JSON of dir/name into *out (NULL when the file does not exist) */
static fe_status load(const char *dir, const char *name, json_t **out, fe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *out = NULL;
    if (!fe_path_is_file(path)) return FE_OK;
    fe_status st = fe_json_load_file(path, out, err);
    if (st == FE_OK && !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        st = fe_error_set(err, FE_E_FORMAT, "%s: the top level is not an object", path);
    }
    return st;
}

static bool flag(json_t *o, const char *key) { return json_is_true(json_object_get(o, key)); }

static fe_status read_pooling(const char *dir, const char *sub, fe_st_config *c, fe_error *err) {
    char name[512];
    snprintf(name, sizeof name, "%s/config.json", sub);
    json_t *p;
    fe_status st = load(dir, name, &p, err);
    if (st != FE_OK || !p) return st;
    json_t *mode = json_object_get(p, "pooling_mode"); /* sentence-transformers 6: one string */
    if (json_is_string(mode)) {
        const char *m = json_string_value(mode);
        c->pooling = !strcmp(m, "mean") ? FE_POOLING_MEAN : !strcmp(m, "cls") ? FE_POOLING_CLS
                     : FE_POOLING_LAST;
        if (strcmp(m, "mean") && strcmp(m, "cls") && strcmp(m, "lasttoken") && strcmp(m, "last"))
            st = fe_error_set(err, FE_E_UNSUPPORTED, "%s/%s: pooling_mode is %.40s; ferrum pools by "
                              "mean, cls or lasttoken only", dir, name, m);
        json_decref(p);
        return st;
    }
    static const char *const refused[] = {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                          "pooling_mode_weightedmean_tokens"};
    for (size_t i = 0; st == FE_OK && i < sizeof refused / sizeof refused[0]; i++)
        if (flag(p, refused[i]))
            st = fe_error_set(err, FE_E_UNSUPPORTED, "%s/%s: %s is on; ferrum pools by mean, CLS or "
                              "last token only", dir, name, refused[i]);
    int modes = flag(p, "pooling_mode_mean_tokens") + flag(p, "pooling_mode_cls_token") +
                flag(p, "pooling_mode_lasttoken");
    if (st == FE_OK && modes != 1)
        st = fe_error_set(err, FE_E_UNSUPPORTED, "%s/%s: %d pooling modes are on; ferrum takes "
                          "exactly one of mean, CLS and last token", dir, name, modes);
    c->pooling = flag(p, "pooling_mode_cls_token") ? FE_POOLING_CLS
                 : flag(p, "pooling_mode_lasttoken") ? FE_POOLING_LAST : FE_POOLING_MEAN;
    json_decref(p);
    return st;
}

/* modules.json, a list of {type, path}: read without load()'s object rule */
static fe_status read_module_list(const char *dir, fe_st_config *c, bool allow_dense, fe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/modules.json", dir);
    if (!fe_path_is_file(path)) return FE_OK;
    json_t *list;
    fe_status st = fe_json_load_file(path, &list, err);
    if (st != FE_OK) return st;
    if (!json_is_array(list)) {
        json_decref(list);
        return fe_error_set(err, FE_E_FORMAT, "%s: the top level is not a list of modules", path);
    }
    for (size_t i = 0; st == FE_OK && i < json_array_size(list); i++) {
        json_t *mod = json_array_get(list, i);
        const char *type = json_string_value(json_object_get(mod, "type"));
        const char *sub = json_string_value(json_object_get(mod, "path"));
        const char *last = type ? strrchr(type, '.') : NULL;
        last = last ? last + 1 : type;
        if (!type || !sub) {
            st = fe_error_set(err, FE_E_FORMAT, "%s: module %zu has no \"type\" and \"path\" strings", path, i);
        } else if (strcmp(last, "Transformer") == 0) {
            continue;
        } else if (strcmp(last, "Pooling") == 0) {
            if (strstr(sub, "..") || sub[0] == '/')
                st = fe_error_set(err, FE_E_FORMAT, "%s: module path \"%s\" leaves the folder", path, sub);
            else
                st = read_pooling(dir, sub, c, err);
        } else if (strcmp(last, "Normalize") == 0) {
            c->normalize = true;
        } else if (strcmp(last, "Dense") == 0 && allow_dense) {
            c->n_dense++; /* the model's loader reads them (embedgemma.c) */
        } else {
            st = fe_error_set(err, FE_E_UNSUPPORTED, "%s: module %s; ferrum's encoder runs "
                              "Transformer, Pooling and Normalize modules", path, type);
        }
    }
    json_decref(list);
    return st;
}

static fe_status read_prompts(const char *dir, fe_st_config *c, fe_error *err) {
    json_t *o;
    fe_status st = load(dir, "config_sentence_transformers.json", &o, err);
    if (st != FE_OK || !o) return st;
    json_t *prompts = json_object_get(o, "prompts");
    const char *key;
    json_t *v;
    if (prompts && !json_is_object(prompts) && !json_is_null(prompts))
        st = fe_error_set(err, FE_E_FORMAT, "%s/config_sentence_transformers.json: \"prompts\" is not "
                          "an object", dir);
    if (st == FE_OK && json_is_object(prompts)) json_object_foreach(prompts, key, v) {
        if (!json_is_string(v) || c->n_prompts == FE_ST_MAX_PROMPTS) {
            st = fe_error_set(err, FE_E_FORMAT, "%s/config_sentence_transformers.json: prompt \"%.40s\" "
                              "is not a string (or more than %d prompts)", dir, key, FE_ST_MAX_PROMPTS);
            break;
        }
        c->prompt_name[c->n_prompts] = fe_strdup(key);
        c->prompt[c->n_prompts] = fe_strdup(json_string_value(v));
        if (!c->prompt_name[c->n_prompts] || !c->prompt[c->n_prompts])
            st = fe_error_set(err, FE_E_NOMEM, "out of memory");
        c->n_prompts++;
    }
    const char *dflt = json_string_value(json_object_get(o, "default_prompt_name"));
    if (st == FE_OK && dflt) {
        if (!fe_st_config_prompt(c, dflt))
            st = fe_error_set(err, FE_E_FORMAT, "%s/config_sentence_transformers.json: "
                              "default_prompt_name \"%.40s\" is not one of its prompts", dir, dflt);
        else if (!(c->default_prompt = fe_strdup(dflt)))
            st = fe_error_set(err, FE_E_NOMEM, "out of memory");
    }
    json_decref(o);
    return st;
}

static fe_status read_config(const char *dir, fe_st_config *out, bool allow_dense, fe_error *err) {
    memset(out, 0, sizeof *out);
    out->pooling = FE_POOLING_MEAN;
    fe_status st = read_module_list(dir, out, allow_dense, err);
    json_t *sb = NULL;
    if (st == FE_OK) st = load(dir, "sentence_bert_config.json", &sb, err);
    if (st == FE_OK && sb) {
        json_t *m = json_object_get(sb, "max_seq_length");
        if (m && (!json_is_integer(m) || json_integer_value(m) < 2 || json_integer_value(m) > 1 << 20))
            st = fe_error_set(err, FE_E_FORMAT, "%s/sentence_bert_config.json: max_seq_length is not "
                              "an integer in 2..2^20", dir);
        else if (m)
            out->max_seq_length = json_integer_value(m);
    }
    json_decref(sb);
    if (st == FE_OK) st = read_prompts(dir, out, err);
    if (st != FE_OK) fe_st_config_deinit(out);
    return st;
}

fe_status fe_st_config_read(const char *dir, fe_st_config *out, fe_error *err) {
    return read_config(dir, out, false, err);
}

fe_status fe_st_config_read_with_dense(const char *dir, fe_st_config *out, fe_error *err) {
    return read_config(dir, out, true, err);
}

void fe_st_config_deinit(fe_st_config *c) {
    for (int i = 0; i < c->n_prompts; i++) fe_free(c->prompt_name[i]), fe_free(c->prompt[i]);
    fe_free(c->default_prompt);
    memset(c, 0, sizeof *c);
}

const char *fe_st_config_prompt(const fe_st_config *c, const char *name) {
    for (int i = 0; name && i < c->n_prompts; i++)
        if (strcmp(c->prompt_name[i], name) == 0) return c->prompt[i];
    return NULL;
}
