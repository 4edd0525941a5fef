/* apps/ferrum/render.c: see render.h. dot runs as a child process (posix_spawnp) the parent
 * polls and kills at the deadline: a graph Graphviz lays out slowly costs the user at most
 * the bound, never an unbounded wait (a 30-layer model once took ~8 minutes). */
#include "render.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ferrum/core.h"

extern char **environ;

int fe_render_svg(const char *dot_path, const char *svg_path, int timeout_s, const fe_cli_io *io) {
    char out_arg[1100];
    snprintf(out_arg, sizeof out_arg, "-o%s", svg_path);
    char *argv[] = {"dot", "-Tsvg", (char *)dot_path, out_arg, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    fflush(io->out);
    fprintf(io->err, "ferrum: rendering %s with Graphviz (at most %d s)...\n", svg_path, timeout_s);
    fflush(io->err);
    pid_t pid;
    int rc = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == ENOENT) {
        fprintf(io->err, "ferrum: Graphviz's dot is not installed, so no SVG (Debian: apt install "
                "graphviz); %s is written\n", dot_path);
        return FE_EXIT_OK;
    }
    if (rc != 0) {
        fprintf(io->err, "ferrum: cannot run Graphviz's dot: %s\n", strerror(rc));
        return FE_EXIT_FAILURE;
    }
    int status = 0;
    uint64_t t0 = fe_time_ns(), limit = (uint64_t)timeout_s * 1000000000ull;
    pid_t got;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && fe_time_ns() - t0 < limit)
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        remove(svg_path);
        fprintf(io->err, "ferrum: Graphviz did not finish %s within %d s, so it was stopped; "
                "%s is written (give --render-timeout S for longer, or --no-render)\n", svg_path,
                timeout_s, dot_path);
        return FE_EXIT_FAILURE;
    }
    if (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        remove(svg_path);
        fprintf(io->err, "ferrum: Graphviz's dot failed on %s (%s %d); %s is written\n", dot_path,
                got >= 0 && WIFSIGNALED(status) ? "signal" : "exit status",
                got >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), dot_path);
        return FE_EXIT_FAILURE;
    }
    fprintf(io->out, "%s\n", svg_path);
    return FE_EXIT_OK;
}

int fe_make_dirs(const char *dir) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
        *p = c;
        if (!c) break;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}
