/* bench/bench_embed.c: all-MiniLM-L6-v2 sentences/s, ferrum against sentence-transformers
 * (PyTorch CPU) on the same texts with the same threads, in one paired run: for batch 1 and
 * batch 32, texts of 16 and of 128 tokens, rounds alternate ferrum (in process; f32 dot
 * products, then bf16 ones) and the peer (bench/peer_st.py, a fresh Python per round that
 * times only its encode calls); the medians, their spread and the ratio of medians are
 * printed beside the machine line and the load. Each side's process CPU time per call is
 * printed too: on a shared machine wall time counts the time other processes take the cores,
 * CPU time only the work (and the spinning) each side does.
 * Usage: bench_embed [MODEL_DIR] (default: the folder scripts/fetch-model makes). The peer's
 * Python is $FERRUM_ST_PYTHON, else /work/venv-st/bin/python (a venv with torch and
 * sentence-transformers from PyPI); without it only ferrum's figures are printed.
 * Threads: FERRUM_WORKERS (default 2) for both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ferrum/lm.h"
#include "support/bench_device.h"

/* rounds of the pair, and calls timed a round (fewer for the batch of 32: ~1 s a call here) */
enum { ROUNDS = 3, MAX_REPS = 5 };

static int reps_for(int batch, int tokens) { return batch * tokens >= 2048 ? 2 : MAX_REPS; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ferrum: the median seconds of reps_for calls embedding the batch, and into *cpu the
 * median process CPU seconds of one */
static double ferrum_round(fe_lm_encoder *e, const char *const *texts, int batch, int tokens,
                           float *out, double *cpu) {
    double t[MAX_REPS], c[MAX_REPS];
    const int reps = reps_for(batch, tokens);
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu_now();
        if (fe_lm_embed(e, texts, (size_t)batch, NULL, out, NULL, NULL) != FE_OK) {
            fprintf(stderr, "bench_embed: %s\n", fe_lm_encoder_message(e));
            exit(1);
        }
        t[r] = now() - t0;
        c[r] = cpu_now() - c0;
    }
    *cpu = median(c, reps);
    return median(t, reps);
}

/* the peer: its median seconds for one call, or -1 when it cannot run; *cpu its median
 * process CPU seconds of one */
static double peer_round(const char *python, const char *model, int batch, int tokens,
                         int threads, double *cpu) {
    char cmd[4096], line[512];
    snprintf(cmd, sizeof cmd, "'%s' bench/peer_st.py '%s' %d %d %d %d 2>/dev/null", python, model,
             batch, tokens, threads, reps_for(batch, tokens));
    FILE *p = popen(cmd, "r");
    double med = -1;
    while (p && fgets(line, sizeof line, p)) {
        const char *m = strstr(line, "median_s="), *c = strstr(line, "cpu_s=");
        if (strncmp(line, "peer_st ", 8) == 0 && m) med = atof(m + 9);
        if (strncmp(line, "peer_st ", 8) == 0 && c) *cpu = atof(c + 6);
    }
    if (p && pclose(p) != 0) med = -1;
    return med;
}

