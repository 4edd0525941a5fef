/* lm/format/gguf.c: opening a GGUF file and checking its header (see gguf.h).
 *
 * The parse is one pass with a cursor that is never advanced past what it has checked is
 * there: every read asks for its bytes first, and every count is bounded by the bytes left
 * before anything is allocated for it, so a header that lies costs an error, not memory.
 * Then the data section is checked as a whole (alignment, range, overlap) and the lookup
 * indexes are sorted. Values are read byte by byte as little-endian.
 *
 * Opened header-only, the same checks run except the one that places the data against the
 * file's end: offsets are still checked for alignment and overlap (relative to the data
 * section, bounded at 2^62 bytes), no byte past the tensor table is read, and every
 * tensor's data is NULL. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/format/gguf_internal.h"

static const char FIX[] = "the file is truncated or corrupt; download or convert it again";

typedef struct cur {
    const unsigned char *p;
    size_t n, off;
    const char *file;
    fe_error *err;
} cur;

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static fe_status fail(cur *c, const char *fmt, ...) FE_PRINTF(2, 3);
static fe_status fail(cur *c, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fe_error_set(c->err, FE_E_FORMAT, "%s: %s", c->file, what);
}

/* What is being read, for messages: "<what> <i>" (name NULL), "<what> <name>" (i NONE)
 * or "<what> <i> of <name>". Formatted only on error. */
typedef struct where {
    const char *what, *name;
    size_t i;
} where;
#define NONE ((size_t)-1)

static const char *label(char *buf, size_t n, const where *w) {
    if (!w->name) snprintf(buf, n, "%s %zu", w->what, w->i);
    else if (w->i == NONE) snprintf(buf, n, "%s %s", w->what, w->name);
    else snprintf(buf, n, "%s %zu of %s", w->what, w->i, w->name);
    return buf;
}

static fe_status truncated(cur *c, const where *w, size_t k) {
    char l[200];
    return fail(c, "truncated: %s needs %zu bytes at offset %zu but the file ends at %zu; %s",
                label(l, sizeof l, w), k, c->off, c->n, FIX);
}

static bool has(const cur *c, size_t k) { return k <= c->n - c->off; }

/* Valid UTF-8 without NUL, overlong forms or surrogates. */
static bool utf8_ok(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        if (b == 0) return false;
        if (b < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if ((b & 0xe0) == 0xc0) k = 1, cp = b & 0x1f;
        else if ((b & 0xf0) == 0xe0) k = 2, cp = b & 0x0f;
        else if ((b & 0xf8) == 0xf0) k = 3, cp = b & 0x07;
        else return false;
        if (k > n - i - 1) return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += k + 1;
    }
    return true;
}

/* Reads a GGUF string (u64 length, bytes) at the cursor: *s points into the mapping. */
static fe_status read_str(cur *c, where w, const unsigned char **s, size_t *len) {
    if (!has(c, 8)) return truncated(c, &w, 8);
    uint64_t n = le64(c->p + c->off);
    char l[200];
    if (n > c->n - c->off - 8)
        return fail(c, "%s at offset %zu says it is %llu bytes long but only %zu are left; %s",
                    label(l, sizeof l, &w), c->off, (unsigned long long)n, c->n - c->off - 8,
                    FIX);
    *s = c->p + c->off + 8;
    *len = (size_t)n;
    c->off += 8 + (size_t)n;
    return FE_OK;
}

/* A key or tensor name: non-empty UTF-8, copied with a NUL. */
static fe_status read_name(cur *c, where w, char **out) {
    const unsigned char *s;
    size_t n;
    size_t at = c->off;
    char l[200];
    fe_status st = read_str(c, w, &s, &n);
    if (st) return st;
    if (n == 0) return fail(c, "%s at offset %zu is empty; %s", label(l, sizeof l, &w), at, FIX);
    if (!utf8_ok(s, n))
        return fail(c, "%s at offset %zu is not valid UTF-8 (or holds a NUL); %s",
                    label(l, sizeof l, &w), at, FIX);
    *out = fe_malloc(n + 1);
    if (!*out) return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->file);
    memcpy(*out, s, n);
    (*out)[n] = 0;
    return FE_OK;
}

static fe_status read_u32(cur *c, where w, uint32_t *v) {
    if (!has(c, 4)) return truncated(c, &w, 4);
    *v = le32(c->p + c->off);
    c->off += 4;
    return FE_OK;
}

