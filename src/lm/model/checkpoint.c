/* lm/model/checkpoint.c: opening a model by its path (see checkpoint.h): the form of the path
 * picks the reader, header-only when the weights are to stay unread. */
#include "lm/model/checkpoint.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/mapped.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

bool fe_checkpoint_path_ok(const char *path) {
    return ends_with(path, ".gguf") || ends_with(path, ".safetensors") ||
           ends_with(path, ".safetensors.index.json") || fe_path_is_dir(path);
}

char *fe_checkpoint_beside(const char *path, const char *name) {
    size_t n = strlen(path);
    if (!fe_path_is_dir(path)) {
        const char *slash = strrchr(path, '/');
        n = slash ? (size_t)(slash - path) : 0;
    }
    size_t cap = n + strlen(name) + 3;
    char *p = fe_malloc(cap);
    if (p) snprintf(p, cap, "%.*s/%s", (int)n, n ? path : ".", name);
    return p;
}

static fe_status open_gguf(const char *path, bool unread, fe_gguf **gguf, fe_lm_config *cfg,
                           fe_llama_weights *w, fe_error *err) {
    fe_status st = unread ? fe_gguf_open_header(path, gguf, err) : fe_gguf_open(path, gguf, err);
    if (st == FE_OK) st = fe_lm_config_from_gguf(*gguf, cfg, err);
    if (st == FE_OK) st = fe_llama_weights_from_gguf(*gguf, cfg, w, err);
    return st;
}

static fe_status open_safetensors(const char *path, bool unread, fe_safetensors **st,
                                  fe_lm_config *cfg, fe_llama_weights *w, fe_error *err) {
    char *config = fe_checkpoint_beside(path, "config.json");
    if (!config) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", path);
    fe_status s = fe_lm_config_from_json_file(config, cfg, err);
    fe_free(config);
    if (s == FE_OK)
        s = unread ? fe_safetensors_open_header(path, st, err) : fe_safetensors_open(path, st, err);
    if (s == FE_OK) s = fe_llama_weights_from_safetensors(*st, cfg, w, err);
    return s;
}

fe_status fe_checkpoint_open(const char *path, bool unread, fe_gguf **gguf, fe_safetensors **st,
                             fe_lm_config *cfg, fe_llama_weights *w, fe_error *err) {
    *gguf = NULL;
    *st = NULL;
    memset(w, 0, sizeof *w);
    if (!fe_checkpoint_path_ok(path))
        return fe_error_set(err, FE_E_INVALID, "%s: not a .gguf or .safetensors file, a "
                            "model.safetensors.index.json or a folder holding a Hugging Face "
                            "checkpoint", path);
    fe_status s = ends_with(path, ".gguf") ? open_gguf(path, unread, gguf, cfg, w, err)
                                           : open_safetensors(path, unread, st, cfg, w, err);
    if (s != FE_OK) {
        fe_llama_weights_free(w);
        fe_gguf_close(*gguf);
        fe_safetensors_close(*st);
        *gguf = NULL;
        *st = NULL;
    }
    return s;
}
