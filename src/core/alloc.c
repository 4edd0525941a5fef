/* core/alloc.c: the allocation hook (see alloc.h). */
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static atomic_long alloc_count;
static atomic_long failures;
static long fail_at; /* 0: never fail */

static int should_fail(void) {
    long k = atomic_fetch_add(&alloc_count, 1) + 1;
    if (fail_at > 0 && k >= fail_at) {
        atomic_fetch_add(&failures, 1);
        return 1;
    }
    return 0;
}

long fe_alloc_failures(void) { return atomic_load(&failures); }

long fe_alloc_fail_at(long n) {
    long made = atomic_exchange(&alloc_count, 0);
    fail_at = n;
    return made;
}

void *fe_malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }

void *fe_calloc(size_t count, size_t size) {
    return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *fe_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n ? n : 1); }

void *fe_aligned_alloc(size_t align, size_t n) {
    if (should_fail()) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n ? n : 1) != 0)
        return NULL;
    return p;
}

void fe_free(void *p) { free(p); }

char *fe_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = fe_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void *fe_pages_alloc(size_t n) {
    if (should_fail()) return NULL;
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *fe_pages_alloc_huge(size_t n) {
    void *p = fe_pages_alloc(n);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, n ? n : 1, MADV_HUGEPAGE);
#endif
    return p;
}

void fe_pages_free(void *p, size_t n) {
    if (p) munmap(p, n ? n : 1);
}
