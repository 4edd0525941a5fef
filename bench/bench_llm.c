/* bench/bench_llm.c: the causal LM end to end, beside this machine's limits, in one run.
 * For SmolLM2-135M and Gemma 3 270M (the real Q4_1 and Q4_K_M GGUFs, when the model cache
 * has them) and the Llama 3.2 1B shape (BF16, random weights): prefill tokens/s at 128 and 512 prompt tokens, decode
 * tokens/s over 64 tokens, and the decode ceiling: the measured read bandwidth (best of 1/2/4/8
 * streams per worker) over the bytes of weights read per token, with the ratio to it; the
 * prefill's GFLOP/s against the measured f32 FMA peak, bf16 dot peak and int8 peak, and
 * the AMX-BF16 peak where the CPU has the tiles (support/peak.c).
 * Usage: bench_llm [--cpu-time] [smollm2|gemma3|llama|all] (default all). Prints the machine first.
 * --cpu-time: the peaks and the prefill timed by the process's CPU time (what the workers did
 * while they ran, times the workers) instead of the wall clock, for a host shared with other
 * jobs (steadiest at FERRUM_WORKERS=1); decode stays on the wall clock, judged against the
 * read bandwidth measured beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/membw.h"
#include "lm/model/dots.h"
#include "support/peak.h"
#include "lm/model/causal.h"
#include "lm/model/checkpoint.h"
#include "support/bench_device.h"

static double read_gbs, fma_peak, dot_peak; /* GB/s; GFLOP/s of f32 FMAs and of bf16 dots */
static double amx_peak;                      /* GFLOP/s of AMX-BF16 tiles (0: none here) */
static double i8_peak;                       /* G int8 ops/s (vpdpbusd, or vpmaddubsw chains) */
static float *roof_buf;                      /* the read roof's 256 MiB, read again beside each decode */
static bool cpu_time;                        /* --cpu-time */
enum { ROOF_FLOATS = 64 << 20 };

/* the read bandwidth now: the best of 5 passes with 2 and with 4 streams a worker (the best
 * stream counts at both host levels in bench_memory), ~50 ms */
static double roof_now(fe_device *dev) {
    double best = 0;
    for (int k = 2; k <= 4; k += 2) {
        fe_membw_stats st;
        fe_membw_read(dev, roof_buf, ROOF_FLOATS, k, 5, &st);
        if (st.best_gbs > best) best = st.best_gbs;
    }
    return best;
}

/* FLOPs of a prompt of n tokens: the layer matrices over every row, attention over the
 * causal triangle (QK^T and PV), the head over the last row */
static double prompt_flops(const fe_llama_weights *w, int64_t n) {
    const fe_lm_config *c = &w->cfg;
    double per_row = 0;
    const fe_llama_layer *L = &w->layers[0];
    const fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) per_row += 2.0 * (double)fe_tensor_numel(ms[i]);
    double attn = 4.0 * (double)c->n_heads * (double)c->head_dim * (double)n * (double)(n + 1) / 2;
    return (double)c->n_layers * (per_row * (double)n + attn) + 2.0 * (double)fe_tensor_numel(&w->lm_head);
}

static size_t tbytes(const fe_tensor *t) { return fe_dtype_bytes(t->dtype, fe_tensor_numel(t)); }

/* bytes a decode step reads: every tensor once but the embedding (one row of it is noise),
 * which is the head itself when tied */
static double bytes_per_token(const fe_llama_weights *w) {
    double n = (double)fe_llama_weights_bytes(w);
    if (!w->cfg.tied_embeddings) n -= (double)tbytes(&w->embed);
    return n;
}

