/* apps/study/jobs_common.c: what every job shares: its rows' identity, paths, timing
 * summaries and the power reading (see jobs.h). Power comes from the RAPL package counter
 * (/sys/class/powercap/intel-rapl:0/energy_uj) where the kernel exposes it and this process
 * may read it; otherwise the row says why not (naming whether a perf power PMU exists: reading
 * that through perf_event_open is not done yet). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobs.h"

void study_emit(study_job_ctx *c, const study_row *r) {
    study_row_write(c->rows, c->cfg->run_id, c->job->study, c->job->id, r);
}

study_row study_job_row(const study_job_ctx *c) {
    study_row r = study_row_blank();
    const study_job *j = c->job;
    if (j->family) {
        snprintf(r.family, sizeof r.family, "%s", j->family->name);
        snprintf(r.kind, sizeof r.kind, "%s", study_kind_name(j->kind));
        r.seq = j->seq;
    }
    if (j->type == JOB_E2E || j->type == JOB_RESOURCE)
        snprintf(r.mode, sizeof r.mode, "%s", study_mode_name(j->mode));
    return r;
}

void study_path(const study_job_ctx *c, char *buf, size_t n, const char *fmt, ...) {
    int k = snprintf(buf, n, "%s/", c->run_dir);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < n) vsnprintf(buf + k, n - (size_t)k, fmt, ap);
    va_end(ap);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

study_timing study_timing_of(double *t, int n) {
    study_timing s = {0, 0, 0, n};
    if (n <= 0) return s;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    s.p10 = t[(int)(0.1 * (n - 1) + 0.5)];
    s.p90 = t[(int)(0.9 * (n - 1) + 0.5)];
    return s;
}

static const char rapl[] = "/sys/class/powercap/intel-rapl:0/energy_uj";

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool read_uj(long long *v, char *why, size_t n) {
    FILE *f = fopen(rapl, "r");
    if (!f) {
        const int e = errno;
        const bool pmu = access("/sys/bus/event_source/devices/power", F_OK) == 0;
        snprintf(why, n, "unavailable: no RAPL powercap (%s: %s)%s", rapl, strerror(e),
                 pmu ? "; a perf power PMU exists but the study reads only powercap"
                     : " and no perf power PMU (/sys/bus/event_source/devices/power)");
        return false;
    }
    bool ok = fscanf(f, "%lld", v) == 1;
    fclose(f);
    if (!ok) snprintf(why, n, "unavailable: %s is not a counter", rapl);
    return ok;
}

void study_power_begin(study_power *p) {
    memset(p, 0, sizeof *p);
    p->ok = read_uj(&p->uj0, p->why, sizeof p->why);
    p->t0 = mono_s();
}

void study_power_end(study_power *p, study_row *r) {
    long long uj1 = 0;
    const double dt = mono_s() - p->t0;
    if (p->ok && read_uj(&uj1, p->why, sizeof p->why) && uj1 >= p->uj0 && dt > 0) {
        const double j = (double)(uj1 - p->uj0) * 1e-6;
        snprintf(r->energy_j, sizeof r->energy_j, "%.6g", r->samples > 0 ? j / r->samples : j);
        snprintf(r->power_w, sizeof r->power_w, "%.4g", j / dt);
        return;
    }
    if (p->ok) snprintf(p->why, sizeof p->why, "unavailable: the RAPL counter wrapped");
    snprintf(r->power_w, sizeof r->power_w, "%s", p->why);
    snprintf(r->energy_j, sizeof r->energy_j, "%s", p->why);
}
