/* core/json.c: jansson behind ferrum's allocation hook and error messages (see json.h). */
#include "core/json.h"

#include <pthread.h>

#include "core/alloc.h"
#include "core/error.h"

static pthread_once_t hook_once = PTHREAD_ONCE_INIT;

static void *json_alloc(size_t n) { return fe_malloc(n); }
static void install_hook(void) { json_set_alloc_funcs(json_alloc, fe_free); }

fe_status fe_json_parse(const char *text, size_t len, const char *what, json_t **out,
                        fe_error *err) {
    pthread_once(&hook_once, install_hook);
    *out = NULL;
    json_error_t je;
    long failures = fe_alloc_failures();
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        if (json_error_code(&je) == json_error_out_of_memory || fe_alloc_failures() != failures)
            return fe_error_set(err, FE_E_NOMEM, "%s: out of memory while parsing JSON", what);
        return fe_error_set(err, FE_E_FORMAT, "%s: not valid JSON at line %d, column %d: %s",
                            what, je.line, je.column, je.text);
    }
    *out = j;
    return FE_OK;
}

fe_status fe_json_load_file(const char *path, json_t **out, fe_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fe_error_set(err, FE_E_IO, "%s: cannot open for reading", path);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    fe_status st = FE_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            char *nb = fe_realloc(buf, ncap);
            if (!nb) {
                st = fe_error_set(err, FE_E_NOMEM, "%s: out of memory reading the file", path);
                goto done;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        st = fe_error_set(err, FE_E_IO, "%s: read error", path);
        goto done;
    }
    st = fe_json_parse(buf, len, path, out, err);
done:
    fe_free(buf);
    fclose(f);
    return st;
}
