/* lm/format/safetensors.c: safetensors files and sharded checkpoints over mappings (see
 * safetensors.h).
 *
 * Each file's JSON header is parsed with jansson (through core/json.h, so allocations go
 * through the hook) and dropped once its entries are checked and copied; what stays is
 * the mapping, a tensor table in (shard, offset) order and a name index sorted with
 * strcmp. Invariant after a successful open: every tensor's data lies inside its shard's
 * mapping, no two overlap, names are unique. Opened header-only, each shard's data section
 * is neither read nor required to be there: offsets are checked against each other (sizes,
 * overlaps) but not against the file's end, and every tensor's data is NULL. */
#include "lm/format/safetensors.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "ferrum/ops.h"
#include "lm/format/mapped.h"

static const char FIX[] = "the file is truncated or corrupt; download or save it again";
#define MAX_HEADER ((uint64_t)100 << 20) /* the reference implementation's limit */
#define MAX_ELEMENTS ((int64_t)1 << 40)

typedef struct shard {
    char *path;
    fe_mapped map;
    bool borrowed; /* map borrows the caller's buffer: do not open path */
} shard;

struct fe_safetensors {
    shard *shards;
    size_t n_shards;
    fe_st_tensor *tensors;
    size_t n, cap;
    const fe_st_tensor **by_name;
    bool header_only;
};

typedef struct st_dtype {
    const char *name;
    size_t size;
    bool readable;
    fe_dtype dtype;
} st_dtype;

static const st_dtype st_dtypes[] = {
    {"F32", 4, true, FE_DTYPE_F32}, {"F16", 2, true, FE_DTYPE_F16},
    {"BF16", 2, true, FE_DTYPE_BF16}, {"F64", 8, false, 0}, {"I64", 8, false, 0},
    {"U64", 8, false, 0}, {"I32", 4, false, 0}, {"U32", 4, false, 0}, {"I16", 2, false, 0},
    {"U16", 2, false, 0}, {"I8", 1, false, 0}, {"U8", 1, false, 0}, {"BOOL", 1, false, 0},
    {"F8_E4M3", 1, false, 0}, {"F8_E5M2", 1, false, 0}, {"F8_E8M0", 1, false, 0},
};

static const st_dtype *find_dtype(const char *name) {
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (strcmp(st_dtypes[i].name, name) == 0) return &st_dtypes[i];
    return NULL;
}

static fe_status nomem(fe_error *err, const char *what) {
    return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", what);
}

static fe_status bad(fe_error *err, const char *file, const char *name, const char *rule) {
    return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s: %s; %s", file, name, rule, FIX);
}

/* A JSON integer in [0, hi]. */
static bool get_uint(json_t *v, int64_t hi, int64_t *out) {
    if (!json_is_integer(v)) return false;
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > hi) return false;
    *out = (int64_t)x;
    return true;
}

/* Checks and appends one header entry; its data starts data_at bytes into the file, whose
 * data section (after the header) is data_size bytes long. */
