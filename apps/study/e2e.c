/* apps/study/e2e.c: the jobs over a whole layer. reference: the f32 reference output of a
 * case (up to 512 tokens; above, the plain layer would take hours, so only four spot rows,
 * the first, the last and two between, are computed and the e2e jobs check those and that
 * every output is finite), and the weights and input as raw f32 files for the host
 * comparison. end_to_end: one mode's latency, tokens/s and GFLOP/s, each a median with its
 * p10..p90 spread, validated against the reference. resource_use: one mode's workers, arena,
 * weights, peak RSS, dispatches, steps, distinct designs and CPU time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "jobs.h"
#include "layer.h"

enum { STUDY_EXACT_MAX_SEQ = 512, STUDY_SPOT_ROWS = 4 };

/* rows 0, S/3, 2S/3, S-1 */
static void spot_rows(int64_t seq, int64_t *rows) {
    rows[0] = 0, rows[1] = seq / 3, rows[2] = 2 * seq / 3, rows[3] = seq - 1;
}
#define STUDY_TOLERANCE 1e-4 /* max |y - ref| / (1 + max |ref|) */

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* "bert.baseline_768.s512": the name of a case's files under work/ */
static void case_path(const study_job_ctx *c, char *buf, size_t n, const char *what) {
    study_path(c, buf, n, "work/%s.%s.s%lld.%s.f32", study_kind_name(c->job->kind),
               c->job->family->name, (long long)c->job->seq, what);
}

typedef struct layer_case {
    study_shape shape;
    study_weights w;
    float *x, *y;
    int64_t n; /* seq x hidden */
} layer_case;

static bool case_open(study_job_ctx *c, layer_case *lc) {
    memset(lc, 0, sizeof *lc);
    if (!study_shape_make(c->job->family, c->job->kind, c->job->seq, &lc->shape, c->msg, sizeof c->msg))
        return false;
    lc->n = lc->shape.seq * lc->shape.hidden;
    lc->x = malloc((size_t)lc->n * sizeof(float));
    lc->y = malloc((size_t)lc->n * sizeof(float));
    if (!lc->x || !lc->y || !study_weights_init(&lc->w, &lc->shape, c->cfg->seed)) {
        snprintf(c->msg, sizeof c->msg, "out of memory for the layer's weights and activations");
        return false;
    }
    study_input_fill(lc->x, &lc->shape, c->cfg->seed);
    return true;
}

static void case_close(layer_case *lc) {
    study_weights_deinit(&lc->w);
    free(lc->x);
    free(lc->y);
}

static bool write_f32(const char *path, const float *const *parts, const int64_t *counts, int n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = true;
    for (int i = 0; i < n; i++)
        ok = ok && fwrite(parts[i], sizeof(float), (size_t)counts[i], f) == (size_t)counts[i];
    return fclose(f) == 0 && ok;
}

study_job_status study_job_reference(study_job_ctx *c) {
    layer_case lc;
    study_job_status st = JOB_FAILED;
    if (!case_open(c, &lc)) goto done;
    const study_weights *w = &lc.w;
    const int64_t h = lc.shape.hidden, i = lc.shape.ffn;
    /* the order host_torch.py reads */
    const float *parts[] = {w->wq, w->wk, w->wv, w->wo, w->bq, w->bk, w->bv, w->bo, w->w_up,
                            w->b_up, w->w_down, w->b_down, w->ln1_w, w->ln1_b, w->ln2_w, w->ln2_b};
    const int64_t counts[] = {h * h, h * h, h * h, h * h, h, h, h, h, i * h, i, h * i, h, h, h, h, h};
    char path[4096];
    case_path(c, path, sizeof path, "weights");
    bool ok = write_f32(path, parts, counts, 16);
    case_path(c, path, sizeof path, "x");
    ok = ok && write_f32(path, (const float *const[]){lc.x}, &lc.n, 1);
    if (!ok) {
        snprintf(c->msg, sizeof c->msg, "cannot write the case's files under %s/work", c->run_dir);
        goto done;
    }
    if (lc.shape.seq > STUDY_EXACT_MAX_SEQ) {
        int64_t rows[STUDY_SPOT_ROWS], n = STUDY_SPOT_ROWS * lc.shape.hidden;
        spot_rows(lc.shape.seq, rows);
        const double t0 = now_ns();
        if (!study_reference_rows(w, lc.x, rows, STUDY_SPOT_ROWS, lc.y)) {
            snprintf(c->msg, sizeof c->msg, "out of memory running the spot-row reference");
            goto done;
        }
        printf("seq %lld > %d: spot rows %lld %lld %lld %lld of the reference: %.1f s\n",
               (long long)lc.shape.seq, STUDY_EXACT_MAX_SEQ, (long long)rows[0], (long long)rows[1],
               (long long)rows[2], (long long)rows[3], (now_ns() - t0) * 1e-9);
        case_path(c, path, sizeof path, "spot");
        if (!write_f32(path, (const float *const[]){lc.y}, &n, 1)) {
            snprintf(c->msg, sizeof c->msg, "cannot write %s", path);
            goto done;
        }
        st = JOB_OK;
        goto done;
    }
    const double t0 = now_ns();
    if (!study_reference(w, lc.x, lc.y)) {
        snprintf(c->msg, sizeof c->msg, "out of memory running the reference");
        goto done;
    }
    printf("reference: %.1f s\n", (now_ns() - t0) * 1e-9);
    case_path(c, path, sizeof path, "ref");
    if (!write_f32(path, (const float *const[]){lc.y}, &lc.n, 1)) {
        snprintf(c->msg, sizeof c->msg, "cannot write %s", path);
        goto done;
    }
    st = JOB_OK;
done:
    case_close(&lc);
    return st;
}

