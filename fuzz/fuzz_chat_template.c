/* fuzz/fuzz_chat_template.c: libFuzzer target for chat templates: the input read as a
 * tokenizer_config.json and as raw template text. A template that reads formats a user turn
 * that holds the turn, under the format's own markers; its default system prompt is text
 * without NUL. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "lm/tokenizer/chat_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const fe_chat_template *t) {
    if (t->format == FE_CHAT_UNKNOWN) {
        if (t->default_system) __builtin_trap();
        return;
    }
    char *out = NULL;
    fe_error err;
    if (fe_chat_template_apply(t, NULL, "USER TURN", &out, &err) != FE_OK) __builtin_trap();
    if (!strstr(out, "USER TURN") || strncmp(out, fe_chat_start_marker(t->format),
                                             strlen(fe_chat_start_marker(t->format))) != 0)
        __builtin_trap();
    if (t->default_system && *t->default_system && !strstr(out, t->default_system)) __builtin_trap();
    fe_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_chat_template t;
    fe_error err;
    fe_status st = fe_chat_template_from_tokenizer_config((const char *)data, size,
                                                          "fuzz/tokenizer_config.json", &t, &err);
    if (st != FE_OK && st != FE_E_FORMAT && st != FE_E_NOTFOUND && st != FE_E_NOMEM)
        __builtin_trap();
    if (st != FE_OK && (t.format != FE_CHAT_UNKNOWN || t.default_system)) __builtin_trap();
    if (st == FE_OK) check(&t);
    fe_chat_template_deinit(&t);
    if (fe_chat_template_recognize((const char *)data, size, &t, &err) != FE_OK) __builtin_trap();
    check(&t);
    fe_chat_template_deinit(&t);
    return 0;
}
