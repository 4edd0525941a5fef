/* tests/test_procfs.c: core/procfs.c's "Key: N kB" reader on well-formed, malformed and
 * missing input, and on this process's own /proc files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/procfs.h"

static void keys_are_matched_whole_and_malformed_values_read_as_zero(void **state) {
    (void)state;
    char path[] = "/tmp/ferrum_test_procfs_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("MemAvailableX:   99 kB\n"   /* a longer key: not this one */
          "Broken: abc kB\n"           /* no number */
          "MemAvailable:    2048 kB\n"
          "Truncated:", f);            /* no value, no newline */
    fclose(f);
    assert_int_equal(fe_procfs_kib_bytes(path, "MemAvailable"), 2048 * 1024);
    assert_int_equal(fe_procfs_kib_bytes(path, "Broken"), 0);
    assert_int_equal(fe_procfs_kib_bytes(path, "Truncated"), 0);
    assert_int_equal(fe_procfs_kib_bytes(path, "Missing"), 0);
    assert_int_equal(fe_procfs_kib_bytes("/nonexistent/meminfo", "MemAvailable"), 0);
    unlink(path);
}

static void this_machine_reports_its_memory(void **state) {
    (void)state;
    assert_true(fe_procfs_kib_bytes("/proc/meminfo", "MemTotal") > ((size_t)64 << 20));
    assert_true(fe_procfs_kib_bytes("/proc/self/smaps_rollup", "Rss") > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_are_matched_whole_and_malformed_values_read_as_zero),
        cmocka_unit_test(this_machine_reports_its_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
