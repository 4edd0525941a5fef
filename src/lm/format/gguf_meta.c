/* lm/format/gguf_meta.c: GGUF metadata getters, GGML type traits and tensor lookup (see gguf.h).
 *
 * Everything here reads what gguf.c has already checked lies inside the mapping, so the
 * getters only check types and ranges. Values are decoded byte by byte as little-endian
 * (metadata is not aligned in the file). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ferrum/ops.h"
#include "lm/format/gguf_internal.h"

/* Block sizes from ggml's block structs; ids that ggml removed (4, 5, 31..33, 36..38) or
 * that are newer than this table read as unknown. */
static const fe_ggml_type ggml_types[] = {
    [0] = {"F32", 1, 4, true, FE_DTYPE_F32},     [1] = {"F16", 1, 2, true, FE_DTYPE_F16},
    [2] = {"Q4_0", 32, 18, true, FE_DTYPE_Q4_0}, [3] = {"Q4_1", 32, 20, true, FE_DTYPE_Q4_1},
    [6] = {"Q5_0", 32, 22, true, FE_DTYPE_Q5_0},            [7] = {"Q5_1", 32, 24, false, 0},
    [8] = {"Q8_0", 32, 34, true, FE_DTYPE_Q8_0}, [9] = {"Q8_1", 32, 36, false, 0},
    [10] = {"Q2_K", 256, 84, false, 0},          [11] = {"Q3_K", 256, 110, false, 0},
    [12] = {"Q4_K", 256, 144, true, FE_DTYPE_Q4_K},         [13] = {"Q5_K", 256, 176, false, 0},
    [14] = {"Q6_K", 256, 210, true, FE_DTYPE_Q6_K},         [15] = {"Q8_K", 256, 292, false, 0},
    [16] = {"IQ2_XXS", 256, 66, false, 0},       [17] = {"IQ2_XS", 256, 74, false, 0},
    [18] = {"IQ3_XXS", 256, 98, false, 0},       [19] = {"IQ1_S", 256, 50, false, 0},
    [20] = {"IQ4_NL", 32, 18, false, 0},         [21] = {"IQ3_S", 256, 110, false, 0},
    [22] = {"IQ2_S", 256, 82, false, 0},         [23] = {"IQ4_XS", 256, 136, false, 0},
    [24] = {"I8", 1, 1, false, 0},               [25] = {"I16", 1, 2, false, 0},
    [26] = {"I32", 1, 4, false, 0},              [27] = {"I64", 1, 8, false, 0},
    [28] = {"F64", 1, 8, false, 0},              [29] = {"IQ1_M", 256, 56, false, 0},
    [30] = {"BF16", 1, 2, true, FE_DTYPE_BF16},  [34] = {"TQ1_0", 256, 54, false, 0},
    [35] = {"TQ2_0", 256, 66, false, 0},         [39] = {"MXFP4", 32, 17, false, 0},
};

const fe_ggml_type *fe_ggml_type_info(uint32_t id) {
    if (id >= sizeof ggml_types / sizeof ggml_types[0] || !ggml_types[id].name) return NULL;
    return &ggml_types[id];
}

