/* lm/api/session.c: fe_lm_session: a causal LM over a model (its compiled graph and KV cache),
 * prefill and single decode steps, and the checks against the oracle and for determinism.
 * Generation is in generate.c. */
#include "lm/api/api.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "lm/eval/checks.h"
#include "lm/eval/oracle.h"

/* lm.h's dot-product choices keep fe_causal_options' numbers (the CLI's arguments carry them) */
_Static_assert((int)FE_LM_PREFILL_DOT_F32 == (int)FE_PREFILL_DOT_F32 &&
               (int)FE_LM_PREFILL_DOT_BF16 == (int)FE_PREFILL_DOT_BF16 &&
               (int)FE_LM_PREFILL_DOT_INT8 == (int)FE_PREFILL_DOT_INT8 &&
               (int)FE_LM_DECODE_DOT_F32 == (int)FE_DECODE_DOT_F32, "dot choices differ");

fe_lm_session_options fe_lm_session_options_default(void) {
    return (fe_lm_session_options){.sampling = fe_lm_sampling_default(),
                                   .cache_type = FE_LM_CACHE_F16};
}

const char *fe_lm_session_message(const fe_lm_session *s) { return s ? s->err.message : "no session (NULL)"; }
fe_graph *fe_lm_session_graph(fe_lm_session *s) { return s ? fe_causal_graph(s->c) : NULL; }
int64_t fe_lm_session_position(const fe_lm_session *s) { return s ? fe_causal_position(s->c) : 0; }
int64_t fe_lm_session_max_seq_len(const fe_lm_session *s) { return s ? fe_causal_max_seq_len(s->c) : 0; }
int64_t fe_lm_session_reusable(const fe_lm_session *s, const int32_t *ids, int64_t n) {
    return s && ids ? fe_causal_reusable(s->c, ids, n) : 0;
}
const float *fe_lm_session_logits(const fe_lm_session *s) { return s ? s->logits : NULL; }
const float *fe_lm_session_token_logits(const fe_lm_session *s) { return s ? s->token_logits : NULL; }

size_t fe_lm_session_kv_bytes(const fe_lm_session *s) {
    if (!s) return 0;
    const fe_lm_config *c = &s->m->cfg;
    /* per layer a K and a V cache of (max_seq_len, n_kv_heads, head_dim), f32 or f16 */
    const size_t es = s->o.cache_type == FE_LM_CACHE_F16 ? 2 : 4;
    return (size_t)(2 * c->n_layers * fe_causal_max_seq_len(s->c) * c->n_kv_heads * c->head_dim) * es;
}

