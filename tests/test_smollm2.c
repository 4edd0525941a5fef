/* tests/test_smollm2.c: ferrum on the real SmolLM2-135M-Instruct Q4_1 checkpoint against an
 * independent implementation, llama.cpp, whose answers are recorded in
 * tests/fixtures/smollm2_llamacpp.txt (scripts/make-llamacpp-fixture.py; format in its header):
 * a ChatML prompt's ids, and for each of two llama.cpp runs its 64-token greedy continuation
 * and, for every position of prompt + continuation, its top-32 log-probabilities, teacher-forced.
 *
 * The two runs: "q4_1" is llama.cpp on the GGUF as it is, which multiplies Q4_1 weights by
 * activations rounded to Q8_1 (8 bits, one scale a block of 32; Q8_0 for the tied Q8_0 head)
 * and keeps its KV cache in F16, so its logits carry that rounding; ferrum's model for it
 * takes `ferrum generate`'s default dot products: int8 activations in its GEMVs and, in its
 * prefill GEMMs, int8, or bf16 where the CPU has AMX-BF16 tiles (lm/model/dots.h; with f32
 * prefill GEMMs the KL estimate below was mean 3.5e-3 and top-1 differed at 3 undecided
 * positions, with int8 4.2e-3 and 1, with bf16 on a Xeon 4.18e-3 and 3; likely llama.cpp's F16 cache and f16 scales move its
 * inputs enough to flip roundings, so the two int8 errors are only partly shared); "f32" is
 * llama.cpp on the same weights dequantized to F32 with an F32 KV cache, float32 throughout
 * like ferrum's f32 model, so what is left between them is summation order. The f32 run is
 * the tight check; the q4_1 run checks against llama.cpp as people run it, with tolerances
 * its rounding forces (measured, see TOLERANCES).
 *
 * The claims, for each run: ferrum's tokenizer gives llama.cpp's prompt ids; teacher-forced,
 * ferrum's top-1 is llama.cpp's wherever llama.cpp's top-2 margin decides it, the KL estimate
 * (below) stays under its bound on average and no likely token's log-probability is off by more
 * than its bound; for the f32 run, ferrum's greedy continuation is llama.cpp's up to the first
 * position whose margin does not decide; and the f32 checks fail a model that is slightly
 * wrong (final norm scaled by 1.05), by a wide margin.
 *
 * A missing checkpoint skips, or fails under CI=true (scripts/setup fetches it). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "lm/model/causal.h"
#include "lm/eval/checks.h"
#include "lm/format/gguf.h"
#include "lm/tokenizer/tokenizer.h"
#include "support/lm_fixtures.h"

#define FIXTURE "smollm2_llamacpp.txt"
#define PROMPT                                                                                  \
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "     \
    "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"           \
    "<|im_start|>assistant\n"

/* Per run of the fixture: a position is decided when llama.cpp's top-1 leads its top-2 by more
 * than margin_min nats (top-1 must then agree, and the greedy comparison runs up to the first
 * undecided position); kl_mean_max bounds the mean over positions of the KL estimate, and
 * dlp_max the largest |log p - log q| over tokens llama.cpp gives p > 1e-2. */
typedef struct tolerance {
    const char *run;
    double margin_min, kl_mean_max, dlp_max;
} tolerance;

static const tolerance TOLERANCES[] = {
    /* float32 on both sides. Measured (llama-cpp-python 0.3.36, AVX-512 build; ferrum avx512):
     * KL estimate mean 3.3e-11, max 2.6e-9; |d logprob| <= 2.8e-5, so margins move by <= 6e-5;
     * all 101 positions decided (smallest margin 0.036), greedy identical for all 64 tokens.
     * What the bounds catch (throwaway runs): rope theta x1.01 (KL 1.2e-6, |dlp| 0.011), one
     * layer's ffn_norm x1.01 (KL 4e-5, |dlp| 0.074), one Q4_1 block's min nudged in layer 0's
     * wq (KL 1.9e-8, |dlp| 2.0e-3: only dlp_max sees it). */
    {"f32", 1e-3, 1e-7, 1e-3},
    /* llama.cpp's Q4_1 x Q8_1 and F16 KV cache against ferrum's float32 activations. Measured:
     * KL estimate mean 3.5e-3 (exact KL 4.3e-3), max 0.04; |d logprob| up to 0.62; top-2
     * margins moved by up to 0.44 (mean 0.11); top-1 differed at 3 of 101 positions, margins
     * 0.094, 0.089, 0.042, where ferrum agrees with its float32 oracle. llama.cpp's own batch
     * and one-token-a-call paths differ by KL 3.5e-3 mean and flip a top-1 of margin 0.15. So
     * this run catches only gross errors (RoPE pairing swapped: KL 2.1, 44 top-1 flips). */
    {"q4_1", 1.0, 1e-2, 1.5},
};

