/* core/arena.c: the bump arena (see arena.h). */
#include "core/arena.h"

#include <string.h>

#include "core/alloc.h"

enum { ARENA_ALIGN = 64 };

struct fe_arena_chunk {
    fe_arena_chunk *next;
    size_t size, top;
    _Alignas(64) unsigned char data[];
};

void fe_arena_init(fe_arena *a, size_t chunk_size) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
    a->used = 0;
}

void *fe_arena_alloc(fe_arena *a, size_t n) {
    n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    fe_arena_chunk *c = a->head;
    if (!c || c->size - c->top < n) {
        size_t size = n > a->chunk_size ? n : a->chunk_size;
        c = fe_aligned_alloc(ARENA_ALIGN, sizeof *c + size);
        if (!c) return NULL;
        c->size = size;
        c->top = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->top;
    c->top += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

void fe_arena_deinit(fe_arena *a) {
    fe_arena_chunk *c = a->head;
    while (c) {
        fe_arena_chunk *next = c->next;
        fe_free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}
