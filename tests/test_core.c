/* tests/test_core.c: core claims: status names, dtype traits, exact bf16/f16 conversions
 * (round to nearest even, NaN kept NaN, overflow to infinity), the arena, identity hashing,
 * JSON errors that name the place, and the allocation hook failing the N-th call. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/quant.h"

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void status_names_are_distinct(void **s) {
    (void)s;
    for (int i = 0; i < FE_STATUS_COUNT; i++) {
        assert_non_null(fe_status_str((fe_status)i));
        for (int j = 0; j < i; j++)
            assert_string_not_equal(fe_status_str((fe_status)i), fe_status_str((fe_status)j));
    }
    assert_non_null(strstr(fe_status_str((fe_status)999), "unknown"));
    fe_error e;
    assert_int_equal(fe_error_set(&e, FE_E_SHAPE, "x has %d", 3), FE_E_SHAPE);
    assert_string_equal(e.message, "x has 3");
    assert_int_equal(fe_error_set(NULL, FE_E_IO, "ignored"), FE_E_IO);
}

static void dtype_traits_match_their_names(void **s) {
    (void)s;
    size_t sizes[FE_DTYPE_COUNT] = {4, 2, 2, 4, 1, 1, 34, 18, 20, 22, 144, 210};
    for (int i = 0; i < FE_DTYPE_COUNT; i++) {
        const fe_dtype_traits *t = fe_dtype_info((fe_dtype)i);
        assert_int_equal(t->size, sizes[i]);
        assert_int_equal(fe_dtype_bytes((fe_dtype)i, 512), sizes[i] * (512 / t->block));
        fe_dtype back;
        assert_int_equal(fe_dtype_from_name(t->name, &back), FE_OK);
        assert_int_equal(back, i);
    }
    assert_null(fe_dtype_info(FE_DTYPE_COUNT));
    fe_dtype d;
    assert_int_equal(fe_dtype_from_name("f64", &d), FE_E_NOTFOUND);
}

/* Nearest-even rounding computed the slow way, in double, for comparison. */
static uint16_t bf16_slow(float f) {
    if (isnan(f)) return 0x7fc0;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double dl = fe_bf16_to_f32(lo), dh = fe_bf16_to_f32(hi), x = f;
    if (isinf(dh) && !isinf(x)) {
        /* past the largest finite: halfway to the next power decides */
        double next = ldexp(1.0, 128) * (x < 0 ? -1 : 1);
        dh = next;
    }
    double el = fabs(x - dl), eh = fabs(dh - x);
    if (el < eh) return lo;
    if (eh < el) return hi;
    return (lo & 1) ? hi : lo;
}

static void bf16_rounds_to_nearest_even(void **s) {
    (void)s;
    assert_int_equal(fe_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(fe_f32_to_bf16(bits_f(0x3f808000)), 0x3f80); /* tie, even stays */
    assert_int_equal(fe_f32_to_bf16(bits_f(0x3f818000)), 0x3f82); /* tie, odd rounds up */
    assert_int_equal(fe_f32_to_bf16(bits_f(0x3f808001)), 0x3f81);
    assert_int_equal(fe_f32_to_bf16(bits_f(0x7f7fffff)), 0x7f80); /* overflow: inf */
    assert_int_equal(fe_f32_to_bf16(-INFINITY), 0xff80);
    assert_true(isnan(fe_bf16_to_f32(fe_f32_to_bf16(NAN))));
    assert_true(isnan(fe_bf16_to_f32(fe_f32_to_bf16(bits_f(0x7f800001))))); /* low-bit NaN */
    /* a sweep over many bit patterns against the slow rounding */
    for (uint64_t u = 0; u < 0x100000000ull; u += 0x10001ull * 7) {
        float f = bits_f((uint32_t)u);
        if (isnan(f)) continue;
        if (fe_f32_to_bf16(f) != bf16_slow(f))
            fail_msg("bf16(0x%08x) = 0x%04x, want 0x%04x", (unsigned)u, fe_f32_to_bf16(f),
                     bf16_slow(f));
    }
    /* every bf16 round-trips exactly */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = fe_bf16_to_f32((uint16_t)h);
        if (!isnan(f)) assert_int_equal(fe_f32_to_bf16(f), h);
    }
}

