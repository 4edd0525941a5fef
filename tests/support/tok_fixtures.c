/* tests/support/tok_fixtures.c: the tokenizer tests' shared helpers (see tok_fixtures.h). */
#include "tok_fixtures.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/alloc.h"
#include "lm/tokenizer/bytelevel.h"

const char *tokfix_path(const char *name) {
    static char path[1024];
    const char *dir = getenv("FERRUM_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "tests/fixtures", name);
    return path;
}

char *tokfix_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s: cannot open (run the tests from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
    p[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return p;
}

fe_tokenizer *tokfix_from_gguf(const char *path, fe_gguf **keep) {
    fe_gguf *g = NULL;
    fe_error err;
    if (fe_gguf_open(path, &g, &err)) fail_msg("%s", err.message);
    fe_tokenizer *t = NULL;
    if (fe_tokenizer_from_gguf(g, &t, &err)) fail_msg("%s", err.message);
    if (keep) *keep = g;
    else fe_gguf_close(g);
    return t;
}

void tokfix_expect_ids(const fe_tokenizer *t, const char *text, size_t len, bool allow_special,
                       const int32_t *want, size_t n_want, const char *label) {
    int32_t *ids = NULL;
    size_t n = 0;
    fe_error err;
    if (fe_tokenizer_encode_alloc(t, text, len, false, allow_special, &ids, &n, &err))
        fail_msg("%s: %s", label, err.message);
    bool same = n == n_want && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!same) {
        print_message("%s: text \"%.*s\"\n  got ", label, (int)len, text);
        for (size_t i = 0; i < n; i++) print_message(" %d", (int)ids[i]);
        print_message("\n want");
        for (size_t i = 0; i < n_want; i++) print_message(" %d", (int)want[i]);
        print_message("\n");
    }
    fe_free(ids);
    assert_true(same);
}

void tokfix_expect_round_trip(const fe_tokenizer *t, const char *text, size_t len) {
    int32_t *ids = NULL;
    size_t n = 0;
    fe_error err;
    if (fe_tokenizer_encode_alloc(t, text, len, false, false, &ids, &n, &err))
        fail_msg("%s", err.message);
    char *back = malloc(len + 1);
    size_t blen = 0;
    if (fe_tokenizer_decode(t, ids, n, back, len + 1, &blen, &err)) fail_msg("%s", err.message);
    assert_int_equal(blen, len);
    assert_memory_equal(back, text, len);
    free(back);
    fe_free(ids);
}

fe_tokenizer *tokfix_tiny(const char *const *extra, int n_extra, const char *const *merges,
                          int n_merges, const fe_added_token *added, int n_added,
                          const char *pre) {
    static char text[256 + 64][96];
    const char *tokens[256 + 64];
    int n = 0;
    for (int b = 0; b < 256; b++, n++) {
        char c = (char)b;
        text[n][fe_bytelevel_encode(&c, 1, text[n])] = 0;
        tokens[n] = text[n];
    }
    for (int i = 0; i < n_extra; i++, n++) {
        text[n][fe_bytelevel_encode(extra[i], strlen(extra[i]), text[n])] = 0;
        tokens[n] = text[n];
    }
    static char mtext[64][200];
    const char *m[64];
    for (int i = 0; i < n_merges; i++) {
        const char *sp = strchr(merges[i], ' ');
        size_t k = fe_bytelevel_encode(merges[i], (size_t)(sp - merges[i]), mtext[i]);
        mtext[i][k++] = ' ';
        k += fe_bytelevel_encode(sp + 1, strlen(sp + 1), mtext[i] + k);
        mtext[i][k] = 0;
        m[i] = mtext[i];
    }
    fe_bpe_spec spec = fe_bpe_spec_default();
    spec.tokens = tokens;
    spec.n_tokens = n;
    spec.merges = m;
    spec.n_merges = n_merges;
    spec.added = added;
    spec.n_added = n_added;
    spec.pre = pre;
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_create_bpe(&spec, &t, &err)) fail_msg("%s", err.message);
    return t;
}

char *tokfix_tiny_json(const char *added, const char *extra_vocab, const char *merges,
                       const char *pre) {
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    n += (size_t)snprintf(p + n, cap - n, "{\"added_tokens\":%s,\"normalizer\":null,"
                          "\"pre_tokenizer\":%s,\"model\":{\"type\":\"BPE\",\"vocab\":{", added, pre);
    for (int b = 0; b < 256; b++) {
        char c = (char)b, e[8];
        size_t k = fe_bytelevel_encode(&c, 1, e);
        json_t *str = json_stringn(e, k);
        char *q = json_dumps(str, JSON_ENCODE_ANY);
        n += (size_t)snprintf(p + n, cap - n, "%s%s:%d", b ? "," : "", q, b);
        free(q);
        json_decref(str);
    }
    n += (size_t)snprintf(p + n, cap - n, "%s},\"merges\":%s}}", extra_vocab, merges);
    return p;
}
