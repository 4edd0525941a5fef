/* tests/test_safetensors.c: the safetensors reader (src/lm/format/safetensors.c): files built in C
 * are read back field by field, alone, from a folder and sharded through an index; every
 * prefix of a file, hand-made bad headers, bad indexes and random byte flips are clean
 * errors, never crashes; failed allocations are FE_E_NOMEM without leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "lm/format/safetensors.h"
#include "support/lm_fixtures.h"
#include "support/testing.h"

static const lmfix_st_tensor *T = lmfix_st_tensors;

static void check_tensor(const fe_st_tensor *t, size_t k, size_t pattern) {
    const lmfix_st_tensor *e = &lmfix_st_tensors[k];
    assert_string_equal(t->name, e->name);
    assert_string_equal(t->dtype_name, e->dtype);
    assert_int_equal(t->rank, e->rank);
    int64_t n = 1;
    for (int d = 0; d < e->rank; d++) {
        assert_int_equal(t->shape[d], e->shape[d]);
        n *= e->shape[d];
    }
    assert_int_equal(t->n_elements, n);
    assert_int_equal(t->n_bytes, (size_t)n * e->elem_size);
    for (size_t j = 0; j < t->n_bytes; j++)
        assert_int_equal(((const unsigned char *)t->data)[j], lmfix_pattern(pattern, j));
}

static void safetensors_reads_every_field_of_a_file(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_safetensors(&b, T, lmfix_st_n_tensors, 0);
    char dir[64], path[128];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_true(lmfix_write(dir, "m.safetensors", b.p, b.n));
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    fe_safetensors *st = NULL;
    fe_error err;
    if (fe_safetensors_open(path, &st, &err)) fail_msg("%s", err.message);
    assert_int_equal(fe_safetensors_count(st), lmfix_st_n_tensors);
    assert_int_equal(fe_safetensors_file_count(st), 1);
    for (size_t k = 0; k < lmfix_st_n_tensors; k++) {
        const fe_st_tensor *t = fe_safetensors_at(st, k); /* file order */
        check_tensor(t, k, k);
        assert_string_equal(t->file, path);
        assert_ptr_equal(fe_safetensors_find(st, T[k].name), t);
    }
    assert_null(fe_safetensors_at(st, lmfix_st_n_tensors));
    static const struct {
        const char *name;
        fe_dtype dt;
    } want[] = {{"model.embed_tokens.weight", FE_DTYPE_BF16},
                {"model.norm.weight", FE_DTYPE_F32},
                {"model.layers.0.mlp.down_proj.weight", FE_DTYPE_F16},
                {"scale", FE_DTYPE_F32}};
    const fe_st_tensor *t;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(fe_safetensors_get(st, want[i].name, &t, &err), FE_OK);
        assert_true(t->readable);
        assert_int_equal(t->dtype, want[i].dt);
    }
    assert_int_equal(fe_safetensors_get(st, "scale", &t, &err), FE_OK);
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->n_elements, 1);
    assert_int_equal(fe_safetensors_get(st, "position_ids", &t, &err), FE_E_UNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(err.message, "tensor position_ids has dtype I64"));
    assert_int_equal(fe_safetensors_get(st, "lm_head.weight", &t, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "lm_head.weight"));
    assert_int_equal(fe_safetensors_expect(st, "model.layers.0.mlp.down_proj.weight", 2,
                                           (int64_t[]){4, 6}, &t, &err), FE_OK);
    assert_int_equal(fe_safetensors_expect(st, "model.layers.0.mlp.down_proj.weight", 2,
                                           (int64_t[]){6, 4}, &t, &err), FE_E_SHAPE);
    assert_non_null(strstr(err.message, "is (4, 6) but the model's config wants (6, 4)"));
    fe_safetensors_close(st);

    /* the folder holding model.safetensors opens the same way */
    assert_true(lmfix_write(dir, "model.safetensors", b.p, b.n));
    if (fe_safetensors_open(dir, &st, &err)) fail_msg("%s", err.message);
    assert_int_equal(fe_safetensors_count(st), lmfix_st_n_tensors);
    check_tensor(fe_safetensors_find(st, "model.norm.weight"), 1, 1);
    fe_safetensors_close(st);
    lmfix_rmtree(dir);
    lmfix_free(&b);
}

