/* core/arena.h: a bump arena of 64-byte-aligned blocks, released all at once.
 *
 * Used for everything whose lifetime is one object's (a kernel's tables, a plan's buffers):
 * nothing is freed piecemeal, so error paths release with one fe_arena_deinit. */
#ifndef FE_CORE_ARENA_H
#define FE_CORE_ARENA_H

#include <stddef.h>

typedef struct fe_arena_chunk fe_arena_chunk;
typedef struct fe_arena {
    fe_arena_chunk *head;
    size_t chunk_size; /* default size of a new chunk */
    size_t used;       /* bytes handed out, for reports */
} fe_arena;

void fe_arena_init(fe_arena *a, size_t chunk_size);
/* 64-byte-aligned, zeroed memory living until fe_arena_deinit; NULL when out of memory. */
void *fe_arena_alloc(fe_arena *a, size_t n);
void fe_arena_deinit(fe_arena *a);

#endif
