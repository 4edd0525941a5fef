/* apps/ferrum/render.h: Graphviz's `dot` run on a DOT file with a time bound, and folders made
 * with their parents: what `ferrum draw` needs around the DOT the library writes. */
#ifndef FE_APPS_RENDER_H
#define FE_APPS_RENDER_H

#include "cli.h"

/* Renders dot_path to svg_path with `dot -Tsvg`, killing it after timeout_s seconds. Says on
 * io->err what it does ("rendering X with Graphviz (at most N s)..."), and whether dot is not
 * installed (FE_EXIT_OK: the DOT stands alone), failed or timed out (FE_EXIT_FAILURE, no SVG
 * left behind). Prints svg_path on io->out when it is made. */
int fe_render_svg(const char *dot_path, const char *svg_path, int timeout_s, const fe_cli_io *io);

/* mkdir -p: makes dir and its missing parents. Returns 0, or -1 with errno set. */
int fe_make_dirs(const char *dir);

#endif
