/* apps/ferrum/cmd_study.c: `ferrum study`: the transformer-layer study (apps/study, seed 004):
 * quick and full runs, resume, status and compare. The subcommands parse their options here
 * and hand the work to apps/study/runner.c and compare.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../study/compare.h"
#include "../study/runner.h"
#include "args.h"
#include "cli.h"
#include "ferrum/device.h"

static const char study_synopsis[] =
    "usage: ferrum study SUBCOMMAND [options]\n\n"
    "The transformer-layer study: one BERT encoder or GPT-2 decoder layer run three ways\n"
    "(offload: the host runs the layer and sends each GEMM to the device; runlist: one\n"
    "fine-grained graph, one dispatch, each_step beside it; hybrid: a few fused steps),\n"
    "measured by seven studies (block tuning, end to end, memory staging, host comparison\n"
    "with PyTorch, memcpy bandwidth, resource use, roofline). Output goes to\n"
    "results/<run-id>/: <study>/results.csv (columns in docs/study.md), plots/ (SVG, PNG),\n"
    "artifact_manifest.json, logs/ and a journal that lets a killed run resume.\n\n"
    "subcommands:\n"
    "  quick     21 jobs: baseline_768, BERT, seq 512, the 3 modes and every study (minutes)\n"
    "  full      the whole matrix: six families x seq 64..16384 (hours)\n"
    "  resume    continue a run from its journal: RUN is its folder or its run id\n"
    "  status    a run's progress: each job's state and time\n"
    "  compare   two runs side by side: B/A per case, regressions flagged\n\n"
    "`ferrum study SUBCOMMAND --help` describes each.\n";

static const char run_synopsis[] =
    "usage: ferrum study quick|full [options]\n\n"
    "Starts a study run in OUT/RUN_ID (default results/<profile>_<UTC date_time>). quick is\n"
    "baseline_768 (BERT) at 512 tokens: 21 jobs; full is the six families (BERT for tinybert\n"
    "and baseline, GPT-2 for the gpt2_* ones) at 64, 128, ... 16384 tokens. --family and\n"
    "--seq replace the profile's lists (tiny_32, a 32-wide layer, makes a run of seconds).\n"
    "Each job runs in its own process; a killed run continues with `ferrum study resume`.\n";

static const char resume_synopsis[] =
    "usage: ferrum study resume [options] RUN\n\n"
    "Continues the run in folder RUN (or OUT/RUN): jobs the journal shows finished are never\n"
    "run again; a job that was started and not finished (kill -9, a reboot) runs from its\n"
    "start. The configuration is the run's own run.conf.\n";

static const char status_synopsis[] =
    "usage: ferrum study status [options] RUN\n\n"
    "Prints each job of run RUN (folder, or OUT/RUN) with its state (pending, started and\n"
    "interrupted, ok, unavailable, failed) and time, then the counts.\n";

static const char compare_synopsis[] =
    "usage: ferrum study compare [options] A B\n\n"
    "Puts two result trees side by side: for every row both have (same study, job, variant\n"
    "and metric), the ratio B/A of the medians, flagged REGRESSION when B is worse (by the\n"
    "row's `better` column) by more than the threshold and beyond both p10..p90 spreads.\n";

/* RUN as given when it is a run folder, else OUT/RUN */
static void run_dir(const char *out, const char *run, char *buf, size_t n) {
    char conf[4200];
    snprintf(conf, sizeof conf, "%s/run.conf", run);
    if (access(conf, F_OK) == 0 || strchr(run, '/')) snprintf(buf, n, "%s", run);
    else snprintf(buf, n, "%s/%s", out, run);
}

static void join_argv(int argc, char **argv, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "ferrum study");
    for (int i = 0; i < argc && len < n; i++) len += (size_t)snprintf(buf + len, n - len, " %s", argv[i]);
}

