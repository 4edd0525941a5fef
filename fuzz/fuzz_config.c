/* fuzz/fuzz_config.c: libFuzzer target for config.json. A config that reads has passed
 * validation, so validating it again must pass too. */
#include <stdint.h>
#include <stdio.h>

#include "lm/model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_lm_config c;
    fe_error err;
    fe_status st = fe_lm_config_from_json((const char *)data, size, "fuzz/config.json", &c, &err);
    if (st == FE_OK && fe_lm_config_validate(&c, &err) != FE_OK) __builtin_trap();
    if (st != FE_OK && st != FE_E_FORMAT && st != FE_E_INVALID && st != FE_E_UNSUPPORTED &&
        st != FE_E_NOMEM)
        __builtin_trap();
    return 0;
}
