/* apps/ferrum/lm_args.h: what every command over a model shares (generate, chat, info,
 * tokenize), so each option reads, checks and helps the same way everywhere: which model and
 * how to open it (-m, --tokenizer, --random-weights, --dtype, -t) and how tokens are drawn
 * (--temperature ... --seed), each as entries of an args.h table; opening the model with
 * the same messages; and the small output helpers (a refusal naming the command, a failed
 * write to stdout as an error, JSON strings, a text file or stdin read whole). */
#ifndef FE_APPS_LM_ARGS_H
#define FE_APPS_LM_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "cli.h"
#include "ferrum/lm.h"

enum { MODEL_MAX_OPTS = 7, SAMPLING_MAX_OPTS = 9, TUNING_MAX_OPTS = 2, CLI_TEXT_MAX = 64 << 20 };

typedef struct model_args {
    const char *model;     /* MODEL: the positional argument or -m/--model */
    const char *tokenizer; /* --tokenizer FILE; NULL: the model's own */
    const char *dtype;     /* --dtype of the random weights: "bf16" or "f32" */
    bool random_weights;   /* --random-weights SEED was given */
    uint64_t random_seed;
    int64_t threads;       /* -t; 0: the device's default (FERRUM_WORKERS, else the CPUs) */
    bool mmap, no_mmap;    /* --mmap: weights read from the mapped file; --no-mmap: copied
                              into memory whatever is available; neither: copied when they fit */
    /* as parsed, before model_args_settle */
    const char *model_opt;
    int64_t random_opt;    /* -1: not given */
} model_args;

model_args model_args_default(void);
/* Writes the table entries -m/--model, --tokenizer, --random-weights, --dtype, --mmap,
 * --no-mmap and, when `threads`, -t/--threads (at most MODEL_MAX_OPTS) to t, pointing into a.
 * Returns the count. */
int model_options(model_args *a, bool threads, arg_opt *t);
/* After args_parse: MODEL from -m or the positional (`positional`, may be NULL; both must
 * agree), --random-weights, and -t against the CPUs this process may use. FE_EXIT_OK, or
 * FE_EXIT_USAGE after a line on err naming `cmd`, the rule and the fix. */
int model_args_settle(model_args *a, const char *positional, const char *cmd, FILE *err);
/* Opens the model (header_only: reads no weight byte and says nothing; else says what it
 * maps or draws; model_read_in then reads the mapped pages in). FE_EXIT_OK with *m set (the caller
 * closes it), or FE_EXIT_FAILURE after the reason on io->err. */
int model_open(const model_args *a, bool header_only, const char *cmd, const fe_cli_io *io,
               fe_lm_model **m);
/* Reads the model's weight pages in, with a progress line on io->err: after the checks that
 * need the model (the prompt against its tokenizer) and before the first prompt, which would
 * otherwise pay the page faults. */
void model_read_in(fe_lm_model *m, const fe_cli_io *io);

/* Which tuning profile the session compiles with: --tuning FILE, --no-tuning, else this
 * device's (${FERRUM_CACHE_HOME:-~/.cache/ferrum}/profiles/<device id>.json) when it exists. */
typedef struct tuning_args {
    const char *file; /* --tuning FILE */
    bool none;        /* --no-tuning */
} tuning_args;

/* Writes the table entries --tuning and --no-tuning (TUNING_MAX_OPTS) to t, pointing into a.
 * Returns the count. */
int tuning_options(tuning_args *a, arg_opt *t);
/* After args_parse, before the model loads: FE_EXIT_USAGE after a line naming cmd when both
 * are given, or when the --tuning file is not a profile (named, with the fixes). */
int tuning_settle(const tuning_args *a, const char *cmd, FILE *err);
/* The profile (*p; NULL: none; the caller fe_profile_destroy()s it after the session), and
 * the line "ferrum: tuning: PATH (N entries)" or "ferrum: tuning: none (...)" on io->err. A
 * profile that cannot be read or is malformed is an error naming the file and the fix
 * (FE_EXIT_USAGE), never a silent run without it. */
