/* apps/ferrum/cli.h: the ferrum command line, git-style: `ferrum COMMAND [ARGS]`.
 * The entry point takes its streams so tests and the fuzzer can drive it. */
#ifndef FE_APPS_CLI_H
#define FE_APPS_CLI_H

#include <stdio.h>

enum { FE_EXIT_OK = 0, FE_EXIT_FAILURE = 1, FE_EXIT_USAGE = 2 };

typedef struct fe_cli_io {
    FILE *out, *err;
    FILE *in; /* what `chat` reads and `-f -` means (stdin in main.c); NULL: an empty input */
} fe_cli_io;

/* Runs the CLI on argv (argv[0] is the program name). Returns the exit code; never exits. */
int fe_cli_main(int argc, char **argv, const fe_cli_io *io);

/* Subcommands: argv[0] is the subcommand's name. */
int fe_cmd_ops(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_draw(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_generate(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_chat(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_info(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_tokenize(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_embed(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_tune(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_study(int argc, char **argv, const fe_cli_io *io);
int fe_cmd_serve(int argc, char **argv, const fe_cli_io *io);

#endif