/* "pass max_err=..." / "fail ..." against the reference file, or the finite check */
static void validate(study_job_ctx *c, const layer_case *lc, char *out, size_t n) {
    bool finite = true;
    for (int64_t e = 0; e < lc->n; e++) finite = finite && isfinite(lc->y[e]);
    const bool spot = lc->shape.seq > STUDY_EXACT_MAX_SEQ;
    const int64_t h = lc->shape.hidden, n_ref = spot ? STUDY_SPOT_ROWS * h : lc->n;
    char path[4096];
    case_path(c, path, sizeof path, spot ? "spot" : "ref");
    size_t bytes = 0;
    float *ref = (float *)study_read_file(path, &bytes);
    if (!ref || bytes != (size_t)n_ref * sizeof(float)) {
        snprintf(out, n, "fail: no reference output (%s); the reference job runs first", path);
        free(ref);
        return;
    }
    int64_t rows[STUDY_SPOT_ROWS];
    spot_rows(lc->shape.seq, rows);
    double err = 0, scale = 0;
    for (int64_t e = 0; e < n_ref; e++) {
        const float y = spot ? lc->y[rows[e / h] * h + e % h] : lc->y[e];
        err = fmax(err, fabs((double)y - ref[e]));
        scale = fmax(scale, fabs((double)ref[e]));
    }
    err /= 1.0 + scale;
    snprintf(out, n, "%s max_err=%.3g tol=%.0e%s", finite && err <= STUDY_TOLERANCE ? "pass" : "fail",
             err, STUDY_TOLERANCE, spot ? " (4 spot rows; all finite)" : "");
    free(ref);
}

/* Timed calls stop at reps, or once they have taken STUDY_TIME_BOX_S with at least
 * STUDY_MIN_SAMPLES (a 16384-token layer takes tens of seconds a call: the full matrix would
 * otherwise take days). The samples column says how many were taken. */
#define STUDY_TIME_BOX_S 30.0
enum { STUDY_MIN_SAMPLES = 3 };

/* runs the executor (after the caller's warm-up call) until the box is full; t[] in ns;
 * returns the calls timed, 0 on error */
static int time_runs(study_job_ctx *c, study_exec *e, layer_case *lc, double *t, int reps) {
    const double start = now_ns();
    int r = 0;
    while (r < reps && (r < STUDY_MIN_SAMPLES || (now_ns() - start) * 1e-9 < STUDY_TIME_BOX_S)) {
        const double t0 = now_ns();
        if (!study_exec_run(e, lc->x, lc->y, c->msg, sizeof c->msg)) return 0;
        t[r++] = now_ns() - t0;
    }
    return r;
}

