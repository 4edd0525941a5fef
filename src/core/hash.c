/* core/hash.c: XXH3-64 identity keys (see hash.h). */
#include "core/hash.h"

#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t is complete, so the hook can allocate it */
#include <xxhash.h>

#include "core/alloc.h"

uint64_t fe_hash_bytes(const void *data, size_t n, uint64_t seed) {
    return XXH3_64bits_withSeed(data, n, seed);
}

int fe_hasher_init(fe_hasher *h) {
    /* XXH3_state_t must be 64-byte aligned; allocate through the hook so tests can fail it */
    h->state = fe_aligned_alloc(64, sizeof(XXH3_state_t));
    h->failed = h->state == NULL;
    if (h->failed) return -1;
    XXH3_64bits_reset((XXH3_state_t *)h->state);
    return 0;
}

void fe_hasher_bytes(fe_hasher *h, const void *data, size_t n) {
    if (!h->failed) XXH3_64bits_update((XXH3_state_t *)h->state, data, n);
}

void fe_hasher_str(fe_hasher *h, const char *s) { fe_hasher_bytes(h, s, strlen(s) + 1); }

void fe_hasher_i64(fe_hasher *h, int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    fe_hasher_bytes(h, b, 8);
}

void fe_hasher_f64(fe_hasher *h, double v) {
    if (v == 0) v = 0; /* -0.0 and 0.0 name the same setting */
    uint64_t u;
    memcpy(&u, &v, 8);
    fe_hasher_i64(h, (int64_t)u);
}

uint64_t fe_hasher_done(fe_hasher *h) {
    uint64_t k = h->failed ? 0 : XXH3_64bits_digest((XXH3_state_t *)h->state);
    fe_free(h->state);
    h->state = NULL;
    return k;
}
