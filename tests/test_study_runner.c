/* tests/test_study_runner.c: `ferrum study`'s runner on a tiny layer (tiny_32, 16 tokens):
 * a run killed with SIGKILL in the middle resumes with nothing repeated or lost (every job
 * done once, none that finished before the kill started again, no duplicated rows), every
 * results.csv follows the column contract of docs/study.md, status reports the run, and bad
 * input (an unknown family, a folder that is no run, a second start in the same folder) is
 * refused with a message. Drives the CLI in-process; the killed run is a forked copy. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../apps/ferrum/cli.h"
#include "../apps/study/plan.h"
#include "../apps/study/results.h"
#include "support/cli_run.h"

static struct {
    int code;
    char out[1 << 16], err[8192];
} res;

#define RUN(...) CLI_RUN_INTO(res.code, res.out, res.err, __VA_ARGS__)

static char root[256];

static int count_lines(const char *path, const char *prefix, const char *id) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char verb[16], jid[200];
        if (sscanf(line, "%15s %199s", verb, jid) == 2 && !strcmp(verb, prefix) && (!id || !strcmp(jid, id))) n++;
    }
    fclose(f);
    return n;
}

/* the ids of the jobs the journal shows done */
static int done_ids(const char *journal, char ids[][200], int max) {
    FILE *f = fopen(journal, "r");
    int n = 0;
    char line[512];
    while (f && fgets(line, sizeof line, f) && n < max)
        if (sscanf(line, "done %199s", ids[n]) == 1) n++;
    if (f) fclose(f);
    return n;
}

static const char *const run_args[] = {"ferrum", "study", "quick", "--family", "tiny_32", "--seq", "16",
                                       "--reps", "2", "--tune-ms", "2", "--out", root, "--run-id", "r1"};

static void check_csv(const char *path, const char *study) {
    char msg[512];
    study_table t;
    if (!study_table_load(path, &t, msg, sizeof msg)) fail_msg("%s", msg);
    assert_int_equal(t.bad, 0);
    assert_true(t.n > 0);
    for (int i = 0; i < t.n; i++) {
        char **f = t.rows[i];
        assert_string_equal(f[study_column("run_id")], "r1");
        assert_string_equal(f[study_column("study")], study);
        const char *better = f[study_column("better")];
        assert_true(!strcmp(better, "lower") || !strcmp(better, "higher") || !strcmp(better, "none"));
        const char *best = f[study_column("is_best")];
        assert_true(!strcmp(best, "0") || !strcmp(best, "1"));
        const char *nums[] = {"seq", "median", "p10", "p90", "samples", "flops", "bytes", "dispatches"};
        for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
            const char *v = f[study_column(nums[k])];
            char *end;
            if (*v) {
                double d = strtod(v, &end);
                if (*end || !isfinite(d)) fail_msg("%s: %s = \"%s\" is not a number", path, nums[k], v);
            }
        }
        const char *med = f[study_column("median")], *p10 = f[study_column("p10")], *p90 = f[study_column("p90")];
        if (*med && *p10 && *p90) /* the spread brackets the median */
            assert_true(atof(p10) <= atof(med) * (1 + 1e-9) && atof(med) <= atof(p90) * (1 + 1e-9));
        if (!*med && strcmp(study, "host_comparison") == 0) /* an absent number says why */
            assert_non_null(strstr(f[study_column("note")], "unavailable: "));
        const char *power = f[study_column("power_w")];
        char *end;
        strtod(power, &end);
        assert_true(!strncmp(power, "unavailable: ", 13) || (*power && !*end));
        if (!strcmp(study, "end_to_end")) assert_memory_equal(f[study_column("validation")], "pass", 4);
        /* each row once: (job, variant, metric) unique */
        for (int j = 0; j < i; j++)
            if (!strcmp(t.rows[j][2], f[2]) && !strcmp(t.rows[j][7], f[7]) && !strcmp(t.rows[j][8], f[8]))
                fail_msg("%s: row %s / %s / %s twice", path, f[2], f[7], f[8]);
    }
    study_table_free(&t);
}

