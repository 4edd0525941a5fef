/* apps/ferrum/generate_report.h: what `ferrum generate` says about a run (generate_report.c):
 * the summary line on stderr, the --json object on stdout, and the checks' results; and the
 * run's state that generate.c and it share. */
#ifndef FE_APPS_GENERATE_REPORT_H
#define FE_APPS_GENERATE_REPORT_H

#include "ferrum/lm.h"
#include "generate.h"

typedef struct gen_run {
    const gen_args *a;
    const fe_cli_io *io;
    fe_lm_model *m;
    fe_lm_session *s;
    fe_profile *profile;   /* the tuning profile (NULL: none); outlives s */
    fe_lm_model_info info;
    int32_t *ids;          /* the prompt */
    int64_t n_ids;
    bool ids_ours;         /* malloc'd here (else the library's: fe_lm_free) */
    fe_lm_sampling sampling;
    fe_lm_generate_result res;
    uint64_t t0, t_start;  /* the run's start, the generate's */
    uint64_t warmup_ns;    /* the warm-up's time (0: none), inside t_start - t0 */
    int write_errno;       /* a write to stdout failed (errno), 0 when none */
    cli_text text;         /* --json: the text generated */
    int32_t *out;          /* --json: the ids generated (malloc'd) */
    int64_t n_out, cap_out;
    float *logprobs;       /* --logprobs N: per id generated, its log-probability, then the N
                              top ids' (as floats: exact below 2^24) and log-probabilities */
} gen_run;

/* --json: keeps a token and its text; nonzero when out of memory. */
int gen_report_keep(gen_run *r, int32_t tok, const char *text, size_t len);
/* --json: the object on stdout; FE_EXIT_FAILURE when it cannot be written. */
int gen_report_json(gen_run *r);
/* The summary line on stderr: load, prompt, generation, and peak RSS with its parts. */
void gen_report_summary(const gen_run *r);
/* --check-accuracy, --check-determinism: on stderr. */
void gen_report_accuracy(gen_run *r);
void gen_report_determinism(gen_run *r);
void gen_report_deinit(gen_run *r);

#endif
