/* apps/ferrum/cli.c: subcommand dispatch, top-level --help and --version. */
#include "cli.h"

#include <string.h>

#include "ferrum/core.h"
#include "ferrum/device.h"

typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv, const fe_cli_io *io);
} command;

static const command commands[] = {
    {"generate", "generate text from a Llama-family model (GGUF, safetensors, random)", fe_cmd_generate},
    {"chat", "talk with a model, turn by turn, in its chat template", fe_cmd_chat},
    {"serve", "serve a model over HTTP with the OpenAI API (chat, completions, streaming)", fe_cmd_serve},
    {"info", "what a model is: format, dtypes, shapes, tokenizer, chat template", fe_cmd_info},
    {"tokenize", "text to token ids and pieces, or ids back to text (--detokenize)", fe_cmd_tokenize},
    {"embed", "embedding vectors of texts from a BERT-family encoder (all-MiniLM-L6-v2)", fe_cmd_embed},
    {"ops", "list the operator registry: params, tunables and their domains", fe_cmd_ops},
    {"tune", "measure an operator's settings, or tune a model's graph, on this machine", fe_cmd_tune},
    {"study", "the transformer-layer study: offload, runlist and hybrid layers, seven studies", fe_cmd_study},
    {"draw", "write example graphs as Graphviz DOT (and SVG)", fe_cmd_draw},
};

static void usage(FILE *f) {
    fprintf(f, "usage: ferrum [--version] [--help] COMMAND [ARGS]\n\n"
               "ferrum runs transformer language models as graphs of declared operators.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`ferrum COMMAND --help` describes a command.\n");
}

int fe_cli_main(int argc, char **argv, const fe_cli_io *io) {
    if (argc < 2) {
        usage(io->err);
        return FE_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(io->out);
        return FE_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        /* and the kernels this machine runs (as FERRUM_ISA and FERRUM_WORKERS leave them),
         * as llama.cpp's system info line gives its build's */
        fprintf(io->out, "ferrum %s\n", FE_VERSION);
        fe_device_options o = fe_device_options_default();
        o.pin = false;
        fe_device *dev = NULL;
        fe_error err;
        if (fe_device_create(&o, &dev, &err) != FE_OK) {
            fprintf(io->err, "ferrum: %s\n", err.message);
            return FE_EXIT_FAILURE;
        }
        char desc[512];
        fe_device_describe(dev, desc, sizeof desc);
        fprintf(io->out, "device: %s\n", desc);
        fe_device_destroy(dev);
        return FE_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1, io);
    fprintf(io->err, "ferrum: unknown command \"%s\"; `ferrum --help` lists the commands\n", cmd);
    return FE_EXIT_USAGE;
}
