/* apps/study/journal.c: journal.log, appended and read (see journal.h). */
#include "journal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "results.h"

static const char *const names[] = {"pending", "started", "ok", "failed", "unavailable"};
const char *journal_state_name(journal_state s) { return s <= JOURNAL_UNAVAILABLE ? names[s] : "?"; }

static bool append(const char *path, const char *line) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return false;
    size_t n = strlen(line);
    bool ok = write(fd, line, n) == (ssize_t)n && fsync(fd) == 0;
    return close(fd) == 0 && ok;
}

bool journal_start(const char *path, const char *id) {
    char line[256];
    snprintf(line, sizeof line, "start %s %lld\n", id, (long long)time(NULL));
    return append(path, line);
}

bool journal_done(const char *path, const char *id, journal_state s, double seconds) {
    char line[256];
    snprintf(line, sizeof line, "done %s %s %.3f %lld\n", id, names[s], seconds,
             (long long)time(NULL));
    return append(path, line);
}

static int find(const char *const *ids, int n, const char *id) {
    for (int i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0) return i;
    return -1;
}

bool journal_read(const char *path, const char *const *ids, int n, journal_entry *entries,
                  int *unknown) {
    memset(entries, 0, (size_t)n * sizeof *entries);
    *unknown = 0;
    if (access(path, F_OK) != 0) return true;
    char *text = study_read_file(path, NULL);
    if (!text) return false;
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0; /* a last line without its newline was cut by a kill: never read */
        char verb[8], id[160], state[16];
        double secs = 0;
        long long when = 0;
        int got = sscanf(line, "%7s %159s", verb, id);
        if (got != 2) continue;
        int i = find(ids, n, id);
        if (i < 0) {
            (*unknown)++;
            continue;
        }
        if (!strcmp(verb, "start") && sscanf(line, "%*s %*s %lld", &when) == 1) {
            entries[i].starts++;
            entries[i].start_time = when;
            if (entries[i].state == JOURNAL_NONE) entries[i].state = JOURNAL_STARTED;
        } else if (!strcmp(verb, "done") &&
                   sscanf(line, "%*s %*s %15s %lf %lld", state, &secs, &when) == 3) {
            journal_state s = !strcmp(state, "ok")       ? JOURNAL_OK
                              : !strcmp(state, "failed") ? JOURNAL_FAILED
                                                         : JOURNAL_UNAVAILABLE;
            entries[i].state = s;
            entries[i].seconds = secs;
            entries[i].end_time = when;
        }
    }
    free(text);
    return true;
}
