/* lm/format/mapped.h: read-only file mappings, the one way the checkpoint readers (gguf.c,
 * safetensors.c) see a file's bytes.
 *
 * A file is mapped whole, read-only and private; nothing is copied, so opening a 10 GB
 * checkpoint costs page-table entries, not memory. A mapping can also borrow a caller's
 * buffer (tests, fuzzers), in which case release leaves the buffer alone. */
#ifndef FE_LM_MAPPED_H
#define FE_LM_MAPPED_H

#include <stdbool.h>
#include <stddef.h>

#include "ferrum/core.h"

typedef struct fe_mapped {
    const unsigned char *data; /* size bytes; NULL when size is 0 */
    size_t size;
    bool owned; /* true: data is an mmap this struct unmaps on release */
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

/* Drops this process's pages of [p, p + n) (the whole pages inside it) when the range lies in
 * an owned mapping: clean private file pages, read again from the file if touched later.
 * Anything else (a borrowed buffer, a range outside) is left alone. */
void fe_mapped_drop_pages(const fe_mapped *m, const void *p, size_t n);

/* Unmaps an owned mapping; a zeroed or borrowed one is left alone. Zeroes *m. NULL allowed. */
void fe_mapped_close(fe_mapped *m);

/* Whether path names a directory / a regular file (false when it does not exist). */
bool fe_path_is_dir(const char *path);
bool fe_path_is_file(const char *path);

#endif
