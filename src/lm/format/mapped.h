/* lm/format/mapped.h: read-only file mappings, the one way the checkpoint readers (gguf.c,
 * safetensors.c) see a file's bytes.
 *
 * A file is mapped whole, read-only and private; nothing is copied, so opening a 10 GB
 * checkpoint costs page-table entries, not memory. The mapping starts on a 2 MiB boundary, so
 * that fe_mapped_read_in can later put the same bytes at the same addresses in anonymous
 * memory backed by huge pages (pointers into the mapping stay valid). A mapping can also
 * borrow a caller's buffer (tests, fuzzers), in which case release leaves the buffer alone. */
#ifndef FE_LM_MAPPED_H
#define FE_LM_MAPPED_H

#include <stdbool.h>
#include <stddef.h>

#include "ferrum/core.h"

/* a range of a mapping, bytes from its start (fe_mapped_drop_pages' whole pages) */
typedef struct fe_mapped_range {
    size_t from, to;
} fe_mapped_range;
enum { FE_MAPPED_MAX_DROPS = 1024 };

typedef struct fe_mapped {
    const unsigned char *data; /* size bytes; NULL when size is 0 */
    size_t size;
    bool owned;     /* true: data is an mmap this struct unmaps on release */
    bool in_memory; /* fe_mapped_read_in copied the bytes into anonymous memory */
    int fd;         /* in_memory: the file, which dropped pages are mapped from again */
    void *span;     /* owned: the reserved address range data lies in, unmapped on release */
    size_t span_bytes;
    /* the ranges dropped while mapped (a weight read through its layout only), which
     * fe_mapped_read_in leaves mapped from the file; past the last slot, copied too */
    fe_mapped_range dropped[FE_MAPPED_MAX_DROPS];
    int n_dropped;
} fe_mapped;

/* Maps the regular file at `path`. FE_E_IO (message naming the path and the OS reason)
 * when it cannot be opened, is not a regular file, or cannot be mapped; an empty file maps
 * to size 0 and data NULL (the format readers call that truncated). On error *m is
 * zeroed. Release with fe_mapped_close. */
fe_status fe_mapped_open(const char *path, fe_mapped *m, fe_error *err);

/* A mapping that borrows data[0..size): the caller keeps it alive and unchanged until the
 * mapping is released. NULL data reads as
 * an empty buffer. Never fails. */
void fe_mapped_borrow(const void *data, size_t size, fe_mapped *m);

/* Copies an owned mapping's bytes into anonymous memory in huge pages (madvise: the kernel
 * gives 2 MiB pages where it has them) and moves them onto the mapping's own addresses, so
 * every pointer into it stays valid; the file's pages are unmapped. Ranges dropped before
 * (fe_mapped_drop_pages: weights read through their layouts) are not copied. Reading 4 KiB file
 * pages stalls the streams of a decode step at every page: on a 2-core Zen 4, two threads
 * read 52 GB/s from the mapped file, 68 GB/s from huge pages. `progress`, when not NULL, gets
 * the bytes copied so far (about every 64 MiB). FE_OK and nothing done for a borrowed, empty
 * or already copied mapping; FE_E_NOMEM / FE_E_IO (the mapping as it was) when the memory or
 * the move is refused. path: the mapped file, kept open for fe_mapped_drop_pages. */
fe_status fe_mapped_read_in(fe_mapped *m, const char *path,
                            void (*progress)(void *user, size_t done), void *user, fe_error *err);

/* Faults an owned mapping's pages in (MADV_POPULATE_READ), but for the ranges dropped
 * (weights read through their layouts), so the first prompt pays no page faults; progress as
 * fe_mapped_read_in's. Nothing for a borrowed or copied mapping. */
void fe_mapped_populate(fe_mapped *m, void (*progress)(void *user, size_t done), void *user);

/* Whether the kernel maps the file's pages as huge pages already (a page cache of large
 * folios; then a copy gains nothing): three 4 MiB samples across it faulted in and counted,
 * then dropped. false for a borrowed, small or copied mapping. */
bool fe_mapped_huge(const fe_mapped *m);

/* Drops this process's pages of [p, p + n) (the whole pages inside it) when the range lies in
 * an owned mapping: clean private file pages, read again from the file if touched later (in
 * memory: the range is mapped from the file again, so it reads the same bytes).
 * Anything else (a borrowed buffer, a range outside) is left alone. */
void fe_mapped_drop_pages(fe_mapped *m, const void *p, size_t n);

/* Unmaps an owned mapping; a zeroed or borrowed one is left alone. Zeroes *m. NULL allowed. */
void fe_mapped_close(fe_mapped *m);

/* Whether path names a directory / a regular file (false when it does not exist). */
bool fe_path_is_dir(const char *path);
bool fe_path_is_file(const char *path);

#endif