int tuning_load(const tuning_args *a, fe_lm_model *m, const char *cmd, const fe_cli_io *io,
                fe_profile **p);

/* The table entry --cache-type f32|f16 (the KV cache's dtype), pointing into *choice (-1:
 * not given); cache_type_of turns what was parsed into the session's option (default f16). */
arg_opt cache_type_option(int64_t *choice);
fe_lm_cache_type cache_type_of(int64_t choice);

/* Writes the table entries --temperature, --top-k, --top-p, --min-p, --repeat-penalty,
 * --repeat-last-n, --presence-penalty, --frequency-penalty and -s/--seed (at most
 * SAMPLING_MAX_OPTS) to t, pointing into *s and *seed (-1: none given; s's defaults are
 * fe_lm_sampling_default()'s). Returns the count. */
int sampling_options(fe_lm_sampling *s, int64_t *seed, arg_opt *t);
/* Without a given seed and with a temperature, draws one (under 2^53, the device sampler's
 * range) into s->seed and says it on err, so the run can be repeated. */
void sampling_choose_seed(fe_lm_sampling *s, bool seed_given, FILE *err);

/* Parses argv by sp (args_parse) into its table and positional[0..sp->max_positional).
 * -h/--help: prints the usage on io->out and sets *help. Returns FE_EXIT_OK (go on unless
 * *help), FE_EXIT_USAGE after saying what is wrong, or FE_EXIT_FAILURE when the help could
 * not be written. */
int cli_parse(const arg_spec *sp, int argc, char **argv, const char **positional,
              const fe_cli_io *io, bool *help);

/* "ferrum CMD: <message>" on err; returns FE_EXIT_USAGE. */
__attribute__((format(printf, 3, 4)))
int cli_refuse(FILE *err, const char *cmd, const char *fmt, ...);
/* "ferrum CMD: what: msg" on err; returns FE_EXIT_FAILURE. */
int cli_fail(FILE *err, const char *cmd, const char *what, const char *msg);
/* Flushes io->out: FE_EXIT_OK, or FE_EXIT_FAILURE saying the write failed (/dev/full). */
int cli_flush_out(const fe_cli_io *io, const char *cmd);
/* Reads the file at path ("-": `in`) whole into a new NUL-terminated *text (free()), at most
 * CLI_TEXT_MAX bytes. FE_EXIT_OK, or FE_EXIT_USAGE after a line naming cmd, the option `opt`
 * ("--prompt-file"), the path and the fix. */
int cli_read_text(const char *path, FILE *in, const char *cmd, const char *opt, char **text,
                  FILE *err);
/* "1,2,3" (the value of option `opt`) into a new array ids[0..*n) (free()), each id inside
 * the vocabulary, at least one. FE_EXIT_OK, or FE_EXIT_USAGE after a line naming cmd, opt, the
 * id at fault and the fix (*ids NULL). */
int cli_parse_ids(const char *s, int64_t vocab, const char *cmd, const char *opt, int32_t **ids,
                  size_t *n, FILE *err);

/* Text growing as it streams in: p[0..len) and a NUL (p NULL while empty); free(p). */
typedef struct cli_text {
    char *p;
    size_t len, cap;
} cli_text;
/* Appends s[0..n). Nonzero when out of memory (t unchanged). */
int cli_text_append(cli_text *t, const char *s, size_t n);

/* s[0..n) as a JSON string: escapes as JSON wants, bytes that are not UTF-8 as U+FFFD. */
void cli_json_string(FILE *f, const char *s, size_t n);
/* s[0..n) quoted for a person: UTF-8 characters as they are; \", \\, \n, \r, \t; any other
 * control byte and every byte that is not part of a whole UTF-8 character as \xNN (a token
 * holding half a character shows it: "\xe4"). */
void cli_quote_piece(FILE *f, const char *s, size_t n);
/* Whether s[0..n) is whole UTF-8 characters. */
bool cli_utf8_valid(const char *s, size_t n);

#endif
