/* core/error.h: setting an fe_error and the internal invariant check.
 *
 * fe_error_set formats a message into a caller's record (NULL allowed) and returns the status,
 * so a refusal reads `return fe_error_set(err, FE_E_SHAPE, "softmax: ...");`.
 * FE_ASSERT guards internal invariants only; nothing a user can cause may reach it. */
#ifndef FE_CORE_ERROR_H
#define FE_CORE_ERROR_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ferrum/core.h"

#if defined(__GNUC__)
#define FE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FE_PRINTF(a, b)
#endif

fe_status fe_error_set(fe_error *err, fe_status s, const char *fmt, ...) FE_PRINTF(3, 4);
fe_status fe_error_setv(fe_error *err, fe_status s, const char *fmt, va_list ap);
/* Clears a record to FE_OK with an empty message. */
void fe_error_clear(fe_error *err);

#define FE_ASSERT(cond)                                                                   \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "ferrum: internal invariant broken at %s:%d: %s\n", __FILE__, \
                    __LINE__, #cond);                                                     \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#endif
