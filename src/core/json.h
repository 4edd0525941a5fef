/* core/json.h: JSON through jansson, with allocations routed through the hook (alloc.h)
 * and parse errors turned into fe_error messages that name the source, line and column. */
#ifndef FE_CORE_JSON_H
#define FE_CORE_JSON_H

#include <jansson.h>

#include "ferrum/core.h"

/* Parses `len` bytes of `text` (need not be NUL-terminated). `what` names the source in
 * messages ("profile.json"). On success *out is a new reference the caller json_decref()s. */
fe_status fe_json_parse(const char *text, size_t len, const char *what, json_t **out,
                        fe_error *err);
/* Reads and parses a file. FE_E_IO when it cannot be read, FE_E_FORMAT when it is not JSON. */
fe_status fe_json_load_file(const char *path, json_t **out, fe_error *err);

#endif
