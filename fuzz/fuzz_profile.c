/* fuzz/fuzz_profile.c: libFuzzer target for profile JSON. A profile that parses must also
 * apply (making a kernel with it never fails on a name the profile holds), and survive
 * fe_profile_save and fe_profile_load with its entries and fold decisions (what `ferrum tune
 * --write-profile` does to a file it adds to). */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "ferrum/ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fe_device *dev;
    if (!dev) {
        fe_device_options o = {.n_workers = 1, .max_isa = -1, .pin = false};
        if (fe_device_create(&o, &dev, NULL) != FE_OK) return 0;
    }
    fe_profile *p = NULL;
    fe_error err;
    if (fe_profile_parse((const char *)data, size, &p, &err) != FE_OK) return 0;
    int64_t n = 64;
    fe_tensor t = fe_tensor_contiguous(NULL, FE_DTYPE_F32, 1, &n);
    fe_tensor ops[3] = {t, t, t};
    fe_op_request req = {.op = "AXPY", .operands = ops, .n_operands = 3, .profile = p};
    fe_kernel *k = NULL;
    fe_status st = fe_kernel_create(dev, &req, &k, &err);
    if (st != FE_OK && st != FE_E_INVALID) __builtin_trap(); /* a domain refusal is fine */
    fe_kernel_destroy(k);
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz-profile-%ld.json", (long)getpid());
    fe_profile *back = NULL;
    if (fe_profile_save(p, path, &err) == FE_OK) {
        if (fe_profile_load(path, &back, &err) != FE_OK ||
            fe_profile_count(back) != fe_profile_count(p) ||
            fe_profile_folds(back) != fe_profile_folds(p))
            __builtin_trap();
        unlink(path);
    }
    fe_profile_destroy(back);
    fe_profile_destroy(p);
    return 0;
}
