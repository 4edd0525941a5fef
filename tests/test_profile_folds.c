/* tests/test_profile_folds.c: fold decisions as profile data (issue 10). A profile's "folds"
 * (site key -> keep) survive save and load and are refused when malformed; a compile with
 * fold = all and such a profile leaves out exactly the folds it turns off: every fold off is
 * the unfolded graph (the same steps and the same logits bit for bit as fold = none), one
 * site key off is the graph the priced pass gives when its price refuses that key (the same
 * steps, design keys and logits bits), and the tuner's pricing writes one decision per key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferrum/tune.h"
#include "graph/inspect.h"
#include "lm/model/causal.h"
#include "support/testing.h"
#include "support/tiny_llama.h"

enum { PROMPT = 21, CHUNK = 8, DECODE = 4, MAX_KEYS = 64 };

/* ---- the keys a compile finds ---- */

/* A price that records every site key asked with its answer: keep, except `refuse` (one
 * key) or every key (refuse_all). */
typedef struct keys {
    char key[MAX_KEYS][FE_FOLD_KEY_LEN];
    fe_fold_kind kind[MAX_KEYS];
    bool kept[MAX_KEYS];
    int n;
    const char *refuse;
    bool refuse_all;
} keys;

static bool record_key(void *user, const fe_fold_site *site) {
    keys *k = user;
    assert_non_null(site->key);
    assert_true(strlen(site->key) > 10);
    bool keep = !k->refuse_all && (!k->refuse || strcmp(k->refuse, site->key) != 0);
    bool seen = false;
    for (int i = 0; i < k->n && !seen; i++) seen = strcmp(k->key[i], site->key) == 0;
    if (!seen && k->n < MAX_KEYS) {
        snprintf(k->key[k->n], FE_FOLD_KEY_LEN, "%s", site->key);
        k->kept[k->n] = keep;
        k->kind[k->n++] = site->kind;
    }
    return keep;
}

/* The answers as a profile's fold decisions. */
static fe_profile *profile_of(const keys *k) {
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_parse("{\"entries\": []}", 15, &p, NULL), FE_OK);
    for (int i = 0; i < k->n; i++)
        assert_int_equal(fe_profile_put_fold(p, k->key[i], k->kept[i], NULL, NULL), FE_OK);
    assert_int_equal(fe_profile_folds(p), k->n);
    return p;
}

static fe_causal *causal(const fe_llama_weights *w, fe_body_form body, const fe_profile *p,
                         keys *price) {
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 64;
    o.chunk = CHUNK;
    o.prefill_dot = FE_PREFILL_DOT_F32;
    o.body = body;
    o.profile = p;
    if (price) o.fold_price = record_key, o.fold_user = price;
    fe_causal *m = NULL;
    fe_error err = {0};
    if (fe_causal_create(test_dev, w, &o, &m, &err) != FE_OK) fail_msg("%s", err.message);
    return m;
}

/* Every version of a and b: the same operators with the same design keys, in order. */
static int expect_same_steps(const char *what, fe_graph *a, fe_graph *b) {
    int n = 0;
    for (int v = 0;; v++) {
        int na = fe_graph_version_steps(a, v), nb = fe_graph_version_steps(b, v);
        if (na == 0 && nb == 0) break;
        if (na != nb) fail_msg("%s, version %d: %d steps against %d", what, v, na, nb);
        for (int s = 0; s < na; s++) {
            fe_step_info ia, ib;
            assert_int_equal(fe_graph_step_info(a, v, s, NULL, 0, &ia, NULL), FE_OK);
            assert_int_equal(fe_graph_step_info(b, v, s, NULL, 0, &ib, NULL), FE_OK);
            if (ia.op != ib.op || fe_kernel_design_key(ia.kernel) != fe_kernel_design_key(ib.kernel))
                fail_msg("%s, version %d, step %d: %s against %s", what, v, s, ia.op->name,
                         ib.op->name);
        }
        n += na;
    }
    assert_true(n > 0);
    return n;
}

typedef struct kept_logits {
    float *at;
    int64_t V;
} kept_logits;

