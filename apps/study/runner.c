/* apps/study/runner.c: the job loop. Each job runs in a child process (fork) so that its
 * peak RSS and CPU time are its own, a crash fails one job and not the run, and a job's rows
 * appear whole or not at all: the child writes rows/<job>.csv.part, the parent renames it to
 * rows/<job>.csv when the child exits with a status, then journals the end. The study's
 * results.csv is rebuilt from the rows files in plan order after every job (written whole,
 * by rename). The child dies with the parent (PR_SET_PDEATHSIG), so a kill -9 of the run
 * leaves no job running behind it. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobs.h"
#include "journal.h"
#include "manifest.h"
#include "results.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef study_job_status (*job_fn)(study_job_ctx *);
static const job_fn job_fns[JOB_TYPE_COUNT] = {
    [JOB_REFERENCE] = study_job_reference, [JOB_E2E] = study_job_e2e,
    [JOB_BLOCK] = study_job_block,         [JOB_STAGING] = study_job_staging,
    [JOB_MEMCPY] = study_job_memcpy,       [JOB_CEILINGS] = study_job_ceilings,
    [JOB_RESOURCE] = study_job_resource,   [JOB_HOST] = study_job_host,
    [JOB_ROOFLINE] = study_job_roofline,   [JOB_PLOTS] = study_job_plots,
    [JOB_MANIFEST] = study_job_manifest,
};

/* In the child: the device, the log, the rows; never returns. */
static void child(const study_config *cfg, const study_job *job, const char *run_dir) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(JOB_FAILED); /* the parent died before the prctl */
    char log_path[4096], rows_path[4096];
    snprintf(log_path, sizeof log_path, "%s/logs/%s.log", run_dir, job->id);
    snprintf(rows_path, sizeof rows_path, "%s/%s/rows/%s.csv.part", run_dir,
             job->study[0] ? job->study : "work", job->id);
    /* stdout and stderr (and what gnuplot and python write) share one appending descriptor,
     * so their lines interleave in order and none overwrites another */
    fflush(NULL);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(JOB_FAILED);
    close(fd);
    setvbuf(stdout, NULL, _IOLBF, 0);
    study_job_ctx c = {.cfg = cfg, .job = job, .run_dir = run_dir, .log = stdout};
    c.rows = fopen(rows_path, "w");
    fe_device_options o = fe_device_options_default();
    o.n_workers = cfg->workers;
    fe_error err = {0};
    if (!c.rows || fe_device_create(&o, &c.dev, &err) != FE_OK) {
        printf("job %s: %s\n", job->id, c.rows ? err.message : "cannot write its rows");
        _exit(JOB_FAILED);
    }
    char desc[512];
    fe_device_describe(c.dev, desc, sizeof desc);
    printf("job %s\ndevice: %s\n", job->id, desc);
    study_job_status st = job_fns[job->type](&c);
    if (st != JOB_OK) printf("job %s: %s: %s\n", job->id, st == JOB_FAILED ? "failed" : "unavailable", c.msg);
    else printf("job %s: ok\n", job->id);
    fe_device_destroy(c.dev);
    if (fclose(c.rows) != 0) st = JOB_FAILED;
    fflush(stdout);
    _exit(st);
}

