/* tests/test_mapped.c: lm/format/mapped.c's file bytes read into memory (fe_mapped_read_in):
 * the same bytes at the same addresses, in anonymous memory; pages dropped from the copy read
 * the file's bytes again (not the zeros of fresh anonymous pages); refusals leave the mapping
 * as it was; borrowed buffers are left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/procfs.h"
#include "lm/format/mapped.h"

enum { FILE_BYTES = (5 << 20) + 123 }; /* past two huge pages, not a whole page */

static char path[64];
static unsigned char *want;

static int make_file(void **state) {
    (void)state;
    snprintf(path, sizeof path, "/tmp/ferrum_test_mapped_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    want = malloc(FILE_BYTES);
    for (size_t i = 0; i < FILE_BYTES; i++) want[i] = (unsigned char)(i * 2654435761u >> 13);
    int ok = write(fd, want, FILE_BYTES) == FILE_BYTES;
    close(fd);
    return ok ? 0 : -1;
}

static int remove_file(void **state) {
    (void)state;
    unlink(path);
    free(want);
    return 0;
}

static void read_in_keeps_the_bytes_and_their_addresses(void **state) {
    (void)state;
    fe_mapped m;
    fe_error err = {0};
    assert_int_equal(fe_mapped_open(path, &m, &err), FE_OK);
    const unsigned char *at = m.data;
    assert_int_equal((uintptr_t)at % (2u << 20), 0); /* room for huge pages in place */
    assert_false(m.in_memory);
    assert_false(fe_mapped_huge(&m)); /* too small to sample (three 4 MiB samples) */
    assert_int_equal(fe_mapped_read_in(&m, path, NULL, NULL, &err), FE_OK);
    assert_true(m.in_memory);
    assert_false(fe_mapped_huge(&m)); /* copied: nothing left to map */
    assert_ptr_equal(m.data, at);
    assert_int_equal(m.size, FILE_BYTES);
    assert_memory_equal(m.data, want, FILE_BYTES);
    /* a second read-in does nothing */
    assert_int_equal(fe_mapped_read_in(&m, path, NULL, NULL, &err), FE_OK);
    assert_ptr_equal(m.data, at);
    fe_mapped_close(&m);
    assert_null(m.data);
}

static size_t progress_last, progress_calls;
static void count_progress(void *user, size_t done) {
    (void)user;
    assert_true(done > progress_last && done <= FILE_BYTES);
    progress_last = done;
    progress_calls++;
}

static void read_in_reports_its_progress(void **state) {
    (void)state;
    fe_mapped m;
    fe_error err = {0};
    assert_int_equal(fe_mapped_open(path, &m, &err), FE_OK);
    progress_last = progress_calls = 0;
    assert_int_equal(fe_mapped_read_in(&m, path, count_progress, NULL, &err), FE_OK);
    assert_true(progress_calls >= 1);
    assert_int_equal(progress_last, FILE_BYTES);
    fe_mapped_close(&m);
}

/* a weight laid out has its pages dropped; a step that reads it as stored (the embedding's
 * Gather) must still find its bytes */
static void dropped_pages_read_the_file_again(void **state) {
    (void)state;
    fe_mapped m;
    fe_error err = {0};
    assert_int_equal(fe_mapped_open(path, &m, &err), FE_OK);
    assert_int_equal(fe_mapped_read_in(&m, path, NULL, NULL, &err), FE_OK);
    const size_t from = 4096 * 3 + 17, n = (3 << 20) + 5000; /* across a huge page's edge */
    fe_mapped_drop_pages(&m, m.data + from, n);
    assert_memory_equal(m.data, want, FILE_BYTES);
    /* and the whole file, dropped, then read again */
    fe_mapped_drop_pages(&m, m.data, m.size);
    assert_memory_equal(m.data, want, FILE_BYTES);
    fe_mapped_close(&m);
}

/* this process's anonymous memory, bytes */
static size_t anonymous_bytes(void) {
    return fe_procfs_kib_bytes("/proc/self/smaps_rollup", "Anonymous");
}

/* a weight laid out before the read-in (its pages dropped) is not copied, and still reads */
static void ranges_dropped_before_are_not_copied(void **state) {
    (void)state;
    fe_mapped m;
    fe_error err = {0};
    assert_int_equal(fe_mapped_open(path, &m, &err), FE_OK);
    const size_t from = 1 << 20, n = 3 << 20;
    fe_mapped_drop_pages(&m, m.data + from, n);
    assert_int_equal(m.n_dropped, 1);
    const size_t before = anonymous_bytes();
    assert_int_equal(fe_mapped_read_in(&m, path, NULL, NULL, &err), FE_OK);
    assert_true(m.in_memory);
    const size_t copied = anonymous_bytes() - before;
    assert_true(copied >= FILE_BYTES - n - (64 << 10) && copied < FILE_BYTES - n + (512 << 10));
    assert_memory_equal(m.data, want, FILE_BYTES);
    fe_mapped_close(&m);
}

static void a_refused_read_in_leaves_the_mapping(void **state) {
    (void)state;
    fe_mapped m;
    fe_error err = {0};
    assert_int_equal(fe_mapped_open(path, &m, &err), FE_OK);
    const unsigned char *at = m.data;
    assert_int_equal(fe_mapped_read_in(&m, "/nonexistent/ferrum.gguf", NULL, NULL, &err), FE_E_IO);
    assert_non_null(strstr(err.message, "/nonexistent/ferrum.gguf"));
    assert_false(m.in_memory);
    assert_ptr_equal(m.data, at);
    assert_memory_equal(m.data, want, FILE_BYTES);
    fe_mapped_close(&m);
}

static void borrowed_buffers_are_left_alone(void **state) {
    (void)state;
    unsigned char buf[100];
    memset(buf, 7, sizeof buf);
    fe_mapped m;
    fe_mapped_borrow(buf, sizeof buf, &m);
    fe_error err = {0};
    assert_int_equal(fe_mapped_read_in(&m, path, NULL, NULL, &err), FE_OK);
    assert_false(m.in_memory);
    assert_ptr_equal(m.data, buf);
    fe_mapped_drop_pages(&m, buf, sizeof buf);
    assert_int_equal(buf[50], 7);
    assert_false(fe_mapped_huge(&m));
    fe_mapped_close(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_in_keeps_the_bytes_and_their_addresses),
        cmocka_unit_test(read_in_reports_its_progress),
        cmocka_unit_test(dropped_pages_read_the_file_again),
        cmocka_unit_test(ranges_dropped_before_are_not_copied),
        cmocka_unit_test(a_refused_read_in_leaves_the_mapping),
        cmocka_unit_test(borrowed_buffers_are_left_alone),
    };
    return cmocka_run_group_tests(tests, make_file, remove_file);
}