static int keep(void *user, int32_t tok, const float *l) {
    (void)tok;
    kept_logits *k = user;
    memcpy(k->at, l, (size_t)k->V * sizeof *l);
    k->at += k->V;
    return 0;
}

/* The prompt's last logits (over three chunks), then DECODE steps of the device loop. */
static float *logits(fe_causal *m, int64_t V) {
    float *out = malloc((size_t)((1 + DECODE) * V) * sizeof *out);
    assert_non_null(out);
    int32_t *toks = tiny_llama_tokens(PROMPT, V, 17);
    const float *l;
    int32_t next;
    if (fe_causal_prompt(m, toks, PROMPT, &l, &next) != FE_OK) fail_msg("%s", fe_causal_message(m));
    memcpy(out, l, (size_t)V * sizeof *out);
    kept_logits k = {out + V, V};
    if (fe_causal_decode(m, DECODE, keep, &k) != FE_OK) fail_msg("%s", fe_causal_message(m));
    assert_true(k.at == out + (1 + DECODE) * V);
    free(toks);
    return out;
}

static fe_profile *empty_profile(void) {
    fe_profile *p = NULL;
    assert_int_equal(fe_profile_parse("{\"entries\": []}", 15, &p, NULL), FE_OK);
    return p;
}

static void a_profile_fold_off_compiles_without_that_fold(void **s) {
    (void)s;
    fe_lm_config c = tiny_llama_config(false, true);
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_llama_weights_random(&c, FE_DTYPE_F32, 7, &w, &err) != FE_OK) fail_msg("%s", err.message);
    int64_t V = c.vocab;
    /* the keys: every fold of both versions, kept */
    keys found = {0};
    fe_causal *all = causal(&w, FE_BODY_FOLD_PRICED, NULL, &found);
    fe_causal *none = causal(&w, FE_BODY_FOLD_NONE, NULL, NULL);
    bool kinds[FE_FOLD_KINDS] = {false};
    for (int i = 0; i < found.n; i++) kinds[found.kind[i]] = true;
    for (int k = 0; k < FE_FOLD_KINDS; k++) assert_true(kinds[k]); /* each kind is keyed */
    print_message("%d fold site keys, e.g. \"%s\"\n", found.n, found.key[0]);

    /* every fold off (the keys a compile refusing each asks about: a refused fold can open
     * another, the gated product once SiLU stays a step): the unfolded graph, bit for bit */
    keys refused = {.refuse_all = true};
    fe_causal_destroy(causal(&w, FE_BODY_FOLD_PRICED, NULL, &refused));
    assert_true(refused.n >= found.n);
    fe_profile *off = profile_of(&refused);
    fe_causal *profiled = causal(&w, FE_BODY_FOLD_ALL, off, NULL);
    int n = expect_same_steps("every fold off", fe_causal_graph(none), fe_causal_graph(profiled));
    fe_graph_stats gs = fe_graph_get_stats(fe_causal_graph(profiled));
    for (int k = 0; k < FE_FOLD_KINDS; k++) assert_int_equal(gs.folds[k], 0);
    float *a = logits(none, V), *b = logits(profiled, V);
    assert_memory_equal(a, b, (size_t)((1 + DECODE) * V) * sizeof *a);
    free(b);
    fe_causal_destroy(profiled);

    /* one key off (each key in turn): the graph the priced pass gives refusing that key,
     * from the profile of its answers */
    int n_all = expect_same_steps("all", fe_causal_graph(all), fe_causal_graph(all));
    float *f_all = logits(all, V);
    int fewer = 0;
    for (int i = 0; i < found.n; i++) {
        keys refuse = {.refuse = found.key[i]};
        fe_causal *priced = causal(&w, FE_BODY_FOLD_PRICED, NULL, &refuse);
        fe_profile *one = profile_of(&refuse);
        fe_causal *with = causal(&w, FE_BODY_FOLD_ALL, one, NULL);
        int m = expect_same_steps(found.key[i], fe_causal_graph(priced), fe_causal_graph(with));
        /* no more folds than all (a refused fold may open another: as many then) */
        assert_true(m >= n_all && m <= n);
        fewer += m > n_all;
        float *p = logits(priced, V), *q = logits(with, V);
        assert_memory_equal(p, q, (size_t)((1 + DECODE) * V) * sizeof *p);
        free(p), free(q);
        fe_causal_destroy(priced), fe_causal_destroy(with);
        fe_profile_destroy(one);
    }
    assert_true(fewer > found.n / 2);
    /* a key kept (keep: true) changes nothing */
    fe_profile *kept = empty_profile();
    assert_int_equal(fe_profile_put_fold(kept, found.key[0], true, NULL, &err), FE_OK);
    fe_causal *k = causal(&w, FE_BODY_FOLD_ALL, kept, NULL);
    assert_int_equal(expect_same_steps("kept", fe_causal_graph(all), fe_causal_graph(k)), n_all);
    float *f_k = logits(k, V);
    assert_memory_equal(f_all, f_k, (size_t)((1 + DECODE) * V) * sizeof *f_all);
    free(f_k), free(f_all), free(a);
    fe_causal_destroy(k);
    fe_profile_destroy(kept);
    fe_profile_destroy(off);
    fe_causal_destroy(all), fe_causal_destroy(none);
    fe_llama_weights_free(&w);
}

