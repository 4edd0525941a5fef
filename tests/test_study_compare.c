/* tests/test_study_compare.c: `ferrum study compare A B` on two tiny hand-written result
 * trees: the ratio B/A per row, a slower latency flagged REGRESSION, a higher GFLOP/s
 * "improved", a change inside the threshold or inside the spreads "same", rows in one tree
 * only listed as such, --fail-on-regression's exit code, --csv, and a tree that is not a
 * study's refused with a message. Also the CSV writer and splitter round-trip a quoted field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../apps/study/results.h"
#include "support/cli_run.h"

static struct {
    int code;
    char out[1 << 15], err[4096];
} res;

#define RUN(...) CLI_RUN_INTO(res.code, res.out, res.err, __VA_ARGS__)

static char root[256];

static void write_tree(const char *name, const char *rows) {
    char dir[400], path[500];
    snprintf(dir, sizeof dir, "%s/%s/end_to_end", root, name);
    assert_true(study_mkdirs(dir));
    snprintf(path, sizeof path, "%s/results.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n%s", STUDY_CSV_HEADER, rows);
    fclose(f);
}

#define ROW(job, metric, better, med, p10, p90)                                                  \
    "r,end_to_end," job ",baseline_768,bert,hybrid,512,," metric ",ms," better "," med "," p10 \
    "," p90 ",10,,,1,0,pass,unavailable: x,unavailable: x,\"a note, with a comma\"\n"

/* the line of `out` that has both words */
static const char *line_with(const char *out, const char *a, const char *b) {
    static char line[512];
    for (const char *p = out; *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        if (strstr(line, a) && strstr(line, b)) return line;
        p += n + (p[n] == '\n');
    }
    return NULL;
}

static void compare_flags_regressions_and_improvements(void **state) {
    (void)state;
    write_tree("A", ROW("e2e.one", "latency", "lower", "10", "9.5", "10.5")
                    ROW("e2e.one", "gflops", "higher", "100", "98", "102")
                    ROW("e2e.two", "latency", "lower", "10", "9", "11")
                    ROW("e2e.noisy", "latency", "lower", "10", "5", "20")
                    ROW("e2e.gone", "latency", "lower", "10", "9", "11")
                    ROW("e2e.one", "workers", "none", "2", "2", "2"));
    write_tree("B", ROW("e2e.one", "latency", "lower", "20", "19", "21")
                    ROW("e2e.one", "gflops", "higher", "130", "128", "132")
                    ROW("e2e.two", "latency", "lower", "10.3", "9.3", "11.3")
                    ROW("e2e.noisy", "latency", "lower", "14", "6", "25")
                    ROW("e2e.new", "latency", "lower", "10", "9", "11")
                    ROW("e2e.one", "workers", "none", "8", "8", "8"));
    char a[400], b[400], csv[400];
    snprintf(a, sizeof a, "%s/A", root);
    snprintf(b, sizeof b, "%s/B", root);
    snprintf(csv, sizeof csv, "%s/cmp.csv", root);
    RUN("study", "compare", a, b, "--csv", csv);
    if (res.code != 0) fail_msg("%s", res.err);
    const char *l = line_with(res.out, "e2e.one", "latency");
    assert_non_null(l);
    assert_non_null(strstr(l, "2.000"));
    assert_non_null(strstr(l, "REGRESSION"));
    l = line_with(res.out, "e2e.one", "gflops");
    assert_non_null(strstr(l, "1.300"));
    assert_non_null(strstr(l, "improved"));
    assert_non_null(strstr(line_with(res.out, "e2e.two", "latency"), "same"));   /* 3%: under 5% */
    assert_non_null(strstr(line_with(res.out, "e2e.noisy", "latency"), "same")); /* inside the spreads */
    assert_non_null(strstr(line_with(res.out, "e2e.gone", "latency"), "only in A"));
    assert_non_null(strstr(line_with(res.out, "e2e.new", "latency"), "only in B"));
    assert_non_null(strstr(line_with(res.out, "e2e.one", "workers"), "(description)")); /* never flagged */
    assert_non_null(strstr(res.out, "5 rows compared: 1 regression(s), 1 improvement(s)"));
    char *text = study_read_file(csv, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "end_to_end,e2e.one,\"\",latency,ms,lower,10,20,2,REGRESSION"));
    free(text);
    RUN("study", "compare", "--fail-on-regression", a, b);
    assert_int_equal(res.code, 1);
    RUN("study", "compare", "--fail-on-regression", a, a);
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "0 regression(s), 0 improvement(s)"));
    RUN("study", "compare", "--threshold", "200", a, b); /* nothing passes a 200% threshold */
    assert_non_null(strstr(res.out, "0 regression(s), 0 improvement(s)"));
}

static void compare_refuses_what_is_not_a_study_tree(void **state) {
    (void)state;
    char a[400], bad[400], path[500];
    snprintf(a, sizeof a, "%s/A", root);
    snprintf(bad, sizeof bad, "%s/bad/end_to_end", root);
    assert_true(study_mkdirs(bad));
    snprintf(path, sizeof path, "%s/results.csv", bad);
    FILE *f = fopen(path, "w");
    fputs("name,value\nx,1\n", f);
    fclose(f);
    snprintf(bad, sizeof bad, "%s/bad", root);
    RUN("study", "compare", a, bad);
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "Column contract"));
    RUN("study", "compare", a, root); /* no results.csv at all */
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "holds no"));
    RUN("study", "compare", a);
    assert_int_equal(res.code, 2);
}

static void rows_round_trip_through_the_csv(void **state) {
    (void)state;
    study_row r = study_row_blank();
    snprintf(r.variant, sizeof r.variant, "torch 2.1, 2 \"threads\"");
    snprintf(r.metric, sizeof r.metric, "latency");
    r.median = 1.5;
    r.seq = 512;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    study_row_write(f, "run", "end_to_end", "job", &r);
    fclose(f);
    char *fields[STUDY_CSV_COLUMNS];
    assert_int_equal(study_csv_split(buf, fields, STUDY_CSV_COLUMNS), STUDY_CSV_COLUMNS);
    assert_string_equal(fields[study_column("variant")], "torch 2.1, 2 \"threads\"");
    assert_string_equal(fields[study_column("median")], "1.5");
    assert_string_equal(fields[study_column("seq")], "512");
    assert_string_equal(fields[study_column("p10")], "");
    assert_string_equal(fields[study_column("validation")], "n/a");
    assert_int_equal(study_column("note"), STUDY_CSV_COLUMNS - 1);
    assert_int_equal(study_column("nope"), -1);
    free(buf);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/ferrum_test_compare_%d", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compare_flags_regressions_and_improvements),
        cmocka_unit_test(compare_refuses_what_is_not_a_study_tree),
        cmocka_unit_test(rows_round_trip_through_the_csv),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0 && !rc) rc = 1;
    return rc;
}
