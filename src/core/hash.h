/* core/hash.h: identity keys (design keys, cache keys) with xxHash's XXH3-64.
 *
 * A key is built by feeding fields in a fixed order into an fe_hasher; equal field sequences
 * give equal keys on every machine (fields are fed as little-endian bytes of fixed width). */
#ifndef FE_CORE_HASH_H
#define FE_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct fe_hasher {
    void *state; /* XXH3_state_t, owned */
    int failed;  /* allocation failed: the key is unusable */
} fe_hasher;

uint64_t fe_hash_bytes(const void *data, size_t n, uint64_t seed);
int fe_hasher_init(fe_hasher *h); /* 0 on success */
void fe_hasher_bytes(fe_hasher *h, const void *data, size_t n);
void fe_hasher_str(fe_hasher *h, const char *s); /* includes the terminator */
void fe_hasher_i64(fe_hasher *h, int64_t v);
void fe_hasher_f64(fe_hasher *h, double v);
uint64_t fe_hasher_done(fe_hasher *h); /* releases the state */

#endif