static void fold_decisions_survive_save_and_load_and_bad_ones_are_refused(void **s) {
    (void)s;
    fe_profile *p = empty_profile();
    fe_error err = {0};
    assert_int_equal(fe_profile_fold(p, "epilogue SiLU into GEMV: x"), -1);
    assert_int_equal(fe_profile_put_fold(p, "epilogue SiLU into GEMV: x", false, "n", &err), FE_OK);
    assert_int_equal(fe_profile_put_fold(p, "drain Copy into GEMV: x", true, NULL, &err), FE_OK);
    assert_int_equal(fe_profile_put_fold(p, "epilogue SiLU into GEMV: x", true, NULL, &err), FE_OK);
    assert_int_equal(fe_profile_folds(p), 2); /* the same key replaced */
    assert_int_equal(fe_profile_put_fold(p, "", true, NULL, &err), FE_E_INVALID);
    char path[256];
    snprintf(path, sizeof path, "%s/profile-folds-%d.json", P_tmpdir, (int)getpid());
    assert_int_equal(fe_profile_save(p, path, &err), FE_OK);
    fe_profile *q = NULL;
    if (fe_profile_load(path, &q, &err) != FE_OK) fail_msg("%s", err.message);
    assert_int_equal(fe_profile_folds(q), 2);
    assert_int_equal(fe_profile_fold(q, "epilogue SiLU into GEMV: x"), 1);
    assert_int_equal(fe_profile_fold(q, "drain Copy into GEMV: x"), 1);
    assert_int_equal(fe_profile_fold(q, "prologue RMSNorm into GEMV: x"), -1);
    assert_int_equal(fe_profile_fold(NULL, "x"), -1);
    remove(path);
    fe_profile_destroy(p), fe_profile_destroy(q);
    static const char *const bad[] = {
        "{\"entries\": [], \"folds\": {}}",
        "{\"entries\": [], \"folds\": [1]}",
        "{\"entries\": [], \"folds\": [{\"keep\": true}]}",
        "{\"entries\": [], \"folds\": [{\"site\": \"\", \"keep\": true}]}",
        "{\"entries\": [], \"folds\": [{\"site\": \"a\", \"keep\": 1}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fe_profile *r = NULL;
        if (fe_profile_parse(bad[i], strlen(bad[i]), &r, &err) != FE_E_FORMAT)
            fail_msg("accepted %s", bad[i]);
        assert_non_null(strstr(err.message, "folds"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fold_decisions_survive_save_and_load_and_bad_ones_are_refused),
        cmocka_unit_test(a_profile_fold_off_compiles_without_that_fold),
    };
    return cmocka_run_group_tests(tests, test_device_setup, test_device_teardown);
}
