/* tests/support/testing.c: shared test helpers (see testing.h). */
#include "testing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t test_rng_next(test_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double test_rng_uniform(test_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(test_rng_next(r) >> 11) / 9007199254740992.0);
}

int64_t test_span(const fe_tensor *t) {
    if (t->rank == 0) return 0;
    int64_t s = 1;
    for (int i = 0; i < t->rank; i++) s += (t->shape[i] - 1) * t->stride[i];
    return s;
}

bool test_buf_alloc(test_buf *b, const fe_tensor *t) {
    b->bytes = fe_dtype_bytes(t->dtype, test_span(t));
    b->mem = NULL;
    if (posix_memalign((void **)&b->mem, 64, b->bytes + TEST_GUARD_BYTES) != 0) return false;
    memset(b->mem + b->bytes, 0xA5, TEST_GUARD_BYTES);
    return true;
}

void test_buf_free(test_buf *b) {
    free(b->mem);
    b->mem = NULL;
}

bool test_buf_guard_intact(const test_buf *b) {
    for (size_t i = 0; i < TEST_GUARD_BYTES; i++)
        if (b->mem[b->bytes + i] != 0xA5) return false;
    return true;
}

/* Random quants with scales (and mins) that make elements span about [lo, hi]. */
static void draw_blocks(test_buf *b, fe_dtype dt, double lo, double hi, test_rng *r) {
    const fe_dtype_traits *tr = fe_dtype_info(dt);
    double mag = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    for (size_t blk = 0; blk < b->bytes / tr->size; blk++) {
        unsigned char *p = b->mem + blk * tr->size;
        for (size_t i = 0; i < tr->size; i++) p[i] = (unsigned char)test_rng_next(r);
        if (dt == FE_DTYPE_Q4_K) { /* x = (d sc) q - dmin m, sc and m up to 63, q to 15 */
            uint16_t d = fe_f32_to_f16((float)(test_rng_uniform(r, 0.5, 1.0) * mag / (15 * 63)));
            uint16_t dmin = fe_f32_to_f16((float)(test_rng_uniform(r, 0.0, 0.5) * mag / 63));
            memcpy(p, &d, 2);
            memcpy(p + 2, &dmin, 2);
            continue;
        }
        if (dt == FE_DTYPE_Q6_K) { /* x = (d sc) (q - 32), sc in -128..127: d last */
            uint16_t d = fe_f32_to_f16((float)(test_rng_uniform(r, 0.5, 1.0) * mag / (32 * 128)));
            memcpy(p + tr->size - 2, &d, 2);
            continue;
        }
        double q_max = dt == FE_DTYPE_Q8_0 ? 127 : dt == FE_DTYPE_Q4_0 ? 8 : dt == FE_DTYPE_Q5_0 ? 16 : 15;
        double span = dt == FE_DTYPE_Q4_1 ? hi - lo : mag;
        uint16_t d = fe_f32_to_f16((float)(test_rng_uniform(r, 0.5, 1.0) * span / q_max));
        memcpy(p, &d, 2);
        if (dt == FE_DTYPE_Q4_1) {
            uint16_t m = fe_f32_to_f16((float)lo);
            memcpy(p + 2, &m, 2);
        }
    }
}

void test_buf_draw(test_buf *b, fe_dtype dt, double lo, double hi, test_rng *r) {
    if (fe_dtype_info(dt)->block > 1) {
        draw_blocks(b, dt, lo, hi, r);
        return;
    }
    size_t n = b->bytes / fe_dtype_info(dt)->size;
    for (size_t i = 0; i < n; i++) {
        float f = (float)test_rng_uniform(r, lo, hi);
        switch (dt) {
        case FE_DTYPE_F32:
            memcpy(b->mem + 4 * i, &f, 4);
            break;
        case FE_DTYPE_BF16: {
            uint16_t h = fe_f32_to_bf16(f);
            memcpy(b->mem + 2 * i, &h, 2);
            break;
        }
        case FE_DTYPE_F16: {
            uint16_t h = fe_f32_to_f16(f);
            memcpy(b->mem + 2 * i, &h, 2);
            break;
        }
        default:
            break;
        }
    }
    if (!fe_dtype_info(dt)->is_float)
        for (size_t i = 0; i < b->bytes; i++) b->mem[i] = (unsigned char)test_rng_next(r);
}

