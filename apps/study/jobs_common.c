/* apps/study/jobs_common.c: what every job shares: its rows' identity, paths, timing
 * summaries (see jobs.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