study_job_status study_job_e2e(study_job_ctx *c) {
    layer_case lc;
    study_exec *e = NULL;
    double *t = NULL;
    study_job_status st = JOB_FAILED;
    if (!case_open(c, &lc)) goto done;
    e = study_exec_create(c->dev, &lc.w, c->job->mode, c->msg, sizeof c->msg);
    if (!e) goto done;
    if (!study_exec_run(e, lc.x, lc.y, c->msg, sizeof c->msg)) goto done;
    study_row r = study_job_row(c);
    validate(c, &lc, r.validation, sizeof r.validation);
    const int reps = c->cfg->reps;
    if (!(t = malloc((size_t)reps * sizeof *t))) goto done;
    study_power pw;
    study_power_begin(&pw);
    const int timed = time_runs(c, e, &lc, t, reps);
    if (!timed) goto done;
    study_timing tm = study_timing_of(t, timed);
    r.samples = timed;
    study_power_end(&pw, &r);
    const double flops = study_layer_flops(&lc.shape), seq = (double)lc.shape.seq;
    r.flops = flops;
    r.dispatches = study_exec_get_stats(e).dispatches;
    snprintf(r.note, sizeof r.note, "%d timed calls after one warm-up (at most %d, or %.0f s)",
             timed, reps, STUDY_TIME_BOX_S);
    study_row lat = r, tok = r, gf = r;
    snprintf(lat.metric, sizeof lat.metric, "latency"), snprintf(lat.unit, sizeof lat.unit, "ms");
    lat.lower_is_better = true;
    lat.median = tm.median * 1e-6, lat.p10 = tm.p10 * 1e-6, lat.p90 = tm.p90 * 1e-6;
    snprintf(tok.metric, sizeof tok.metric, "tokens_per_s"), snprintf(tok.unit, sizeof tok.unit, "tok/s");
    tok.median = seq / (tm.median * 1e-9), tok.p10 = seq / (tm.p90 * 1e-9), tok.p90 = seq / (tm.p10 * 1e-9);
    snprintf(gf.metric, sizeof gf.metric, "gflops"), snprintf(gf.unit, sizeof gf.unit, "GFLOP/s");
    gf.median = flops / tm.median, gf.p10 = flops / tm.p90, gf.p90 = flops / tm.p10;
    study_emit(c, &lat), study_emit(c, &tok), study_emit(c, &gf);
    printf("%s: median %.3f ms (p10 %.3f, p90 %.3f), %.1f GFLOP/s, %s\n", study_mode_name(c->job->mode),
           lat.median, lat.p10, lat.p90, gf.median, r.validation);
    st = strncmp(r.validation, "pass", 4) == 0 ? JOB_OK : JOB_FAILED;
    if (st == JOB_FAILED) snprintf(c->msg, sizeof c->msg, "validation: %s", r.validation);
done:
    free(t);
    study_exec_destroy(e);
    case_close(&lc);
    return st;
}

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

static void resource_row(study_job_ctx *c, const char *metric, const char *unit, double v,
                         const char *note) {
    study_row r = study_job_row(c);
    r.descriptive = !strcmp(metric, "workers") || !strcmp(metric, "cpu_utilisation");
    snprintf(r.metric, sizeof r.metric, "%s", metric);
    snprintf(r.unit, sizeof r.unit, "%s", unit);
    r.lower_is_better = true;
    r.median = v;
    r.samples = 1;
    snprintf(r.note, sizeof r.note, "%s", note);
    study_emit(c, &r);
}

study_job_status study_job_resource(study_job_ctx *c) {
    layer_case lc;
    study_exec *e = NULL;
    study_job_status st = JOB_FAILED;
    if (!case_open(c, &lc)) goto done;
    e = study_exec_create(c->dev, &lc.w, c->job->mode, c->msg, sizeof c->msg);
    if (!e) goto done;
    const int max_reps = c->cfg->reps;
    const double c0 = cpu_s(), w0 = now_ns();
    int reps = 0;
    while (reps < max_reps && (reps < STUDY_MIN_SAMPLES || (now_ns() - w0) * 1e-9 < STUDY_TIME_BOX_S)) {
        if (!study_exec_run(e, lc.x, lc.y, c->msg, sizeof c->msg)) goto done;
        reps++;
    }
    const double cpu = (cpu_s() - c0) / reps, wall = (now_ns() - w0) * 1e-9 / reps;
    study_exec_stats s = study_exec_get_stats(e);
    char path[4096];
    study_path(c, path, sizeof path, "work/designs.%s.txt", c->job->id);
    FILE *f = fopen(path, "w");
    int designs = f ? study_exec_write_designs(e, f) : -1;
    if (f) fclose(f);
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    const fe_device_info *di = fe_device_get_info(c->dev);
    resource_row(c, "workers", "count", di->n_workers, "workers in the device pool");
    resource_row(c, "arena_bytes", "B", (double)s.arena_bytes,
                 c->job->mode == STUDY_OFFLOAD ? "device-side buffers: resident weights and the staging of operands"
                                               : "the graph's arena: states and scratch (weights are borrowed)");
    resource_row(c, "weight_bytes", "B", (double)lc.w.bytes, "the layer's f32 weights");
    resource_row(c, "peak_rss_bytes", "B", (double)u.ru_maxrss * 1024.0,
                 "the job process's peak resident set (getrusage), weights and reference buffers included");
    resource_row(c, "dispatches_per_layer", "count", s.dispatches, "device dispatches one layer call makes");
    resource_row(c, "steps_per_layer", "count", s.steps, "kernel steps one layer call runs");
    resource_row(c, "distinct_designs", "count", designs,
                 "distinct kernel design keys (listed in artifact_manifest.json)");
    resource_row(c, "cpu_time_per_layer", "s", cpu, "user + system CPU time of all threads per call");
    resource_row(c, "cpu_utilisation", "cores", cpu / wall, "CPU time / wall time: busy cores (spinning included)");
    st = JOB_OK;
done:
    study_exec_destroy(e);
    case_close(&lc);
    return st;
}