void test_buf_draw_ints(test_buf *b, fe_dtype dt, int64_t lo, int64_t hi, test_rng *r) {
    size_t n = b->bytes / fe_dtype_info(dt)->size;
    for (size_t i = 0; i < n; i++) {
        int64_t v = lo + (int64_t)(test_rng_next(r) % (uint64_t)(hi - lo + 1));
        switch (dt) {
        case FE_DTYPE_I32: {
            int32_t x = (int32_t)v;
            memcpy(b->mem + 4 * i, &x, 4);
            break;
        }
        case FE_DTYPE_I8:
            b->mem[i] = (unsigned char)(int8_t)v;
            break;
        default:
            b->mem[i] = (unsigned char)v;
            break;
        }
    }
}

void test_buf_fill(test_buf *b, unsigned char byte) { memset(b->mem, byte, b->bytes); }

static double load_float(const unsigned char *p, fe_dtype dt, size_t i) {
    uint16_t h;
    float f;
    switch (dt) {
    case FE_DTYPE_F32:
        memcpy(&f, p + 4 * i, 4);
        return f;
    case FE_DTYPE_BF16:
        memcpy(&h, p + 2 * i, 2);
        return fe_bf16_to_f32(h);
    default:
        memcpy(&h, p + 2 * i, 2);
        return fe_f16_to_f32(h);
    }
}

bool test_close(const test_buf *got, const test_buf *ref, fe_dtype dt, double rtol, double atol,
                char *why, size_t why_n, double *max_err) {
    bool exact = (rtol == 0 && atol == 0) || !fe_dtype_info(dt)->is_float ||
                 fe_dtype_info(dt)->block > 1;
    if (max_err) *max_err = 0;
    if (exact) {
        for (size_t i = 0; i < got->bytes; i++)
            if (got->mem[i] != ref->mem[i]) {
                snprintf(why, why_n, "byte %zu differs: got 0x%02x, reference 0x%02x", i,
                         got->mem[i], ref->mem[i]);
                return false;
            }
        return true;
    }
    /* a 16-bit output is rounded from f32 last: results within the tolerance in f32 may
     * round to neighbouring values, so one unit in its last place is allowed on top */
    const double ulp16 = dt == FE_DTYPE_F16 ? 0x1p-10 : dt == FE_DTYPE_BF16 ? 0x1p-7 : 0;
    const double tiny16 = dt == FE_DTYPE_F16 ? 0x1p-24 : dt == FE_DTYPE_BF16 ? 0x1p-133 : 0;
    size_t n = got->bytes / fe_dtype_info(dt)->size;
    for (size_t i = 0; i < n; i++) {
        double g = load_float(got->mem, dt, i), r = load_float(ref->mem, dt, i);
        if (isnan(r) && isnan(g)) continue;
        double err = fabs(g - r);
        if (max_err && err > *max_err && isfinite(err)) *max_err = err;
        double bound = atol + rtol * fabs(r);
        if (ulp16 > 0) bound += fmax(ulp16 * fabs(r), tiny16);
        if (!(err <= bound) && !(g == r)) {
            snprintf(why, why_n, "element %zu: got %.9g, reference %.9g (|diff| %.3g > %.3g)", i,
                     g, r, err, bound);
            return false;
        }
    }
    return true;
}

bool test_extensive(void) {
    const char *e = getenv("FERRUM_EXTENSIVE");
    return e && *e && strcmp(e, "0") != 0;
}

fe_device *test_dev;

int test_device_setup(void **state) {
    (void)state;
    fe_device_options o = fe_device_options_default();
    o.pin = false;
    return fe_device_create(&o, &test_dev, NULL) == FE_OK ? 0 : -1;
}

int test_device_teardown(void **state) {
    (void)state;
    fe_device_destroy(test_dev);
    test_dev = NULL;
    return 0;
}