static void write_index(const char *dir, const char *weight_map) {
    char json[2048];
    snprintf(json, sizeof json, "{\"metadata\":{\"total_size\":1},\"weight_map\":%s}", weight_map);
    assert_true(lmfix_write(dir, "model.safetensors.index.json", json, strlen(json)));
}

static const char GOOD_MAP[] =
    "{\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
    "\"model.norm.weight\":\"model-00001-of-00002.safetensors\","
    "\"model.layers.0.mlp.down_proj.weight\":\"model-00001-of-00002.safetensors\","
    "\"position_ids\":\"model-00002-of-00002.safetensors\","
    "\"scale\":\"model-00002-of-00002.safetensors\"}";

/* A folder with two shards (tensors 0..2, then 3..4) and the given weight map. */
static void write_shards(const char *dir, const char *weight_map) {
    lmfix_buf a = {0}, b = {0};
    lmfix_safetensors(&a, T, 3, 0);
    lmfix_safetensors(&b, T + 3, 2, 3);
    assert_true(lmfix_write(dir, "model-00001-of-00002.safetensors", a.p, a.n));
    assert_true(lmfix_write(dir, "model-00002-of-00002.safetensors", b.p, b.n));
    write_index(dir, weight_map);
    lmfix_free(&a);
    lmfix_free(&b);
}

static void safetensors_reads_sharded_checkpoints(void **s) {
    (void)s;
    char dir[64], path[160];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    write_shards(dir, GOOD_MAP);
    fe_safetensors *st = NULL;
    fe_error err;
    if (fe_safetensors_open(dir, &st, &err)) fail_msg("%s", err.message);
    assert_int_equal(fe_safetensors_file_count(st), 2);
    assert_int_equal(fe_safetensors_count(st), lmfix_st_n_tensors);
    for (size_t k = 0; k < lmfix_st_n_tensors; k++) {
        const fe_st_tensor *t = fe_safetensors_find(st, T[k].name);
        assert_non_null(t);
        check_tensor(t, k, k);
        assert_non_null(strstr(t->file, k < 3 ? "model-00001" : "model-00002"));
    }
    fe_safetensors_close(st);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (fe_safetensors_open(path, &st, &err)) fail_msg("%s", err.message);
    assert_int_equal(fe_safetensors_count(st), lmfix_st_n_tensors);
    fe_safetensors_close(st);
    lmfix_rmtree(dir);

    assert_true(lmfix_tmpdir(dir, sizeof dir));
    assert_int_equal(fe_safetensors_open(dir, &st, &err), FE_E_NOTFOUND);
    assert_non_null(strstr(err.message, "neither"));
    assert_null(st);
    lmfix_rmtree(dir);
    assert_int_equal(fe_safetensors_open("/nonexistent/m.safetensors", &st, &err), FE_E_IO);
}

