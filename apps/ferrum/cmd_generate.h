/* apps/ferrum/cmd_generate.h: `ferrum generate`'s parser, apart from its run so tests can
 * read what an argv parses to. */
#ifndef FE_APPS_CMD_GENERATE_H
#define FE_APPS_CMD_GENERATE_H

#include "generate.h"

/* Parses `ferrum generate`'s argv (argv[0] is "generate") into *a, defaults first, and checks
 * all that needs no model: values and their ranges, which options go together, -t against the
 * CPUs this process may use, and reads --prompt-file ("-": stdin) into a->prompt_text.
 * Returns FE_EXIT_OK (*help set when -h/--help was given: print generate_usage and stop), or
 * FE_EXIT_USAGE after saying what is wrong on err. Either way the caller gen_args_deinit()s a. */
int fe_generate_parse(int argc, char **argv, gen_args *a, bool *help, FILE *err);
void fe_generate_usage(FILE *out);

#endif
