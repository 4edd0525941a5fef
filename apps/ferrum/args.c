/* apps/ferrum/args.c: the option parser and --help printer every subcommand shares (see
 * args.h). The table is the one truth: a range the parser enforces is the range help shows. */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { HELP_COL = 26, HELP_WIDTH = 80 };

void args_describe_value(const arg_opt *o, char *buf, size_t n) {
    size_t at = 0;
    switch (o->kind) {
    case ARG_FLAG: snprintf(buf, n, "no value"); break;
    case ARG_FLAG_VALUE:
        snprintf(buf, n, "no value, or =%s", o->metavar ? o->metavar : "VALUE");
        break;
    case ARG_INT:
        if (o->hi == INT64_MAX) snprintf(buf, n, "an integer >= %lld", (long long)o->lo);
        else snprintf(buf, n, "an integer in %lld..%lld", (long long)o->lo, (long long)o->hi);
        break;
    case ARG_FLOAT:
        snprintf(buf, n, "a number in %c%g, %g]", o->lo_open ? '(' : '[', o->flo, o->fhi);
        break;
    case ARG_CHOICE:
        at = (size_t)snprintf(buf, n, "one of");
        for (int c = 0; o->choices[c] && at < n; c++)
            at += (size_t)snprintf(buf + at, n - at, "%s %s", c ? "," : "", o->choices[c]);
        break;
    case ARG_STRING:
    case ARG_STRINGS:
        snprintf(buf, n, "%s%s", o->empty_ok ? "" : "a nonempty ", o->metavar ? o->metavar : "value");
        break;
    }
}

static const arg_opt *find_long(const arg_spec *sp, const char *name, size_t len) {
    for (int i = 0; i < sp->n_opts; i++)
        if (strlen(sp->opts[i].name) == len && strncmp(sp->opts[i].name, name, len) == 0)
            return &sp->opts[i];
    return NULL;
}

static const arg_opt *find_short(const arg_spec *sp, char c) {
    for (int i = 0; c && i < sp->n_opts; i++)
        if (sp->opts[i].short_name == c) return &sp->opts[i];
    return NULL;
}

/* "-x" or "--name": an option, not a value (negative numbers and "-" are values) */
static bool looks_like_option(const char *s) {
    if (s[0] != '-') return false;
    const char *p = s[1] == '-' ? s + 2 : s + 1;
    return (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
}

static bool store(const arg_opt *o, const char *v) {
    char *end;
    errno = 0;
    switch (o->kind) {
    case ARG_FLAG:
    case ARG_FLAG_VALUE: *o->flag = true; return true;
    case ARG_INT: {
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end || x < o->lo || x > o->hi) return false;
        *o->i = x;
        return true;
    }
    case ARG_FLOAT: {
        double x = strtod(v, &end);
        if (errno || end == v || *end || !(x <= o->fhi) || !(o->lo_open ? x > o->flo : x >= o->flo))
            return false;
        *o->f = x;
        return true;
    }
    case ARG_CHOICE:
        for (int c = 0; o->choices[c]; c++)
            if (strcmp(v, o->choices[c]) == 0) {
                if (o->s) *o->s = o->choices[c];
                if (o->i) *o->i = c;
                return true;
            }
        return false;
    case ARG_STRING:
        if (!*v && !o->empty_ok) return false;
        *o->s = v;
        return true;
    case ARG_STRINGS:
        if (!*v && !o->empty_ok) return false;
        o->strs[(*o->count)++] = v;
        return true;
    }
    return false;
}

__attribute__((format(printf, 3, 4)))
static int usage_error(const arg_spec *sp, FILE *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(err, "ferrum %s: ", sp->cmd);
    vfprintf(err, fmt, ap);
    fprintf(err, "\n");
    va_end(ap);
    return FE_EXIT_USAGE;
}

/* Applies one option; `spelled` is how the user wrote it ("-n", "--num-tokens"). *used_next
 * says the value was argv's next word. */
static int apply(const arg_spec *sp, const arg_opt *o, const char *spelled, const char *inline_v,
                 const char *next, bool *used_next, FILE *err) {
    char what[256], full[120]; /* full: "-n (--num-tokens)" where the user wrote -n */
    args_describe_value(o, what, sizeof what);
    if (spelled[1] != '-') snprintf(full, sizeof full, "%s (--%s)", spelled, o->name);
    else snprintf(full, sizeof full, "%s", spelled);
    *used_next = false;
    if (o->kind == ARG_FLAG) {
        if (inline_v) return usage_error(sp, err, "%s takes no value (got \"%s\")", spelled, inline_v);
        *o->flag = true;
        return FE_EXIT_OK;
    }
    if (o->kind == ARG_FLAG_VALUE) {
        if (inline_v && !*inline_v)
            return usage_error(sp, err, "%s= needs a value after the =: %s", spelled, what);
        *o->flag = true;
        if (inline_v) *o->s = inline_v;
        return FE_EXIT_OK;
    }
    const char *v = inline_v;
    if (!v) {
        if (!next)
            return usage_error(sp, err, "%s needs a value: %s", full, what);
        if (looks_like_option(next)) {
            return usage_error(sp, err, "%s needs a value; got the option %s (quote it, or use "
                               "%s=%s to mean the text)", spelled, next, spelled, next);
        }
        v = next;
        *used_next = true;
    }
    if (o->kind == ARG_STRINGS && *o->count >= o->max) {
        return usage_error(sp, err, "%s is given more than %d times; give it at most %d times",
                           spelled, o->max, o->max);
    }
    if (!store(o, v)) return usage_error(sp, err, "%s \"%s\" is not valid; give %s", full, v, what);
    return FE_EXIT_OK;
}

