/* fuzz/fuzz_study_files.c: libFuzzer target for the files `ferrum study` reads back: run.conf
 * (resume, status), journal.log (resume, status, the manifest) and results.csv (compare, the
 * staging and roofline jobs, plots). The first byte picks the parser, the rest is the file.
 * A run.conf that parses formats back to text that parses to the same configuration; a
 * journal's entries hold valid states; a table's rows have every field. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../apps/study/journal.h"
#include "../apps/study/plan.h"
#include "../apps/study/results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static const char *to_file(const uint8_t *data, size_t size) {
    if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz_study_files_%d", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) __builtin_trap();
    if (size && fwrite(data, 1, size, f) != size) __builtin_trap();
    fclose(f);
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int which = data[0] % 3;
    data++, size--;
    char msg[512];
    if (which == 0) {
        char *text = malloc(size + 1);
        memcpy(text, data, size);
        text[size] = 0;
        study_config c, back;
        if (study_config_parse(text, &c, msg, sizeof msg)) {
            if (c.n_families < 1 || c.n_seqs < 1 || c.reps < 1) __builtin_trap();
            char out[8192], again[8192];
            study_config_format(&c, out, sizeof out);
            if (!study_config_parse(out, &back, msg, sizeof msg)) __builtin_trap();
            study_config_format(&back, again, sizeof again);
            if (strcmp(out, again) != 0) __builtin_trap();
            study_job *jobs = NULL;
            int n = study_plan(&c, &jobs);
            for (int i = 0; i < n; i++)
                if (!jobs[i].id[0]) __builtin_trap();
            free(jobs);
        } else if (!msg[0]) {
            __builtin_trap();
        }
        free(text);
    } else if (which == 1) {
        const char *ids[3] = {"reference.bert.tiny_32.s16", "memcpy", "plots"};
        journal_entry e[3];
        int unknown = -1;
        if (!journal_read(to_file(data, size), ids, 3, e, &unknown)) __builtin_trap();
        for (int i = 0; i < 3; i++)
            if (e[i].state > JOURNAL_UNAVAILABLE || e[i].starts < 0) __builtin_trap();
        if (unknown < 0) __builtin_trap();
    } else {
        study_table t;
        if (study_table_load(to_file(data, size), &t, msg, sizeof msg)) {
            for (int i = 0; i < t.n; i++)
                for (int k = 0; k < STUDY_CSV_COLUMNS; k++)
                    if (!t.rows[i][k]) __builtin_trap();
            study_table_free(&t);
        } else if (!msg[0]) {
            __builtin_trap();
        }
    }
    return 0;
}