fe_status fe_lm_session_create(fe_lm_model *m, const fe_lm_session_options *opts,
                               fe_lm_session **out, fe_error *err) {
    if (out) *out = NULL;
    if (!m || !out) return fe_error_set(err, FE_E_INVALID, "fe_lm_session_create: give a model and out");
    fe_lm_session_options o = opts ? *opts : fe_lm_session_options_default();
    if (o.max_seq_len < 0 || o.chunk < 0)
        return fe_error_set(err, FE_E_INVALID, "session: max_seq_len %lld, chunk %lld; give 0 "
                            "(the default) or more", (long long)o.max_seq_len, (long long)o.chunk);
    if (o.cache_type != FE_LM_CACHE_F32 && o.cache_type != FE_LM_CACHE_F16)
        return fe_error_set(err, FE_E_INVALID, "session: cache_type %d; give FE_LM_CACHE_F32 or "
                            "FE_LM_CACHE_F16", (int)o.cache_type);
    if (o.sampling.seed > (1ull << 53))
        return fe_error_set(err, FE_E_INVALID, "session: sampling seed %llu is past 2^53, the "
                            "device sampler's range; give a smaller one",
                            (unsigned long long)o.sampling.seed);
    fe_causal_options co = fe_causal_options_default();
    co.max_seq_len = o.max_seq_len;
    co.chunk = o.chunk;
    co.temperature = o.sampling.temperature;
    co.top_k = o.sampling.top_k;
    co.top_p = o.sampling.top_p;
    co.seed = o.sampling.seed;
    co.packaging = o.each_step ? FE_PACK_EACH_STEP : FE_PACK_AUTO;
    co.verbose = o.verbose;
    co.profile = o.profile;
    co.layouts = m->layouts;
    co.prefill_dot = o.prefill_dot == FE_LM_PREFILL_DOT_F32    ? FE_PREFILL_DOT_F32
                     : o.prefill_dot == FE_LM_PREFILL_DOT_BF16 ? FE_PREFILL_DOT_BF16
                     : o.prefill_dot == FE_LM_PREFILL_DOT_INT8 ? FE_PREFILL_DOT_INT8
                                                               : FE_PREFILL_DOT_AUTO;
    co.decode_dot = o.decode_dot == FE_LM_DECODE_DOT_F32 ? FE_DECODE_DOT_F32 : FE_DECODE_DOT_AUTO;
    co.kv_dtype = o.cache_type == FE_LM_CACHE_F16 ? FE_DTYPE_F16 : FE_DTYPE_F32;
    co.body = o.folds == FE_LM_FOLDS_NONE     ? FE_BODY_FOLD_NONE
              : o.folds == FE_LM_FOLDS_PRICED ? FE_BODY_FOLD_PRICED
                                              : FE_BODY_FOLD_ALL;
    co.fold_price = o.fold_price;
    co.fold_user = o.fold_user;
    fe_lm_session *s = fe_calloc(1, sizeof *s);
    if (!s) return fe_error_set(err, FE_E_NOMEM, "session: out of memory");
    s->m = m;
    s->o = o;
    fe_status st = fe_causal_create(m->dev, &m->w, &co, &s->c, err);
    if (st == FE_OK) {
        size_t V = (size_t)m->cfg.vocab;
        s->cand = fe_malloc(V * sizeof *s->cand);
        s->counts = fe_calloc(V, sizeof *s->counts);
        s->seq = fe_malloc((size_t)(fe_causal_max_seq_len(s->c) + 1) * sizeof *s->seq);
        if (!s->cand || !s->counts || !s->seq) st = fe_error_set(err, FE_E_NOMEM, "session: out of memory");
    }
    if (st != FE_OK) {
        fe_lm_session_destroy(s);
        return st;
    }
    if (o.profiling) fe_graph_set_profiling(fe_causal_graph(s->c), true);
    *out = s;
    return FE_OK;
}

void fe_lm_session_destroy(fe_lm_session *s) {
    if (!s) return;
    fe_causal_destroy(s->c);
    fe_free(s->cand);
    fe_free(s->counts);
    fe_free(s->seq);
    fe_free(s);
}

fe_status fe_lm_session_check_prompt(fe_lm_session *s, const int32_t *ids, int64_t n) {
    fe_error_clear(&s->err);
    int64_t S = fe_causal_max_seq_len(s->c), V = s->m->cfg.vocab;
    if (!ids || n < 1)
        return fe_error_set(&s->err, FE_E_INVALID, "a prompt of %lld tokens%s; give at least one",
                            (long long)n, ids ? "" : " at NULL");
    if (n > S)
        return fe_error_set(&s->err, FE_E_BOUNDS, "a prompt of %lld tokens does not fit the KV "
                            "cache of %lld rows (max_seq_len); give a larger max_seq_len (the "
                            "model's context is %lld) or a shorter prompt", (long long)n,
                            (long long)S, (long long)s->m->cfg.max_context);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return fe_error_set(&s->err, FE_E_BOUNDS, "prompt token %d at %lld is outside the "
                                "vocabulary (ids 0..%lld)", ids[i], (long long)i, (long long)V - 1);
    return FE_OK;
}

