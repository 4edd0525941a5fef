/* tests/support/testing.h: what the test programs share: a seeded random source, operand
 * buffers allocated by their view's span with a guard zone after it, drawing inputs by dtype,
 * and comparing outputs under an operator's tolerance. */
#ifndef FE_TESTS_TESTING_H
#define FE_TESTS_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/device.h"
#include "ops/kernel.h"

enum { TEST_GUARD_BYTES = 64 };

typedef struct test_rng {
    uint64_t s;
} test_rng;

uint64_t test_rng_next(test_rng *r);
double test_rng_uniform(test_rng *r, double lo, double hi);

/* Elements the view spans (1 + sum (shape-1)*stride); 0 for an absent operand. */
int64_t test_span(const fe_tensor *t);

/* A buffer for a view: span bytes, then TEST_GUARD_BYTES of a known pattern. */
typedef struct test_buf {
    unsigned char *mem;
    size_t bytes; /* span bytes, without the guard */
} test_buf;

bool test_buf_alloc(test_buf *b, const fe_tensor *t);
void test_buf_free(test_buf *b);
bool test_buf_guard_intact(const test_buf *b);
/* Fills the span: floats uniform in [lo, hi] (converted for bf16/f16), integers random. */
void test_buf_draw(test_buf *b, fe_dtype dt, double lo, double hi, test_rng *r);
/* Fills the span of an integer buffer (i32, i8, u8) with integers uniform in [lo, hi]. */
void test_buf_draw_ints(test_buf *b, fe_dtype dt, int64_t lo, int64_t hi, test_rng *r);
/* Fills the span with one byte value (outputs start equal in kernel and reference runs). */
void test_buf_fill(test_buf *b, unsigned char byte);

/* Compares two output spans. Exact tolerance (0, 0) compares bytes; otherwise f32/bf16/f16
 * elements within atol + rtol*|ref| (NaN matches NaN). Writes the first mismatch into why. */
bool test_close(const test_buf *got, const test_buf *ref, fe_dtype dt, double rtol, double atol,
                char *why, size_t why_n, double *max_err);

/* The unpinned default device a test program shares, made and destroyed by its group's
 * setup and teardown (cmocka_run_group_tests(tests, test_device_setup, test_device_teardown)). */
extern fe_device *test_dev;
int test_device_setup(void **state);
int test_device_teardown(void **state);

/* Whether extensive cases run (FERRUM_EXTENSIVE=1). */
bool test_extensive(void);

#endif