static void f16_rounds_to_nearest_even(void **s) {
    (void)s;
    assert_int_equal(fe_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(fe_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(fe_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(fe_f32_to_f16(65520.0f), 0x7c00); /* tie past max rounds to inf */
    assert_int_equal(fe_f32_to_f16(-1e9f), 0xfc00);
    assert_int_equal(fe_f32_to_f16(ldexpf(1, -24)), 0x0001); /* smallest subnormal */
    assert_int_equal(fe_f32_to_f16(ldexpf(1, -25)), 0x0000); /* tie to even: zero */
    assert_int_equal(fe_f32_to_f16(ldexpf(3, -26)), 0x0001);
    assert_int_equal(fe_f32_to_f16(ldexpf(3, -25)), 0x0002); /* 1.5 ulp tie: to even (2) */
    assert_int_equal(fe_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00); /* tie, even */
    assert_int_equal(fe_f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3c02);
    assert_true(isnan(fe_f16_to_f32(fe_f32_to_f16(NAN))));
    /* every f16 round-trips exactly, and midpoints between neighbours round to the even one */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float f = fe_f16_to_f32((uint16_t)h);
        assert_int_equal(fe_f32_to_f16(f), h);
        assert_int_equal(fe_f32_to_f16(-f), h | 0x8000);
        if (h + 1 < 0x7c00) {
            float mid = (float)(((double)f + (double)fe_f16_to_f32((uint16_t)(h + 1))) / 2);
            uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            assert_int_equal(fe_f32_to_f16(mid), want);
        }
    }
    assert_true(isinf(fe_f16_to_f32(0x7c00)));
}

static void arena_hands_out_aligned_zeroed_memory(void **s) {
    (void)s;
    fe_arena a;
    fe_arena_init(&a, 256);
    for (int i = 1; i < 100; i++) {
        unsigned char *p = fe_arena_alloc(&a, (size_t)i * 13);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        for (int j = 0; j < i * 13; j++) assert_int_equal(p[j], 0);
        memset(p, 0xff, (size_t)i * 13);
    }
    assert_true(a.used >= 99 * 13);
    fe_arena_deinit(&a);
}

static void hash_keys_follow_fields(void **s) {
    (void)s;
    fe_hasher a, b;
    assert_int_equal(fe_hasher_init(&a), 0);
    assert_int_equal(fe_hasher_init(&b), 0);
    fe_hasher_str(&a, "gemv");
    fe_hasher_i64(&a, 16);
    fe_hasher_f64(&a, 0.0);
    fe_hasher_str(&b, "gemv");
    fe_hasher_i64(&b, 16);
    fe_hasher_f64(&b, -0.0);
    assert_int_equal(fe_hasher_done(&a), fe_hasher_done(&b));
    assert_int_not_equal(fe_hash_bytes("ab", 2, 0), fe_hash_bytes("ba", 2, 0));
}

static void json_errors_name_line_and_column(void **s) {
    (void)s;
    json_t *j = NULL;
    fe_error e;
    const char *bad = "{\n  \"a\": [1, 2,,]\n}";
    assert_int_equal(fe_json_parse(bad, strlen(bad), "x.json", &j, &e), FE_E_FORMAT);
    assert_null(j);
    assert_non_null(strstr(e.message, "x.json"));
    assert_non_null(strstr(e.message, "line 2"));
    const char *dup = "{\"a\": 1, \"a\": 2}";
    assert_int_equal(fe_json_parse(dup, strlen(dup), "d", &j, &e), FE_E_FORMAT);
    assert_int_equal(fe_json_load_file("/nonexistent/ferrum.json", &j, &e), FE_E_IO);
    assert_non_null(strstr(e.message, "cannot open"));
    const char *ok = "{\"a\": [1, 2]}";
    assert_int_equal(fe_json_parse(ok, strlen(ok), "ok", &j, &e), FE_OK);
    assert_int_equal(json_array_size(json_object_get(j, "a")), 2);
    json_decref(j);
}

static void allocation_hook_fails_the_nth_call(void **s) {
    (void)s;
    fe_alloc_fail_at(3);
    void *a = fe_malloc(8), *b = fe_malloc(8), *c = fe_malloc(8), *d = fe_calloc(2, 2);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_null(d);
    assert_int_equal(fe_alloc_fail_at(0), 4);
    fe_free(a);
    fe_free(b);
    json_t *j = NULL;
    fe_error e;
    fe_alloc_fail_at(1);
    assert_int_equal(fe_json_parse("[1,2,3]", 7, "m", &j, &e), FE_E_NOMEM);
    fe_alloc_fail_at(0);
}

/* Encoding then decoding a block stays within half a quantization step of the input (a full
 * step for q4_0, whose 16 levels are asymmetric: the side opposite the largest magnitude
 * clips at 7 steps). */
static void quant_blocks_round_trip(void **s) {
    (void)s;
    float x[64], y[64];
    unsigned char blocks[2 * 34];
    for (int i = 0; i < 64; i++) x[i] = (float)sin(i * 0.7) * (i < 32 ? 1.0f : 0.01f);
    fe_dtype types[3] = {FE_DTYPE_Q8_0, FE_DTYPE_Q4_0, FE_DTYPE_Q4_1};
    for (int t = 0; t < 3; t++) {
        assert_true(fe_quant_row(types[t], x, blocks, 64));
        assert_true(fe_dequant_row(types[t], blocks, y, 64));
        for (int b = 0; b < 2; b++) {
            float amax = 0, mn = x[b * 32], mx = x[b * 32];
            for (int j = 0; j < 32; j++) {
                amax = fmaxf(amax, fabsf(x[b * 32 + j]));
                mn = fminf(mn, x[b * 32 + j]);
                mx = fmaxf(mx, x[b * 32 + j]);
            }
            float step = t == 0 ? amax / 127 : t == 1 ? amax / 8 : (mx - mn) / 15;
            for (int j = 0; j < 32; j++)
                if (fabsf(y[b * 32 + j] - x[b * 32 + j]) > step * (t == 1 ? 1.01f : 0.51f) + 1e-3f * amax)
                    fail_msg("%s element %d: %g -> %g (step %g)", fe_dtype_info(types[t])->name,
                             b * 32 + j, x[b * 32 + j], y[b * 32 + j], step);
        }
    }
    assert_false(fe_quant_row(FE_DTYPE_I8, x, blocks, 32));
    assert_false(fe_dequant_row(FE_DTYPE_I32, blocks, y, 32));
}

static void timer_is_monotonic(void **s) {
    (void)s;
    uint64_t a = fe_time_ns(), b = fe_time_ns();
    assert_true(b >= a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_names_are_distinct),
        cmocka_unit_test(dtype_traits_match_their_names),
        cmocka_unit_test(bf16_rounds_to_nearest_even),
        cmocka_unit_test(f16_rounds_to_nearest_even),
        cmocka_unit_test(arena_hands_out_aligned_zeroed_memory),
        cmocka_unit_test(hash_keys_follow_fields),
        cmocka_unit_test(json_errors_name_line_and_column),
        cmocka_unit_test(allocation_hook_fails_the_nth_call),
        cmocka_unit_test(quant_blocks_round_trip),
        cmocka_unit_test(timer_is_monotonic),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
