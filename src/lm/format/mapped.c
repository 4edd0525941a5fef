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

fe_status fe_mapped_read_in(fe_mapped *m, const char *path,
                            void (*progress)(void *user, size_t done), void *user, fe_error *err) {
    if (!m || !m->owned || !m->data || m->in_memory) return FE_OK;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t n = (m->size + page - 1) / page * page;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fe_error_set(err, FE_E_IO, "%s: cannot open for reading: %s", path,
                            strerror(errno));
    void *t = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) {
        close(fd);
        return fe_error_set(err, FE_E_NOMEM, "%s: no memory for a %zu-byte copy of the file; "
                            "keep it mapped (--mmap)", path, n);
    }
    unsigned char *a = (unsigned char *)(((uintptr_t)t + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    madvise(a, n, MADV_HUGEPAGE);
#endif
    /* read(), not a copy from the mapping: the file's pages then never join this process's
     * resident set beside the copy */
    const size_t chunk = (size_t)64 << 20;
    for (size_t at = 0; at < m->size;) {
        size_t len = m->size - at < chunk ? m->size - at : chunk;
        ssize_t got = pread(fd, a + at, len, (off_t)at);
        if (got <= 0) {
            int e = got < 0 ? errno : EIO;
            munmap(t, n + HUGE_PAGE);
            close(fd);
            return fe_error_set(err, FE_E_IO, "%s: cannot read it into memory: %s; keep it "
                                "mapped (--mmap)", path, strerror(e));
        }
        at += (size_t)got;
        if (progress) progress(user, at);
    }
    /* read-only as the mapping was, then moved onto its addresses (which unmaps the file) */
    void *moved = MAP_FAILED;
    if (mprotect(a, n, PROT_READ) == 0)
        moved = mremap(a, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)m->data);
    if (moved == MAP_FAILED) {
        int e = errno;
        munmap(t, n + HUGE_PAGE);
        close(fd);
        return fe_error_set(err, FE_E_IO, "%s: cannot move the copy onto the mapping: %s; keep "
                            "it mapped (--mmap)", path, strerror(e));
    }
    /* the unused ends of the copy's range */
    if (a > (unsigned char *)t) munmap(t, (size_t)(a - (unsigned char *)t));
    unsigned char *end = (unsigned char *)t + n + HUGE_PAGE;
    if (end > a + n) munmap(a + n, (size_t)(end - (a + n)));
    m->in_memory = true;
    m->fd = fd;
    return FE_OK;
}

void fe_mapped_borrow(const void *data, size_t size, fe_mapped *m) {
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

void fe_mapped_drop_pages(const fe_mapped *m, const void *p, size_t n) {
    if (!m || !m->owned || !m->data || !p) return;
    uintptr_t lo = (uintptr_t)m->data, hi = lo + m->size, a = (uintptr_t)p;
    if (a < lo || a > hi || n > hi - a) return; /* not wholly in the mapping */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (a + page - 1) / page * page, to = (a + n) / page * page;
    if (to <= from) return;
    if (m->in_memory) /* anonymous pages would read back as zeros: the file's again */
        mmap((void *)from, to - from, PROT_READ, MAP_PRIVATE | MAP_FIXED, m->fd,
             (off_t)(from - lo));
    else
        madvise((void *)from, to - from, MADV_DONTNEED);
}
