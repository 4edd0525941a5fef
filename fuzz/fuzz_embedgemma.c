/* fuzz/fuzz_embedgemma.c: libFuzzer target for EmbeddingGemma's two outside inputs read as text:
 * its config.json (fe_embedgemma_config_from_json) and Gemma's tokenizer.json
 * (fe_spm_json_load), the first byte choosing which. Claims: never a crash; a refusal is one
 * of the documented statuses; a config that reads obeys the rules the encoder relies on
 * (sizes positive, heads a multiple of KV heads, window >= 1); a tokenizer that loads encodes
 * its own input without error, and its template ids are inside the vocabulary. */
#include <stdint.h>
#include <stdio.h>

#include "core/alloc.h"
#include "lm/model/embedgemma.h"
#include "lm/tokenizer/spm_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    fe_error err;
    if (data[0] & 1) {
        fe_lm_config c;
        int64_t window = 0;
        fe_status st = fe_embedgemma_config_from_json(text, len, "fuzz/config.json", &c, &window, &err);
        if (st == FE_OK && (c.vocab < 1 || c.hidden < 1 || c.n_layers < 1 || c.ffn < 1 ||
                            c.n_kv_heads < 1 || c.n_heads % c.n_kv_heads != 0 || window < 1 ||
                            c.family != FE_LM_FAMILY_GEMMA3))
            __builtin_trap();
        if (st != FE_OK && st != FE_E_FORMAT && st != FE_E_INVALID && st != FE_E_UNSUPPORTED &&
            st != FE_E_NOMEM)
            __builtin_trap();
        return 0;
    }
    fe_tokenizer *t = NULL;
    fe_spm_json_around around;
    fe_status st = fe_spm_json_load(text, len, "fuzz/tokenizer.json", &t, &around, &err);
    if (st != FE_OK && st != FE_E_FORMAT && st != FE_E_UNSUPPORTED && st != FE_E_NOMEM)
        __builtin_trap();
    if (st != FE_OK) return 0;
    for (int i = 0; i < around.n_before + around.n_after; i++) {
        int32_t id = i < around.n_before ? around.before[i] : around.after[i - around.n_before];
        if (id < 0 || id >= fe_tokenizer_n_vocab(t)) __builtin_trap();
    }
    int32_t *ids = NULL;
    size_t n = 0;
    st = fe_tokenizer_encode_alloc(t, text, len < 256 ? len : 256, false, false, &ids, &n, &err);
    if (st != FE_OK && st != FE_E_NOMEM) __builtin_trap();
    for (size_t i = 0; st == FE_OK && i < n; i++)
        if (ids[i] < 0 || ids[i] >= fe_tokenizer_n_vocab(t)) __builtin_trap();
    fe_free(ids);
    fe_tokenizer_destroy(t);
    return 0;
}
