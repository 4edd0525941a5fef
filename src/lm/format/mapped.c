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
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return fe_error_set(err, FE_E_IO, "%s: cannot map %lld bytes: %s", path,
                            (long long)st.st_size, strerror(e));
    m->data = p;
    m->size = (size_t)st.st_size;
    m->owned = true;
    return FE_OK;
}

void fe_mapped_borrow(const void *data, size_t size, fe_mapped *m) {
    m->data = size && data ? data : NULL;
    m->size = data ? size : 0;
    m->owned = false;
}

void fe_mapped_close(fe_mapped *m) {
    if (!m) return;
    if (m->owned && m->data) munmap((void *)m->data, m->size);
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
    if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
}
