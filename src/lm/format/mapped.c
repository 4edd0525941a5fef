/* lm/format/mapped.c: read-only file mappings (see mapped.h). */
#include "lm/format/mapped.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/procfs.h"

enum { HUGE_PAGE = 2 << 20 }; /* the boundary the mapping starts on (x86-64's huge page) */

fe_status fe_mapped_open(const char *path, fe_mapped *m, fe_error *err) {
    memset(m, 0, sizeof *m);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fe_error_set(err, FE_E_IO, "%s: cannot open for reading: %s", path,
                            strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fe_error_set(err, FE_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fe_error_set(err, FE_E_IO, "%s: not a regular file; give the path of the file",
                            path);
    }
    if (st.st_size == 0) {
        close(fd);
        return FE_OK;
    }
    /* an address range reserved with room to start the file on a 2 MiB boundary */
    const size_t span_bytes = (size_t)st.st_size + HUGE_PAGE;
    void *span = mmap(NULL, span_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    void *p = MAP_FAILED;
    if (span != MAP_FAILED)
        p = mmap((void *)(((uintptr_t)span + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1)),
                 (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (span != MAP_FAILED) munmap(span, span_bytes);
        return fe_error_set(err, FE_E_IO, "%s: cannot map %lld bytes: %s", path,
                            (long long)st.st_size, strerror(e));
    }
    m->data = p;
    m->size = (size_t)st.st_size;
    m->owned = true;
    m->span = span;
    m->span_bytes = span_bytes;
    return FE_OK;
}

/* This process's file pages mapped as huge pages, bytes. */
static size_t file_pmd_mapped(void) {
    return fe_procfs_kib_bytes("/proc/self/smaps_rollup", "FilePmdMapped");
}

bool fe_mapped_huge(const fe_mapped *m) {
    enum { SAMPLES = 3, SAMPLE = 4 << 20 };
    if (!m || !m->owned || !m->data || m->in_memory || m->size < (size_t)SAMPLES * SAMPLE)
        return false;
#ifdef MADV_POPULATE_READ
    const size_t before = file_pmd_mapped();
    const uintptr_t lo = (uintptr_t)m->data;
    uintptr_t at[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) { /* spread over the file, on huge-page boundaries */
        at[i] = (lo + (m->size - SAMPLE) * (size_t)(i + 1) / (SAMPLES + 1)) & ~(uintptr_t)(HUGE_PAGE - 1);
        if (at[i] < lo) at[i] = lo;
        madvise((void *)at[i], SAMPLE, MADV_POPULATE_READ);
    }
    const size_t pmd = file_pmd_mapped() - before;
    for (int i = 0; i < SAMPLES; i++) madvise((void *)at[i], SAMPLE, MADV_DONTNEED);
    return pmd >= (size_t)SAMPLES * SAMPLE * 3 / 4;
#else
    return false;
#endif
}

/* [off, off + len) of the file (page-aligned, inside the mapping) read into anonymous memory
 * that starts at the same offset within a huge page as its place in the mapping, then moved
 * there (which unmaps the file's pages); *done advanced by the bytes read. */
static fe_status read_in_range(fe_mapped *m, int fd, const char *path, size_t off, size_t len,
                               void (*progress)(void *user, size_t done), void *user,
                               size_t *done, fe_error *err) {
    unsigned char *dst = (unsigned char *)m->data + off;
    unsigned char *t = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED)
        return fe_error_set(err, FE_E_NOMEM, "%s: no memory for a %zu-byte copy of the file; "
                            "keep it mapped (--mmap)", path, len);
    unsigned char *a = t + (((uintptr_t)dst - (uintptr_t)t) & (uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    madvise(a, len, MADV_HUGEPAGE);
#endif
    /* read(), not a copy from the mapping: the file's pages then never join this process's
     * resident set beside the copy */
    const size_t chunk = (size_t)64 << 20, bytes = off + len < m->size ? len : m->size - off;
    for (size_t at = 0; at < bytes;) {
        size_t n = bytes - at < chunk ? bytes - at : chunk;
        ssize_t got = pread(fd, a + at, n, (off_t)(off + at));
        if (got <= 0) {
            int e = got < 0 ? errno : EIO;
            munmap(t, len + HUGE_PAGE);
            return fe_error_set(err, FE_E_IO, "%s: cannot read it into memory: %s; keep it "
                                "mapped (--mmap)", path, strerror(e));
        }
        at += (size_t)got;
        *done += (size_t)got;
        if (progress) progress(user, *done);
    }
    /* read-only as the mapping was, then moved onto its addresses */
    void *moved = MAP_FAILED;
    if (mprotect(a, len, PROT_READ) == 0)
        moved = mremap(a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    if (moved == MAP_FAILED) {
        int e = errno;
        munmap(t, len + HUGE_PAGE);
        return fe_error_set(err, FE_E_IO, "%s: cannot move the copy onto the mapping: %s; keep "
                            "it mapped (--mmap)", path, strerror(e));
    }
    if (a > t) munmap(t, (size_t)(a - t)); /* the unused ends of the copy's range */
    if (t + len + HUGE_PAGE > a + len) munmap(a + len, (size_t)(t + len + HUGE_PAGE - (a + len)));
    return FE_OK;
}

/* The ranges of m not dropped (whole pages, in file order), to fn one by one, until fn
 * returns other than FE_OK: what fe_mapped_populate faults in and fe_mapped_read_in copies. */
static fe_status for_each_kept(fe_mapped *m, fe_status (*fn)(fe_mapped *m, size_t off,
                                                             size_t len, void *ctx),
                               void *ctx) {
    for (int i = 1; i < m->n_dropped; i++) /* sorted: drops come in any order */
        for (int j = i; j > 0 && m->dropped[j].from < m->dropped[j - 1].from; j--) {
            fe_mapped_range r = m->dropped[j];
            m->dropped[j] = m->dropped[j - 1], m->dropped[j - 1] = r;
        }
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t n = (m->size + page - 1) / page * page;
    size_t at = 0;
    for (int i = 0; i <= m->n_dropped; i++) {
        size_t to = i < m->n_dropped ? m->dropped[i].from : n;
        if (to > at) {
            fe_status st = fn(m, at, to - at, ctx);
            if (st != FE_OK) return st;
        }
        if (i < m->n_dropped && m->dropped[i].to > at) at = m->dropped[i].to;
    }
    return FE_OK;
}

typedef struct kept_pass {
    void (*progress)(void *user, size_t done);
    void *user;
    size_t done;
    int fd;           /* read_in: the file */
    const char *path;
    fe_error *err;
} kept_pass;

static fe_status populate_range(fe_mapped *m, size_t off, size_t len, void *ctx) {
    kept_pass *k = ctx;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), chunk = (size_t)64 << 20;
    for (size_t p = off; p < off + len; p += chunk) {
        size_t n = off + len - p < chunk ? off + len - p : chunk;
#ifdef MADV_POPULATE_READ
        if (madvise((void *)(m->data + p), n, MADV_POPULATE_READ) != 0)
#endif
        { /* kernels before 5.14: a byte a page */
            volatile unsigned char sink = 0;
            for (size_t q = p; q < p + n && q < m->size; q += page) sink ^= m->data[q];
            (void)sink;
        }
        k->done += n;
        if (k->progress) k->progress(k->user, k->done);
    }
    return FE_OK;
}

void fe_mapped_populate(fe_mapped *m, void (*progress)(void *user, size_t done), void *user) {
    if (!m || !m->owned || !m->data || m->in_memory) return;
    kept_pass k = {progress, user, 0, -1, NULL, NULL};
    for_each_kept(m, populate_range, &k);
}

static fe_status read_in_kept(fe_mapped *m, size_t off, size_t len, void *ctx) {
    kept_pass *k = ctx;
    fe_status st = read_in_range(m, k->fd, k->path, off, len, k->progress, k->user, &k->done,
                                 k->err);
    if (st == FE_OK) m->in_memory = true; /* drops now map the file again */
    return st;
}

fe_status fe_mapped_read_in(fe_mapped *m, const char *path,
                            void (*progress)(void *user, size_t done), void *user, fe_error *err) {
    if (!m || !m->owned || !m->data || m->in_memory) return FE_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fe_error_set(err, FE_E_IO, "%s: cannot open for reading: %s", path,
                            strerror(errno));
    kept_pass k = {progress, user, 0, fd, path, err};
    fe_status st = for_each_kept(m, read_in_kept, &k);
    if (m->in_memory) m->fd = fd;
    else close(fd);
    return st;
}

void fe_mapped_borrow(const void *data, size_t size, fe_mapped *m) {
    memset(m, 0, sizeof *m);
    m->data = size && data ? data : NULL;
    m->size = data ? size : 0;
    m->owned = false;
}

void fe_mapped_close(fe_mapped *m) {
    if (!m) return;
    if (m->owned && m->span) munmap(m->span, m->span_bytes);
    if (m->in_memory) close(m->fd);
    memset(m, 0, sizeof *m);
}

bool fe_path_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool fe_path_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void fe_mapped_drop_pages(fe_mapped *m, const void *p, size_t n) {
    if (!m || !m->owned || !m->data || !p) return;
    uintptr_t lo = (uintptr_t)m->data, hi = lo + m->size, a = (uintptr_t)p;
    if (a < lo || a > hi || n > hi - a) return; /* not wholly in the mapping */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (a + page - 1) / page * page, to = (a + n) / page * page;
    if (to <= from) return;
    if (!m->in_memory && m->n_dropped < FE_MAPPED_MAX_DROPS) /* fe_mapped_read_in skips it */
        m->dropped[m->n_dropped++] = (fe_mapped_range){from - lo, to - lo};
    if (m->in_memory) /* anonymous pages would read back as zeros: the file's again */
        mmap((void *)from, to - from, PROT_READ, MAP_PRIVATE | MAP_FIXED, m->fd,
             (off_t)(from - lo));
    else
        madvise((void *)from, to - from, MADV_DONTNEED);
}
