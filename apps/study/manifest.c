/* apps/study/manifest.c: artifact_manifest.json (see manifest.h), written with jansson. */
#include "manifest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"
#include "journal.h"
#include "results.h"

#ifndef STUDY_OPT
#define STUDY_OPT "unknown"
#endif
#ifndef STUDY_SAN
#define STUDY_SAN ""
#endif

/* the first line a command prints, or NULL */
static json_t *command_line(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    char buf[256] = "";
    char *got = fgets(buf, sizeof buf, p);
    int rc = pclose(p);
    if (!got || rc != 0) return NULL;
    buf[strcspn(buf, "\n")] = 0;
    return json_string(buf);
}

/* git sha of the tree this binary lives in (its folder's parent), else of the working
 * directory */
static json_t *git_info(void) {
    char exe[4096] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char dir[4096] = ".";
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(dir, sizeof dir, "%s/..", exe);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null || git rev-parse HEAD 2>/dev/null", dir);
    json_t *sha = command_line(cmd);
    snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | head -1", dir);
    json_t *dirty = command_line(cmd);
    json_t *g = json_object();
    json_object_set_new(g, "sha", sha ? sha : json_string("unavailable: not built from a git checkout"));
    json_object_set_new(g, "dirty", json_boolean(dirty != NULL));
    json_decref(dirty);
    return g;
}

static json_t *file_lines(const char *path) {
    json_t *a = json_array();
    char *text = study_read_file(path, NULL);
    if (!text) return a;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        json_array_append_new(a, json_string(line));
    free(text);
    return a;
}

void study_manifest_write(const char *run_dir, const study_config *cfg, const study_job *jobs,
                          int n) {
    char path[4096], journal[4096];
    json_t *m = json_object();
    json_object_set_new(m, "run_id", json_string(cfg->run_id));
    json_object_set_new(m, "profile", json_string(cfg->profile));
    json_object_set_new(m, "git", git_info());
#ifdef __VERSION__
    json_object_set_new(m, "compiler", json_string("cc " __VERSION__));
#endif
    json_object_set_new(m, "flags", json_string("-std=c11 " STUDY_OPT " -g -fvisibility=hidden "
                                                "-fPIC " STUDY_SAN " (the Makefile's CFLAGS_COMMON; "
                                                "kernels per ISA: scalar, avx2, avx512)"));
    snprintf(path, sizeof path, "%s/work/device.txt", run_dir);
    json_t *dev = file_lines(path);
    json_object_set_new(m, "device", json_array_size(dev) ? json_incref(json_array_get(dev, 0))
                                                          : json_string("pending: the manifest job records it"));
    json_decref(dev);
    json_object_set_new(m, "workers", cfg->workers ? json_integer(cfg->workers)
                                                   : json_string("default: FERRUM_WORKERS, else one per allowed CPU"));
    json_object_set_new(m, "seed", json_integer((json_int_t)cfg->seed));
    json_object_set_new(m, "reps", json_integer(cfg->reps));
    snprintf(path, sizeof path, "%s/work/designs.txt", run_dir);
    json_object_set_new(m, "designs", file_lines(path));
    snprintf(path, sizeof path, "%s/commands.log", run_dir);
    json_object_set_new(m, "commands", file_lines(path));
    snprintf(journal, sizeof journal, "%s/journal.log", run_dir);
    const char **ids = malloc((size_t)n * sizeof *ids);
    journal_entry *e = malloc((size_t)n * sizeof *e);
    int unknown = 0;
    json_t *js = json_array();
    long long first = 0, last = 0;
    if (ids && e) {
        for (int i = 0; i < n; i++) ids[i] = jobs[i].id;
        if (journal_read(journal, ids, n, e, &unknown))
            for (int i = 0; i < n; i++) {
                json_t *j = json_object();
                json_object_set_new(j, "id", json_string(jobs[i].id));
                json_object_set_new(j, "study", json_string(jobs[i].study));
                json_object_set_new(j, "status", json_string(journal_state_name(e[i].state)));
                json_object_set_new(j, "seconds", json_real(e[i].seconds));
                json_object_set_new(j, "attempts", json_integer(e[i].starts));
                if (e[i].start_time) json_object_set_new(j, "start", json_integer(e[i].start_time));
                if (e[i].end_time) json_object_set_new(j, "end", json_integer(e[i].end_time));
                char log[256];
                snprintf(log, sizeof log, "logs/%s.log", jobs[i].id);
                json_object_set_new(j, "log", json_string(log));
                json_array_append_new(js, j);
                if (e[i].start_time && (!first || e[i].start_time < first)) first = e[i].start_time;
                if (e[i].end_time > last) last = e[i].end_time;
            }
    }
    json_object_set_new(m, "start_time", first ? json_integer(first) : json_null());
    json_object_set_new(m, "end_time", last ? json_integer(last) : json_null());
    json_object_set_new(m, "jobs", js);
    char *text = json_dumps(m, JSON_INDENT(2));
    snprintf(path, sizeof path, "%s/artifact_manifest.json", run_dir);
    if (text) study_write_file(path, text, strlen(text));
    free(text);
    json_decref(m);
    free(ids);
    free(e);
}

/* the manifest job: the device line and the designs every resource job listed, in the files
 * study_manifest_write embeds */
study_job_status study_job_manifest(study_job_ctx *c) {
    char path[4096], desc[512];
    fe_device_describe(c->dev, desc, sizeof desc);
    study_path(c, path, sizeof path, "work/device.txt");
    char text[600];
    snprintf(text, sizeof text, "%s\n", desc);
    if (!study_write_file(path, text, strlen(text))) {
        snprintf(c->msg, sizeof c->msg, "cannot write %s", path);
        return JOB_FAILED;
    }
    /* the designs every resource job listed, in one file */
    char cmd[8400];
    study_path(c, path, sizeof path, "work");
    snprintf(cmd, sizeof cmd, "cat '%s'/designs.*.txt > '%s/designs.txt' 2>/dev/null; true", path, path);
    if (system(cmd) != 0) {
        snprintf(c->msg, sizeof c->msg, "cannot gather the designs under %s", path);
        return JOB_FAILED;
    }
    printf("device: %s\n", desc);
    return JOB_OK;
}
