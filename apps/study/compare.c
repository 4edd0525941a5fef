/* apps/study/compare.c: `ferrum study compare A B` (see compare.h). */
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results.h"

enum { C_STUDY = 1, C_JOB = 2, C_VARIANT = 7, C_METRIC = 8, C_UNIT = 9, C_BETTER = 10,
       C_MEDIAN = 11, C_P10 = 12, C_P90 = 13 };

static const char *const studies[] = {"end_to_end", "block", "memory_staging", "memcpy_bandwidth",
                                      "resource_use", "host_comparison", "roofline"};
enum { N_STUDIES = sizeof studies / sizeof studies[0] };

static bool same_row(char **a, char **b) {
    return !strcmp(a[C_STUDY], b[C_STUDY]) && !strcmp(a[C_JOB], b[C_JOB]) &&
           !strcmp(a[C_VARIANT], b[C_VARIANT]) && !strcmp(a[C_METRIC], b[C_METRIC]);
}

static double num(const char *s) { return *s ? atof(s) : NAN; }

/* loads every study's results.csv of a tree; false when none exists or one is malformed */
static bool load_tree(const char *dir, study_table *t, char *msg, size_t msg_n) {
    int found = 0;
    for (int s = 0; s < N_STUDIES; s++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/results.csv", dir, studies[s]);
        memset(&t[s], 0, sizeof t[s]);
        if (access(path, F_OK) != 0) continue;
        if (!study_table_load(path, &t[s], msg, msg_n)) return false;
        found++;
    }
    if (!found) {
        snprintf(msg, msg_n, "%s holds no <study>/results.csv: give a run folder that `ferrum "
                 "study quick` or `full` wrote (e.g. results/quick_20260101_120000)", dir);
        return false;
    }
    return true;
}

bool study_compare(const char *a_dir, const char *b_dir, double threshold, FILE *out, FILE *csv,
                   study_compare_counts *counts, char *msg, size_t msg_n) {
    study_table a[N_STUDIES], b[N_STUDIES];
    memset(counts, 0, sizeof *counts);
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    bool ok = load_tree(a_dir, a, msg, msg_n) && load_tree(b_dir, b, msg, msg_n);
    if (!ok) goto done;
    fprintf(out, "%-16s %-52s %-28s %-20s %12s %12s %8s  %s\n", "study", "job", "variant", "metric",
            "A", "B", "B/A", "verdict");
    if (csv) fprintf(csv, "study,job,variant,metric,unit,better,a_median,b_median,ratio,verdict\n");
    for (int s = 0; s < N_STUDIES; s++) {
        for (int i = 0; i < a[s].n; i++) {
            char **ra = a[s].rows[i], **rb = NULL;
            for (int j = 0; j < b[s].n && !rb; j++)
                if (same_row(ra, b[s].rows[j])) rb = b[s].rows[j];
            if (!rb) {
                counts->only_a++;
                fprintf(out, "%-16s %-52s %-28.28s %-20s %12s %12s %8s  only in A\n", ra[C_STUDY], ra[C_JOB],
                        ra[C_VARIANT], ra[C_METRIC], ra[C_MEDIAN], "-", "-");
                continue;
            }
            const double ma = num(ra[C_MEDIAN]), mb = num(rb[C_MEDIAN]);
            if (!(ma > 0) || isnan(mb)) continue; /* unavailable or zero: no ratio */
            counts->matched++;
            const double ratio = mb / ma;
            const bool lower = !strcmp(ra[C_BETTER], "lower"), info = !strcmp(ra[C_BETTER], "none");
            const double a10 = num(ra[C_P10]), a90 = num(ra[C_P90]), b10 = num(rb[C_P10]), b90 = num(rb[C_P90]);
            const bool spreads = !isnan(a10) && !isnan(a90) && !isnan(b10) && !isnan(b90);
            const bool worse = info ? false : lower ? ratio > 1 + threshold && (!spreads || b10 > a90)
                                     : ratio < 1 - threshold && (!spreads || b90 < a10);
            const bool better = info ? false : lower ? ratio < 1 - threshold && (!spreads || b90 < a10)
                                      : ratio > 1 + threshold && (!spreads || b10 > a90);
            const char *verdict = worse ? "REGRESSION" : better ? "improved" : info ? "(description)" : "same";
            counts->regressions += worse;
            counts->improvements += better;
            fprintf(out, "%-16s %-52s %-28.28s %-20s %12.5g %12.5g %8.3f  %s\n", ra[C_STUDY], ra[C_JOB],
                    ra[C_VARIANT], ra[C_METRIC], ma, mb, ratio, verdict);
            if (csv)
                fprintf(csv, "%s,%s,\"%s\",%s,%s,%s,%.6g,%.6g,%.6g,%s\n", ra[C_STUDY], ra[C_JOB], ra[C_VARIANT],
                        ra[C_METRIC], ra[C_UNIT], ra[C_BETTER], ma, mb, ratio, verdict);
        }
        for (int j = 0; j < b[s].n; j++) {
            bool in_a = false;
            for (int i = 0; i < a[s].n && !in_a; i++) in_a = same_row(a[s].rows[i], b[s].rows[j]);
            if (in_a) continue;
            counts->only_b++;
            char **rb = b[s].rows[j];
            fprintf(out, "%-16s %-52s %-28.28s %-20s %12s %12s %8s  only in B\n", rb[C_STUDY], rb[C_JOB],
                    rb[C_VARIANT], rb[C_METRIC], "-", rb[C_MEDIAN], "-");
        }
    }
    fprintf(out, "%d rows compared: %d regression(s), %d improvement(s) (threshold %.0f%% and "
            "beyond both p10..p90 spreads); %d only in A, %d only in B\n", counts->matched,
            counts->regressions, counts->improvements, threshold * 100, counts->only_a, counts->only_b);
done:
    for (int s = 0; s < N_STUDIES; s++) study_table_free(&a[s]), study_table_free(&b[s]);
    return ok;
}
