/* apps/study/block.c: the block-tuning and memory-staging studies.
 *
 * block: the tuner's sweep (fe_tune_op, ferrum/tune.h) of one block's operator at the layer's
 * shape: QKV, out-projection, FFN-up and FFN-down are GEMMs (M = seq; N, K the block's
 * widths); attention is MHA over seq keys. Each setting is a row: its time (median, p10,
 * p90), the op's FLOPs and bytes, the tuner's verdict, is_best where the tuner marks the
 * best. Measured fresh in this run (remeasure) into the run's own cost cache. The tuner's MHA
 * shapes come from its catalog case "encoder", which fixes 2 heads: the attention rows are
 * per 2 heads of the layer's head_dim (the work per head is the same).
 *
 * memory_staging: the GEMM's cache-blocking depth for attn_out and FFN-down, read from the
 * block study's CSV (its best row and the default's resolution): depth 1 stages only the
 * L1 panel (KC as tuned, MC and NC at their smallest, 64 and 256: blocks re-packed as often
 * as can be); depth 2 adds the L2 block (MC as tuned); depth 3 the LLC block (NC as tuned).
 * Rows: time per depth and the speedup against depth 1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferrum/tune.h"
#include "jobs.h"
#include "layer.h"

static void gemm_extents(const study_job *j, int64_t *M, int64_t *N, int64_t *K) {
    const study_family *f = j->family;
    *M = j->seq;
    switch (j->block) {
    case BLK_QKV: *N = 3 * f->hidden, *K = f->hidden; break;
    case BLK_ATTN_OUT: *N = f->hidden, *K = f->hidden; break;
    case BLK_FFN_UP: *N = f->ffn, *K = f->hidden; break;
    default: *N = f->hidden, *K = f->ffn; break;
    }
}

static const char *verdict(const fe_tune_row *r) {
    switch (r->verdict) {
    case FE_TUNE_CANDIDATE: return r->cost.reliable ? "candidate" : "candidate (unreliable: too noisy)";
    case FE_TUNE_GATED_OUT: return "gated out";
    case FE_TUNE_SAME_DESIGN: return "same design";
    default: return "refused";
    }
}

study_job_status study_job_block(study_job_ctx *c) {
    const study_job *j = c->job;
    fe_setting s[6];
    int n = 0;
    const char *op;
    if (j->block == BLK_ATTENTION) {
        op = "MHA";
        s[n++] = (fe_setting){.name = "case", .choice = "encoder"};
        s[n++] = (fe_setting){"Sq", (double)j->seq, NULL};
        s[n++] = (fe_setting){"S", (double)j->seq, NULL};
        s[n++] = (fe_setting){"D", (double)(j->family->hidden / j->family->heads), NULL};
        s[n++] = (fe_setting){"causal", j->kind == STUDY_GPT2 ? 1 : 0, NULL};
    } else {
        op = "GEMM";
        int64_t M, N, K;
        gemm_extents(j, &M, &N, &K);
        s[n++] = (fe_setting){"M", (double)M, NULL};
        s[n++] = (fe_setting){"N", (double)N, NULL};
        s[n++] = (fe_setting){"K", (double)K, NULL};
    }
    char cache[4096];
    study_path(c, cache, sizeof cache, "work/cache");
    fe_tune_options o = fe_tune_options_default();
    o.remeasure = true;
    o.cache_root = cache;
    o.budget_ms = c->cfg->tune_ms;
    o.progress = stdout;
    fe_tune_request req = {.op = op, .settings = s, .n_settings = n};
    fe_tune_result *res = NULL;
    fe_error err = {0};
    if (fe_tune_op(c->dev, &req, &o, &res, &err) != FE_OK) {
        snprintf(c->msg, sizeof c->msg, "tuning %s: %s", op, err.message);
        return JOB_FAILED;
    }
    const char *shape = fe_tune_result_shape(res);
    const char *def = strstr(shape, "default setting:");
    printf("%s\n", shape);
    for (int i = 0; i < fe_tune_result_count(res); i++) {
        const fe_tune_row *row = fe_tune_result_row(res, i);
        study_row r = study_job_row(c);
        snprintf(r.variant, sizeof r.variant, "%s", row->setting);
        snprintf(r.metric, sizeof r.metric, "%s_time", study_block_name(j->block));
        snprintf(r.unit, sizeof r.unit, "us");
        r.lower_is_better = true;
        if (row->verdict == FE_TUNE_CANDIDATE) {
            r.median = row->cost.median_ns * 1e-3;
            r.p10 = row->cost.p10_ns * 1e-3;
            r.p90 = row->cost.p90_ns * 1e-3;
            r.samples = row->cost.samples;
            r.flops = row->flops;
            r.bytes = row->bytes;
            r.dispatches = 1;
        }
        r.is_best = row->best;
        snprintf(r.note, sizeof r.note, "%s %s%s%s%s", op, verdict(row), row->reason[0] ? ": " : "",
                 row->reason, i == 0 && def ? "; " : "");
        if (i == 0 && def) { /* the default's resolution, which the staging study reads */
            size_t len = strlen(r.note);
            snprintf(r.note + len, sizeof r.note - len, "%.*s", (int)strcspn(def, "\n"), def);
        }
        study_emit(c, &r);
    }
    fe_tune_result_destroy(res);
    return JOB_OK;
}