static int count_tokens(void *user, int32_t tok, const float *logits) {
    (void)tok, (void)logits;
    (*(int *)user)++;
    return 0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_model(fe_device *dev, const char *name, const fe_llama_weights *w) {
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = 1024;
    fe_causal *m = NULL;
    fe_error err = {0};
    if (fe_causal_create(dev, w, &o, &m, &err) != FE_OK) {
        printf("%s: %s\n", name, err.message);
        return;
    }
    int32_t *toks = malloc(512 * sizeof *toks);
    for (int i = 0; i < 512; i++) toks[i] = (int32_t)((i * 7919 + 17) % w->cfg.vocab);
    int lens[2] = {128, 512};
    printf("%s: %.2f GB of weights read per token\n", name, bytes_per_token(w) / 1e9);
    for (int k = 0; k < 2; k++) {
        double t[3];
        for (int r = 0; r < 3; r++) {
            toks[0] = (int32_t)((r + 1) * 31 % w->cfg.vocab); /* a new sequence every run */
            const double t0 = fe_peak_clock_s();
            if (fe_causal_prompt(m, toks, lens[k], NULL, NULL) != FE_OK) {
                printf("  prefill: %s\n", fe_causal_message(m));
                goto out;
            }
            /* CPU time: all workers' seconds together, so the pool's time is over the workers */
            t[r] = (fe_peak_clock_s() - t0) /
                   (cpu_time ? fe_device_get_info(dev)->n_workers : 1);
        }
        qsort(t, 3, sizeof t[0], cmp_d);
        double gf = prompt_flops(w, lens[k]) / t[1] / 1e9;
        printf("  prefill %3d tokens: %8.1f tok/s%s (median of 3; spread %.1f..%.1f), %.0f GFLOP/s = "
               "%.0f%% of the FMA peak", lens[k], lens[k] / t[1], cpu_time ? " (CPU time)" : "",
               lens[k] / t[2], lens[k] / t[0], gf,
               100 * gf / fma_peak);
        if (dot_peak > 0) printf(", %.0f%% of the bf16 dot peak", 100 * gf / dot_peak);
        if (amx_peak > 0) printf(", %.0f%% of the AMX-BF16 peak", 100 * gf / amx_peak);
        if (i8_peak > 0) printf(", %.0f%% of the int8 peak", 100 * gf / i8_peak);
        printf("\n");
    }
    /* the host's bandwidth drifts between levels within seconds: each decode run is judged
     * against a read-roof run made just before it (paired), as bench_gemv does */
    double d[3], roof[3], pct[3], bpt = bytes_per_token(w);
    for (int r = 0; r < 3; r++) {
        toks[0] = (int32_t)((r + 7) * 13 % w->cfg.vocab);
        if (fe_causal_prompt(m, toks, 32, NULL, NULL) != FE_OK) goto out;
        roof[r] = roof_now(dev);
        int made = 0;
        uint64_t t0 = fe_time_ns();
        if (fe_causal_decode(m, 64, count_tokens, &made) != FE_OK) {
            printf("  decode: %s\n", fe_causal_message(m));
            goto out;
        }
        d[r] = made / ((double)(fe_time_ns() - t0) / 1e9);
        pct[r] = 100 * d[r] * bpt / (roof[r] * 1e9);
    }
    qsort(d, 3, sizeof d[0], cmp_d);
    qsort(roof, 3, sizeof roof[0], cmp_d);
    qsort(pct, 3, sizeof pct[0], cmp_d);
    double ceiling = roof[1] * 1e9 / bpt;
    printf("  decode 64 tokens:   %8.2f tok/s (median of 3; spread %.2f..%.2f)\n", d[1], d[0], d[2]);
    printf("  decode ceiling:     %8.2f tok/s (read %.1f GB/s beside the runs, median; %.2f GB a "
           "token): %.0f%% of it (median of the paired runs; spread %.0f..%.0f%%)\n",
           ceiling, roof[1], bpt / 1e9, pct[1], pct[0], pct[2]);
out:
    free(toks);
    fe_causal_destroy(m);
}

/* a GGUF from the model cache (FERRUM_CACHE_HOME/models, else ~/.cache/ferrum/models) */
static void run_cached(fe_device *dev, const char *file, const char *title, const char *fetch) {
    char path[512];
    const char *home = getenv("FERRUM_CACHE_HOME");
    if (home) snprintf(path, sizeof path, "%s/models/%s", home, file);
    else snprintf(path, sizeof path, "%s/.cache/ferrum/models/%s", getenv("HOME") ? getenv("HOME") : ".", file);
    fe_gguf *g = NULL;
    fe_safetensors *st = NULL;
    fe_lm_config cfg;
    fe_llama_weights w;
    fe_error err = {0};
    if (fe_checkpoint_open(path, false, &g, &st, &cfg, &w, &err) == FE_OK) {
        run_model(dev, title, &w);
        fe_llama_weights_free(&w);
        fe_gguf_close(g);
        fe_safetensors_close(st);
    } else {
        printf("%s: %s (%s)\n", file, err.message, fetch);
    }
}

int main(int argc, char **argv) {
    const char *which = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: bench_llm [--cpu-time] [smollm2|gemma3|llama|all]\n"
                   "  smollm2|gemma3|llama|all  the models (default all)\n"
                   "  --cpu-time         peaks and prefill by the process's CPU time, for a host\n"
                   "                     shared with other jobs (best with FERRUM_WORKERS=1)\n");
            return 0;
        } else if (!strcmp(argv[i], "--cpu-time")) {
            cpu_time = true;
        } else if (!strcmp(argv[i], "all") || !strcmp(argv[i], "smollm2") ||
                   !strcmp(argv[i], "gemma3") || !strcmp(argv[i], "llama")) {
            which = argv[i];
        } else {
            fprintf(stderr, "bench_llm: unknown argument '%s': give smollm2, gemma3, llama or all, and "
                    "optionally --cpu-time (--help)\n", argv[i]);
            return 2;
        }
    }
    fe_peak_cpu_time(cpu_time);
    fe_device *dev = bench_device_open("bench_llm");
    if (!dev) return 1;
    fe_error err = {0};
    fe_membw_report rep;
    fe_membw_options mo = {.read_bytes = (size_t)256 << 20, .triad_bytes = (size_t)16 << 20, .repeats = 8};
    if (fe_membw_measure(dev, &mo, &rep) != FE_OK) return 1;
    read_gbs = rep.read_gbs;
    roof_buf = malloc((size_t)ROOF_FLOATS * sizeof *roof_buf);
    if (!roof_buf) return 1;
    for (int64_t i = 0; i < ROOF_FLOATS; i++) roof_buf[i] = 1.0f;
    printf("read bandwidth (best of 1/2/4/8 streams per worker, %d workers): %.1f GB/s\n",
           rep.n_workers, read_gbs);
    double med;
    int lanes;
    fe_flops_peak(dev, false, 5, &fma_peak, &med, &lanes);
    fe_flops_peak(dev, true, 5, &dot_peak, &med, &lanes);
    bool vnni;
    fe_int8_peak(dev, 5, &i8_peak, &med, &lanes, &vnni);
    fe_amx_peak(dev, 5, &amx_peak, &med);
    if (amx_peak > 0)
        printf("AMX-BF16 peak (TDPBF16PS tiles, all workers): %.0f GFLOP/s (the prompts' GEMMs "
               "run on the tiles here)\n", amx_peak);
    printf("FMA peak (f32, all workers): %.0f GFLOP/s; bf16 dot peak (vdpbf16ps): %.0f GFLOP/s%s; "
           "int8 peak (%s): %.0f G ops/s\n"
           "(the Llama prompt runs bf16 dot products, ferrum generate's default on bf16 matrices; "
           "SmolLM2's q4_1 prompt %s, its default on block matrices%s)\n\n", fma_peak,
           dot_peak, dot_peak > 0 ? "" : " (none here)", vnni ? "vpdpbusd" : "vpmaddubsw",
           i8_peak, fe_prefill_bf16_blocks(dev) ? "bf16 ones too" : "int8 ones",
           fe_prefill_bf16_blocks(dev) ? " where the CPU has AMX-BF16" : "");
    if (!strcmp(which, "all") || !strcmp(which, "smollm2"))
        run_cached(dev, "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct Q4_1 (real weights)",
                   "scripts/setup fetches it");
    if (!strcmp(which, "all") || !strcmp(which, "gemma3"))
        run_cached(dev, "gemma-3-270m-q4_k_m.gguf",
                   "\nGemma 3 270M Q4_K_M (real weights: q5_0, q4_k, q6_k matrices, q8_0 head)",
                   "scripts/fetch-model gemma-3-270m-q4_k_m fetches it");
    if (!strcmp(which, "all") || !strcmp(which, "llama")) {
        fe_lm_config cfg;
        fe_llama_weights w;
        if (fe_lm_config_preset("llama-3.2-1b", &cfg, &err) != FE_OK ||
            fe_llama_weights_random(&cfg, FE_DTYPE_BF16, 1, &w, &err) != FE_OK) {
            printf("llama-3.2-1b: %s\n", err.message);
        } else {
            run_model(dev, "\nLlama 3.2 1B shape, BF16 random weights", &w);
            fe_llama_weights_free(&w);
        }
    }
    fe_device_destroy(dev);
    return 0;
}
