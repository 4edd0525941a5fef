/* apps/study/compare.h: two result trees side by side. Every row of every study's
 * results.csv present in both trees (matched on study, job, variant and metric) gets the
 * ratio B / A of its medians. A row is a regression when it got worse (by its `better`
 * column) by more than `threshold` (a fraction) and beyond both spreads (B's p10..p90 clear
 * of A's, where both have them); an improvement likewise. A row whose `better` is none (a
 * description: workers, busy cores) is never flagged. */
#ifndef FE_STUDY_COMPARE_H
#define FE_STUDY_COMPARE_H

#include <stdbool.h>
#include <stdio.h>

typedef struct study_compare_counts {
    int matched, regressions, improvements, only_a, only_b;
} study_compare_counts;

/* Writes the table to out (and as CSV to csv when not NULL). false and msg when a tree has
 * no results.csv at all, or one that is not a study CSV. */
bool study_compare(const char *a_dir, const char *b_dir, double threshold, FILE *out, FILE *csv,
                   study_compare_counts *counts, char *msg, size_t msg_n);

#endif