/* NAME=V in text (a word boundary before NAME); -1 when absent */
static long long setting_in(const char *text, const char *name) {
    char key[32];
    snprintf(key, sizeof key, "%s=", name);
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key))
        if (p == text || p[-1] == ' ' || p[-1] == ':') return atoll(p + strlen(key));
    return -1;
}

/* MC, NC, KC of the block job's best setting, from block/results.csv */
static bool best_blocking(study_job_ctx *c, long long *mc, long long *nc, long long *kc) {
    char path[4096], block_id[160];
    study_path(c, path, sizeof path, "block/results.csv");
    snprintf(block_id, sizeof block_id, "block%s", strchr(c->job->id, '.'));
    char *text = study_read_file(path, NULL);
    if (!text) {
        snprintf(c->msg, sizeof c->msg, "cannot read %s: the block study runs first (a run's "
                 "plan has it before staging)", path);
        return false;
    }
    *mc = *nc = *kc = -1;
    char best[128] = "";
    bool found = false;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *f[STUDY_CSV_COLUMNS];
        if (study_csv_split(line, f, STUDY_CSV_COLUMNS) != STUDY_CSV_COLUMNS || strcmp(f[2], block_id)) continue;
        found = true;
        if (!strcmp(f[7], "default")) {
            *mc = setting_in(f[22], "MC"), *nc = setting_in(f[22], "NC"), *kc = setting_in(f[22], "KC");
        }
        if (!strcmp(f[18], "1")) snprintf(best, sizeof best, "%s", f[7]);
    }
    free(text);
    if (!found || *mc < 0 || *nc < 0 || *kc < 0) {
        snprintf(c->msg, sizeof c->msg, "%s has no default row with MC, NC and KC for %s: "
                 "rerun the block study", path, block_id);
        return false;
    }
    long long v;
    if ((v = setting_in(best, "MC")) > 0) *mc = v;
    if ((v = setting_in(best, "NC")) > 0) *nc = v;
    if ((v = setting_in(best, "KC")) > 0) *kc = v;
    printf("block study best: %s -> MC=%lld NC=%lld KC=%lld\n", best[0] ? best : "(none marked: the default)",
           *mc, *nc, *kc);
    return true;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