size_t fe_gguf_scalar_size(fe_gguf_type t) {
    static const size_t sizes[FE_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return (unsigned)t < FE_GGUF_TYPE_COUNT ? sizes[t] : 0;
}

const char *fe_gguf_type_name(fe_gguf_type t) {
    static const char *names[FE_GGUF_TYPE_COUNT] = {"u8",  "i8",     "u16",   "i16", "u32",
                                                    "i32", "f32",    "bool",  "string",
                                                    "array", "u64",  "i64",   "f64"};
    return (unsigned)t < FE_GGUF_TYPE_COUNT ? names[t] : "?";
}

static uint64_t le(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* An integer of type t at p: *neg and the magnitude. False when t is not an integer type. */
static bool read_int(fe_gguf_type t, const unsigned char *p, bool *neg, uint64_t *mag) {
    size_t k = fe_gguf_scalar_size(t);
    bool is_signed = t == FE_GGUF_I8 || t == FE_GGUF_I16 || t == FE_GGUF_I32 || t == FE_GGUF_I64;
    bool is_unsigned = t == FE_GGUF_U8 || t == FE_GGUF_U16 || t == FE_GGUF_U32 || t == FE_GGUF_U64;
    if (!is_signed && !is_unsigned) return false;
    uint64_t u = le(p, k);
    *neg = false;
    if (is_signed && (u >> (8 * k - 1)) & 1) {
        *neg = true;
        uint64_t ext = k == 8 ? u : u | ~(((uint64_t)1 << (8 * k)) - 1); /* sign-extend */
        u = ~ext + 1;                                                     /* magnitude */
    }
    *mag = u;
    return true;
}

/* A float of type t at p, widened to double. False when t is not f32/f64. */
static bool read_float(fe_gguf_type t, const unsigned char *p, double *out) {
    if (t == FE_GGUF_F32) {
        uint32_t u = (uint32_t)le(p, 4);
        float f;
        memcpy(&f, &u, 4);
        *out = f;
        return true;
    }
    if (t == FE_GGUF_F64) {
        uint64_t u = le(p, 8);
        memcpy(out, &u, 8);
        return true;
    }
    return false;
}

static bool fits_f32(double d) { return !isfinite(d) || fabs(d) <= FLT_MAX; }

static fe_status wrong(const fe_gguf_kv *kv, const char *wanted, fe_error *err) {
    if (kv->type == FE_GGUF_ARRAY)
        return fe_error_set(err, FE_E_FORMAT, "%s: metadata %s is an array of %s; ferrum wants %s",
                            kv->g->path, kv->key, fe_gguf_type_name(kv->elem), wanted);
    return fe_error_set(err, FE_E_FORMAT, "%s: metadata %s is a %s; ferrum wants %s",
                        kv->g->path, kv->key, fe_gguf_type_name(kv->type), wanted);
}

static fe_status missing(fe_error *err) {
    return fe_error_set(err, FE_E_NOTFOUND, "GGUF metadata entry not found");
}

static int cmp_key(const void *key, const void *e) {
    return strcmp((const char *)key, (*(const fe_gguf_kv *const *)e)->key);
}

const fe_gguf_kv *fe_gguf_find(const fe_gguf *g, const char *key) {
    if (!g->n_kv || !key) return NULL;
    const fe_gguf_kv *const *e = bsearch(key, g->by_key, g->n_kv, sizeof *g->by_key, cmp_key);
    return e ? *e : NULL;
}

size_t fe_gguf_kv_count(const fe_gguf *g) { return g->n_kv; }
const fe_gguf_kv *fe_gguf_kv_at(const fe_gguf *g, size_t i) {
    return i < g->n_kv ? &g->kv[i] : NULL;
}
const char *fe_gguf_kv_key(const fe_gguf_kv *kv) { return kv->key; }
fe_gguf_type fe_gguf_kv_type(const fe_gguf_kv *kv) { return kv->type; }

fe_status fe_gguf_get_u32(const fe_gguf_kv *kv, uint32_t *out, fe_error *err) {
    if (!kv) return missing(err);
    bool neg;
    uint64_t mag;
    if (!read_int(kv->type, kv->val, &neg, &mag)) return wrong(kv, "an integer", err);
    if ((neg && mag) || mag > UINT32_MAX)
        return fe_error_set(err, FE_E_FORMAT, "%s: metadata %s is %s%llu, outside 0..2^32-1",
                            kv->g->path, kv->key, neg ? "-" : "", (unsigned long long)mag);
    *out = (uint32_t)mag;
    return FE_OK;
}

fe_status fe_gguf_get_i64(const fe_gguf_kv *kv, int64_t *out, fe_error *err) {
    if (!kv) return missing(err);
    bool neg;
    uint64_t mag;
    if (!read_int(kv->type, kv->val, &neg, &mag)) return wrong(kv, "an integer", err);
    if (!neg && mag > (uint64_t)INT64_MAX)
        return fe_error_set(err, FE_E_FORMAT, "%s: metadata %s is %llu, past 2^63-1",
                            kv->g->path, kv->key, (unsigned long long)mag);
    /* a negative magnitude is at most 2^63, which wraps to INT64_MIN exactly */
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return FE_OK;
}

fe_status fe_gguf_get_f32(const fe_gguf_kv *kv, float *out, fe_error *err) {
    if (!kv) return missing(err);
    double d;
    if (!read_float(kv->type, kv->val, &d)) return wrong(kv, "a float (f32 or f64)", err);
    if (!fits_f32(d))
        return fe_error_set(err, FE_E_FORMAT, "%s: metadata %s is %g, outside the f32 range",
                            kv->g->path, kv->key, d);
    *out = (float)d;
    return FE_OK;
}

fe_status fe_gguf_get_bool(const fe_gguf_kv *kv, bool *out, fe_error *err) {
    if (!kv) return missing(err);
    if (kv->type != FE_GGUF_BOOL) return wrong(kv, "a bool", err);
    *out = kv->val[0] != 0;
    return FE_OK;
}

fe_status fe_gguf_get_str(const fe_gguf_kv *kv, const char **out, size_t *len, fe_error *err) {
    if (!kv) return missing(err);
    if (kv->type != FE_GGUF_STRING) return wrong(kv, "a string", err);
    *out = (const char *)kv->val;
    *len = kv->len;
    return FE_OK;
}

size_t fe_gguf_array_len(const fe_gguf_kv *kv) {
    return kv && kv->type == FE_GGUF_ARRAY ? kv->count : 0;
}

fe_gguf_type fe_gguf_array_type(const fe_gguf_kv *kv) {
    return kv && kv->type == FE_GGUF_ARRAY ? kv->elem : FE_GGUF_TYPE_COUNT;
}

const char *fe_gguf_array_str(const fe_gguf_kv *kv, size_t i, size_t *len) {
    *len = 0;
    if (!kv || kv->type != FE_GGUF_ARRAY || kv->elem != FE_GGUF_STRING || i >= kv->count)
        return NULL;
    const unsigned char *p = kv->val + kv->str_off[i];
    *len = (size_t)le(p, 8);
    return (const char *)p + 8;
}

fe_status fe_gguf_array_i32(const fe_gguf_kv *kv, size_t i, int32_t *out) {
    if (!kv || kv->type != FE_GGUF_ARRAY) return FE_E_DTYPE;
    bool neg;
    uint64_t mag;
    if (kv->elem == FE_GGUF_STRING || kv->elem == FE_GGUF_BOOL) return FE_E_DTYPE;
    size_t k = fe_gguf_scalar_size(kv->elem);
    if (i >= kv->count) return FE_E_BOUNDS;
    if (!read_int(kv->elem, kv->val + i * k, &neg, &mag)) return FE_E_DTYPE;
    if (mag > (neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX)) return FE_E_BOUNDS;
    *out = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
    return FE_OK;
}

const unsigned char *fe_gguf_array_bytes(const fe_gguf_kv *kv, size_t *n) {
    *n = 0;
    if (!kv || kv->type != FE_GGUF_ARRAY || (kv->elem != FE_GGUF_U8 && kv->elem != FE_GGUF_I8))
        return NULL;
    *n = kv->count;
    return kv->val;
}

fe_status fe_gguf_array_f32(const fe_gguf_kv *kv, size_t i, float *out) {
    if (!kv || kv->type != FE_GGUF_ARRAY) return FE_E_DTYPE;
    if (kv->elem != FE_GGUF_F32 && kv->elem != FE_GGUF_F64) return FE_E_DTYPE;
    if (i >= kv->count) return FE_E_BOUNDS;
    double d;
    read_float(kv->elem, kv->val + i * fe_gguf_scalar_size(kv->elem), &d);
    if (!fits_f32(d)) return FE_E_BOUNDS;
    *out = (float)d;
    return FE_OK;
}

size_t fe_gguf_tensor_count(const fe_gguf *g) { return g->n_tensors; }

const fe_gguf_tensor *fe_gguf_tensor_at(const fe_gguf *g, size_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

static int cmp_tname(const void *key, const void *e) {
    return strcmp((const char *)key, (*(const fe_gguf_tensor *const *)e)->name);
}

const fe_gguf_tensor *fe_gguf_tensor_find(const fe_gguf *g, const char *name) {
    if (!g->n_tensors || !name) return NULL;
    const fe_gguf_tensor *const *e =
        bsearch(name, g->by_name, g->n_tensors, sizeof *g->by_name, cmp_tname);
    return e ? *e : NULL;
}

fe_status fe_gguf_tensor_get(const fe_gguf *g, const char *name, const fe_gguf_tensor **out,
                             fe_error *err) {
    *out = NULL;
    const fe_gguf_tensor *t = fe_gguf_tensor_find(g, name);
    if (!t)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no tensor named %s in the file", g->path,
                            name ? name : "(null)");
    if (!t->readable)
        return fe_error_set(err, FE_E_UNSUPPORTED,
                            "%s: tensor %s has type %s, which ferrum does not read; convert "
                            "the file to Q8_0/Q4_1/BF16 (llama.cpp's llama-quantize)",
                            g->path, t->name, t->type_name);
    *out = t;
    return FE_OK;
}

fe_status fe_gguf_tensor_expect(const fe_gguf *g, const char *name, int rank,
                                const int64_t *shape, const fe_gguf_tensor **out,
                                fe_error *err) {
    const fe_gguf_tensor *t;
    fe_status st = fe_gguf_tensor_get(g, name, &t, err);
    *out = NULL;
    if (st) return st;
    bool same = t->rank == rank;
    for (int d = 0; same && d < rank; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char have[96], want[96];
        fe_shape_format(t->rank, t->shape, have, sizeof have);
        fe_shape_format(rank, shape, want, sizeof want);
        return fe_error_set(err, FE_E_SHAPE,
                            "%s: tensor %s is %s but the model's config wants %s; the file "
                            "does not match the config", g->path, name, have, want);
    }
    *out = t;
    return FE_OK;
}