fe_status fe_lm_session_prefill(fe_lm_session *s, const int32_t *ids, int64_t n, const float **logits) {
    if (!s) return FE_E_INVALID;
    fe_status st = fe_lm_session_check_prompt(s, ids, n);
    if (st == FE_OK && (st = fe_causal_prompt(s->c, ids, n, &s->logits, NULL)) != FE_OK)
        fe_error_set(&s->err, st, "prefill: %s", fe_causal_message(s->c));
    if (logits) *logits = st == FE_OK ? s->logits : NULL;
    return st;
}

fe_status fe_lm_session_decode(fe_lm_session *s, int32_t token, const float **logits) {
    if (!s) return FE_E_INVALID;
    fe_error_clear(&s->err);
    fe_status st = fe_causal_step(s->c, token, &s->logits, NULL);
    if (st != FE_OK) fe_error_set(&s->err, st, "decode: %s", fe_causal_message(s->c));
    if (logits) *logits = st == FE_OK ? s->logits : NULL;
    return st;
}

fe_status fe_lm_session_check_accuracy(fe_lm_session *s, const int32_t *ids, int64_t n,
                                       fe_lm_accuracy *out) {
    if (!s) return FE_E_INVALID;
    fe_status st = fe_lm_session_check_prompt(s, ids, n);
    if (st != FE_OK) return st;
    if (!out) return fe_error_set(&s->err, FE_E_INVALID, "check accuracy: give out");
    if (n > 1 << 20) return fe_error_set(&s->err, FE_E_INVALID, "check accuracy: %lld positions; give fewer", (long long)n);
    size_t V = (size_t)s->m->cfg.vocab;
    float *ref = fe_malloc((size_t)n * V * 4), *got = fe_malloc((size_t)n * V * 4);
    fe_kl_stats k = {0};
    if (!ref || !got) st = fe_error_set(&s->err, FE_E_NOMEM, "check accuracy: out of memory");
    if (st == FE_OK) st = fe_oracle_logits(&s->m->w, ids, (int)n, ref, &s->err);
    if (st == FE_OK && (st = fe_causal_teacher_forced(s->c, ids, n, got)) != FE_OK)
        fe_error_set(&s->err, st, "check accuracy: %s", fe_causal_message(s->c));
    if (st == FE_OK && (st = fe_kl_compare(ref, got, (int)n, (int64_t)V, &k)) != FE_OK)
        fe_error_set(&s->err, st, "check accuracy: out of memory");
    fe_free(ref);
    fe_free(got);
    if (st == FE_OK)
        *out = (fe_lm_accuracy){k.positions, k.mean, k.p90, k.max, k.top1_mismatches,
                                k.max_abs_diff, k.spread};
    return st;
}

fe_status fe_lm_session_check_determinism(fe_lm_session *s, const int32_t *ids, int64_t n,
                                          int runs, int *differing) {
    if (!s) return FE_E_INVALID;
    fe_status st = fe_lm_session_check_prompt(s, ids, n);
    if (st != FE_OK) return st;
    if (!differing || runs < 1)
        return fe_error_set(&s->err, FE_E_INVALID, "check determinism: %d runs; give 1 or more and "
                            "a place for the count", runs);
    size_t V = (size_t)s->m->cfg.vocab;
    int32_t *other = fe_malloc((size_t)n * sizeof *other);
    float *first = fe_malloc(V * 4);
    if (!other || !first) st = fe_error_set(&s->err, FE_E_NOMEM, "check determinism: out of memory");
    for (int64_t i = 0; st == FE_OK && i < n; i++) other[i] = ids[n - 1 - i];
    *differing = 0;
    for (int r = 0; st == FE_OK && r < runs; r++) {
        const float *l;
        if ((st = fe_causal_prompt(s->c, other, n, NULL, NULL)) != FE_OK ||
            (st = fe_causal_prompt(s->c, ids, n, &l, NULL)) != FE_OK) {
            fe_error_set(&s->err, st, "check determinism: %s", fe_causal_message(s->c));
            break;
        }
        if (r == 0) memcpy(first, l, V * 4);
        else *differing += memcmp(first, l, V * 4) != 0;
    }
    fe_free(other);
    fe_free(first);
    return st;
}