static fe_status read_u64(cur *c, where w, uint64_t *v) {
    if (!has(c, 8)) return truncated(c, &w, 8);
    *v = le64(c->p + c->off);
    c->off += 8;
    return FE_OK;
}

static fe_status read_value(cur *c, fe_gguf_kv *kv) {
    const char *key = kv->key;
    if ((uint32_t)kv->type >= FE_GGUF_TYPE_COUNT)
        return fail(c, "metadata %s has value type %u, which is not a GGUF type (0..12); %s",
                    key, (unsigned)kv->type, FIX);
    if (kv->type == FE_GGUF_STRING)
        return read_str(c, (where){"value of", key, NONE}, &kv->val, &kv->len);
    if (kv->type != FE_GGUF_ARRAY) {
        size_t k = fe_gguf_scalar_size(kv->type);
        if (!has(c, k)) return truncated(c, &(where){"value of", key, NONE}, k);
        kv->val = c->p + c->off;
        c->off += k;
        return FE_OK;
    }
    uint32_t elem = 0;
    uint64_t count = 0;
    fe_status st = read_u32(c, (where){"array type of", key, NONE}, &elem);
    if (!st) st = read_u64(c, (where){"array length of", key, NONE}, &count);
    if (st) return st;
    if (elem >= FE_GGUF_TYPE_COUNT)
        return fail(c, "metadata %s is an array of type %u, which is not a GGUF type; %s", key,
                    (unsigned)elem, FIX);
    if (elem == FE_GGUF_ARRAY)
        return fail(c, "metadata %s is an array of arrays, which ferrum does not read; "
                    "convert the file with a current llama.cpp", key);
    kv->elem = (fe_gguf_type)elem;
    size_t esz = elem == FE_GGUF_STRING ? 8 : fe_gguf_scalar_size(kv->elem);
    if (count > (c->n - c->off) / esz)
        return fail(c, "metadata %s says it holds %llu elements but the %zu bytes left hold at "
                    "most %zu; %s", key, (unsigned long long)count, c->n - c->off,
                    (c->n - c->off) / esz, FIX);
    kv->count = (size_t)count;
    kv->val = c->p + c->off;
    if (elem != FE_GGUF_STRING) {
        c->off += kv->count * esz;
        return FE_OK;
    }
    kv->str_off = fe_malloc((kv->count ? kv->count : 1) * sizeof *kv->str_off);
    if (!kv->str_off) return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->file);
    for (size_t j = 0; j < kv->count; j++) {
        kv->str_off[j] = (uint64_t)(c->p + c->off - kv->val);
        const unsigned char *s;
        size_t n;
        if ((st = read_str(c, (where){"element", key, j}, &s, &n)) != FE_OK) return st;
    }
    return FE_OK;
}

static int cmp_kv(const void *a, const void *b) {
    return strcmp((*(const fe_gguf_kv *const *)a)->key, (*(const fe_gguf_kv *const *)b)->key);
}
static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const fe_gguf_tensor *const *)a)->name,
                  (*(const fe_gguf_tensor *const *)b)->name);
}
static int cmp_offset(const void *a, const void *b) {
    const fe_gguf_tensor *x = *(const fe_gguf_tensor *const *)a;
    const fe_gguf_tensor *y = *(const fe_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Makes room for one more item in *arr (count n, capacity *cap): the capacity doubles up to
 * `most`, so a header that promises more entries than it holds costs no more memory than
 * the entries actually read. False when out of memory. */
static bool grow(void **arr, size_t *cap, size_t n, size_t size, size_t most) {
    if (n < *cap) return true;
    size_t want = *cap ? 2 * *cap : 64;
    if (want > most) want = most;
    void *p = fe_realloc(*arr, want * size);
    if (!p) return false;
    memset((char *)p + n * size, 0, (want - n) * size);
    *arr = p;
    *cap = want;
    return true;
}

static fe_status read_kvs(cur *c, fe_gguf *g, size_t declared) {
    size_t cap = 0;
    for (size_t i = 0; i < declared; i++) {
        if (!grow((void **)&g->kv, &cap, i, sizeof *g->kv, declared))
            return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->file);
        g->n_kv = i + 1; /* from here close() frees what the entry holds */
        fe_gguf_kv *kv = &g->kv[i];
        kv->g = g;
        kv->elem = FE_GGUF_TYPE_COUNT;
        uint32_t type = 0;
        fe_status st = read_name(c, (where){"key of metadata entry", NULL, i}, &kv->key);
        if (!st) st = read_u32(c, (where){"value type of", kv->key, NONE}, &type);
        if (st) return st;
        kv->type = (fe_gguf_type)type;
        if ((st = read_value(c, kv)) != FE_OK) return st;
    }
    g->by_key = fe_malloc((g->n_kv ? g->n_kv : 1) * sizeof *g->by_key);
    if (!g->by_key) return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->file);
    for (size_t i = 0; i < g->n_kv; i++) g->by_key[i] = &g->kv[i];
    qsort(g->by_key, g->n_kv, sizeof *g->by_key, cmp_kv);
    for (size_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->by_key[i - 1]->key, g->by_key[i]->key) == 0)
            return fail(c, "metadata key %s appears twice; %s", g->by_key[i]->key, FIX);
    g->alignment = FE_GGUF_DEFAULT_ALIGNMENT;
    const fe_gguf_kv *a = fe_gguf_find(g, "general.alignment");
    if (a) {
        uint32_t v = 0;
        fe_status st = fe_gguf_get_u32(a, &v, c->err);
        if (st) return st;
        if (v == 0 || (v & (v - 1)) != 0 || v > (1u << 30))
            return fail(c, "general.alignment is %u; it must be a power of two up to 2^30; %s",
                        v, FIX);
        g->alignment = v;
    }
    return FE_OK;
}