/* the perturbed model (final norm x1.05) must fail the f32 run's bound by this factor */
#define WRONG_FACTOR 100.0

enum { MAX_K = 64, MAX_RUNS = 4 };

typedef struct ref_pos {
    double margin;
    int32_t id[MAX_K];
    double lp[MAX_K];
} ref_pos;

typedef struct ref_run {
    char name[16];
    const tolerance *tol;
    int32_t *ids; /* prompt_ids ++ gen_ids */
    int n_gen, n_pos;
    ref_pos *pos; /* n_pos = n_prompt + n_gen */
    float *tf;    /* (n_pos, vocab) ferrum's teacher-forced logits, once computed */
} ref_run;

typedef struct reference {
    char model[128];
    char prompt[1024];
    int32_t *prompt_ids;
    int n_prompt, k, n_runs;
    ref_run runs[MAX_RUNS];
} reference;

static struct {
    reference ref;
    fe_device *dev;
    fe_gguf *g;
    fe_lm_config cfg;
    fe_llama_weights w;
    bool have_weights;
    fe_causal *m;  /* f32 activations: exact to the dequantised weights (the "f32" run) */
    fe_causal *m8; /* int8 activations in the GEMVs (`ferrum generate`'s default), against
                    * llama.cpp's own Q4_1 x Q8_1 path (the "q4_1" run) */
} S;

/* ---- the fixture ---- */

static const char *fixture_path(void) {
    static char path[1024];
    const char *dir = getenv("FERRUM_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "tests/fixtures", FIXTURE);
    return path;
}

static int32_t *read_ids(char *p, int *n) {
    char *end;
    long c = strtol(p, &end, 10);
    if (end == p || c < 1 || c > 4096) return NULL;
    int32_t *ids = malloc((size_t)c * sizeof *ids);
    for (long i = 0; i < c; i++) {
        p = end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            free(ids);
            return NULL;
        }
        ids[i] = (int32_t)v;
    }
    *n = (int)c;
    return ids;
}

static bool parse_pos(ref_run *r, int k, char *p) {
    char *end;
    long i = strtol(p, &end, 10);
    if (end == p || i != r->n_pos || k < 2) return false;
    r->pos = realloc(r->pos, (size_t)(r->n_pos + 1) * sizeof *r->pos);
    ref_pos *rp = &r->pos[r->n_pos++];
    rp->margin = strtod(end, &p);
    for (int j = 0; j < k; j++) {
        rp->id[j] = (int32_t)strtol(p, &end, 10);
        if (end == p || *end != ':') return false;
        rp->lp[j] = strtod(end + 1, &p);
    }
    return true;
}

/* Parses the fixture; false (with why) when it is malformed. */
static bool load_reference(reference *r, char *why, size_t why_n) {
    FILE *f = fopen(fixture_path(), "r");
    if (!f) {
        snprintf(why, why_n, "%s: cannot open (run the tests from the repository root)", fixture_path());
        return false;
    }
    memset(r, 0, sizeof *r);
    static char line[1 << 14];
    ref_run *run = NULL;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (line[0] == '#' || line[0] == 0) continue;
        if (!strncmp(line, "model ", 6)) {
            sscanf(line + 6, "%127s", r->model);
        } else if (!strncmp(line, "prompt ", 7)) {
            size_t o = 0;
            for (const char *p = line + 7; *p && o + 1 < sizeof r->prompt; p++) {
                if (p[0] == '\\' && p[1] == 'n') r->prompt[o++] = '\n', p++;
                else if (p[0] == '\\' && p[1] == '\\') r->prompt[o++] = '\\', p++;
                else r->prompt[o++] = *p;
            }
            r->prompt[o] = 0;
        } else if (!strncmp(line, "prompt_ids ", 11)) {
            ok = (r->prompt_ids = read_ids(line + 11, &r->n_prompt)) != NULL;
        } else if (!strncmp(line, "top_k ", 6)) {
            r->k = atoi(line + 6);
            ok = r->k >= 2 && r->k <= MAX_K;
        } else if (!strncmp(line, "run ", 4)) {
            ok = r->n_runs < MAX_RUNS && r->prompt_ids;
            if (!ok) break;
            run = &r->runs[r->n_runs++];
            sscanf(line + 4, "%15s", run->name);
            for (size_t t = 0; t < sizeof TOLERANCES / sizeof TOLERANCES[0]; t++)
                if (!strcmp(TOLERANCES[t].run, run->name)) run->tol = &TOLERANCES[t];
            ok = run->tol != NULL;
        } else if (run && !strncmp(line, "gen_ids ", 8)) {
            int32_t *gen = read_ids(line + 8, &run->n_gen);
            ok = gen != NULL;
            if (!ok) break;
            run->ids = malloc((size_t)(r->n_prompt + run->n_gen) * sizeof *run->ids);
            memcpy(run->ids, r->prompt_ids, (size_t)r->n_prompt * sizeof *gen);
            memcpy(run->ids + r->n_prompt, gen, (size_t)run->n_gen * sizeof *gen);
            free(gen);
        } else if (run && run->ids && !strncmp(line, "pos ", 4)) {
            ok = parse_pos(run, r->k, line + 4);
        } else {
            ok = false;
        }
    }
    fclose(f);
    for (int i = 0; ok && i < r->n_runs; i++)
        ok = r->runs[i].ids && r->runs[i].n_pos == r->n_prompt + r->runs[i].n_gen;
    ok = ok && r->n_runs > 0;
    if (!ok)
        snprintf(why, why_n, "%s: malformed near \"%.60s\"; make it again with "
                 "scripts/make-llamacpp-fixture.py", fixture_path(), line);
    return ok;
}