static fe_status add_entry(fe_safetensors *st, const shard *sh, const char *name, json_t *e,
                           size_t data_at, size_t data_size, fe_error *err) {
    const char *f = sh->path;
    if (!*name) return bad(err, f, "(empty name)", "tensor names must not be empty");
    if (!json_is_object(e)) return bad(err, f, name, "its entry is not a JSON object");
    json_t *dt = json_object_get(e, "dtype"), *shp = json_object_get(e, "shape");
    json_t *offs = json_object_get(e, "data_offsets");
    if (!json_is_string(dt)) return bad(err, f, name, "dtype is missing or not a string");
    const st_dtype *d = find_dtype(json_string_value(dt));
    if (!d)
        return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s has dtype %.32s, which is not a "
                            "safetensors dtype ferrum knows; save it as BF16, F16 or F32", f,
                            name, json_string_value(dt));
    if (!json_is_array(shp)) return bad(err, f, name, "shape is missing or not an array");
    if (json_array_size(shp) > FE_ST_MAX_RANK)
        return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s has %zu dimensions; ferrum reads "
                            "at most %d", f, name, json_array_size(shp), FE_ST_MAX_RANK);
    if (!json_is_array(offs) || json_array_size(offs) != 2)
        return bad(err, f, name, "data_offsets is missing or not a [begin, end] pair");
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 64;
        fe_st_tensor *t = fe_realloc(st->tensors, cap * sizeof *t);
        if (!t) return nomem(err, f);
        st->tensors = t, st->cap = cap;
    }
    fe_st_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype_name = d->name, t.readable = d->readable;
    t.dtype = d->readable ? d->dtype : FE_DTYPE_COUNT;
    t.rank = (int)json_array_size(shp);
    t.file = f;
    int64_t n = 1, b, end;
    for (int i = 0; i < t.rank; i++) {
        if (!get_uint(json_array_get(shp, (size_t)i), MAX_ELEMENTS, &t.shape[i]))
            return bad(err, f, name, "a dimension is not an integer in 0..2^40");
        if (t.shape[i] && n > MAX_ELEMENTS / t.shape[i])
            return bad(err, f, name, "its shape holds more than 2^40 elements");
        n *= t.shape[i];
    }
    t.n_elements = n;
    t.n_bytes = (size_t)n * d->size;
    if (!get_uint(json_array_get(offs, 0), INT64_MAX, &b) ||
        !get_uint(json_array_get(offs, 1), INT64_MAX, &end) || b > end)
        return bad(err, f, name, "data_offsets must be integers with 0 <= begin <= end");
    if (!st->header_only && (uint64_t)end > data_size)
        return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s: data [%lld, %lld) runs past the "
                            "%zu bytes of data in the file; %s", f, name, (long long)b,
                            (long long)end, data_size, FIX);
    if ((uint64_t)(end - b) != t.n_bytes)
        return fe_error_set(err, FE_E_FORMAT, "%s: tensor %s: %lld elements of %s take %zu "
                            "bytes but data_offsets span %lld; %s", f, name, (long long)n,
                            d->name, t.n_bytes, (long long)(end - b), FIX);
    t.offset = (uint64_t)data_at + (uint64_t)b; /* < 2^63 + 100 MiB: no overflow */
    t.data = st->header_only ? NULL : sh->map.data + t.offset;
    char *copy = fe_strdup(name);
    if (!copy) return nomem(err, f);
    t.name = copy;
    st->tensors[st->n++] = t;
    return FE_OK;
}

static int cmp_offset(const void *a, const void *b) {
    const fe_st_tensor *x = a, *y = b; /* both in one shard */
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static fe_status parse_shard(fe_safetensors *st, const shard *sh, fe_error *err) {
    const char *f = sh->path;
    const fe_mapped *m = &sh->map;
    if (m->size < 8)
        return fe_error_set(err, FE_E_FORMAT, "%s: truncated: the header length needs 8 bytes "
                            "but the file has %zu; %s", f, m->size, FIX);
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--) hn = hn << 8 | m->data[i];
    if (hn > m->size - 8 || hn > MAX_HEADER)
        return fe_error_set(err, FE_E_FORMAT, "%s: the header says it is %llu bytes long but "
                            "the file has %zu after the length (and the limit is 100 MiB); "
                            "this is not a safetensors file or it is truncated",
                            f, (unsigned long long)hn, m->size - 8);
    json_t *root = NULL;
    fe_status s = fe_json_parse((const char *)m->data + 8, (size_t)hn, f, &root, err);
    if (s) return s;
    size_t first = st->n;
    const char *key;
    json_t *val;
    if (!json_is_object(root))
        s = fe_error_set(err, FE_E_FORMAT, "%s: the header is not a JSON object; %s", f, FIX);
    else
        json_object_foreach(root, key, val) {
            if (strcmp(key, "__metadata__") == 0) {
                if (!json_is_object(val))
                    s = fe_error_set(err, FE_E_FORMAT, "%s: __metadata__ is not an object; %s",
                                     f, FIX);
            } else {
                s = add_entry(st, sh, key, val, 8 + (size_t)hn, m->size - 8 - (size_t)hn, err);
            }
            if (s) break;
        }
    json_decref(root);
    if (s) return s;
    if (st->n > first) qsort(st->tensors + first, st->n - first, sizeof *st->tensors, cmp_offset);
    const fe_st_tensor *last = NULL; /* the non-empty tensor reaching furthest so far */
    for (size_t i = first; i < st->n; i++) {
        const fe_st_tensor *t = &st->tensors[i];
        if (!t->n_bytes) continue;
        uint64_t lend = last ? last->offset + last->n_bytes : 0;
        if (last && lend > t->offset)
            return fe_error_set(err, FE_E_FORMAT, "%s: tensors %s and %s overlap; %s", f,
                                last->name, t->name, FIX);
        if (!last || t->offset + t->n_bytes > lend) last = t;
    }
    return FE_OK;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const fe_st_tensor *const *)a)->name,
                  (*(const fe_st_tensor *const *)b)->name);
}