int args_parse(const arg_spec *sp, int argc, char **argv, arg_result *r, FILE *err) {
    r->help = false;
    r->n_positional = 0;
    bool options_end = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (options_end || a[0] != '-' || a[1] == '\0') {
            if (r->n_positional >= sp->max_positional) {
                if (sp->max_positional == 0)
                    return usage_error(sp, err, "takes no argument \"%s\"; `ferrum %s --help` "
                                       "describes it", a, sp->cmd);
                if (sp->max_positional == 1)
                    return usage_error(sp, err, "a second %s \"%s\"; give one", sp->positional_what, a);
                return usage_error(sp, err, "more than %d %s arguments (\"%s\"); give at most %d",
                                   sp->max_positional, sp->positional_what, a, sp->max_positional);
            }
            r->positional[r->n_positional++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_end = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            r->help = true;
            return FE_EXIT_OK;
        }
        const arg_opt *o;
        char spelled[80];
        const char *inline_v = NULL;
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            o = find_long(sp, a + 2, len);
            snprintf(spelled, sizeof spelled, "%.*s", (int)(len + 2), a);
            if (eq) inline_v = eq + 1;
        } else {
            o = find_short(sp, a[1]);
            snprintf(spelled, sizeof spelled, "-%c", a[1]);
            if (a[2]) inline_v = a[2] == '=' ? a + 3 : a + 2;
            if (o && (o->kind == ARG_FLAG || o->kind == ARG_FLAG_VALUE) && a[2]) o = NULL; /* no clusters: -hx is unknown */
        }
        if (!o)
            return usage_error(sp, err, "unknown option \"%s\"; `ferrum %s --help` lists them", a,
                               sp->cmd);
        bool used_next;
        int code = apply(sp, o, spelled, inline_v, next, &used_next, err);
        if (code != FE_EXIT_OK) return code;
        i += used_next;
    }
    return FE_EXIT_OK;
}

/* Writes `text` from column `col`, wrapped at HELP_WIDTH, continuing lines at HELP_COL. */
static void wrap(FILE *f, int col, const char *text) {
    const char *p = text;
    while (*p) {
        while (*p == ' ') p++;
        size_t w = strcspn(p, " ");
        if (col > HELP_COL && col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
    }
    fputc('\n', f);
}

static void add_note(char *note, size_t n, const char *a, const char *b) {
    size_t at = strlen(note);
    snprintf(note + at, n - at, "%s%s%s", at ? "; " : "", a, b);
}

void args_usage(const arg_spec *sp, FILE *f) {
    fprintf(f, "%s\noptions:\n", sp->synopsis);
    for (int i = 0; i < sp->n_opts; i++) {
        const arg_opt *o = &sp->opts[i];
        char head[96], metavar[64] = "";
        if (o->kind == ARG_CHOICE && !o->metavar) {
            size_t at = 0;
            for (int c = 0; o->choices[c] && at < sizeof metavar; c++)
                at += (size_t)snprintf(metavar + at, sizeof metavar - at, "%s%s", c ? "|" : "",
                                       o->choices[c]);
        } else if (o->kind == ARG_FLAG_VALUE) {
            snprintf(metavar, sizeof metavar, "[=%s]", o->metavar ? o->metavar : "VALUE");
        } else if (o->kind != ARG_FLAG) {
            snprintf(metavar, sizeof metavar, "%s", o->metavar ? o->metavar : "VALUE");
        }
        const char *sep = *metavar && o->kind != ARG_FLAG_VALUE ? " " : "";
        int n = o->short_name ? snprintf(head, sizeof head, "  -%c, --%s%s%s", o->short_name,
                                         o->name, sep, metavar)
                              : snprintf(head, sizeof head, "      --%s%s%s", o->name, sep,
                                         metavar);
        /* the help, then "(range; repeatable; default D)" from the table */
        char note[400] = "", text[1400];
        if (o->kind == ARG_INT || o->kind == ARG_FLOAT) args_describe_value(o, note, sizeof note);
        char times[48];
        snprintf(times, sizeof times, "repeatable, at most %d times", o->max);
        if (o->kind == ARG_STRINGS) add_note(note, sizeof note, times, "");
        if (o->def) add_note(note, sizeof note, "default ", o->def);
        snprintf(text, sizeof text, "%s%s%s%s", o->help, *note ? " (" : "", note, *note ? ")" : "");
        fputs(head, f);
        if (n >= HELP_COL - 1) {
            fprintf(f, "\n%*s", HELP_COL, "");
        } else {
            fprintf(f, "%*s", HELP_COL - n, "");
        }
        wrap(f, HELP_COL, text);
    }
    fprintf(f, "  -h, --help              print this help\n");
}