static ref_run *find_run(const char *name) {
    for (int i = 0; i < S.ref.n_runs; i++)
        if (!strcmp(S.ref.runs[i].name, name)) return &S.ref.runs[i];
    fail_msg("the fixture has no run \"%s\"", name);
    return NULL;
}

/* ---- the model ---- */

static fe_causal *make_model_kv(const fe_llama_weights *w, bool int8, fe_dtype kv) {
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 512;
    o.kv_dtype = kv;
    o.decode_dot = int8 ? FE_DECODE_DOT_AUTO : FE_DECODE_DOT_F32;
    o.prefill_dot = int8 ? FE_PREFILL_DOT_AUTO : FE_PREFILL_DOT_F32;
    o.temperature = 0; /* greedy */
    fe_causal *m = NULL;
    fe_error err = {0};
    if (fe_causal_create(S.dev, w, &o, &m, &err) != FE_OK) fail_msg("fe_causal_create: %s", err.message);
    return m;
}

static fe_causal *make_model(const fe_llama_weights *w, bool int8) {
    return make_model_kv(w, int8, FE_DTYPE_F32);
}

/* Skips (fails under CI=true) when the checkpoint is missing; loads it once. */
static void need_model(void) {
    const char *path = lmfix_smollm2_path();
    if (!S.g) {
        if (!lmfix_need_smollm2()) skip();
        fe_error err = {0};
        if (fe_gguf_open(path, &S.g, &err) != FE_OK) fail_msg("%s", err.message);
        if (fe_lm_config_from_gguf(S.g, &S.cfg, &err) != FE_OK ||
            fe_llama_weights_from_gguf(S.g, &S.cfg, &S.w, &err) != FE_OK)
            fail_msg("%s", err.message);
        S.have_weights = true;
    }
    if (!S.m) S.m = make_model(&S.w, false);
    if (!S.m8) S.m8 = make_model(&S.w, true);
    const char *base = strrchr(path, '/');
    assert_string_equal(S.ref.model, base ? base + 1 : path);
}

/* The model a run is compared with: int8 activations against llama.cpp's quantised path */
static fe_causal *model_for(const ref_run *r) { return strcmp(r->name, "f32") ? S.m8 : S.m; }

/* ferrum's teacher-forced logits over a run's ids, computed once. */
static const float *teacher_forced(ref_run *r) {
    need_model();
    if (!r->tf) {
        r->tf = malloc((size_t)r->n_pos * (size_t)S.cfg.vocab * sizeof *r->tf);
        assert_non_null(r->tf);
        if (fe_causal_teacher_forced(model_for(r), r->ids, r->n_pos, r->tf) != FE_OK)
            fail_msg("teacher-forced: %s", fe_causal_message(model_for(r)));
    }
    return r->tf;
}

static int argmax(const float *x, int64_t n) {
    int64_t a = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[a]) a = i;
    return (int)a;
}