/* Maps (unless borrowed) and parses every shard, then builds the name index. */
static fe_status load(fe_safetensors *st, fe_error *err) {
    fe_status s;
    for (size_t i = 0; i < st->n_shards; i++) {
        shard *sh = &st->shards[i];
        if (!sh->borrowed && (s = fe_mapped_open(sh->path, &sh->map, err)))
            return s;
        if ((s = parse_shard(st, sh, err))) return s;
    }
    st->by_name = fe_malloc((st->n ? st->n : 1) * sizeof *st->by_name);
    if (!st->by_name) return nomem(err, st->shards[0].path);
    for (size_t i = 0; i < st->n; i++) st->by_name[i] = &st->tensors[i];
    qsort(st->by_name, st->n, sizeof *st->by_name, cmp_name);
    for (size_t i = 1; i < st->n; i++)
        if (strcmp(st->by_name[i - 1]->name, st->by_name[i]->name) == 0)
            return fe_error_set(err, FE_E_FORMAT, "tensor %s is in both %s and %s; a checkpoint "
                                "holds each tensor once", st->by_name[i]->name,
                                st->by_name[i - 1]->file, st->by_name[i]->file);
    return FE_OK;
}

static fe_safetensors *create(size_t n_shards, bool header_only) {
    fe_safetensors *st = fe_calloc(1, sizeof *st);
    if (!st) return NULL;
    st->header_only = header_only;
    st->shards = fe_calloc(n_shards, sizeof *st->shards);
    if (!st->shards) {
        fe_free(st);
        return NULL;
    }
    st->n_shards = n_shards;
    return st;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static char *join(const char *dir, size_t dir_len, const char *name) {
    size_t k = strlen(name);
    char *p = fe_malloc(dir_len + 1 + k + 1);
    if (!p) return NULL;
    memcpy(p, dir, dir_len);
    p[dir_len] = '/';
    memcpy(p + dir_len + 1, name, k + 1);
    return p;
}

static bool shard_name_ok(const char *s) {
    return *s && !strchr(s, '/') && !strchr(s, '\\') && strcmp(s, ".") && strcmp(s, "..");
}

/* Every weight_map entry must name a tensor its shard holds. */
static fe_status check_weight_map(fe_safetensors *st, json_t *wm, const char *index,
                                  fe_error *err) {
    const char *key;
    json_t *val;
    json_object_foreach(wm, key, val) {
        const fe_st_tensor *t = fe_safetensors_find(st, key);
        const char *want = json_string_value(val);
        const char *have = t ? strrchr(t->file, '/') : NULL;
        if (!t || strcmp(have ? have + 1 : t->file, want) != 0)
            return fe_error_set(err, FE_E_FORMAT, "%s: weight_map puts tensor %s in %s, but "
                                "%s; the index does not match its shards", index, key, want,
                                t ? "another shard holds it" : "that shard does not hold it");
    }
    return FE_OK;
}

static fe_status open_index(const char *index, bool header_only, fe_safetensors **out,
                            fe_error *err) {
    json_t *root = NULL, *wm;
    fe_status s = fe_json_load_file(index, &root, err);
    if (s) return s;
    const char *slash = strrchr(index, '/');
    size_t dir_len = slash ? (size_t)(slash - index) : 1;
    const char *dir = slash ? index : ".";
    const char *key, **names = NULL;
    json_t *val;
    size_t n_names = 0;
    fe_safetensors *st = NULL;
    wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm) || json_object_size(wm) == 0) {
        s = fe_error_set(err, FE_E_FORMAT, "%s: no weight_map object (tensor name -> shard "
                         "file); save the checkpoint again", index);
        goto done;
    }
    names = fe_malloc(json_object_size(wm) * sizeof *names);
    if (!names) {
        s = nomem(err, index);
        goto done;
    }
    json_object_foreach(wm, key, val) {
        const char *f = json_string_value(val);
        if (!f || !shard_name_ok(f)) {
            s = fe_error_set(err, FE_E_FORMAT, "%s: weight_map entry %s must name a shard file "
                             "in the same folder (no '/', not \"..\")", index, key);
            goto done;
        }
        size_t k = 0;
        while (k < n_names && strcmp(names[k], f) != 0) k++;
        if (k == n_names) names[n_names++] = f;
    }
    if (!(st = create(n_names, header_only))) {
        s = nomem(err, index);
        goto done;
    }
    for (size_t i = 0; i < n_names; i++)
        if (!(st->shards[i].path = join(dir, dir_len, names[i]))) {
            s = nomem(err, index);
            goto done;
        }
    if (!(s = load(st, err))) s = check_weight_map(st, wm, index, err);