bool study_time_gemm(study_job_ctx *c, int64_t M, int64_t N, int64_t K, const fe_setting *tun,
                      int n_tun, double *t, int reps, double *flops, double *bytes) {
    const int64_t as[2] = {M, K}, bs[2] = {N, K}, cs[2] = {M, N};
    float *a = malloc((size_t)(M * K) * 4), *b = malloc((size_t)(N * K) * 4), *o = malloc((size_t)(M * N) * 4);
    fe_kernel *k = NULL;
    bool ok = false;
    if (!a || !b || !o) {
        snprintf(c->msg, sizeof c->msg, "out of memory for a %lld x %lld x %lld GEMM", (long long)M,
                 (long long)N, (long long)K);
        goto done;
    }
    for (int64_t i = 0; i < M * K; i++) a[i] = (float)((i * 7919) % 2001 - 1000) * 1e-3f;
    for (int64_t i = 0; i < N * K; i++) b[i] = (float)((i * 104729) % 2001 - 1000) * 1e-3f;
    fe_tensor ops[5] = {fe_tensor_contiguous(a, FE_DTYPE_F32, 2, as),
                        fe_tensor_contiguous(b, FE_DTYPE_F32, 2, bs), {0}, {0},
                        fe_tensor_contiguous(o, FE_DTYPE_F32, 2, cs)};
    fe_op_request req = {.op = "GEMM", .operands = ops, .n_operands = 5, .tunables = tun, .n_tunables = n_tun};
    fe_error err = {0};
    if (fe_kernel_create(c->dev, &req, &k, &err) != FE_OK) {
        snprintf(c->msg, sizeof c->msg, "GEMM: %s", err.message);
        goto done;
    }
    fe_kernel_cost(k, NULL, 0, flops, bytes);
    for (int r = -1; r < reps; r++) {
        const double t0 = now_ns();
        if (fe_kernel_run(k, ops, 5, NULL, 0) != FE_OK) {
            snprintf(c->msg, sizeof c->msg, "GEMM: %s", fe_kernel_message(k));
            goto done;
        }
        if (r >= 0) t[r] = now_ns() - t0;
    }
    ok = true;
done:
    fe_kernel_destroy(k);
    free(a), free(b), free(o);
    return ok;
}

study_job_status study_job_staging(study_job_ctx *c) {
    long long mc, nc, kc;
    if (!best_blocking(c, &mc, &nc, &kc)) return JOB_FAILED;
    int64_t M, N, K;
    gemm_extents(c->job, &M, &N, &K);
    const int reps = c->cfg->reps < 5 ? 5 : c->cfg->reps;
    double *t = malloc((size_t)reps * sizeof *t), base = NAN;
    if (!t) return JOB_FAILED;
    for (int depth = 1; depth <= 3; depth++) {
        fe_setting tun[3] = {{"KC", (double)kc, NULL}, {"MC", depth >= 2 ? (double)mc : 64, NULL},
                             {"NC", depth >= 3 ? (double)nc : 256, NULL}};
        double flops = 0, bytes = 0;
        if (!study_time_gemm(c, M, N, K, tun, 3, t, reps, &flops, &bytes)) {
            free(t);
            return JOB_FAILED;
        }
        study_timing tm = study_timing_of(t, reps);
        if (depth == 1) base = tm.median;
        study_row r = study_job_row(c);
        snprintf(r.variant, sizeof r.variant, "depth=%d KC=%lld MC=%lld NC=%lld", depth, kc,
                 (long long)tun[1].value, (long long)tun[2].value);
        snprintf(r.metric, sizeof r.metric, "%s_time", study_block_name(c->job->block));
        snprintf(r.unit, sizeof r.unit, "us");
        r.lower_is_better = true;
        r.median = tm.median * 1e-3, r.p10 = tm.p10 * 1e-3, r.p90 = tm.p90 * 1e-3;
        r.samples = reps, r.flops = flops, r.bytes = bytes, r.dispatches = 1;
        snprintf(r.note, sizeof r.note, "depth %d: %s", depth,
                 depth == 1 ? "the L1 panel only" : depth == 2 ? "L1 panel + L2 block" : "L1 panel + L2 block + LLC block");
        study_emit(c, &r);
        study_row sp = r;
        snprintf(sp.metric, sizeof sp.metric, "%s_speedup", study_block_name(c->job->block));
        snprintf(sp.unit, sizeof sp.unit, "x");
        sp.lower_is_better = false;
        sp.median = base / tm.median, sp.p10 = base / tm.p90, sp.p90 = base / tm.p10;
        snprintf(sp.note, sizeof sp.note, "depth-1 median / this depth's (p10, p90 from this depth's spread)");
        study_emit(c, &sp);
        printf("depth %d: %.1f us, speedup %.2f\n", depth, tm.median * 1e-3, sp.median);
    }
    free(t);
    return JOB_OK;
}
