/* apps/study/runner.h: running, resuming and reporting a study run (see plan.h for the run
 * directory and journal.h for the journal). */
#ifndef FE_STUDY_RUNNER_H
#define FE_STUDY_RUNNER_H

#include <stdio.h>

#include "plan.h"

/* Creates run_dir (refused when it holds a run: resume it, or give another --run-id), writes
 * run.conf and runs every job. Progress, one line a job, on `progress`. Returns 0 when every
 * job ended ok or unavailable, 1 when one failed or the run could not go on (msg says why). */
int study_run_start(const study_config *cfg, const char *run_dir, FILE *progress, char *msg,
                    size_t msg_n);
/* Continues a run from its journal: finished jobs are never run again, a job started and not
 * finished is run from its start. `command` is recorded in the manifest. */
int study_run_resume(const char *run_dir, const char *command, FILE *progress, char *msg,
                     size_t msg_n);
/* Writes the run's progress: each job's state, counts, time spent. 0, or 1 with msg. */
int study_run_status(const char *run_dir, FILE *out, char *msg, size_t msg_n);

#endif