done:
    fe_free(names);
    json_decref(root);
    if (s) fe_safetensors_close(st);
    else *out = st;
    return s;
}

static fe_status open_single(const char *path, const void *data, size_t size, bool header_only,
                             fe_safetensors **out, fe_error *err) {
    fe_safetensors *st = create(1, header_only);
    if (!st || !(st->shards[0].path = fe_strdup(path))) {
        fe_safetensors_close(st);
        return nomem(err, path);
    }
    if (data) {
        fe_mapped_borrow(data, size, &st->shards[0].map);
        st->shards[0].borrowed = true;
    }
    fe_status s = load(st, err);
    if (s) fe_safetensors_close(st);
    else *out = st;
    return s;
}

static fe_status open_path(const char *path, bool header_only, fe_safetensors **out,
                           fe_error *err) {
    *out = NULL;
    if (!fe_path_is_dir(path)) {
        if (ends_with(path, ".index.json")) return open_index(path, header_only, out, err);
        return open_single(path, NULL, 0, header_only, out, err);
    }
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    char *index = join(path, n, "model.safetensors.index.json");
    char *single = join(path, n, "model.safetensors");
    fe_status s;
    if (!index || !single) s = nomem(err, path);
    else if (fe_path_is_file(index)) s = open_index(index, header_only, out, err);
    else if (fe_path_is_file(single)) s = open_single(single, NULL, 0, header_only, out, err);
    else
        s = fe_error_set(err, FE_E_NOTFOUND, "%s: the folder holds neither "
                         "model.safetensors.index.json nor model.safetensors", path);
    fe_free(index);
    fe_free(single);
    return s;
}

fe_status fe_safetensors_open(const char *path, fe_safetensors **out, fe_error *err) {
    return open_path(path, false, out, err);
}

fe_status fe_safetensors_open_header(const char *path, fe_safetensors **out, fe_error *err) {
    return open_path(path, true, out, err);
}

static fe_status open_memory(const void *data, size_t size, const char *name, bool header_only,
                             fe_safetensors **out, fe_error *err) {
    *out = NULL;
    static const unsigned char none[1]; /* stands for an empty buffer given as NULL */
    return open_single(name ? name : "(memory)", data ? data : none, data ? size : 0,
                       header_only, out, err);
}

fe_status fe_safetensors_open_memory(const void *data, size_t size, const char *name,
                                     fe_safetensors **out, fe_error *err) {
    return open_memory(data, size, name, false, out, err);
}

fe_status fe_safetensors_open_memory_header(const void *data, size_t size, const char *name,
                                            fe_safetensors **out, fe_error *err) {
    return open_memory(data, size, name, true, out, err);
}

void fe_safetensors_drop_pages(fe_safetensors *st, const void *p, size_t n) {
    for (size_t i = 0; st && i < st->n_shards; i++)
        if (!st->shards[i].borrowed) fe_mapped_drop_pages(&st->shards[i].map, p, n);
}

