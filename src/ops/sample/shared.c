/* ops/sample/shared.c: Sample's draw (a pure function of seed, position and row) and its
 * workspace size, shared by the kernels and the reference. */
#include "ops/sample/sample.h"

static uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double fe_sample_draw(uint64_t seed, int64_t pos, int64_t row) {
    uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ (uint64_t)pos) ^ (uint64_t)row);
    return (double)(h >> 11) * 0x1.0p-53;
}

size_t fe_sample_ws_per_worker(int64_t V) {
    size_t a = ((size_t)V * 8 + 63) / 64 * 64; /* w, then ent: 8 bytes a token each */
    return 2 * a + ((size_t)V * 4 + 63) / 64 * 64;
}