static fe_status read_tensor(cur *c, fe_gguf *g, size_t i) {
    fe_gguf_tensor *t = &g->tensors[i];
    char *name = NULL;
    fe_status st = read_name(c, (where){"name of tensor", NULL, i}, &name);
    if (st) return st;
    t->name = name;
    uint32_t n_dims = 0, type = 0;
    if ((st = read_u32(c, (where){"dimension count of tensor", name, NONE}, &n_dims)) != FE_OK)
        return st;
    if (n_dims < 1 || n_dims > FE_GGUF_MAX_DIMS)
        return fail(c, "tensor %s has %u dimensions; GGUF tensors have 1 to %d; %s", name,
                    n_dims, FE_GGUF_MAX_DIMS, FIX);
    t->rank = (int)n_dims;
    int64_t n = 1;
    uint64_t ne0 = 0;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne = 0;
        if ((st = read_u64(c, (where){"dimension", name, d}, &ne)) != FE_OK) return st;
        if (ne > (uint64_t)FE_GGUF_MAX_ELEMENTS || (ne && n > FE_GGUF_MAX_ELEMENTS / (int64_t)ne))
            return fail(c, "tensor %s: dimension %u is %llu, which makes more than 2^40 "
                        "elements; %s", name, d, (unsigned long long)ne, FIX);
        n *= (int64_t)ne;
        if (d == 0) ne0 = ne;
        t->shape[n_dims - 1 - d] = (int64_t)ne; /* innermost-first to outermost-first */
    }
    t->n_elements = n;
    if ((st = read_u32(c, (where){"type of tensor", name, NONE}, &type)) != FE_OK) return st;
    if ((st = read_u64(c, (where){"data offset of tensor", name, NONE}, &t->offset)) != FE_OK)
        return st;
    const fe_ggml_type *ty = fe_ggml_type_info(type);
    if (!ty)
        return fail(c, "tensor %s has GGML type %u, which this reader does not know; convert "
                    "the file to Q8_0/Q4_1/BF16 with a current llama.cpp", name, type);
    t->ggml_type = type;
    t->type_name = ty->name;
    t->readable = ty->readable;
    t->dtype = ty->readable ? ty->dtype : FE_DTYPE_COUNT;
    if (ne0 % ty->block != 0)
        return fail(c, "tensor %s: its rows hold %llu elements, not a multiple of %s's block "
                    "of %u; %s", name, (unsigned long long)ne0, ty->name, ty->block, FIX);
    t->n_bytes = (size_t)(n / ty->block) * ty->size; /* < 2^40 * 292: no overflow */
    if (t->offset % g->alignment != 0)
        return fail(c, "tensor %s: data offset %llu is not a multiple of the alignment %zu; %s",
                    name, (unsigned long long)t->offset, g->alignment, FIX);
    return FE_OK;
}

/* Largest data section a header-only open accepts (it has no file end to check against). */
#define HEADER_ONLY_MAX_DATA ((uint64_t)1 << 62)

/* Places every tensor's data: inside the file (header-only: within 2^62 bytes), after the
 * header, without overlaps. */