fe_status fe_safetensors_read_in(fe_safetensors *st, void (*progress)(void *user, size_t done),
                                 void *user, fe_error *err) {
    for (size_t i = 0; st && !st->header_only && i < st->n_shards; i++) {
        if (st->shards[i].borrowed) continue;
        fe_status s = fe_mapped_read_in(&st->shards[i].map, st->shards[i].path, progress, user, err);
        if (s != FE_OK) return s;
    }
    return FE_OK;
}

void fe_safetensors_populate(fe_safetensors *st, void (*progress)(void *user, size_t done),
                             void *user) {
    for (size_t i = 0; st && !st->header_only && i < st->n_shards; i++)
        if (!st->shards[i].borrowed) fe_mapped_populate(&st->shards[i].map, progress, user);
}

bool fe_safetensors_in_memory(const fe_safetensors *st) {
    bool any = false;
    for (size_t i = 0; st && i < st->n_shards; i++) {
        if (st->shards[i].borrowed) continue;
        if (!st->shards[i].map.in_memory) return false;
        any = true;
    }
    return any;
}

bool fe_safetensors_mapped_huge(const fe_safetensors *st) {
    bool any = false;
    for (size_t i = 0; st && i < st->n_shards; i++) {
        if (st->shards[i].borrowed) continue;
        if (!fe_mapped_huge(&st->shards[i].map)) return false;
        any = true;
    }
    return any;
}

void fe_safetensors_close(fe_safetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) fe_free((char *)st->tensors[i].name);
    for (size_t i = 0; st->shards && i < st->n_shards; i++) {
        fe_mapped_close(&st->shards[i].map);
        fe_free(st->shards[i].path);
    }
    fe_free(st->shards);
    fe_free(st->tensors);
    fe_free(st->by_name);
    fe_free(st);
}

size_t fe_safetensors_count(const fe_safetensors *st) { return st->n; }
size_t fe_safetensors_file_count(const fe_safetensors *st) { return st->n_shards; }
bool fe_safetensors_header_only(const fe_safetensors *st) { return st->header_only; }

const fe_st_tensor *fe_safetensors_at(const fe_safetensors *st, size_t i) {
    return i < st->n ? &st->tensors[i] : NULL;
}

static int cmp_key(const void *key, const void *e) {
    return strcmp((const char *)key, (*(const fe_st_tensor *const *)e)->name);
}

const fe_st_tensor *fe_safetensors_find(const fe_safetensors *st, const char *name) {
    if (!st->n || !name || !st->by_name) return NULL;
    const fe_st_tensor *const *e = bsearch(name, st->by_name, st->n, sizeof *st->by_name, cmp_key);
    return e ? *e : NULL;
}

fe_status fe_safetensors_get(const fe_safetensors *st, const char *name,
                             const fe_st_tensor **out, fe_error *err) {
    *out = NULL;
    const fe_st_tensor *t = fe_safetensors_find(st, name);
    if (!t)
        return fe_error_set(err, FE_E_NOTFOUND, "%s: no tensor named %s in the checkpoint",
                            st->shards[0].path, name ? name : "(null)");
    if (!t->readable)
        return fe_error_set(err, FE_E_UNSUPPORTED, "%s: tensor %s has dtype %s, which ferrum "
                            "does not read; save the checkpoint as BF16, F16 or F32", t->file,
                            t->name, t->dtype_name);
    *out = t;
    return FE_OK;
}

fe_status fe_safetensors_expect(const fe_safetensors *st, const char *name, int rank,
                                const int64_t *shape, const fe_st_tensor **out,
                                fe_error *err) {
    const fe_st_tensor *t;
    fe_status s = fe_safetensors_get(st, name, &t, err);
    *out = NULL;
    if (s) return s;
    bool same = t->rank == rank;
    for (int d = 0; same && d < rank; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char have[200], want[200];
        fe_shape_format(t->rank, t->shape, have, sizeof have);
        fe_shape_format(rank, shape, want, sizeof want);
        return fe_error_set(err, FE_E_SHAPE, "%s: tensor %s is %s but the model's config wants "
                            "%s; the checkpoint does not match the config", t->file, name, have,
                            want);
    }
    *out = t;
    return FE_OK;
}
