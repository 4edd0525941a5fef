/* apps/study/roofline.c: the roofline placement. Reads the ceilings measured in this run
 * (roofline/results.csv: compute and bandwidth, all workers and one; the roof is each one's
 * p90, the fast end), the block study's best
 * settings (each kernel: its cost model's FLOPs and bytes and its median time) and the e2e
 * study's layers (the layer's FLOPs over its compulsory bytes: weights, input and output once),
 * and writes one point per kernel and per mode's layer: arithmetic intensity (FLOP/B),
 * attained GFLOP/s, the attainable roof min(P, AI x B) and the limiter:
 *   parallelism  the point is no faster than one worker's roof at its intensity: it does not
 *                use the other workers (with one worker there is no such limiter);
 *   bandwidth    AI x B < P: the memory roof is the lower one;
 *   compute      otherwise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

enum { C_JOB = 2, C_FAMILY = 3, C_KIND = 4, C_MODE = 5, C_SEQ = 6, C_VARIANT = 7, C_METRIC = 8,
       C_MEDIAN = 11, C_P90 = 13, C_FLOPS = 15, C_BYTES = 16, C_BEST = 18 };

typedef struct ceilings { double p_all, p_one, b_all, b_one; int workers; } ceilings;

static void point(study_job_ctx *c, const ceilings *ce, const char *name, const char *family,
                  const char *kind, const char *mode, long long seq, double flops, double bytes,
                  double seconds) {
    const double ai = flops / bytes, gf = flops / seconds * 1e-9;
    const double roof = fmin(ce->p_all, ai * ce->b_all), roof1 = fmin(ce->p_one, ai * ce->b_one);
    const char *lim = ce->workers > 1 && gf <= roof1 ? "parallelism"
                      : ai * ce->b_all < ce->p_all  ? "bandwidth"
                                                    : "compute";
    study_row r = study_row_blank();
    snprintf(r.family, sizeof r.family, "%s", family);
    snprintf(r.kind, sizeof r.kind, "%s", kind);
    snprintf(r.mode, sizeof r.mode, "%s", mode);
    r.seq = seq;
    snprintf(r.variant, sizeof r.variant, "%s", name);
    snprintf(r.metric, sizeof r.metric, "attained");
    snprintf(r.unit, sizeof r.unit, "GFLOP/s");
    r.median = gf, r.flops = flops, r.bytes = bytes, r.samples = 1;
    snprintf(r.note, sizeof r.note, "limiter=%s; ai=%.4g FLOP/B; roof=%.4g GFLOP/s; %.0f%% of roof",
             lim, ai, roof, 100.0 * gf / roof);
    study_emit(c, &r);
    printf("%-40s ai %8.3f  %8.1f GFLOP/s  roof %8.1f  %s\n", name, ai, gf, roof, lim);
}

study_job_status study_job_roofline(study_job_ctx *c) {
    char path[4096];
    study_table t;
    study_path(c, path, sizeof path, "roofline/results.csv");
    if (!study_table_load(path, &t, c->msg, sizeof c->msg)) return JOB_FAILED;
    ceilings ce = {0};
    for (int i = 0; i < t.n; i++) {
        char **f = t.rows[i];
        int w = 0;
        if (sscanf(f[C_VARIANT], "%*s workers=%d", &w) != 1) continue;
        const bool all = !strcmp(f[C_BEST], "1");
        if (all) ce.workers = w;
        if (!strcmp(f[C_METRIC], "ceiling_compute")) *(all ? &ce.p_all : &ce.p_one) = atof(f[C_P90]);
        if (!strcmp(f[C_METRIC], "ceiling_bandwidth")) *(all ? &ce.b_all : &ce.b_one) = atof(f[C_P90]);
    }
    study_table_free(&t);
    if (ce.p_all <= 0 || ce.b_all <= 0 || ce.p_one <= 0 || ce.b_one <= 0) {
        snprintf(c->msg, sizeof c->msg, "%s lacks the ceilings (the ceilings job runs before the roofline)", path);
        return JOB_FAILED;
    }
    /* each block's best setting; where the tuner marked none (every figure too noisy, or an
     * unreliable one faster), its default */
    study_path(c, path, sizeof path, "block/results.csv");
    if (study_table_load(path, &t, c->msg, sizeof c->msg)) {
        for (int i = 0; i < t.n; i++) {
            char **f = t.rows[i];
            if (!*f[C_FLOPS] || !*f[C_BYTES] || !*f[C_MEDIAN]) continue;
            bool job_has_best = false;
            for (int k = 0; k < t.n; k++)
                job_has_best = job_has_best || (!strcmp(t.rows[k][C_JOB], f[C_JOB]) && !strcmp(t.rows[k][C_BEST], "1"));
            if (job_has_best ? strcmp(f[C_BEST], "1") != 0 : strcmp(f[C_VARIANT], "default") != 0) continue;
            char name[160];
            const char *blk = strrchr(f[C_JOB], '.');
            snprintf(name, sizeof name, "kernel %s (%s)", blk ? blk + 1 : f[C_JOB], f[C_VARIANT]);
            point(c, &ce, name, f[C_FAMILY], f[C_KIND], "kernel", atoll(f[C_SEQ]), atof(f[C_FLOPS]),
                  atof(f[C_BYTES]), atof(f[C_MEDIAN]) * 1e-6);
        }
        study_table_free(&t);
    }
    study_path(c, path, sizeof path, "end_to_end/results.csv");
    if (study_table_load(path, &t, c->msg, sizeof c->msg)) {
        for (int i = 0; i < t.n; i++) {
            char **f = t.rows[i];
            if (strcmp(f[C_METRIC], "latency") || !*f[C_MEDIAN]) continue;
            const study_family *fam = study_family_find(f[C_FAMILY]);
            if (!fam) continue;
            const double s = atof(f[C_SEQ]), h = (double)fam->hidden, ff = (double)fam->ffn;
            const double bytes = 4.0 * (4 * h * h + 2 * h * ff + 9 * h + ff) + 4.0 * 2 * s * h;
            char name[160];
            snprintf(name, sizeof name, "layer %s s%s", f[C_MODE], f[C_SEQ]);
            point(c, &ce, name, f[C_FAMILY], f[C_KIND], f[C_MODE], atoll(f[C_SEQ]), atof(f[C_FLOPS]),
                  bytes, atof(f[C_MEDIAN]) * 1e-3);
        }
        study_table_free(&t);
    }
    c->msg[0] = 0;
    return JOB_OK;
}
