/* core/dtype.c: the dtype traits table and exact float conversions (bf16, f16).
 *
 * Conversions from f32 round to nearest, ties to even, on the bit pattern; NaN stays a
 * (quiet) NaN with its sign; values past the target's range become infinity. */
#include <string.h>

#include "core/error.h"

static const fe_dtype_traits traits[FE_DTYPE_COUNT] = {
    [FE_DTYPE_F32] = {.name = "f32", .size = 4, .block = 1, .is_float = true, .is_signed = true},
    [FE_DTYPE_BF16] = {.name = "bf16", .size = 2, .block = 1, .is_float = true, .is_signed = true},
    [FE_DTYPE_F16] = {.name = "f16", .size = 2, .block = 1, .is_float = true, .is_signed = true},
    [FE_DTYPE_I32] = {.name = "i32", .size = 4, .block = 1, .is_float = false, .is_signed = true},
    [FE_DTYPE_I8] = {.name = "i8", .size = 1, .block = 1, .is_float = false, .is_signed = true},
    [FE_DTYPE_U8] = {.name = "u8", .size = 1, .block = 1, .is_float = false, .is_signed = false},
    [FE_DTYPE_Q8_0] = {.name = "q8_0", .size = 34, .block = 32, .is_float = true, .is_signed = true},
    [FE_DTYPE_Q4_0] = {.name = "q4_0", .size = 18, .block = 32, .is_float = true, .is_signed = true},
    [FE_DTYPE_Q4_1] = {.name = "q4_1", .size = 20, .block = 32, .is_float = true, .is_signed = true},
    [FE_DTYPE_Q5_0] = {.name = "q5_0", .size = 22, .block = 32, .is_float = true, .is_signed = true},
    [FE_DTYPE_Q4_K] = {.name = "q4_k", .size = 144, .block = 256, .is_float = true, .is_signed = true},
    [FE_DTYPE_Q6_K] = {.name = "q6_k", .size = 210, .block = 256, .is_float = true, .is_signed = true},
};

size_t fe_dtype_bytes(fe_dtype t, int64_t n) {
    const fe_dtype_traits *tr = fe_dtype_info(t);
    if (!tr || n <= 0) return 0;
    return (size_t)(n / tr->block) * tr->size;
}

const fe_dtype_traits *fe_dtype_info(fe_dtype t) {
    if ((unsigned)t >= FE_DTYPE_COUNT) return NULL;
    return &traits[t];
}

fe_status fe_dtype_from_name(const char *name, fe_dtype *out) {
    if (!name) return FE_E_INVALID;
    for (int i = 0; i < FE_DTYPE_COUNT; i++) {
        if (strcmp(traits[i].name, name) == 0) {
            if (out) *out = (fe_dtype)i;
            return FE_OK;
        }
    }
    return FE_E_NOTFOUND;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t fe_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even; overflow carries into inf */
    return (uint16_t)(u >> 16);
}

float fe_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t fe_f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
    if (a < 0x38800000u) {
        /* subnormal or zero in f16: value = a * 2^24 rounded to an integer, ties to even */
        if (a < 0x33000000u) return (uint16_t)sign; /* below half the smallest subnormal */
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 for e in 102..112 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    /* normal: rebias the exponent, round the 13 dropped bits to nearest even */
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

float fe_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return bits_f32(sign | 0x7f800000u | (m << 13)); /* inf / NaN */
    if (e == 0) {
        if (m == 0) return bits_f32(sign);
        float v = (float)m * (1.0f / 16777216.0f); /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}
