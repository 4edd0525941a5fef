/* core/status.c: names of the status codes and the fe_error record helpers. */
#include <string.h>

#include "core/error.h"

static const char *const status_names[FE_STATUS_COUNT] = {
    [FE_OK] = "FE_OK: success",
    [FE_E_INVALID] = "FE_E_INVALID: invalid argument",
    [FE_E_SHAPE] = "FE_E_SHAPE: shapes disagree",
    [FE_E_DTYPE] = "FE_E_DTYPE: unsupported dtype",
    [FE_E_BOUNDS] = "FE_E_BOUNDS: bound or index past its view",
    [FE_E_NOMEM] = "FE_E_NOMEM: out of memory",
    [FE_E_IO] = "FE_E_IO: input/output error",
    [FE_E_FORMAT] = "FE_E_FORMAT: malformed input",
    [FE_E_UNSUPPORTED] = "FE_E_UNSUPPORTED: not supported here",
    [FE_E_NOTFOUND] = "FE_E_NOTFOUND: no such name",
    [FE_E_STATE] = "FE_E_STATE: object not in a state for this call",
};

const char *fe_status_str(fe_status s) {
    if ((unsigned)s >= FE_STATUS_COUNT) return "FE_E_?: unknown status";
    return status_names[s];
}

fe_status fe_error_setv(fe_error *err, fe_status s, const char *fmt, va_list ap) {
    if (err) {
        err->status = s;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return s;
}

fe_status fe_error_set(fe_error *err, fe_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fe_error_setv(err, s, fmt, ap);
    va_end(ap);
    return s;
}

void fe_error_clear(fe_error *err) {
    if (!err) return;
    err->status = FE_OK;
    err->message[0] = '\0';
}
