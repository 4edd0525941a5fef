/* bench/bench_batch_decode.c: the batched decode step (lm/model/batch.c, what `ferrum serve
 * --batch` calls once per token for every slot generating) at B = 1, 2, 4, 8 and 12 rows,
 * with GEMV's batch passes (batches_per_pass resolved: each weight block decoded once for up
 * to 8 rows) against batch after batch (batches_per_pass = 1, through a profile), the two
 * alternating step by step in one run so the host's drifting load hits both alike. Printed
 * per B: the median (min-max) ms a step, ms a row, rows a second (the aggregate decode
 * tokens/s the step allows), the ratio of the medians and the steps (barriers) a decode call
 * runs (the compiled version's runlist). With --cpu-time the figures are this
 * process's CPU seconds a step divided by the workers (less sensitive to the other jobs on a
 * shared host; the pool's waiting counts too). The device line and the load are printed.
 *
 * --against JSON replaces the baseline's GEMV tunables (default {"batches_per_pass": 1}), e.g.
 * --against '{"panel": 0}': the row kernels and batch passes against the panel design.
 *
 * Usage: bench_batch_decode [MODEL] [--random-weights SEED] [--steps N] [--cpu-time] [--against JSON]
 *   MODEL: a GGUF or checkpoint, or with --random-weights a preset (llama-3.2-1b); default the
 *   cached SmolLM2 (scripts/fetch-model), so that `make bench` runs it (skipped, said so, when
 *   the cache lacks it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ferrum/lm.h"
#include "ferrum/ops.h"
#include "lm/api/api.h"
#include "lm/model/batch.h"
#include "support/bench_device.h"
#include "support/peak.h"

enum { MAX_STEPS = 64, CTX = 512 };
#define DEFAULT_MODEL "SmolLM2-135M-Instruct.Q4_1.gguf"

static const int levels[] = {1, 2, 4, 8, 12};

static bool cpu_time;
static double clock_s(void) { return cpu_time ? fe_peak_clock_s() : (double)fe_time_ns() * 1e-9; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(FILE *f, int code) {
    fprintf(f, "usage: bench_batch_decode [MODEL] [--random-weights SEED] [--steps N] [--cpu-time] [--against JSON]\n"
               "  MODEL: default the cached SmolLM2-135M-Instruct.Q4_1.gguf (scripts/fetch-model)\n"
               "  times the batched decode step at 1, 2, 4, 8 and 12 rows, GEMV batch passes\n"
               "  against batch after batch (batches_per_pass 1), alternating; --steps: steps\n"
               "  a level and design (1..%d, default 12); --cpu-time: process CPU time per\n"
               "  worker instead of the wall clock\n", MAX_STEPS);
    return code;
}

/* a batch over the model's weights with `slots` slots, each prefilled with the same prompt */
static fe_batch *make_batch(fe_lm_model *m, const fe_profile *prof, const int32_t *ids, int64_t n) {
    fe_batch_options o = {.slots = FE_BATCH_MAX_ROWS, .max_seq_len = CTX, .chunk = 64,
                          .profile = prof};
    fe_batch *b = NULL;
    fe_error err = {0};
    if (fe_batch_create(m->dev, &m->w, &o, &b, &err) != FE_OK) {
        fprintf(stderr, "bench_batch_decode: %s\n", err.message);
        return NULL;
    }
    for (int s = 0; s < FE_BATCH_MAX_ROWS; s++) {
        bool done = false;
        if (fe_batch_prefill(b, s, ids, n, 0, &done, NULL) != FE_OK || !done) {
            fprintf(stderr, "bench_batch_decode: prefill: %s\n", fe_batch_message(b));
            fe_batch_destroy(b);
            return NULL;
        }
    }
    return b;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int steps = 12;
    const char *against = "{\"batches_per_pass\": 1}";
    fe_lm_open_options oo = fe_lm_open_options_default();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout, 0);
        if (!strcmp(argv[i], "--cpu-time")) cpu_time = true;
        else if (!strcmp(argv[i], "--against") && i + 1 < argc) against = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = atoi(argv[++i]);
            if (steps < 1 || steps > MAX_STEPS) {
                fprintf(stderr, "bench_batch_decode: --steps %s is outside 1..%d\n", argv[i], MAX_STEPS);
                return 2;
            }
        } else if (!strcmp(argv[i], "--random-weights") && i + 1 < argc) {
            oo.random_weights = true;
            oo.seed = strtoull(argv[++i], NULL, 10);
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "bench_batch_decode: unknown option %s\n", argv[i]);
            return usage(stderr, 2);
        } else path = argv[i];
    }
    char cached[1024];
    if (!path) { /* the default model, where scripts/fetch-model puts it */
        const char *home = getenv("FERRUM_CACHE_HOME");
        if (home) snprintf(cached, sizeof cached, "%s/models/%s", home, DEFAULT_MODEL);
        else snprintf(cached, sizeof cached, "%s/.cache/ferrum/models/%s",
                      getenv("HOME") ? getenv("HOME") : ".", DEFAULT_MODEL);
        if (oo.random_weights || access(cached, R_OK) != 0) {
            fprintf(stderr, "bench_batch_decode: no MODEL given and %s\n",
                    oo.random_weights ? "--random-weights needs a preset (llama-3.2-1b)"
                                      : "the default model is not in the cache "
                                        "(scripts/fetch-model puts it there); skipped");
            return oo.random_weights ? usage(stderr, 2) : 0;
        }
        path = cached;
    }
    fe_peak_cpu_time(cpu_time);
    fe_lm_model *m = NULL;
    fe_error err = {0};
    if (fe_lm_model_open(path, &oo, &m, &err) != FE_OK) {
        fprintf(stderr, "bench_batch_decode: %s\n", err.message);
        return 1;
    }
    char desc[512];
    fe_device_describe(m->dev, desc, sizeof desc);
    printf("machine: %s\nmodel: %s%s\n", desc, path, oo.random_weights ? " (random weights)" : "");
    bench_print_load("start");
    /* batch after batch: every GEMV at batches_per_pass 1 */
    fe_profile *one = NULL;
    char text[512];
    snprintf(text, sizeof text, "{\"entries\": [{\"op\": \"GEMV\", \"tunables\": %s}]}", against);
    int status = 0;
    const int32_t ids[8] = {1, 504, 3458, 314, 253, 655, 28, 30};
    fe_batch *b[2] = {NULL, NULL};
    if (fe_profile_parse(text, strlen(text), &one, &err) != FE_OK) {
        fprintf(stderr, "bench_batch_decode: %s\n", err.message);
        status = 1;
        goto done;
    }
    b[0] = make_batch(m, one, ids, 8);
    b[1] = make_batch(m, NULL, ids, 8);
    if (!b[0] || !b[1]) {
        status = 1;
        goto done;
    }
    printf("clock: %s; ms a decode step, median (min-max) of %d alternated steps a design\n",
           cpu_time ? "process CPU time / workers" : "wall", steps);
    const int workers = fe_device_get_info(m->dev)->n_workers;
    int slots[FE_BATCH_MAX_ROWS];
    int32_t toks[FE_BATCH_MAX_ROWS];
    for (int r = 0; r < FE_BATCH_MAX_ROWS; r++) slots[r] = r, toks[r] = ids[r % 8];
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        const int B = levels[li];
        double t[2][MAX_STEPS];
        const float *logits;
        for (int i = 0; i < 2; i++) /* warm up: the version for B compiled and paged in */
            if (fe_batch_decode(b[i], slots, toks, B, &logits) != FE_OK) status = 1;
        for (int s = 0; s < steps && !status; s++)
            for (int i = 0; i < 2; i++) {
                const double t0 = clock_s();
                if (fe_batch_decode(b[i], slots, toks, B, &logits) != FE_OK) {
                    fprintf(stderr, "bench_batch_decode: %s\n", fe_batch_message(b[i]));
                    status = 1;
                }
                t[i][s] = (clock_s() - t0) * 1e3 / (cpu_time ? workers : 1);
            }
        if (status) break;
        for (int i = 0; i < 2; i++) qsort(t[i], (size_t)steps, sizeof(double), cmp_double);
        const double m1 = t[0][steps / 2], mp = t[1][steps / 2];
        const int n_steps = fe_graph_get_stats(fe_batch_graph(b[1])).last_steps;
        printf("  B=%-2d  %4d steps  pass 1: %7.2f ms (%.2f-%.2f) %6.2f ms/row %6.1f rows/s   "
               "passes: %7.2f ms (%.2f-%.2f) %6.2f ms/row %6.1f rows/s   %.2fx\n",
               B, n_steps, m1, t[0][0], t[0][steps - 1], m1 / B, 1e3 * B / m1, mp, t[1][0],
               t[1][steps - 1], mp / B, 1e3 * B / mp, m1 / mp);
        fflush(stdout);
    }
    bench_print_load("end");
done:
    fe_batch_destroy(b[0]);
    fe_batch_destroy(b[1]);
    fe_profile_destroy(one);
    fe_lm_model_close(m);
    return status;
}
