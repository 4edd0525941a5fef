/* fuzz/fuzz_spm_normalize.c: libFuzzer target for SentencePiece's normaliser
 * (lm/tokenizer/spm_normalize.c): a precompiled charsmap read from untrusted bytes, then text
 * through it. Input: one flag byte (bit 0: remove_extra_whitespaces), a u32 little-endian blob
 * length, the charsmap blob, then the text. Claims: reading the blob either succeeds or is
 * FE_E_FORMAT (never a crash, a read past the blob or a leak); normalising always succeeds;
 * with remove_extra_whitespaces the result has no leading or trailing space, and through no
 * charsmap (length 0) no two spaces in a row either; text normalised through no charsmap is
 * valid UTF-8 (each bad byte becomes U+FFFD). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "lm/tokenizer/bytelevel.h"
#include "lm/tokenizer/spm_normalize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) return 0;
    const bool squeeze = data[0] & 1;
    size_t blob_n = (size_t)data[1] | (size_t)data[2] << 8 | (size_t)data[3] << 16 |
                    (size_t)data[4] << 24;
    data += 5, size -= 5;
    if (blob_n > size) blob_n = size;
    const char *text = (const char *)data + blob_n;
    const size_t text_n = size - blob_n;
    /* the blob in its own allocation, so a read past it is caught */
    uint8_t *blob = malloc(blob_n ? blob_n : 1);
    if (!blob) return 0;
    memcpy(blob, data, blob_n);
    fe_spm_normalizer nz;
    fe_error err;
    fe_status st = fe_spm_normalizer_init(&nz, blob, blob_n, squeeze, "fuzz", &err);
    free(blob);
    if (st != FE_OK) {
        if (st != FE_E_FORMAT) abort();
        return 0;
    }
    char *out = NULL;
    size_t n = 0;
    if (fe_spm_normalize(&nz, text, text_n, &out, &n, &err) != FE_OK) abort();
    if (squeeze && n > 0 && (out[0] == ' ' || out[n - 1] == ' ')) abort();
    if (squeeze && !nz.units) /* a charsmap's own strings may hold two spaces */
        for (size_t i = 1; i < n; i++)
            if (out[i] == ' ' && out[i - 1] == ' ') abort();
    if (!nz.units && n > 0 && !fe_utf8_valid(out, n)) abort();
    fe_free(out);
    fe_spm_normalizer_deinit(&nz);
    return 0;
}