static fe_status check_data(cur *c, fe_gguf *g) {
    size_t start = c->off + (g->alignment - c->off % g->alignment) % g->alignment;
    for (size_t i = 0; i < g->n_tensors; i++) {
        fe_gguf_tensor *t = &g->tensors[i];
        if (g->header_only) {
            if (t->offset > HEADER_ONLY_MAX_DATA || t->n_bytes > HEADER_ONLY_MAX_DATA - t->offset)
                return fail(c, "tensor %s: data [%llu, +%zu) reaches past 2^62 bytes; %s",
                            t->name, (unsigned long long)t->offset, t->n_bytes, FIX);
            t->offset += start;
            t->data = NULL;
            continue;
        }
        if (start > c->n || t->offset > c->n - start || t->n_bytes > c->n - start - t->offset)
            return fail(c, "tensor %s: data [%llu, +%zu) from the data section at %zu runs past "
                        "the end of the file (%zu bytes); %s", t->name,
                        (unsigned long long)t->offset, t->n_bytes, start, c->n, FIX);
        t->offset += start;
        t->data = c->p + t->offset;
    }
    const fe_gguf_tensor **by_off = fe_malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *by_off);
    if (!by_off) return fe_error_set(c->err, FE_E_NOMEM, "%s: out of memory", c->file);
    for (size_t i = 0; i < g->n_tensors; i++) by_off[i] = &g->tensors[i];
    qsort(by_off, g->n_tensors, sizeof *by_off, cmp_offset);
    const fe_gguf_tensor *last = NULL; /* the non-empty tensor reaching furthest so far */
    fe_status st = FE_OK;
    for (size_t i = 0; i < g->n_tensors && !st; i++) {
        const fe_gguf_tensor *t = by_off[i];
        if (!t->n_bytes) continue;
        if (last && last->offset + last->n_bytes > t->offset)
            st = fail(c, "tensors %s and %s overlap (data at file offsets %llu and %llu); %s",
                      last->name, t->name, (unsigned long long)last->offset,
                      (unsigned long long)t->offset, FIX);
        if (!last || t->offset + t->n_bytes > last->offset + last->n_bytes) last = t;
    }
    fe_free(by_off);
    return st;
}

static fe_status parse(fe_gguf *g, fe_error *err) {
    cur c = {.p = g->map.data, .n = g->map.size, .off = 0, .file = g->path, .err = err};
    if (c.n >= 4 && memcmp(c.p, "GGUF", 4) != 0)
        return fail(&c, "not a GGUF file (it does not start with \"GGUF\"); give the path of a "
                    ".gguf checkpoint");
    if (c.n < 24)
        return fail(&c, "truncated: the header needs 24 bytes but the file has %zu; %s", c.n, FIX);
    g->version = le32(c.p + 4);
    if (g->version == 0x02000000u || g->version == 0x03000000u)
        return fail(&c, "a big-endian GGUF file; ferrum reads little-endian files: convert it "
                    "again without --bigendian");
    if (g->version == 1)
        return fail(&c, "GGUF version 1 is not read (its counts are 32-bit); convert the file "
                    "again with a current llama.cpp");
    if (g->version != 2 && g->version != 3)
        return fail(&c, "GGUF version %u is not 2 or 3; %s", g->version, FIX);
    uint64_t n_tensors = le64(c.p + 8), n_kv = le64(c.p + 16);
    c.off = 24;
    size_t left = c.n - c.off;
    /* smallest entries: key length + 1-byte key + type + u8 value; a rank-1 tensor info */
    if (n_kv > left / 14 || n_tensors > left / 33)
        return fail(&c, "the header says %llu metadata entries and %llu tensors, more than the "
                    "%zu bytes after it can hold; %s", (unsigned long long)n_kv,
                    (unsigned long long)n_tensors, left, FIX);
    fe_status st = read_kvs(&c, g, (size_t)n_kv);
    size_t cap = 0;
    for (size_t i = 0; i < (size_t)n_tensors && !st; i++) {
        if (!grow((void **)&g->tensors, &cap, i, sizeof *g->tensors, (size_t)n_tensors))
            return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", c.file);
        g->n_tensors = i + 1;
        st = read_tensor(&c, g, i);
    }
    if (st) return st;
    g->by_name = fe_malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *g->by_name);
    if (!g->by_name) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", c.file);
    for (size_t i = 0; i < g->n_tensors; i++) g->by_name[i] = &g->tensors[i];
    if (st) return st;
    qsort(g->by_name, g->n_tensors, sizeof *g->by_name, cmp_name);
    for (size_t i = 1; i < g->n_tensors; i++)
        if (strcmp(g->by_name[i - 1]->name, g->by_name[i]->name) == 0)
            return fail(&c, "tensor %s appears twice; %s", g->by_name[i]->name, FIX);
    return check_data(&c, g);
}

