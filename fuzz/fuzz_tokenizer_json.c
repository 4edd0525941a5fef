/* fuzz/fuzz_tokenizer_json.c: libFuzzer target for the tokenizer.json loader. Whatever the
 * bytes, loading returns a status (never a crash); a tokenizer that loads must encode its own
 * input and a fixed text to ids inside its vocabulary and decode them again. */
#include <stdint.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "lm/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const fe_tokenizer *t, const char *text, size_t len) {
    int32_t *ids = NULL;
    size_t n = 0;
    fe_status st = fe_tokenizer_encode_alloc(t, text, len, false, true, &ids, &n, NULL);
    if (st != FE_OK) __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= fe_tokenizer_n_vocab(t)) __builtin_trap();
    size_t need;
    st = fe_tokenizer_decode(t, ids, n, NULL, 0, &need, NULL);
    if (st != FE_OK && st != FE_E_BOUNDS) __builtin_trap();
    char *out = malloc(need + 1);
    size_t got;
    if (fe_tokenizer_decode(t, ids, n, out, need + 1, &got, NULL) != FE_OK || got != need)
        __builtin_trap();
    free(out);
    fe_free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_tokenizer *t = NULL;
    fe_error err;
    fe_status st = fe_tokenizer_from_json((const char *)data, size, "fuzz.json", &t, &err);
    if (st == FE_OK) {
        static const char fixed[] = "Hello, world! 12345 <|im_start|>caf\xc3\xa9 \xf0\x9f\xa6\x80\n\n";
        exercise(t, fixed, sizeof fixed - 1);
        exercise(t, (const char *)data, size < 512 ? size : 512);
        fe_tokenizer_destroy(t);
    } else if (st != FE_E_FORMAT && st != FE_E_UNSUPPORTED && st != FE_E_NOMEM) {
        __builtin_trap();
    }
    return 0;
}
