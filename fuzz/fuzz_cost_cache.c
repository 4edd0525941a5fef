/* fuzz/fuzz_cost_cache.c: libFuzzer target for the cost cache's files. The input is written
 * as one design's file; looking a key up must answer (a hit, a miss, or FE_E_FORMAT naming
 * the file), never crash, and a put after it must replace a malformed file so that the key
 * is then a hit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ferrum/tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64] = "/tmp/ferrum-fuzz-cost-XXXXXX";

static void remove_root(void) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "fuzz_cost_cache: could not remove %s\n", root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fe_device *dev;
    static fe_cost_cache *cache;
    if (!dev) {
        fe_device_options o = {.n_workers = 1, .max_isa = -1, .pin = false};
        if (!mkdtemp(root) || atexit(remove_root) != 0 || fe_device_create(&o, &dev, NULL) != FE_OK ||
            fe_cost_cache_open(dev, root, &cache, NULL) != FE_OK)
            return 0;
    }
    /* the design's file exists (and so does its directory) after a first put */
    fe_cost_key key = {.design = 0x2a, .values = {7, 1}, .n_values = 2, .input_hash = 0x99};
    fe_cost_figure fig = {.median_ns = 1000, .p10_ns = 900, .p90_ns = 1100, .samples = 9,
                          .reliable = true}, got;
    fe_error err;
    if (fe_cost_cache_put(cache, &key, &fig, "fuzz", &err) != FE_OK) return 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/%016llx.json", fe_cost_cache_dir(cache), 0x2aull);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    bool hit = false;
    fe_status st = fe_cost_cache_get(cache, &key, &got, &hit, &err);
    if (st != FE_OK && st != FE_E_FORMAT && st != FE_E_IO) __builtin_trap();
    if (st == FE_E_FORMAT && !strstr(err.message, path)) __builtin_trap();
    if (fe_cost_cache_put(cache, &key, &fig, "fuzz", &err) != FE_OK) return 0;
    st = fe_cost_cache_get(cache, &key, &got, &hit, &err);
    if (st != FE_OK || !hit || got.median_ns != 1000) __builtin_trap();
    return 0;
}
