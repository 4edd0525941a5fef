/* apps/ferrum/cmd_tune_model.h: `ferrum tune MODEL` (cmd_tune.c hands a command line that
 * names no operator to it). */
#ifndef FE_APPS_CMD_TUNE_MODEL_H
#define FE_APPS_CMD_TUNE_MODEL_H

#include "cli.h"

int fe_cmd_tune_model(int argc, char **argv, const fe_cli_io *io);

#endif
