/* bench/bench_embedgemma.c: the EmbeddingGemma encoder graph at the real 300M shape (preset
 * embeddinggemma-300m, random weights: no real checkpoint is on this machine's registries),
 * f32, the graph `ferrum embed` runs: wall and process CPU time a call for batch 1 and batch 8
 * of 128-token texts (ids spread over the vocabulary), medians of a few calls after one warm-up,
 * with the machine line and the load. No peer: sentence-transformers needs the real weights.
 * Usage: bench_embedgemma (threads: FERRUM_WORKERS, default 2). Needs ~1.3 GB of memory. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lm/model/embedgemma.h"
#include "lm/model/gemma3_encoder.h"
#include "support/bench_device.h"

enum { TOKENS = 128, MAX_REPS = 5 };

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one batch size: prints wall and CPU medians; false on an error (printed) */
static bool run(fe_device *dev, const fe_embedgemma *m, int batch, int reps) {
    fe_encoder_options o = fe_encoder_options_default();
    o.max_tokens = TOKENS, o.slots = batch;
    fe_gemma3_encoder *e = NULL;
    fe_error err = {0};
    if (fe_gemma3_encoder_create(dev, m, &o, &e, &err) != FE_OK) {
        fprintf(stderr, "bench_embedgemma: %s\n", err.message);
        return false;
    }
    int32_t *ids = malloc((size_t)batch * TOKENS * sizeof *ids);
    const int32_t *rows[8];
    int64_t lens[8];
    for (int s = 0; s < batch; s++) {
        for (int i = 0; i < TOKENS; i++)
            ids[s * TOKENS + i] = (int32_t)(((int64_t)i * 7919 + s * 104729) % m->cfg.vocab);
        rows[s] = ids + s * TOKENS, lens[s] = TOKENS;
    }
    const float *h;
    double wall[MAX_REPS], cpu[MAX_REPS];
    bool ok = fe_gemma3_encoder_forward(e, rows, lens, batch, &h) == FE_OK; /* warm up */
    for (int r = 0; ok && r < reps; r++) {
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        ok = fe_gemma3_encoder_forward(e, rows, lens, batch, &h) == FE_OK;
        wall[r] = clock_s(CLOCK_MONOTONIC) - t0;
        cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    if (!ok) fprintf(stderr, "bench_embedgemma: %s\n", fe_gemma3_encoder_message(e));
    else {
        qsort(wall, (size_t)reps, sizeof *wall, cmp);
        qsort(cpu, (size_t)reps, sizeof *cpu, cmp);
        printf("batch %d x %d tokens: %.0f ms wall a call (median of %d, %.0f..%.0f), %.0f ms CPU; "
               "%.2f sentences/s wall, %.2f per CPU-second\n", batch, TOKENS, 1e3 * wall[reps / 2],
               reps, 1e3 * wall[0], 1e3 * wall[reps - 1], 1e3 * cpu[reps / 2],
               batch / wall[reps / 2], batch / cpu[reps / 2]);
    }
    free(ids);
    fe_gemma3_encoder_destroy(e);
    return ok;
}

int main(void) {
    if (!getenv("FERRUM_WORKERS")) setenv("FERRUM_WORKERS", "2", 1);
    fe_device *dev = bench_device_open("bench_embedgemma");
    if (!dev) return 1;
    fe_lm_config c;
    int64_t window, mid;
    fe_embedgemma m;
    fe_error err = {0};
    if (fe_embedgemma_preset("embeddinggemma-300m", &c, &window, &mid, &err) != FE_OK ||
        fe_embedgemma_random(&c, window, mid, 1, &m, &err) != FE_OK) {
        fprintf(stderr, "bench_embedgemma: %s\n", err.message);
        return 1;
    }
    printf("embeddinggemma-300m shape (random weights), f32, texts of %d tokens\n", TOKENS);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int status = run(dev, &m, 1, 5) && run(dev, &m, 8, 3) ? 0 : 1;
    bench_print_load("end");
    fe_embedgemma_free(&m);
    fe_device_destroy(dev);
    return status;
}