/* results.csv of one study from its jobs' rows files, in plan order */
static void rebuild_study(const char *run_dir, const study_job *jobs, int n, const char *study) {
    if (!study[0] || !strcmp(study, "plots")) return;
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    if (!out) return;
    len = (size_t)snprintf(out, cap, "%s\n", STUDY_CSV_HEADER);
    for (int i = 0; i < n; i++) {
        if (strcmp(jobs[i].study, study) != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/rows/%s.csv", run_dir, study, jobs[i].id);
        size_t m = 0;
        char *rows = study_read_file(path, &m);
        if (!rows) continue;
        if (len + m + 1 > cap) {
            while (len + m + 1 > cap) cap *= 2;
            char *o2 = realloc(out, cap);
            if (!o2) {
                free(rows);
                break;
            }
            out = o2;
        }
        memcpy(out + len, rows, m);
        len += m;
        free(rows);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/results.csv", run_dir, study);
    study_write_file(path, out, len);
    free(out);
}

static study_job_status run_one(const study_config *cfg, const study_job *job,
                                const char *run_dir) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return JOB_FAILED;
    if (pid == 0) child(cfg, job, run_dir);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    study_job_status st = JOB_FAILED;
    if (WIFEXITED(status) && (WEXITSTATUS(status) == JOB_OK || WEXITSTATUS(status) == JOB_UNAVAILABLE))
        st = (study_job_status)WEXITSTATUS(status);
    char part[4096], done[4096];
    const char *dir = job->study[0] ? job->study : "work";
    snprintf(part, sizeof part, "%s/%s/rows/%s.csv.part", run_dir, dir, job->id);
    snprintf(done, sizeof done, "%s/%s/rows/%s.csv", run_dir, dir, job->id);
    if (st == JOB_FAILED || rename(part, done) != 0) {
        unlink(part);
        unlink(done);
        if (st != JOB_FAILED) st = JOB_FAILED;
    }
    if (WIFSIGNALED(status)) {
        char log_path[4096];
        snprintf(log_path, sizeof log_path, "%s/logs/%s.log", run_dir, job->id);
        FILE *f = fopen(log_path, "a");
        if (f) fprintf(f, "job %s: killed by signal %d\n", job->id, WTERMSIG(status)), fclose(f);
    }
    return st;
}

static const char *last_log_line(const char *run_dir, const char *id, char *buf, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/logs/%s.log", run_dir, id);
    char *text = study_read_file(path, NULL);
    buf[0] = 0;
    if (!text) return buf;
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') text[--len] = 0;
    char *nl = strrchr(text, '\n');
    snprintf(buf, n, "%s", nl ? nl + 1 : text);
    free(text);
    return buf;
}

static int run_jobs(const study_config *cfg, const char *run_dir, FILE *progress, char *msg,
                    size_t msg_n) {
    study_job *jobs = NULL;
    int n = study_plan(cfg, &jobs);
    if (n < 0) return snprintf(msg, msg_n, "out of memory planning the run"), 1;
    const char **ids = malloc((size_t)n * sizeof *ids);
    journal_entry *e = malloc((size_t)n * sizeof *e);
    char journal[4096];
    snprintf(journal, sizeof journal, "%s/journal.log", run_dir);
    int unknown = 0, failed = 0;
    if (!ids || !e) {
        snprintf(msg, msg_n, "out of memory planning the run");
        failed = 1;
        goto done;
    }
    for (int i = 0; i < n; i++) ids[i] = jobs[i].id;
    if (!journal_read(journal, ids, n, e, &unknown)) {
        snprintf(msg, msg_n, "cannot read %s: %s", journal, strerror(errno));
        failed = 1;
        goto done;
    }
    int finished = 0;
    for (int i = 0; i < n; i++) finished += e[i].state >= JOURNAL_OK;
    fprintf(progress, "study run %s: %d jobs, %d finished, %d to run\n", run_dir, n, finished,
            n - finished);
    const double t0 = now_s();
    study_manifest_write(run_dir, cfg, jobs, n);
    for (int i = 0; i < n; i++) {
        if (e[i].state >= JOURNAL_OK) continue;
        if (!journal_start(journal, jobs[i].id)) {
            snprintf(msg, msg_n, "cannot append to %s: %s", journal, strerror(errno));
            failed = 1;
            goto done;
        }
        fprintf(progress, "[%3d/%d] %-48s ", i + 1, n, jobs[i].id);
        fflush(progress);
        const double js = now_s();
        study_job_status st = run_one(cfg, &jobs[i], run_dir);
        const double secs = now_s() - js;
        journal_state js_state = st == JOB_OK ? JOURNAL_OK : st == JOB_UNAVAILABLE ? JOURNAL_UNAVAILABLE : JOURNAL_FAILED;
        if (!journal_done(journal, jobs[i].id, js_state, secs)) {
            snprintf(msg, msg_n, "cannot append to %s: %s", journal, strerror(errno));
            failed = 1;
            goto done;
        }
        rebuild_study(run_dir, jobs, n, jobs[i].study);
        study_manifest_write(run_dir, cfg, jobs, n);
        char why[512] = "";
        if (st != JOB_OK) last_log_line(run_dir, jobs[i].id, why, sizeof why);
        fprintf(progress, "%-11s %7.1f s  (run %.0f s)%s%s\n", journal_state_name(js_state), secs,
                now_s() - t0, why[0] ? "\n          " : "", why);
        fflush(progress);
        failed += st == JOB_FAILED;
    }
    if (failed) snprintf(msg, msg_n, "%d job(s) failed: their logs are in %s/logs/", failed, run_dir);
    else fprintf(progress, "study run %s: complete; results in %s/<study>/results.csv\n", run_dir, run_dir);
done:
    free(ids);
    free(e);
    free(jobs);
    return failed ? 1 : 0;
}

static bool make_dirs(const char *run_dir) {
    const char *sub[] = {"logs", "work/rows", "end_to_end/rows", "block/rows", "memory_staging/rows",
                         "memcpy_bandwidth/rows", "resource_use/rows", "host_comparison/rows",
                         "roofline/rows", "plots/rows"};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", run_dir, sub[i]);
        if (!study_mkdirs(p)) return false;
    }
    return true;
}