static void expect_index_error(const char *weight_map, fe_status want, const char *needle) {
    char dir[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    write_shards(dir, weight_map);
    fe_safetensors *st = NULL;
    fe_error err = {0};
    fe_status got = fe_safetensors_open(dir, &st, &err);
    if (got != want)
        fail_msg("%s: wanted %s, got %s (%s)", weight_map, fe_status_str(want), fe_status_str(got),
                 err.message);
    if (!strstr(err.message, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.message, needle);
    assert_null(st);
    lmfix_rmtree(dir);
}

static void safetensors_bad_indexes_are_clean_errors(void **s) {
    (void)s;
    expect_index_error("[]", FE_E_FORMAT, "no weight_map");
    expect_index_error("{}", FE_E_FORMAT, "no weight_map");
    expect_index_error("{\"scale\":\"../model-00002-of-00002.safetensors\"}", FE_E_FORMAT,
                       "same folder");
    expect_index_error("{\"scale\":\"/etc/passwd\"}", FE_E_FORMAT, "same folder");
    expect_index_error("{\"scale\":7}", FE_E_FORMAT, "weight_map entry scale");
    expect_index_error("{\"scale\":\"missing.safetensors\"}", FE_E_IO, "missing.safetensors");
    expect_index_error("{\"scale\":\"model-00001-of-00002.safetensors\"}", FE_E_FORMAT,
                       "puts tensor scale in model-00001-of-00002.safetensors");
    expect_index_error("{\"nope\":\"model-00001-of-00002.safetensors\"}", FE_E_FORMAT,
                       "does not hold it");
    char dir[64];
    assert_true(lmfix_tmpdir(dir, sizeof dir));
    lmfix_buf a = {0};
    lmfix_safetensors(&a, T, 2, 0);
    assert_true(lmfix_write(dir, "a.safetensors", a.p, a.n));
    assert_true(lmfix_write(dir, "b.safetensors", a.p, a.n));
    write_index(dir, "{\"scale\":\"a.safetensors\",\"x\":\"b.safetensors\"}");
    fe_safetensors *st = NULL;
    fe_error err;
    assert_int_equal(fe_safetensors_open(dir, &st, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "is in both"));
    assert_true(lmfix_write(dir, "model.safetensors.index.json", "{", 1));
    assert_int_equal(fe_safetensors_open(dir, &st, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "not valid JSON"));
    lmfix_free(&a);
    lmfix_rmtree(dir);
}

/* A file whose header is `json` (as is) followed by data_bytes of data. */
static fe_status open_header(const char *json, size_t data_bytes, fe_error *err) {
    lmfix_buf b = {0};
    lmfix_u64(&b, strlen(json));
    lmfix_put(&b, json, strlen(json));
    for (size_t i = 0; i < data_bytes; i++) lmfix_put(&b, "\x5a", 1);
    unsigned char *p = lmfix_copy(&b, b.n);
    fe_safetensors *st = NULL;
    fe_status got = fe_safetensors_open_memory(p, b.n, "bad.safetensors", &st, err);
    fe_safetensors_close(st);
    free(p);
    lmfix_free(&b);
    return got;
}

static void expect_bad_header(const char *json, size_t data_bytes, const char *needle) {
    fe_error err = {0};
    fe_status got = open_header(json, data_bytes, &err);
    if (got != FE_E_FORMAT)
        fail_msg("%s: wanted FE_E_FORMAT, got %s (%s)", json, fe_status_str(got), err.message);
    if (!strstr(err.message, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.message, needle);
    assert_non_null(strstr(err.message, "bad.safetensors"));
}

static void safetensors_corrupt_headers_are_clean_errors(void **s) {
    (void)s;
    fe_error err;
    assert_int_equal(
        open_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, &err),
        FE_OK);
    expect_bad_header("{", 0, "not valid JSON");
    expect_bad_header("[1]", 0, "not a JSON object");
    expect_bad_header("{\"a\":1}", 0, "not a JSON object");
    expect_bad_header("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype is missing");
    expect_bad_header("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                      "dtype Q4");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8,
                      "shape is missing");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
                      "dimension");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}", 8,
                      "dimension");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                      "\"data_offsets\":[0,4]}}", 4, "9 dimensions");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2097152,2097152],"
                      "\"data_offsets\":[0,8]}}", 8, "more than 2^40");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                      "data_offsets");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                      "begin <= end");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
                      "begin <= end");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8,
                      "runs past");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
                      "2 elements of F32 take 8 bytes but data_offsets span 4");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                      "overlap");
    expect_bad_header("{\"\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                      "must not be empty");
    expect_bad_header("{\"__metadata__\":[]}", 0, "__metadata__");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                      "duplicate");
    /* a header length past the end, and one past any sane size */
    lmfix_buf b = {0};
    lmfix_safetensors(&b, T, lmfix_st_n_tensors, 0);
    fe_safetensors *st = NULL;
    uint64_t lens[] = {b.n - 7, (uint64_t)1 << 63, UINT64_MAX};
    for (size_t i = 0; i < 3; i++) {
        lmfix_set_u64(&b, 0, lens[i]);
        assert_int_equal(fe_safetensors_open_memory(b.p, b.n, "bad.safetensors", &st, &err),
                         FE_E_FORMAT);
        assert_non_null(strstr(err.message, "header says"));
    }
    assert_int_equal(fe_safetensors_open_memory(NULL, 0, NULL, &st, &err), FE_E_FORMAT);
    assert_non_null(strstr(err.message, "truncated"));
    lmfix_free(&b);
}