static int cmd_run(int argc, char **argv, const fe_cli_io *io, bool full) {
    const char *out = "results", *run_id = NULL;
    int64_t workers = 0, reps = -1, seed = 1, tune_ms = 150;
    const char *families[STUDY_MAX_LIST], *seqs[STUDY_MAX_LIST];
    int n_families = 0, n_seqs = 0;
    const int cpus = fe_device_cpus_allowed();
    const arg_opt opts[] = {
        {"out", 'o', ARG_STRING, "DIR", "the results folder the run goes under", "results", .s = &out},
        {"run-id", 0, ARG_STRING, "ID", "the run's folder name", "<profile>_<YYYYmmdd_HHMMSS> (UTC)", .s = &run_id},
        {"workers", 't', ARG_INT, "N", "device workers (0: FERRUM_WORKERS, else one per allowed CPU)", "0",
         .lo = 0, .hi = cpus, .i = &workers},
        {"reps", 0, ARG_INT, "N", "timed repetitions per figure", "quick 10, full 10", .lo = 1, .hi = 10000, .i = &reps},
        {"tune-ms", 0, ARG_INT, "MS", "the block study's tuner budget per figure (ms)", "150",
         .lo = 1, .hi = 60000, .i = &tune_ms},
        {"seed", 0, ARG_INT, "N", "the weights' and inputs' seed", "1", .lo = 0, .hi = INT64_MAX, .i = &seed},
        {"family", 0, ARG_STRINGS, "NAME", "a family to run instead of the profile's (repeatable): "
         "tinybert_512, baseline_768, baseline_1024, gpt2_small_768, gpt2_medium_1024, gpt2_512, tiny_32",
         NULL, .strs = families, .count = &n_families, .max = STUDY_MAX_LIST},
        {"seq", 0, ARG_STRINGS, "N", "a sequence length instead of the profile's (repeatable), 1..16384",
         NULL, .strs = seqs, .count = &n_seqs, .max = STUDY_MAX_LIST},
    };
    arg_spec sp = {.cmd = full ? "study full" : "study quick", .synopsis = run_synopsis, .opts = opts,
                   .n_opts = sizeof opts / sizeof opts[0]};
    arg_result r = {0};
    int code = args_parse(&sp, argc, argv, &r, io->err);
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        return code;
    }
    study_config cfg;
    if (full) study_config_full(&cfg);
    else study_config_quick(&cfg);
    if (n_families) {
        cfg.n_families = 0;
        for (int i = 0; i < n_families; i++) {
            const study_family *f = study_family_find(families[i]);
            if (!f) {
                fprintf(io->err, "ferrum %s: no family \"%s\"; give one of tinybert_512, baseline_768, "
                        "baseline_1024, gpt2_small_768, gpt2_medium_1024, gpt2_512, tiny_32\n", sp.cmd, families[i]);
                return FE_EXIT_USAGE;
            }
            cfg.families[cfg.n_families++] = f;
        }
    }
    if (n_seqs) {
        cfg.n_seqs = 0;
        for (int i = 0; i < n_seqs; i++) {
            char *end;
            errno = 0;
            long long v = strtoll(seqs[i], &end, 10);
            if (errno || *end || v < 1 || v > STUDY_SEQ_MAX) {
                fprintf(io->err, "ferrum %s: --seq %s is not a sequence length; give an integer in 1..%d\n",
                        sp.cmd, seqs[i], STUDY_SEQ_MAX);
                return FE_EXIT_USAGE;
            }
            cfg.seqs[cfg.n_seqs++] = v;
        }
    }
    if (reps > 0) cfg.reps = (int)reps;
    cfg.workers = (int)workers;
    cfg.tune_ms = (int)tune_ms;
    cfg.seed = (unsigned long long)seed;
    if (run_id) {
        if (!*run_id || strchr(run_id, '/') || run_id[0] == '.') {
            fprintf(io->err, "ferrum %s: --run-id \"%s\" must be a plain folder name (no '/', not "
                    "starting with '.')\n", sp.cmd, run_id);
            return FE_EXIT_USAGE;
        }
        snprintf(cfg.run_id, sizeof cfg.run_id, "%s", run_id);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm);
        snprintf(cfg.run_id, sizeof cfg.run_id, "%s_%s", cfg.profile, stamp);
    }
    join_argv(argc, argv, cfg.command, sizeof cfg.command);
    char dir[4096], msg[1024] = "";
    snprintf(dir, sizeof dir, "%s/%s", out, cfg.run_id);
    int rc = study_run_start(&cfg, dir, io->out, msg, sizeof msg);
    if (rc) fprintf(io->err, "ferrum %s: %s\n", sp.cmd, msg);
    return rc ? FE_EXIT_FAILURE : FE_EXIT_OK;
}

