/* apps/study/host.c: the host-comparison study: the same layer (weights, input) in PyTorch on
 * the CPU, in the same run, through apps/study/host_torch.py. The script is found beside the
 * binary's source tree ($FERRUM_STUDY_SCRIPTS, else <binary>/../apps/study, else
 * ./apps/study). Where python3 or torch is missing the rows say `unavailable: <reason>` and
 * the job ends unavailable, not failed. The ferrum side of the comparison is the e2e study's
 * rows of the same case. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"

static bool find_script(char *buf, size_t n) {
    const char *env = getenv("FERRUM_STUDY_SCRIPTS");
    if (env && *env) {
        snprintf(buf, n, "%s/host_torch.py", env);
        return access(buf, R_OK) == 0;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(buf, n, "%s/../apps/study/host_torch.py", exe);
        if (access(buf, R_OK) == 0) return true;
    }
    snprintf(buf, n, "apps/study/host_torch.py");
    return access(buf, R_OK) == 0;
}

static study_job_status unavailable(study_job_ctx *c, const char *why) {
    study_row r = study_job_row(c);
    snprintf(r.mode, sizeof r.mode, "pytorch_cpu");
    snprintf(r.metric, sizeof r.metric, "latency");
    snprintf(r.unit, sizeof r.unit, "ms");
    r.lower_is_better = true;
    snprintf(r.note, sizeof r.note, "unavailable: %s", why);
    snprintf(r.validation, sizeof r.validation, "unavailable");
    study_emit(c, &r);
    snprintf(c->msg, sizeof c->msg, "%s", why);
    return JOB_UNAVAILABLE;
}

study_job_status study_job_host(study_job_ctx *c) {
    char script[4096];
    if (!find_script(script, sizeof script))
        return unavailable(c, "host_torch.py not found (set FERRUM_STUDY_SCRIPTS to the folder apps/study of the source tree)");
    const study_job *j = c->job;
    char base[4096], cmd[16384];
    study_path(c, base, sizeof base, "work/%s.%s.s%lld", study_kind_name(j->kind), j->family->name, (long long)j->seq);
    const int threads = fe_device_get_info(c->dev)->n_workers;
    snprintf(cmd, sizeof cmd, "python3 '%s' --kind %s --seq %lld --hidden %lld --ffn %lld --heads %lld "
             "--weights '%s.weights.f32' --input '%s.x.f32' --ref '%s.ref.f32' --reps %d --threads %d 2>&1",
             script, study_kind_name(j->kind), (long long)j->seq, (long long)j->family->hidden,
             (long long)j->family->ffn, (long long)j->family->heads, base, base, base, c->cfg->reps, threads);
    printf("%s\n", cmd);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return unavailable(c, "cannot start python3");
    char line[1024], status[32] = "", reason[512] = "no output", torch[64] = "", max_err[32] = "none";
    double med = 0, p10 = 0, p90 = 0;
    int samples = 0, thr = 0;
    while (fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        line[strcspn(line, "\n")] = 0;
        sscanf(line, "status=%31s", status);
        if (!strncmp(line, "reason=", 7)) snprintf(reason, sizeof reason, "%s", line + 7);
        sscanf(line, "torch=%63s", torch);
        sscanf(line, "threads=%d", &thr);
        sscanf(line, "median_ns=%lf", &med);
        sscanf(line, "p10_ns=%lf", &p10);
        sscanf(line, "p90_ns=%lf", &p90);
        sscanf(line, "samples=%d", &samples);
        sscanf(line, "max_err=%31s", max_err);
    }
    int rc = pclose(p);
    if (strcmp(status, "ok") != 0) {
        if (!strcmp(status, "unavailable")) return unavailable(c, reason);
        char why[700];
        snprintf(why, sizeof why, "python3 %s exited %d without a result (see the job's log)", script, rc);
        return unavailable(c, why);
    }
    study_row r = study_job_row(c);
    snprintf(r.mode, sizeof r.mode, "pytorch_cpu");
    snprintf(r.variant, sizeof r.variant, "torch %s, %d threads", torch, thr);
    snprintf(r.metric, sizeof r.metric, "latency");
    snprintf(r.unit, sizeof r.unit, "ms");
    r.lower_is_better = true;
    r.median = med * 1e-6, r.p10 = p10 * 1e-6, r.p90 = p90 * 1e-6, r.samples = samples;
    study_shape s = {j->kind, j->seq, j->family->hidden, j->family->ffn, j->family->heads};
    r.flops = study_layer_flops(&s);
    double err = atof(max_err);
    if (!strcmp(max_err, "none")) snprintf(r.validation, sizeof r.validation, "n/a (no reference above 512 tokens)");
    else snprintf(r.validation, sizeof r.validation, "%s max_err=%s tol=1e-04", err <= 1e-4 ? "pass" : "fail", max_err);
    snprintf(r.note, sizeof r.note, "PyTorch CPU, same weights and input; compare with end_to_end rows of this case");
    study_emit(c, &r);
    study_row g = r;
    snprintf(g.metric, sizeof g.metric, "gflops");
    snprintf(g.unit, sizeof g.unit, "GFLOP/s");
    g.lower_is_better = false;
    g.median = r.flops / med, g.p10 = r.flops / p90, g.p90 = r.flops / p10;
    study_emit(c, &g);
    return JOB_OK;
}
