/* apps/study/results.h: the study's long-form CSV, its column contract (docs/study.md), and
 * the small file helpers every study shares (whole-file writes by rename, directories).
 *
 * Every study writes the same columns, one row per measurement:
 *   run_id, study, job                      identity
 *   family, kind, mode, seq, variant        workload (variant: the block setting, staging
 *                                           depth, copy size x workers, ...)
 *   metric, unit, better                    what the row measures; better = lower|higher,
 *                                           or none for a description (workers, busy cores)
 *   median, p10, p90, samples               timing or value, and its spread
 *   flops, bytes, dispatches                work and device dispatches
 *   is_best                                 1 marks the best setting or a peak
 *   validation                              pass/fail against the reference, or n/a
 *   power_w, energy_j                       numbers, or "unavailable: <reason>"
 *   note                                    free text (a reason, a setting's resolution)
 * An empty numeric field means the measurement does not exist for that row (the note says
 * why). */
#ifndef FE_STUDY_RESULTS_H
#define FE_STUDY_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Messages, paths and CSV fields are cut to their fixed buffers on purpose (a message is
 * never worth an allocation failure): gcc's truncation warning is off in the study's files. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define STUDY_CSV_HEADER                                                                   \
    "run_id,study,job,family,kind,mode,seq,variant,metric,unit,better,median,p10,p90,"    \
    "samples,flops,bytes,dispatches,is_best,validation,power_w,energy_j,note"
enum { STUDY_CSV_COLUMNS = 23 };

typedef struct study_row {
    char family[32], kind[16], mode[32];
    int64_t seq;          /* 0: not a per-sequence row */
    char variant[128];
    char metric[48], unit[24];
    bool lower_is_better;
    bool descriptive;     /* better = none: compare reports it, never flags it */
    double median, p10, p90; /* NAN: absent */
    int samples;
    double flops, bytes;  /* NAN: absent */
    int dispatches;       /* < 0: absent */
    bool is_best;
    char validation[96];  /* "" is written as n/a */
    char power_w[192], energy_j[192];
    char note[320];
} study_row;

/* A row with every number absent and power/energy "unavailable: not measured for this row". */
study_row study_row_blank(void);

/* Writes one row (quoted where a field has a comma, quote or newline). */
void study_row_write(FILE *f, const char *run_id, const char *study, const char *job,
                     const study_row *r);

/* Splits one CSV line into at most max fields (quotes honoured), in place; returns the count. */
int study_csv_split(char *line, char **fields, int max);

/* A results.csv read whole: rows of STUDY_CSV_COLUMNS fields (the header skipped; lines of
 * another width are skipped and counted in bad). */
typedef struct study_table {
    char *text;
    char *(*rows)[STUDY_CSV_COLUMNS];
    int n, bad;
} study_table;
/* false when the file cannot be read or does not start with STUDY_CSV_HEADER (msg says). */
bool study_table_load(const char *path, study_table *t, char *msg, size_t msg_n);
void study_table_free(study_table *t);
/* column index of a header name; -1 when none */
int study_column(const char *name);

/* mkdir -p; false (and errno) on failure. */
bool study_mkdirs(const char *path);
/* Writes text to path whole: a temporary beside it, fsync, rename. */
bool study_write_file(const char *path, const char *text, size_t n);
/* The file's bytes, NUL-terminated; NULL when it cannot be read. Caller frees. */
char *study_read_file(const char *path, size_t *n);

#endif