static int cmd_resume_status(int argc, char **argv, const fe_cli_io *io, bool resume) {
    const char *out = "results", *pos[1];
    const arg_opt opts[] = {
        {"out", 'o', ARG_STRING, "DIR", "the results folder a bare run id is looked up in", "results", .s = &out},
    };
    arg_spec sp = {.cmd = resume ? "study resume" : "study status",
                   .synopsis = resume ? resume_synopsis : status_synopsis, .opts = opts, .n_opts = 1,
                   .max_positional = 1, .positional_what = "RUN"};
    arg_result r = {.positional = pos};
    int code = args_parse(&sp, argc, argv, &r, io->err);
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        return code;
    }
    if (r.n_positional != 1) {
        fprintf(io->err, "ferrum %s: give the run: its folder (results/quick_...) or its id\n", sp.cmd);
        return FE_EXIT_USAGE;
    }
    char dir[4096], msg[1024] = "", command[2048];
    run_dir(out, pos[0], dir, sizeof dir);
    join_argv(argc, argv, command, sizeof command);
    int rc = resume ? study_run_resume(dir, command, io->out, msg, sizeof msg)
                    : study_run_status(dir, io->out, msg, sizeof msg);
    if (rc) fprintf(io->err, "ferrum %s: %s\n", sp.cmd, msg);
    return rc ? FE_EXIT_FAILURE : FE_EXIT_OK;
}

static int cmd_compare(int argc, char **argv, const fe_cli_io *io) {
    const char *out = "results", *csv_path = NULL, *pos[2];
    double threshold = 5;
    bool fail = false;
    const arg_opt opts[] = {
        {"out", 'o', ARG_STRING, "DIR", "the results folder bare run ids are looked up in", "results", .s = &out},
        {"threshold", 0, ARG_FLOAT, "PCT", "a change smaller than this (percent) is never flagged", "5",
         .flo = 0, .fhi = 1000, .f = &threshold},
        {"csv", 0, ARG_STRING, "FILE", "also write the comparison as CSV to FILE", NULL, .s = &csv_path},
        {"fail-on-regression", 0, ARG_FLAG, NULL, "exit 1 when any row regressed", NULL, .flag = &fail},
    };
    arg_spec sp = {.cmd = "study compare", .synopsis = compare_synopsis, .opts = opts,
                   .n_opts = sizeof opts / sizeof opts[0], .max_positional = 2, .positional_what = "RUN"};
    arg_result r = {.positional = pos};
    int code = args_parse(&sp, argc, argv, &r, io->err);
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        return code;
    }
    if (r.n_positional != 2) {
        fprintf(io->err, "ferrum study compare: give two runs, A (the baseline) and B\n");
        return FE_EXIT_USAGE;
    }
    char a[4096], b[4096], msg[1024] = "";
    run_dir(out, pos[0], a, sizeof a);
    run_dir(out, pos[1], b, sizeof b);
    FILE *csv = NULL;
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        fprintf(io->err, "ferrum study compare: cannot write --csv %s: %s\n", csv_path, strerror(errno));
        return FE_EXIT_FAILURE;
    }
    study_compare_counts counts;
    bool ok = study_compare(a, b, threshold / 100, io->out, csv, &counts, msg, sizeof msg);
    if (csv) fclose(csv);
    if (!ok) {
        fprintf(io->err, "ferrum study compare: %s\n", msg);
        return FE_EXIT_FAILURE;
    }
    return fail && counts.regressions ? FE_EXIT_FAILURE : FE_EXIT_OK;
}

int fe_cmd_study(int argc, char **argv, const fe_cli_io *io) {
    if (argc < 2) {
        fputs(study_synopsis, io->err);
        return FE_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        fputs(study_synopsis, io->out);
        return FE_EXIT_OK;
    }
    if (!strcmp(sub, "quick") || !strcmp(sub, "full")) return cmd_run(argc - 1, argv + 1, io, !strcmp(sub, "full"));
    if (!strcmp(sub, "resume")) return cmd_resume_status(argc - 1, argv + 1, io, true);
    if (!strcmp(sub, "status")) return cmd_resume_status(argc - 1, argv + 1, io, false);
    if (!strcmp(sub, "compare")) return cmd_compare(argc - 1, argv + 1, io);
    fprintf(io->err, "ferrum study: no subcommand \"%s\"; give quick, full, resume, status or "
            "compare (`ferrum study --help`)\n", sub);
    return FE_EXIT_USAGE;
}