/* ---- the KL estimate ----
 *
 * KL(p || q), p llama.cpp's next-token distribution, q ferrum's. The fixture holds p only on
 * its top-k set S (p_i for i in S) and so its tail mass T = 1 - sum_S p_i, not how T spreads
 * over the other ~49k ids. The estimate is the exact KL between the two distributions with
 * the tail merged into one outcome (k + 1 outcomes):
 *
 *     KL_est = sum_{i in S} p_i log(p_i / q_i)  +  T log(T / Q),   Q = 1 - sum_S q_i
 *
 * Merging outcomes never increases KL (log-sum inequality), so KL_est <= KL(p || q): it is a
 * lower bound, and a real check — any difference in the head, or in how much mass each side
 * leaves to the tail, counts with its full weight, and it is 0 only when they agree. What it
 * cannot see is the tail's shape: the true KL exceeds it by exactly T * KL(p|tail || q|tail),
 * a KL between the two tails renormalised, weighted by T. That is why the test also prints T
 * (mean and largest): where T is small, the estimate is the KL up to that bound's weight. The
 * log-softmax of q is taken in float64 over the whole vocabulary. */
typedef struct kl_est {
    double kl, tail_p, tail_q, max_dlp; /* max |log p_i - log q_i| over i in S with p_i > 1e-2 */
} kl_est;

