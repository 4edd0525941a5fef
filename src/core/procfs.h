/* core/procfs.h: one figure from a Linux /proc file of "Key:   N kB" lines (/proc/meminfo,
 * /proc/self/smaps_rollup): what the memory decisions read about this machine and process. */
#ifndef FE_CORE_PROCFS_H
#define FE_CORE_PROCFS_H

#include <stddef.h>

/* The bytes of `key` (e.g. "MemAvailable") in `file`; 0 when the file or the key is not there. */
size_t fe_procfs_kib_bytes(const char *file, const char *key);

#endif
