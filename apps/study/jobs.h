/* apps/study/jobs.h: what a job is given and what it returns. Each job runs in its own child
 * process (runner.c) with its own device, its stdout and stderr going to its log; it writes
 * its rows to `rows` and returns its status. The job functions live one study per file. */
#ifndef FE_STUDY_JOBS_H
#define FE_STUDY_JOBS_H

#include <stdio.h>

#include "ferrum/ops.h"
#include "plan.h"
#include "results.h"

typedef enum { JOB_OK = 0, JOB_FAILED = 1, JOB_UNAVAILABLE = 3 } study_job_status;

typedef struct study_job_ctx {
    const study_config *cfg;
    const study_job *job;
    const char *run_dir;   /* results/<run-id> */
    fe_device *dev;
    FILE *log;             /* the job's log (also its stdout) */
    FILE *rows;            /* its CSV rows, without the header */
    char msg[512];         /* why it failed or is unavailable */
} study_job_ctx;

/* Writes one row with the job's identity. */
void study_emit(study_job_ctx *c, const study_row *r);
/* A row with the job's workload (family, kind, seq, mode) filled in. */
study_row study_job_row(const study_job_ctx *c);
/* path = run_dir/rel (formatted) */
void study_path(const study_job_ctx *c, char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One figure of repeated timings, in ns: median, 10th and 90th percentiles. */
typedef struct study_timing {
    double median, p10, p90;
    int samples;
} study_timing;
/* Sorts t[0..n) and summarises it. */
study_timing study_timing_of(double *t, int n);

/* Power over a timed region (power.c): the RAPL package energy counter from powercap, else
 * from perf's power PMU (energy-pkg). begin, then end fills power_w and energy_j (per sample)
 * with numbers, or "unavailable: <reason>". */
typedef struct study_power {
    int source;          /* 0: none, 1: powercap, 2: perf */
    long long uj0;       /* powercap: microjoules at begin */
    int fd;              /* perf: the counter */
    double scale;        /* perf: joules per count */
    unsigned long long c0;
    double t0;
    char why[256];
} study_power;
void study_power_begin(study_power *p);
void study_power_end(study_power *p, study_row *r);

/* Times one f32 GEMM C (M, N) = A (M, K) B (N, K)^T with the given tunables, reps times after
 * a warm-up: t[] in ns, and its cost model's flops and bytes. false and c->msg on error. */
bool study_time_gemm(study_job_ctx *c, int64_t M, int64_t N, int64_t K, const fe_setting *tun,
                     int n_tun, double *t, int reps, double *flops, double *bytes);

study_job_status study_job_reference(study_job_ctx *c);
study_job_status study_job_e2e(study_job_ctx *c);
study_job_status study_job_resource(study_job_ctx *c);
study_job_status study_job_block(study_job_ctx *c);
study_job_status study_job_staging(study_job_ctx *c);
study_job_status study_job_memcpy(study_job_ctx *c);
study_job_status study_job_ceilings(study_job_ctx *c);
study_job_status study_job_host(study_job_ctx *c);
study_job_status study_job_roofline(study_job_ctx *c);
study_job_status study_job_plots(study_job_ctx *c);
study_job_status study_job_manifest(study_job_ctx *c);

#endif