static kl_est estimate(const ref_pos *r, int k, const float *logits, int64_t V) {
    double mx = -INFINITY, z = 0, zs = 0;
    for (int64_t v = 0; v < V; v++) mx = fmax(mx, logits[v]);
    for (int64_t v = 0; v < V; v++) z += exp((double)logits[v] - mx);
    double lse = mx + log(z);
    kl_est e = {0};
    double P = 0;
    for (int j = 0; j < k; j++) {
        double lq = (double)logits[r->id[j]] - lse, p = exp(r->lp[j]);
        e.kl += p * (r->lp[j] - lq);
        P += p;
        zs += exp((double)logits[r->id[j]] - mx);
        if (p > 1e-2) e.max_dlp = fmax(e.max_dlp, fabs(r->lp[j] - lq));
    }
    e.tail_p = fmax(0.0, 1.0 - P);
    e.tail_q = fmax(1e-300, (z - zs) / z);
    if (e.tail_p > 0) e.kl += e.tail_p * log(e.tail_p / e.tail_q);
    return e;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct kl_summary {
    double mean, p90, max, tail_mean, tail_max, max_dlp;
    int worst;
} kl_summary;

static kl_summary summarise(const ref_run *r, const float *logits) {
    kl_summary s = {0};
    int n = r->n_pos;
    double *kl = malloc((size_t)n * sizeof *kl), worst = -1;
    for (int i = 0; i < n; i++) {
        kl_est e = estimate(&r->pos[i], S.ref.k, logits + (int64_t)i * S.cfg.vocab, S.cfg.vocab);
        kl[i] = e.kl;
        s.mean += e.kl / n;
        s.tail_mean += e.tail_p / n;
        s.tail_max = fmax(s.tail_max, e.tail_p);
        s.max_dlp = fmax(s.max_dlp, e.max_dlp);
        if (e.kl > worst) worst = e.kl, s.worst = i;
    }
    qsort(kl, (size_t)n, sizeof *kl, cmp_d);
    s.p90 = kl[(int)(0.9 * (n - 1))];
    s.max = kl[n - 1];
    free(kl);
    return s;
}

/* ---- the tests ---- */

static void fixture_is_for_this_prompt(void **state) {
    (void)state;
    assert_string_equal(S.ref.prompt, PROMPT);
    assert_int_equal(S.ref.k, 32);
    assert_int_equal(S.ref.n_runs, 2);
    for (int i = 0; i < S.ref.n_runs; i++) assert_int_equal(S.ref.runs[i].n_gen, 64);
}

static void tokenizer_gives_llama_cpp_prompt_ids(void **state) {
    (void)state;
    need_model();
    fe_tokenizer *t = NULL;
    fe_error err = {0};
    if (fe_tokenizer_from_gguf(S.g, &t, &err) != FE_OK) fail_msg("%s", err.message);
    int32_t *ids = NULL;
    size_t n = 0;
    if (fe_tokenizer_encode_alloc(t, PROMPT, strlen(PROMPT), fe_tokenizer_add_bos(t), true, &ids, &n,
                                  &err) != FE_OK)
        fail_msg("%s", err.message);
    bool same = n == (size_t)S.ref.n_prompt && memcmp(ids, S.ref.prompt_ids, n * sizeof *ids) == 0;
    print_message("prompt: %zu ids from ferrum, %d from llama.cpp: %s\n", n, S.ref.n_prompt,
                  same ? "identical" : "DIFFERENT");
    if (!same) {
        print_message("  ferrum:   ");
        for (size_t i = 0; i < n; i++) print_message(" %d", ids[i]);
        print_message("\n  llama.cpp:");
        for (int i = 0; i < S.ref.n_prompt; i++) print_message(" %d", S.ref.prompt_ids[i]);
        print_message("\n");
    }
    /* the metadata's pages handed back (as `ferrum generate` does once the model is built):
     * the tokenizer and the GGUF's strings still read the same */
    fe_gguf_release_metadata(S.g);
    int32_t *again = NULL;
    size_t n2 = 0;
    if (fe_tokenizer_encode_alloc(t, PROMPT, strlen(PROMPT), fe_tokenizer_add_bos(t), true, &again,
                                  &n2, &err) != FE_OK)
        fail_msg("%s", err.message);
    assert_int_equal(n2, n);
    assert_memory_equal(again, ids, n * sizeof *ids);
    const char *arch;
    size_t len;
    assert_int_equal(fe_gguf_get_str(fe_gguf_find(S.g, "general.architecture"), &arch, &len, &err), FE_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(arch, "llama", 5);
    fe_free(again);
    fe_free(ids);
    fe_tokenizer_destroy(t);
    assert_true(same);
}

static void check_top1(const char *name) {
    ref_run *r = find_run(name);
    const float *tf = teacher_forced(r);
    int checked = 0, bad = 0;
    double smallest = INFINITY;
    char undecided[1024] = "";
    size_t u = 0;
    for (int i = 0; i < r->n_pos; i++) {
        const ref_pos *p = &r->pos[i];
        int a = argmax(tf + (int64_t)i * S.cfg.vocab, S.cfg.vocab);
        if (p->margin <= r->tol->margin_min) {
            if (u < sizeof undecided - 24)
                u += (size_t)snprintf(undecided + u, sizeof undecided - u, " %d%s", i,
                                      a == p->id[0] ? "" : "(differs)");
            continue;
        }
        checked++;
        smallest = fmin(smallest, p->margin);
        if (a != p->id[0]) {
            bad++;
            print_message("%s position %d: ferrum's top-1 is %d, llama.cpp's %d (margin %.4g)\n",
                          name, i, a, p->id[0], p->margin);
        }
    }
    print_message("%s top-1: %d of %d positions decided (margin > %g; smallest %.4g), %d differ; "
                  "undecided:%s\n", name, checked, r->n_pos, r->tol->margin_min, smallest, bad,
                  u ? undecided : " none");
    assert_int_equal(bad, 0);
}

static void check_kl(const char *name) {
    ref_run *r = find_run(name);
    kl_summary s = summarise(r, teacher_forced(r));
    print_message("%s KL estimate (top-%d + tail) over %d positions: mean %.3g p90 %.3g max %.3g "
                  "(position %d), bound %g; max |d logprob| where p > 1e-2: %.3g, bound %g; "
                  "llama.cpp tail mass mean %.3g max %.3g\n", name, S.ref.k, r->n_pos, s.mean,
                  s.p90, s.max, s.worst, r->tol->kl_mean_max, s.max_dlp, r->tol->dlp_max,
                  s.tail_mean, s.tail_max);
    assert_true(s.mean <= r->tol->kl_mean_max);
    assert_true(s.max_dlp <= r->tol->dlp_max);
}

typedef struct collect {
    int32_t *out;
    int n, cap;
} collect;

static int on_token(void *user, int32_t tok, const float *logits) {
    (void)logits;
    collect *c = user;
    if (c->n < c->cap) c->out[c->n++] = tok;
    return c->n >= c->cap;
}

/* Returns how many tokens were compared. */
static int check_greedy(const char *name) {
    need_model();
    ref_run *r = find_run(name);
    int np = S.ref.n_prompt, ng = r->n_gen;
    int32_t got[256];
    assert_true(ng <= 256);
    const float *logits;
    int32_t next;
    fe_causal *m = model_for(r);
    if (fe_causal_prompt(m, r->ids, np, &logits, &next) != FE_OK)
        fail_msg("prompt: %s", fe_causal_message(m));
    got[0] = next;
    collect c = {got + 1, 0, ng - 1};
    if (ng > 1 && fe_causal_decode(m, ng - 1, on_token, &c) != FE_OK)
        fail_msg("decode: %s", fe_causal_message(m));
    assert_int_equal(c.n, ng - 1);
    /* gen[j] is drawn from position np - 1 + j; compare up to the first undecided one */
    int j = 0;
    while (j < ng && r->pos[np - 1 + j].margin > r->tol->margin_min) {
        if (got[j] != r->ids[np + j])
            fail_msg("%s greedy token %d: ferrum %d, llama.cpp %d (margin %.4g)", name, j, got[j],
                     r->ids[np + j], r->pos[np - 1 + j].margin);
        j++;
    }
    int same = 0;
    while (same < ng && got[same] == r->ids[np + same]) same++;
    print_message("%s greedy: %d of %d tokens compared (margin > %g), ferrum identical to llama.cpp "
                  "for the first %d%s\n", name, j, ng, r->tol->margin_min, same,
                  j < ng ? "" : " (all)");
    if (j < ng)
        print_message("  stopped at token %d: margin %.4g\n", j, r->pos[np - 1 + j].margin);
    return j;
}

/* The decode step's int8 activations (`ferrum generate`'s default on block matrices)
 * against the same model in f32: 48 greedy tokens decoded with int8 GEMVs, their logits
 * compared with the f32 model's teacher-forced over the same tokens. */
typedef struct { int n, cap; int32_t *tok; float *logits; int64_t V; } decoded;

static int keep_decoded(void *user, int32_t tok, const float *logits) {
    decoded *d = user;
    d->tok[d->n] = tok;
    memcpy(d->logits + (int64_t)d->n * d->V, logits, (size_t)d->V * sizeof(float));
    return ++d->n >= d->cap;
}

/* Model m's prompt (the fixture's f32 run's) and G greedy decode steps from it, against the
 * f32 model's teacher-forced logits over the same ids: the statistics, printed as `what`. */
enum { DECODE_G = 48 };
static fe_kl_stats decode_against_f32(fe_causal *m, const char *what) {
    ref_run *r = find_run("f32");
    int np = S.ref.n_prompt;
    int64_t V = S.cfg.vocab;
    int32_t *ids = malloc((size_t)(np + DECODE_G + 1) * sizeof *ids);
    float *got = malloc((size_t)DECODE_G * (size_t)V * sizeof *got);
    float *ref = malloc((size_t)(np + DECODE_G) * (size_t)V * sizeof *ref);
    assert_true(ids && got && ref);
    memcpy(ids, r->ids, (size_t)np * sizeof *ids);
    const float *logits;
    int32_t next;
    if (fe_causal_prompt(m, ids, np, &logits, &next) != FE_OK) fail_msg("%s", fe_causal_message(m));
    ids[np] = next;
    decoded d = {0, DECODE_G, ids + np + 1, got, V};
    if (fe_causal_decode(m, DECODE_G, keep_decoded, &d) != FE_OK) fail_msg("%s", fe_causal_message(m));
    assert_int_equal(d.n, DECODE_G);
    /* got[j] was computed at position np + j (after ids[np + j]) */
    if (fe_causal_teacher_forced(S.m, ids, np + DECODE_G, ref) != FE_OK) fail_msg("%s", fe_causal_message(S.m));
    fe_kl_stats k;
    assert_int_equal(fe_kl_compare(ref + (int64_t)np * V, got, DECODE_G, V, &k), FE_OK);
    print_message("%s against f32 over %d tokens: KL mean %.3g p90 %.3g max %.3g, top-1 "
                  "mismatches %d, max |dlogit| %.3g of spread %.3g\n", what, DECODE_G, k.mean,
                  k.p90, k.max, k.top1_mismatches, k.max_abs_diff, k.spread);
    free(ids), free(got), free(ref);
    return k;
}

static void int8_decode_stays_close_to_f32(void **state) {
    (void)state;
    need_model();
    fe_kl_stats k = decode_against_f32(S.m8, "int8 decode");
    assert_true(k.mean <= 0.01 && k.p90 <= 0.02 && k.max <= 0.1); /* inside the seed's floor */
    assert_true(k.top1_mismatches <= DECODE_G / 8);
}

/* The KV cache in f16 (--cache-type f16): the prompt (its chunk's attention on the
 * row-blocked path) and a greedy decode from it, against the f32 cache's teacher-forced
 * logits over the same ids. Every key and value is rounded to f16 once (a relative 2^-11),
 * so the logits move, but by far less than int8 activations move them; and they must move
 * (a cache type quietly ignored would give the f32 logits bit for bit). */
static void f16_cache_stays_close_to_f32_cache(void **state) {
    (void)state;
    need_model();
    fe_causal *m16 = make_model_kv(&S.w, false, FE_DTYPE_F16);
    fe_kl_stats k = decode_against_f32(m16, "f16 cache");
    fe_causal_destroy(m16);
    assert_true(k.max_abs_diff > 0);
    assert_true(k.mean <= 1e-5 && k.max <= 1e-4); /* measured 2.3e-7, 1.8e-6 */
    assert_int_equal(k.top1_mismatches, 0);
}

static void f32_top1_is_llama_cpp_where_decided(void **state) { (void)state; check_top1("f32"); }
static void q4_1_top1_is_llama_cpp_where_decided(void **state) { (void)state; check_top1("q4_1"); }
static void f32_kl_to_llama_cpp_is_tiny(void **state) { (void)state; check_kl("f32"); }
static void q4_1_kl_to_llama_cpp_is_within_its_rounding(void **state) { (void)state; check_kl("q4_1"); }

static void f32_greedy_continuation_is_llama_cpp_while_decided(void **state) {
    (void)state;
    assert_true(check_greedy("f32") > 0);
}

/* No greedy check for the q4_1 run at its margin: its first token is not decided (llama.cpp
 * prefers "L" to "The" by 0.089 nats), so a greedy comparison would compare nothing; the
 * q4_1 run is checked teacher-forced (top-1 and KL above) and int8 decode against f32 below.
 * The rule for the int8 prefill is checked on its own (next test). */

/* greedy ids after the prompt: ng of them into got, from model m */
static void greedy(fe_causal *m, const ref_run *r, int ng, int32_t *got, const float **first) {
    const float *logits;
    int32_t next;
    if (fe_causal_prompt(m, r->ids, S.ref.n_prompt, &logits, &next) != FE_OK)
        fail_msg("prompt: %s", fe_causal_message(m));
    if (first) *first = logits;
    got[0] = next;
    collect c = {got + 1, 0, ng - 1};
    if (ng > 1 && fe_causal_decode(m, ng - 1, on_token, &c) != FE_OK)
        fail_msg("decode: %s", fe_causal_message(m));
    assert_int_equal(c.n, ng - 1);
}

static int same_prefix(const int32_t *a, const int32_t *b, int n) {
    int i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* Issue 14's rule for the int8 prefill: greedy tokens move away from llama.cpp's own int8 path
 * no more than with the int8 decode alone. The chat answer's first token is a near tie that
 * the rounding decides: llama.cpp's f32 run says "The" (margin 0.082), its Q4_1 x Q8_1 run "L"
 * (margin 0.089). ferrum's f32 model must side with the first (f32 rounding moves a margin by
 * < 1e-4). The default's int8 activations do not decide a tie of 0.09 the same way on every
 * ISA: a change of 1e-6 in attention moves one activation across a rounding step, and the
 * margin with it. Measured: "L" over "The" by 0.35 (avx512, Zen 4), 0.31 (avx2 before the
 * row-blocked causal attention, 1578059), -0.050 (avx2 since, on a Zen 3), 0.185 (scalar).
 * So the default's margin must be llama.cpp's int8 margin within margin8_spread, and the
 * default must follow llama.cpp's int8 greedy run at least as far as a model with the f32
 * prefill and the int8 decode does. */
static const double margin8_spread = 0.5; /* logit: 0.22 and 0.14 are measured above */

/* llama.cpp's logit of a over b at position p of run r (the difference of their logprobs),
 * where both are among the fixture's top k */
static double ref_margin(const ref_run *r, int p, int32_t a, int32_t b) {
    double la = NAN, lb = NAN;
    for (int i = 0; i < S.ref.k; i++) {
        if (r->pos[p].id[i] == a) la = r->pos[p].lp[i];
        if (r->pos[p].id[i] == b) lb = r->pos[p].lp[i];
    }
    if (isnan(la) || isnan(lb))
        fail_msg("the fixture's top %d at %d lacks %d or %d", S.ref.k, p, a, b);
    return la - lb;
}

static void int8_prefill_greedy_follows_llama_cpp_int8(void **state) {
    (void)state;
    need_model();
    ref_run *q = find_run("q4_1"), *f = find_run("f32");
    int np = S.ref.n_prompt, ng = q->n_gen;
    assert_true(ng <= 256);
    int32_t got8[256], got_f32[256], got_mixed[256];
    const float *l;
    greedy(S.m8, q, ng, got8, &l);
    const double margin8 = (double)l[q->ids[np]] - (double)l[f->ids[np]];
    greedy(S.m, f, 1, got_f32, &l);
    const double margin32 = (double)l[q->ids[np]] - (double)l[f->ids[np]];
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 512;
    o.prefill_dot = FE_PREFILL_DOT_F32; /* the int8 decode alone */
    o.temperature = 0;
    fe_causal *mixed = NULL;
    fe_error err = {0};
    if (fe_causal_create(S.dev, &S.w, &o, &mixed, &err) != FE_OK)
        fail_msg("fe_causal_create: %s", err.message);
    greedy(mixed, q, ng, got_mixed, NULL);
    fe_causal_destroy(mixed);
    const int with8 = same_prefix(got8, q->ids + np, ng);
    const int with_mixed = same_prefix(got_mixed, q->ids + np, ng);
    const double ref8 = ref_margin(q, np - 1, q->ids[np], f->ids[np]);
    print_message("first token: llama.cpp q4_1 %d, f32 %d; ferrum int8 %d (logit margin %.3f, "
                  "llama.cpp's %.3f), f32 %d (%.3f); greedy same as llama.cpp's q4_1 run for %d "
                  "tokens with the default prefill, %d with the f32 prefill and int8 decode\n",
                  q->ids[np], f->ids[np], got8[0], margin8, ref8, got_f32[0], margin32, with8,
                  with_mixed);
    assert_int_not_equal(q->ids[np], f->ids[np]); /* the fixture's near tie */
    assert_int_equal(got_f32[0], f->ids[np]);
    assert_true(fabs(margin8 - ref8) <= margin8_spread);
    assert_true(with8 >= with_mixed);
}
/* The final norm scaled by 1.05 (logits about 5% sharper): a small, real error the f32 run's
 * KL check must see, by a wide margin. */
static void kl_check_fails_a_slightly_wrong_model(void **state) {
    (void)state;
    need_model();
    ref_run *r = find_run("f32");
    int64_t d = S.cfg.hidden;
    float *norm = malloc((size_t)d * sizeof *norm);
    const float *src = S.w.norm.data;
    for (int64_t i = 0; i < d; i++) norm[i] = src[i] * 1.05f;
    fe_llama_weights wrong = S.w; /* shares the layers; the copy is never freed */
    wrong.norm = fe_tensor_contiguous(norm, FE_DTYPE_F32, 1, &d);
    fe_causal *m = make_model(&wrong, false);
    float *tf = malloc((size_t)r->n_pos * (size_t)S.cfg.vocab * sizeof *tf);
    if (fe_causal_teacher_forced(m, r->ids, r->n_pos, tf) != FE_OK)
        fail_msg("teacher-forced: %s", fe_causal_message(m));
    kl_summary s = summarise(r, tf);
    print_message("final norm x1.05 against f32: KL estimate mean %.3g p90 %.3g max %.3g (bound %g)\n",
                  s.mean, s.p90, s.max, r->tol->kl_mean_max);
    fe_causal_destroy(m);
    free(tf);
    free(norm);
    assert_true(s.mean > WRONG_FACTOR * r->tol->kl_mean_max);
}

static int setup(void **state) {
    (void)state;
    char why[2048];
    if (!load_reference(&S.ref, why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        return -1;
    }
    fe_device_options o = fe_device_options_default();
    o.pin = false;
    return fe_device_create(&o, &S.dev, NULL) == FE_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < S.ref.n_runs; i++) {
        free(S.ref.runs[i].tf);
        free(S.ref.runs[i].ids);
        free(S.ref.runs[i].pos);
    }
    free(S.ref.prompt_ids);
    fe_causal_destroy(S.m);
    fe_causal_destroy(S.m8);
    if (S.have_weights) fe_llama_weights_free(&S.w);
    fe_gguf_close(S.g);
    fe_device_destroy(S.dev);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixture_is_for_this_prompt),
        cmocka_unit_test(tokenizer_gives_llama_cpp_prompt_ids),
        cmocka_unit_test(f32_top1_is_llama_cpp_where_decided),
        cmocka_unit_test(f32_kl_to_llama_cpp_is_tiny),
        cmocka_unit_test(f32_greedy_continuation_is_llama_cpp_while_decided),
        cmocka_unit_test(q4_1_top1_is_llama_cpp_where_decided),
        cmocka_unit_test(q4_1_kl_to_llama_cpp_is_within_its_rounding),
        cmocka_unit_test(kl_check_fails_a_slightly_wrong_model),
        cmocka_unit_test(int8_decode_stays_close_to_f32),
        cmocka_unit_test(f16_cache_stays_close_to_f32_cache),
        cmocka_unit_test(int8_prefill_greedy_follows_llama_cpp_int8),
    };
    return cmocka_run_group_tests_name("smollm2", tests, setup, teardown);
}
