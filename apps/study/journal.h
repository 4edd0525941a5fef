/* apps/study/journal.h: the run's journal, journal.log: one line per event, appended with a
 * single write() and fsync'ed before the run goes on:
 *   start <job-id> <unix-time>
 *   done <job-id> <ok|failed|unavailable> <seconds> <unix-time>
 * A job is finished when a done line names it; a job started and not done (the run was
 * killed, the machine rebooted) is run again from the start by `resume`; its earlier partial
 * output is never read, since a job's rows become visible only by a rename when it ends. A
 * last line cut short by a kill is ignored. */
#ifndef FE_STUDY_JOURNAL_H
#define FE_STUDY_JOURNAL_H

#include <stdbool.h>

typedef enum { JOURNAL_NONE = 0, JOURNAL_STARTED, JOURNAL_OK, JOURNAL_FAILED, JOURNAL_UNAVAILABLE } journal_state;

const char *journal_state_name(journal_state s); /* "pending", "started", "ok", ... */

typedef struct journal_entry {
    journal_state state;
    int starts;        /* start lines seen for the job */
    double seconds;    /* of the done line */
    long long start_time, end_time;
} journal_entry;

/* Reads path (absent: every job pending) into entries[i] for ids[i]. Lines naming no job of
 * the list are counted in *unknown (a run.conf edited after the start). false when the file
 * exists and cannot be read. */
bool journal_read(const char *path, const char *const *ids, int n, journal_entry *entries,
                  int *unknown);
/* Appends one line, durably. false on an I/O error. */
bool journal_start(const char *path, const char *id);
bool journal_done(const char *path, const char *id, journal_state s, double seconds);

#endif
