/* apps/ferrum/args.h: one declarative option parser for every subcommand. A command lists
 * its options as a table (long name, optional short letter, kind, range or choices, help,
 * the default shown) with a pointer to where each value lands; the same table parses argv
 * and prints --help, so help shows every range and default the parser enforces.
 *
 * Accepted: `--opt value`, `--opt=value`, `-x value`, `-xvalue`, `--` (the rest are
 * positional), and -h/--help on every command. Refused, with the command's name: an unknown
 * option, a missing value (naming what the option needs), a value that looks like an option
 * (`--prompt --chat`; `--prompt=--chat` means the text), a bad value (naming the option,
 * the value and the valid range or choices), a value given to a flag. */
#ifndef FE_APPS_ARGS_H
#define FE_APPS_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum arg_kind {
    ARG_FLAG,    /* sets *flag */
    ARG_INT,     /* *i in lo..hi */
    ARG_FLOAT,   /* *f in [flo, fhi], or (flo, fhi] with lo_open */
    ARG_STRING,  /* *s = the argument (borrowed from argv); nonempty unless empty_ok */
    ARG_CHOICE,  /* one of choices: *s = the choice (borrowed from the table), *i = its index */
    ARG_STRINGS, /* repeatable: strs[(*count)++] = the argument, at most max times */
    ARG_FLAG_VALUE, /* sets *flag; a value only inline (--write-profile=FILE) sets *s, so a
                     * positional after it is never taken as its value */
} arg_kind;

typedef struct arg_opt {
    const char *name; /* long name without "--" */
    char short_name;  /* 0: none */
    arg_kind kind;
    const char *metavar; /* "N", "TEXT": what the value is, in help and errors */
    const char *help;    /* one paragraph; wrapped to the terminal's 80 columns */
    const char *def;     /* the default, shown in help (NULL: none shown) */
    int64_t lo, hi;
    double flo, fhi;
    bool lo_open, empty_ok;
    const char *const *choices; /* ARG_CHOICE: NULL-terminated */
    bool *flag;
    int64_t *i;
    double *f;
    const char **s;
    const char **strs;
    int *count, max;
} arg_opt;

typedef struct arg_spec {
    const char *cmd;      /* "generate": messages read "ferrum generate: ..." */
    const char *synopsis; /* the usage line(s) and description, printed before the options */
    const arg_opt *opts;
    int n_opts;
    int max_positional; /* positional arguments accepted (MODEL, GRAPH...) */
    const char *positional_what; /* "MODEL": named when there are too many */
} arg_spec;

typedef struct arg_result {
    bool help;               /* -h/--help was given: print args_usage and stop */
    const char **positional; /* caller's array of max_positional entries */
    int n_positional;
} arg_result;

/* Parses argv[1..argc-1] (argv[0] is the command's name) into the table's destinations,
 * which the caller has set to their defaults. Returns FE_EXIT_OK, or FE_EXIT_USAGE after
 * printing one line on err saying what is wrong and how to fix it. */
int args_parse(const arg_spec *spec, int argc, char **argv, arg_result *r, FILE *err);

/* The synopsis, then each option with its short letter, value, help, range and default. */
void args_usage(const arg_spec *spec, FILE *out);

/* Writes what a value of o must be ("an integer in -1..1048576", "one of f32, bf16"). */
void args_describe_value(const arg_opt *o, char *buf, size_t n);

#endif