static void killed_run_resumes_with_nothing_repeated_or_lost(void **state) {
    (void)state;
    char journal[512], dir[512];
    snprintf(dir, sizeof dir, "%s/r1", root);
    snprintf(journal, sizeof journal, "%s/journal.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *null = fopen("/dev/null", "w");
        fe_cli_io io = {null, null, NULL};
        _exit(fe_cli_main((int)(sizeof run_args / sizeof run_args[0]), (char **)run_args, &io));
    }
    /* kill it once five jobs are done, in the middle of the block study */
    for (int waited = 0; count_lines(journal, "done", NULL) < 5; waited++) {
        if (waited > 6000) fail_msg("the run did not finish 5 jobs in 60 s");
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    char before[64][200];
    const int n_before = done_ids(journal, before, 64);
    assert_true(n_before >= 5 && n_before < 21);
    RUN("study", "status", dir);
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "21 jobs"));
    assert_non_null(strstr(res.out, "pending"));
    RUN("study", "resume", "--out", root, "r1");
    if (res.code != 0) fail_msg("resume: %s\n%s", res.err, res.out);
    char after[64][200];
    const int n_after = done_ids(journal, after, 64);
    assert_int_equal(n_after, 21); /* every job done exactly once */
    for (int i = 0; i < n_after; i++)
        for (int j = 0; j < i; j++) assert_string_not_equal(after[i], after[j]);
    for (int i = 0; i < n_before; i++) /* finished before the kill: never started again */
        assert_int_equal(count_lines(journal, "start", before[i]), 1);
    RUN("study", "status", dir);
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "complete"));
    RUN("study", "resume", dir); /* a finished run: nothing runs again */
    assert_int_equal(res.code, 0);
    assert_int_equal(count_lines(journal, "done", NULL), 21);

    const char *studies[] = {"end_to_end", "block", "memory_staging", "memcpy_bandwidth",
                             "resource_use", "host_comparison", "roofline"};
    for (size_t s = 0; s < sizeof studies / sizeof studies[0]; s++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s/results.csv", dir, studies[s]);
        check_csv(path, studies[s]);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/artifact_manifest.json", dir);
    char *manifest = study_read_file(path, NULL);
    assert_non_null(manifest);
    assert_non_null(strstr(manifest, "\"sha\""));
    assert_non_null(strstr(manifest, "\"designs\""));
    assert_null(strstr(manifest, "\"pending\""));
    free(manifest);
    snprintf(path, sizeof path, "%s/plots/roofline.png", dir);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/plots/end_to_end_latency_tiny_32.svg", dir);
    assert_int_equal(access(path, R_OK), 0);

    /* a second start in the same folder is refused, naming resume */
    CLI_RUN_INTO(res.code, res.out, res.err, "study", "quick", "--family", "tiny_32", "--seq", "16",
                 "--out", root, "--run-id", "r1");
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "resume"));
}

static void bad_input_is_refused_with_a_message(void **state) {
    (void)state;
    RUN("study", "quick", "--family", "nope", "--out", root);
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "baseline_768"));
    RUN("study", "quick", "--seq", "0", "--out", root);
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "1..16384"));
    RUN("study", "resume", root);
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "run.conf"));
    RUN("study", "nope");
    assert_int_equal(res.code, 2);
    RUN("study", "--help");
    assert_int_equal(res.code, 0);
    const char *subs[] = {"quick", "full", "resume", "status", "compare"};
    for (size_t i = 0; i < 5; i++) {
        RUN("study", subs[i], "--help");
        assert_int_equal(res.code, 0);
        assert_non_null(strstr(res.out, "usage: ferrum study"));
    }
}

static int index_of(const study_job *jobs, int n, study_job_type type) {
    for (int i = 0; i < n; i++)
        if (jobs[i].type == type) return i;
    return -1;
}

/* quick is the seed's 21 jobs; full is the matrix; ids are unique and every job comes after
 * the jobs whose files it reads */
static void plans_order_jobs_after_their_inputs(void **state) {
    (void)state;
    for (int full = 0; full < 2; full++) {
        study_config c;
        if (full) study_config_full(&c);
        else study_config_quick(&c);
        snprintf(c.run_id, sizeof c.run_id, "p");
        study_job *jobs = NULL;
        const int n = study_plan(&c, &jobs);
        /* per (family, seq): reference, 4 e2e, 3 resource, host; per family: 5 blocks, 2
         * staging; once: memcpy, ceilings, roofline, plots, manifest */
        assert_int_equal(n, full ? 6 * 9 * 9 + 6 * 7 + 5 : 21);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++) assert_string_not_equal(jobs[i].id, jobs[j].id);
        for (int i = 0; i < n; i++) {
            if (jobs[i].type == JOB_E2E || jobs[i].type == JOB_HOST) { /* its reference first */
                bool ref = false;
                for (int j = 0; j < i; j++)
                    ref = ref || (jobs[j].type == JOB_REFERENCE && jobs[j].family == jobs[i].family &&
                                  jobs[j].seq == jobs[i].seq);
                assert_true(ref);
            }
            if (jobs[i].type == JOB_STAGING) { /* its block sweep first */
                bool blk = false;
                for (int j = 0; j < i; j++)
                    blk = blk || (jobs[j].type == JOB_BLOCK && jobs[j].family == jobs[i].family &&
                                  jobs[j].block == jobs[i].block && jobs[j].seq == jobs[i].seq);
                assert_true(blk);
            }
        }
        const int roof = index_of(jobs, n, JOB_ROOFLINE);
        assert_true(index_of(jobs, n, JOB_CEILINGS) < roof);
        for (int i = 0; i < n; i++)
            if (jobs[i].type == JOB_E2E || jobs[i].type == JOB_BLOCK) assert_true(i < roof);
        assert_int_equal(index_of(jobs, n, JOB_PLOTS), n - 2);
        assert_int_equal(index_of(jobs, n, JOB_MANIFEST), n - 1);
        /* run.conf round-trips */
        char text[4096], msg[256];
        study_config back;
        study_config_format(&c, text, sizeof text);
        assert_true(study_config_parse(text, &back, msg, sizeof msg));
        assert_int_equal(back.n_families, c.n_families);
        assert_int_equal(back.n_seqs, c.n_seqs);
        free(jobs);
    }
    study_config bad;
    char msg[256];
    assert_false(study_config_parse("profile=quick\nfamilies=nope\n", &bad, msg, sizeof msg));
    assert_non_null(strstr(msg, "nope"));
    assert_false(study_config_parse("just words\n", &bad, msg, sizeof msg));
    assert_non_null(strstr(msg, "key=value"));
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/ferrum_test_study_%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_run_resumes_with_nothing_repeated_or_lost),
        cmocka_unit_test(bad_input_is_refused_with_a_message),
        cmocka_unit_test(plans_order_jobs_after_their_inputs),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}
