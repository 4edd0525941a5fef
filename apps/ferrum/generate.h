/* apps/ferrum/generate.h: what `ferrum generate` was asked (cmd_generate.c parses it) and the
 * run (generate.c: load, prompt, stream, summarise, check). */
#ifndef FE_APPS_GENERATE_H
#define FE_APPS_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

typedef struct gen_args {
    const char *model, *tokenizer, *prompt, *prompt_file, *prompt_ids, *dtype;
    const char *system; /* --system: the chat's system prompt (NULL: the template's default) */
    const char *write_safetensors; /* a folder: write the weights there and stop */
    int64_t prompt_len, num_tokens, top_k, max_seq_len, chunk, check_determinism;
    double temperature, top_p;
    uint64_t seed, random_seed;
    bool random_weights, chat, each_step, check_accuracy, verbose, profile;
    int prefill_dot, decode_dot; /* fe_causal_options' */
} gen_args;

int fe_generate_run(const gen_args *a, const fe_cli_io *io);

#endif