static void safetensors_every_truncation_is_a_clean_error(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_safetensors(&b, T, lmfix_st_n_tensors, 0);
    for (size_t n = 0; n < b.n; n++) {
        unsigned char *p = lmfix_copy(&b, n);
        fe_safetensors *st = NULL;
        fe_error err = {0};
        fe_status got = fe_safetensors_open_memory(p, n, "cut.safetensors", &st, &err);
        if (got != FE_E_FORMAT)
            fail_msg("a file cut at %zu of %zu bytes gave %s", n, b.n, fe_status_str(got));
        assert_non_null(strstr(err.message, "cut.safetensors"));
        free(p);
    }
    lmfix_free(&b);
}

static void safetensors_random_corruptions_never_crash(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_safetensors(&b, T, lmfix_st_n_tensors, 0);
    unsigned char *orig = lmfix_copy(&b, b.n);
    size_t header = 8 + (size_t)orig[0] + ((size_t)orig[1] << 8);
    test_rng r = {7};
    int ok = 0, bad = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(b.p, orig, b.n);
        int flips = 1 + (int)(test_rng_next(&r) % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(test_rng_next(&r) % header);
            /* half the time a digit or a JSON punctuation, to get past the parser */
            static const char pick[] = "0123456789,[]{}\":-";
            b.p[at] = (test_rng_next(&r) & 1) ? (unsigned char)pick[test_rng_next(&r) % 18]
                                              : (unsigned char)test_rng_next(&r);
        }
        unsigned char *p = lmfix_copy(&b, b.n);
        fe_safetensors *st = NULL;
        fe_error err;
        fe_status got = fe_safetensors_open_memory(p, b.n, "flip.safetensors", &st, &err);
        if (got == FE_OK) {
            ok++;
            for (size_t i = 0; i < fe_safetensors_count(st); i++) {
                const fe_st_tensor *t = fe_safetensors_at(st, i);
                volatile unsigned char sink = 0;
                if (t->n_bytes) sink ^= ((const unsigned char *)t->data)[t->n_bytes - 1];
                (void)sink;
            }
        } else if (got == FE_E_FORMAT) {
            bad++;
        } else {
            fail_msg("iteration %d: %s (%s)", it, fe_status_str(got), err.message);
        }
        fe_safetensors_close(st);
        free(p);
    }
    assert_true(bad > 1000);
    assert_true(ok > 0);
    free(orig);
    lmfix_free(&b);
}

static void safetensors_failed_allocations_are_clean(void **s) {
    (void)s;
    lmfix_buf b = {0};
    lmfix_safetensors(&b, T, lmfix_st_n_tensors, 0);
    for (long n = 1;; n++) {
        fe_safetensors *st = NULL;
        fe_error err;
        fe_alloc_fail_at(n);
        fe_status got = fe_safetensors_open_memory(b.p, b.n, "m.safetensors", &st, &err);
        fe_alloc_fail_at(0);
        if (got == FE_OK) {
            assert_true(n > 5);
            fe_safetensors_close(st);
            break;
        }
        if (got != FE_E_NOMEM)
            fail_msg("allocation %ld failing gave %s: %s", n, fe_status_str(got), err.message);
        assert_null(st);
    }
    lmfix_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(safetensors_reads_every_field_of_a_file),
        cmocka_unit_test(safetensors_reads_sharded_checkpoints),
        cmocka_unit_test(safetensors_bad_indexes_are_clean_errors),
        cmocka_unit_test(safetensors_corrupt_headers_are_clean_errors),
        cmocka_unit_test(safetensors_every_truncation_is_a_clean_error),
        cmocka_unit_test(safetensors_random_corruptions_never_crash),
        cmocka_unit_test(safetensors_failed_allocations_are_clean),
    };
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
