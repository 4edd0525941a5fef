/* apps/ferrum/main.c: the ferrum executable: hands argv to the CLI (cli.c). */
#include "cli.h"

int main(int argc, char **argv) {
    fe_cli_io io = {stdout, stderr, stdin};
    return fe_cli_main(argc, argv, &io);
}