int main(int argc, char **argv) {
    char model[1024];
    const char *home = getenv("HOME"), *cache = getenv("FERRUM_CACHE_HOME");
    if (argc > 1) snprintf(model, sizeof model, "%s", argv[1]);
    else if (cache && *cache) snprintf(model, sizeof model, "%s/models/all-MiniLM-L6-v2", cache);
    else snprintf(model, sizeof model, "%s/.cache/ferrum/models/all-MiniLM-L6-v2", home ? home : "");
    const char *workers = getenv("FERRUM_WORKERS");
    if (!workers) setenv("FERRUM_WORKERS", "2", 1);
    int threads = atoi(getenv("FERRUM_WORKERS"));
    fe_device *dev = bench_device_open("bench_embed");
    if (!dev) return 1;
    const char *python = getenv("FERRUM_ST_PYTHON");
    if (!python) python = "/work/venv-st/bin/python";
    bool peer = access(python, X_OK) == 0;
    printf("model %s, texts of 16 and 128 tokens, %d threads for both; peer %s\n", model, threads,
           peer ? python : "(none: set FERRUM_ST_PYTHON to a Python with sentence-transformers)");
    printf("rough numbers: this machine is shared, so rounds alternate and the medians are compared\n");
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it comes, also into a file */
    int status = 0;
    const int batches[2] = {1, 32}, lengths[2] = {16, 128};
    for (int bi = 0; bi < 4; bi++) {
        const int batch = batches[bi / 2], tokens = lengths[bi % 2];
        fe_lm_encoder *e[2] = {NULL, NULL}; /* f32, bf16 dot products */
        for (int d = 0; d < 2; d++) {
            fe_lm_encoder_options o = fe_lm_encoder_options_default();
            o.batch = batch, o.max_tokens = tokens, o.device = dev;
            o.dot = d ? FE_LM_ENCODER_DOT_BF16 : FE_LM_ENCODER_DOT_F32;
            fe_error err = {0};
            if (fe_lm_encoder_open(model, &o, &e[d], &err) != FE_OK) {
                fprintf(stderr, "bench_embed: %s (scripts/fetch-model fetches the model)\n", err.message);
                return 1;
            }
        }
        char **texts = malloc((size_t)batch * sizeof *texts);
        for (int i = 0; i < batch; i++) {
            texts[i] = malloc(2048);
            size_t k = 0;
            for (int r = 0; r < 20; r++)
                k += (size_t)snprintf(texts[i] + k, 2048 - k, "The quick brown fox %d jumps over the lazy dog. ", i);
            int32_t *ids;
            size_t n;
            if (fe_lm_encoder_tokenize(e[0], texts[i], NULL, &ids, &n) != FE_OK || n != (size_t)tokens) {
                fprintf(stderr, "bench_embed: text %d is %zu tokens, not %d\n", i, n, tokens);
                return 1;
            }
            fe_lm_free(ids);
        }
        float *out = malloc((size_t)batch * 384 * sizeof *out);
        double fc[2][ROUNDS], pc[ROUNDS], unused;
        for (int d = 0; d < 2; d++)
            ferrum_round(e[d], (const char *const *)texts, batch, tokens, out, &unused); /* warm up */
        double f[2][ROUNDS], p[ROUNDS], ratio[2][ROUNDS], cpu_ratio[2][ROUNDS];
        int n_peer = 0;
        for (int r = 0; r < ROUNDS; r++) {
            for (int d = 0; d < 2; d++)
                f[d][r] = ferrum_round(e[d], (const char *const *)texts, batch, tokens, out, &fc[d][r]);
            double qc = -1, q = peer ? peer_round(python, model, batch, tokens, threads, &qc) : -1;
            if (q > 0) {
                p[n_peer] = q, pc[n_peer] = qc;
                for (int d = 0; d < 2; d++)
                    ratio[d][n_peer] = q / f[d][r], cpu_ratio[d][n_peer] = qc / fc[d][r];
                n_peer++;
            }
        }
        double pm = n_peer ? median(p, n_peer) : 0;
        if (n_peer)
            printf("batch %2d x %3d tokens: sentence-transformers %7.1f sentences/s (median of %d "
                   "rounds, %.1f..%.1f), %.1f ms CPU a call\n", batch, tokens, batch / pm, n_peer,
                   batch / p[n_peer - 1], batch / p[0], 1e3 * median(pc, n_peer));
        for (int d = 0; d < 2; d++) {
            double fm = median(f[d], ROUNDS);
            printf("batch %2d x %3d tokens: ferrum %-4s %7.1f sentences/s (median of %d rounds, "
                   "%.1f..%.1f), %.1f ms CPU a call", batch, tokens, d ? "bf16" : "f32", batch / fm,
                   ROUNDS, batch / f[d][ROUNDS - 1], batch / f[d][0], 1e3 * median(fc[d], ROUNDS));
            if (n_peer) {
                double rm = median(ratio[d], n_peer), cm = median(cpu_ratio[d], n_peer);
                printf("; ferrum/peer %.2fx wall, %.2fx CPU (paired rounds' medians; %s at 1.5x)",
                       rm, cm, rm >= 1.5 ? "PASS" : "BELOW");
            }
            printf("\n");
        }
        for (int i = 0; i < batch; i++) free(texts[i]);
        free(texts);
        free(out);
        fe_lm_encoder_close(e[0]);
        fe_lm_encoder_close(e[1]);
    }
    bench_print_load("end");
    fe_device_destroy(dev);
    return status;
}