static void record_command(const char *run_dir, const char *command) {
    char path[4096], line[2048];
    snprintf(path, sizeof path, "%s/commands.log", run_dir);
    snprintf(line, sizeof line, "%lld %s\n", (long long)time(NULL), command);
    FILE *f = fopen(path, "a");
    if (f) fputs(line, f), fclose(f);
}

int study_run_start(const study_config *cfg, const char *run_dir, FILE *progress, char *msg,
                    size_t msg_n) {
    char conf[4096];
    snprintf(conf, sizeof conf, "%s/run.conf", run_dir);
    if (access(conf, F_OK) == 0)
        return snprintf(msg, msg_n, "%s already holds a run: continue it with `ferrum study "
                        "resume %s`, or give another --run-id", run_dir, run_dir), 1;
    if (!study_mkdirs(run_dir) || !make_dirs(run_dir))
        return snprintf(msg, msg_n, "cannot create %s: %s", run_dir, strerror(errno)), 1;
    char text[8192];
    study_config_format(cfg, text, sizeof text);
    if (!study_write_file(conf, text, strlen(text)))
        return snprintf(msg, msg_n, "cannot write %s: %s", conf, strerror(errno)), 1;
    record_command(run_dir, cfg->command);
    return run_jobs(cfg, run_dir, progress, msg, msg_n);
}

static bool load(const char *run_dir, study_config *cfg, char *msg, size_t msg_n) {
    char conf[4096];
    snprintf(conf, sizeof conf, "%s/run.conf", run_dir);
    char *text = study_read_file(conf, NULL);
    if (!text) {
        snprintf(msg, msg_n, "%s is not a study run: it has no run.conf (give the folder "
                 "`ferrum study quick` or `full` made, e.g. results/quick_20260101_120000)", run_dir);
        return false;
    }
    bool ok = study_config_parse(text, cfg, msg, msg_n);
    free(text);
    return ok;
}

int study_run_resume(const char *run_dir, const char *command, FILE *progress, char *msg,
                     size_t msg_n) {
    study_config cfg;
    if (!load(run_dir, &cfg, msg, msg_n)) return 1;
    if (!make_dirs(run_dir))
        return snprintf(msg, msg_n, "cannot create the folders of %s: %s", run_dir, strerror(errno)), 1;
    record_command(run_dir, command);
    return run_jobs(&cfg, run_dir, progress, msg, msg_n);
}

int study_run_status(const char *run_dir, FILE *out, char *msg, size_t msg_n) {
    study_config cfg;
    if (!load(run_dir, &cfg, msg, msg_n)) return 1;
    study_job *jobs = NULL;
    int n = study_plan(&cfg, &jobs);
    const char **ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
    journal_entry *e = n > 0 ? malloc((size_t)n * sizeof *e) : NULL;
    int unknown = 0, counts[5] = {0};
    char journal[4096];
    snprintf(journal, sizeof journal, "%s/journal.log", run_dir);
    if (!ids || !e) {
        free(jobs), free(ids), free(e);
        return snprintf(msg, msg_n, "out of memory"), 1;
    }
    for (int i = 0; i < n; i++) ids[i] = jobs[i].id;
    if (!journal_read(journal, ids, n, e, &unknown)) {
        free(jobs), free(ids), free(e);
        return snprintf(msg, msg_n, "cannot read %s", journal), 1;
    }
    double spent = 0;
    for (int i = 0; i < n; i++) {
        counts[e[i].state]++;
        spent += e[i].seconds;
        fprintf(out, "%-11s %8.1f s  %s%s\n", journal_state_name(e[i].state), e[i].seconds,
                jobs[i].id, e[i].state == JOURNAL_STARTED ? "  (interrupted: resume runs it again)" : "");
    }
    fprintf(out, "run %s (%s): %d jobs: %d ok, %d unavailable, %d failed, %d interrupted, %d "
            "pending; %.0f s in finished jobs%s\n", cfg.run_id, cfg.profile, n,
            counts[JOURNAL_OK], counts[JOURNAL_UNAVAILABLE], counts[JOURNAL_FAILED],
            counts[JOURNAL_STARTED], counts[JOURNAL_NONE], spent,
            counts[JOURNAL_OK] + counts[JOURNAL_UNAVAILABLE] + counts[JOURNAL_FAILED] == n
                ? "; complete" : "; `ferrum study resume` continues it");
    if (unknown) fprintf(out, "note: %d journal lines name no job of this plan\n", unknown);
    free(jobs), free(ids), free(e);
    return 0;
}
