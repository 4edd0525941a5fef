/* core/alloc.h: the one allocation hook every ferrum allocation goes through.
 *
 * Tests make the N-th allocation fail (fe_alloc_fail_at) to prove that every error path
 * returns FE_E_NOMEM without a crash or a leak. Memory is 64-byte aligned when asked. */
#ifndef FE_CORE_ALLOC_H
#define FE_CORE_ALLOC_H

#include <stddef.h>

void *fe_malloc(size_t n);
void *fe_calloc(size_t count, size_t size);
void *fe_realloc(void *p, size_t n);
/* Aligned to `align` (a power of two); release with fe_free. */
void *fe_aligned_alloc(size_t align, size_t n);
void fe_free(void *p);
char *fe_strdup(const char *s);

/* Zeroed memory straight from the OS (anonymous pages, page-aligned): a page costs nothing
 * until it is first written, so a large state such as a KV cache is resident only as far as
 * it is used. Release with fe_pages_free(p, n), same n. */
void *fe_pages_alloc(size_t n);
/* The same, asking for huge pages where the kernel gives them (madvise): a model's weight
 * layouts (GBs, and 4 KiB pages first-touched one by one cost seconds of faults), and the
 * tuner's copies of them, read as a call reads the model's. */
void *fe_pages_alloc_huge(size_t n);
void fe_pages_free(void *p, size_t n);

/* Test hook: the n-th allocation from now (1-based) and every one after it fail; 0 disarms.
 * Returns how many allocations were made since the last call. Not thread-safe by design:
 * arm it only while one thread allocates. */
long fe_alloc_fail_at(long n);
/* Allocations that have failed since the process started (a parser that loses the cause of
 * its failure, like jansson, can tell out-of-memory from malformed input this way). */
long fe_alloc_failures(void);

#endif