static fe_status open_mapped(fe_gguf *g, fe_gguf **out, fe_error *err) {
    fe_status st = parse(g, err);
    if (st) {
        fe_gguf_close(g);
        return st;
    }
    *out = g;
    return FE_OK;
}

static fe_status open_file(const char *path, bool header_only, fe_gguf **out, fe_error *err) {
    *out = NULL;
    fe_gguf *g = fe_calloc(1, sizeof *g);
    if (!g || !(g->path = fe_strdup(path))) {
        fe_free(g);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", path);
    }
    g->header_only = header_only;
    fe_status st = fe_mapped_open(path, &g->map, err);
    if (st) {
        fe_gguf_close(g);
        return st;
    }
    return open_mapped(g, out, err);
}

static fe_status open_memory(const void *data, size_t size, const char *name, bool header_only,
                             fe_gguf **out, fe_error *err) {
    *out = NULL;
    fe_gguf *g = fe_calloc(1, sizeof *g);
    if (!g || !(g->path = fe_strdup(name ? name : "(memory)"))) {
        fe_free(g);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", name ? name : "(memory)");
    }
    g->header_only = header_only;
    fe_mapped_borrow(data, size, &g->map);
    return open_mapped(g, out, err);
}

fe_status fe_gguf_open(const char *path, fe_gguf **out, fe_error *err) {
    return open_file(path, false, out, err);
}

fe_status fe_gguf_open_header(const char *path, fe_gguf **out, fe_error *err) {
    return open_file(path, true, out, err);
}

fe_status fe_gguf_open_memory(const void *data, size_t size, const char *name, fe_gguf **out,
                              fe_error *err) {
    return open_memory(data, size, name, false, out, err);
}

fe_status fe_gguf_open_memory_header(const void *data, size_t size, const char *name,
                                     fe_gguf **out, fe_error *err) {
    return open_memory(data, size, name, true, out, err);
}

void fe_gguf_release_metadata(fe_gguf *g) {
    if (!g || !g->map.owned || !g->map.data || g->header_only) return;
    uint64_t first = g->map.size; /* the data section starts at the lowest tensor offset */
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].offset < first) first = g->tensors[i].offset;
    /* clean private file pages: dropped now, read again from the file if touched later */
    fe_mapped_drop_pages(&g->map, g->map.data, (size_t)first);
}

fe_status fe_gguf_read_in(fe_gguf *g, void (*progress)(void *user, size_t done), void *user,
                          fe_error *err) {
    if (!g || g->header_only) return FE_OK;
    fe_status st = fe_mapped_read_in(&g->map, g->path, progress, user, err);
    if (st == FE_OK) fe_gguf_release_metadata(g);
    return st;
}

bool fe_gguf_in_memory(const fe_gguf *g) { return g && g->map.in_memory; }

void fe_gguf_populate(fe_gguf *g, void (*progress)(void *user, size_t done), void *user) {
    if (g && !g->header_only) fe_mapped_populate(&g->map, progress, user);
}

bool fe_gguf_mapped_huge(const fe_gguf *g) { return g && fe_mapped_huge(&g->map); }

void fe_gguf_drop_pages(fe_gguf *g, const void *p, size_t n) {
    if (g) fe_mapped_drop_pages(&g->map, p, n);
}

void fe_gguf_close(fe_gguf *g) {
    if (!g) return;
    for (size_t i = 0; g->kv && i < g->n_kv; i++) {
        fe_free(g->kv[i].key);
        fe_free(g->kv[i].str_off);
    }
    for (size_t i = 0; g->tensors && i < g->n_tensors; i++) fe_free((char *)g->tensors[i].name);
    fe_free(g->kv);
    fe_free(g->by_key);
    fe_free(g->tensors);
    fe_free(g->by_name);
    fe_mapped_close(&g->map);
    fe_free(g->path);
    fe_free(g);
}

const char *fe_gguf_path(const fe_gguf *g) { return g->path; }
uint32_t fe_gguf_version(const fe_gguf *g) { return g->version; }
size_t fe_gguf_alignment(const fe_gguf *g) { return g->alignment; }
size_t fe_gguf_size(const fe_gguf *g) { return g->map.size; }
bool fe_gguf_header_only(const fe_gguf *g) { return g->header_only; }
