/* fuzz/fuzz_bert_config.c: libFuzzer target for a BERT config.json. Claims: never a crash; a
 * refusal is one of the documented statuses; a config that reads obeys the rules the encoder
 * relies on (sizes positive, hidden = heads x head_dim, eps in (0, 1)). */
#include <stdint.h>
#include <stdio.h>

#include "lm/model/bert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_bert_config c;
    fe_error err;
    fe_status st = fe_bert_config_from_json((const char *)data, size, "fuzz/config.json", &c, &err);
    if (st == FE_OK && (c.vocab < 1 || c.hidden < 1 || c.n_layers < 1 || c.ffn < 1 ||
                        c.max_positions < 1 || c.type_vocab < 1 || c.n_heads * c.head_dim != c.hidden ||
                        !(c.ln_eps > 0 && c.ln_eps < 1)))
        __builtin_trap();
    if (st != FE_OK && st != FE_E_FORMAT && st != FE_E_INVALID && st != FE_E_UNSUPPORTED &&
        st != FE_E_NOMEM)
        __builtin_trap();
    return 0;
}
