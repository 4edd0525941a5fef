/* core/procfs.c: one figure from a /proc file of "Key: N kB" lines (see procfs.h). */
#include "core/procfs.h"

#include <stdio.h>
#include <string.h>

size_t fe_procfs_kib_bytes(const char *file, const char *key) {
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kib = 0;
    const size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%llu", &kib) == 1)
            break;
    fclose(f);
    return (size_t)kib * 1024;
}
