/* apps/study/plan.h: a run's configuration and its job list.
 *
 * A run is a directory (results/<run-id>/) holding run.conf (the configuration, key=value
 * lines, written once at start), journal.log, one folder per study and logs/. The job list
 * is a pure function of run.conf, so `resume` rebuilds exactly the list the run started
 * with. Job ids are stable names ("e2e.bert.baseline_768.s512.hybrid"). */
#ifndef FE_STUDY_PLAN_H
#define FE_STUDY_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "family.h"

typedef enum {
    JOB_REFERENCE = 0, /* the f32 reference output of a case, for the e2e jobs to validate */
    JOB_E2E,           /* end_to_end: a mode's latency, tok/s, GFLOP/s */
    JOB_BLOCK,         /* block: the tuner's sweep of one block's operator */
    JOB_STAGING,       /* memory_staging: the GEMM blocking depth sweep of one block */
    JOB_MEMCPY,        /* memcpy_bandwidth: sizes x workers */
    JOB_CEILINGS,      /* roofline: the compute and bandwidth ceilings */
    JOB_RESOURCE,      /* resource_use: one mode's resources */
    JOB_HOST,          /* host_comparison: PyTorch on the CPU, same weights and inputs */
    JOB_ROOFLINE,      /* roofline: the kernels' and the layers' points */
    JOB_PLOTS,         /* plots/: SVG and PNG of every study */
    JOB_MANIFEST,      /* artifact_manifest.json with the kernel designs */
    JOB_TYPE_COUNT
} study_job_type;

/* The block a block or staging job measures. */
typedef enum { BLK_QKV = 0, BLK_ATTENTION, BLK_ATTN_OUT, BLK_FFN_UP, BLK_FFN_DOWN, BLK_COUNT } study_block;
const char *study_block_name(study_block b); /* "qkv", "attention", "attn_out", ... */

typedef struct study_job {
    char id[128];
    study_job_type type;
    const char *study;       /* results folder: "end_to_end", ... ("" for reference) */
    const study_family *family;
    study_kind kind;
    int64_t seq;
    study_mode mode;
    study_block block;
} study_job;

enum { STUDY_MAX_LIST = 16 };

typedef struct study_config {
    char profile[16];         /* "quick" or "full" */
    char run_id[128];
    const study_family *families[STUDY_MAX_LIST];
    int n_families;
    int64_t seqs[STUDY_MAX_LIST];
    int n_seqs;
    int reps;                 /* timed repetitions per figure */
    int workers;              /* 0: the device's default */
    int tune_ms;              /* the tuner's budget per figure (fe_tune_options.budget_ms) */
    unsigned long long seed;
    char command[1024];       /* the command line that started the run */
} study_config;

/* The kind a family's layer is studied as: the gpt2_* families as GPT-2 decoders, the others
 * as BERT encoders. */
study_kind study_family_kind(const study_family *f);

/* The quick profile (baseline_768, BERT, seq 512) or the full matrix (six families, 64..16384). */
void study_config_quick(study_config *c);
void study_config_full(study_config *c);

/* run.conf text and back. parse: false and msg (the line and the rule) on a bad file. */
void study_config_format(const study_config *c, char *buf, size_t n);
bool study_config_parse(const char *text, study_config *c, char *msg, size_t msg_n);

/* The job list. *out is malloc'ed; caller frees. Returns the count (-1 on no memory). */
int study_plan(const study_config *c, study_job **out);

#endif
