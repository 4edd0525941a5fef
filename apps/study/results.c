/* apps/study/results.c: writing and splitting the study's CSV rows, and whole-file writes
 * (see results.h). */
#include "results.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

study_row study_row_blank(void) {
    study_row r;
    memset(&r, 0, sizeof r);
    r.median = r.p10 = r.p90 = r.flops = r.bytes = NAN;
    r.dispatches = -1;
    snprintf(r.power_w, sizeof r.power_w, "unavailable: not measured for this row");
    snprintf(r.energy_j, sizeof r.energy_j, "unavailable: not measured for this row");
    return r;
}

static void field(FILE *f, const char *s, bool last) {
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', f);
        for (const char *p = s; *p; p++) {
            if (*p == '"') fputc('"', f);
            fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static void num(FILE *f, double v) {
    if (isnan(v)) fputc(',', f);
    else fprintf(f, "%.6g,", v);
}

void study_row_write(FILE *f, const char *run_id, const char *study, const char *job,
                     const study_row *r) {
    char seq[24] = "";
    if (r->seq > 0) snprintf(seq, sizeof seq, "%lld", (long long)r->seq);
    field(f, run_id, false), field(f, study, false), field(f, job, false);
    field(f, r->family, false), field(f, r->kind, false), field(f, r->mode, false);
    field(f, seq, false), field(f, r->variant, false), field(f, r->metric, false);
    field(f, r->unit, false), field(f, r->descriptive ? "none" : r->lower_is_better ? "lower" : "higher", false);
    num(f, r->median), num(f, r->p10), num(f, r->p90);
    if (r->samples > 0) fprintf(f, "%d,", r->samples);
    else fputc(',', f);
    num(f, r->flops), num(f, r->bytes);
    if (r->dispatches >= 0) fprintf(f, "%d,", r->dispatches);
    else fputc(',', f);
    fprintf(f, "%d,", r->is_best ? 1 : 0);
    field(f, r->validation[0] ? r->validation : "n/a", false);
    field(f, r->power_w, false), field(f, r->energy_j, false), field(f, r->note, true);
}

int study_csv_split(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    while (n < max) {
        if (*p == '"') { /* quoted: "" is a quote */
            char *w = ++p;
            fields[n++] = w;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"') p++;
                *w++ = *p++;
            }
            if (*p == '"') p++;
            char *end = p;
            *w = 0;
            if (*end != ',') break;
            p = end + 1;
        } else {
            fields[n++] = p;
            char *c = strchr(p, ',');
            if (!c) break;
            *c = 0;
            p = c + 1;
        }
    }
    return n;
}

bool study_mkdirs(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, false;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(buf, 0777) == 0 || errno == EEXIST;
}

bool study_write_file(const char *path, const char *text, size_t n) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return false;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    bool ok = done == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return true;
    unlink(tmp);
    return false;
}

char *study_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *b2 = realloc(buf, cap *= 2);
            if (!b2) free(buf);
            buf = b2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[len] = 0;
    if (n) *n = len;
    return buf;
}

int study_column(const char *name) {
    static const char header[] = STUDY_CSV_HEADER;
    int col = 0;
    const size_t n = strlen(name);
    for (const char *p = header; *p; col++) {
        const size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return col;
        p += len;
        if (*p == ',') p++;
    }
    return -1;
}

bool study_table_load(const char *path, study_table *t, char *msg, size_t msg_n) {
    memset(t, 0, sizeof *t);
    t->text = study_read_file(path, NULL);
    if (!t->text) {
        snprintf(msg, msg_n, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    if (strncmp(t->text, STUDY_CSV_HEADER "\n", strlen(STUDY_CSV_HEADER) + 1) != 0) {
        snprintf(msg, msg_n, "%s does not start with the study's CSV header (docs/study.md, "
                 "\"Column contract\"): it is not a study results.csv", path);
        study_table_free(t);
        return false;
    }
    int lines = 0;
    for (const char *p = t->text; *p; p++) lines += *p == '\n';
    t->rows = malloc((size_t)(lines + 1) * sizeof *t->rows);
    if (!t->rows) {
        snprintf(msg, msg_n, "out of memory reading %s", path);
        study_table_free(t);
        return false;
    }
    char *line = strchr(t->text, '\n') + 1;
    while (*line) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (*line) {
            if (study_csv_split(line, t->rows[t->n], STUDY_CSV_COLUMNS) == STUDY_CSV_COLUMNS) t->n++;
            else t->bad++;
        }
        if (!nl) break;
        line = nl + 1;
    }
    return true;
}

void study_table_free(study_table *t) {
    free(t->text);
    free(t->rows);
    memset(t, 0, sizeof *t);
}
