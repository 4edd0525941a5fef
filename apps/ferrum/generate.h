/* apps/ferrum/generate.h: what `ferrum generate` was asked (cmd_generate.c parses it, and
 * checks everything that can be checked before a weight is read) and the run (generate.c:
 * load, prompt, stream, summarise, check). */
#ifndef FE_APPS_GENERATE_H
#define FE_APPS_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

enum { GEN_MAX_STOP = 8 };

typedef struct gen_args {
    const char *model, *tokenizer, *dtype;
    /* The prompt: text (from --prompt, or read by the parser from --prompt-file, "-" being
     * stdin; prompt_text is then owned by the parser's caller and freed by gen_args_deinit),
     * ids, or a random one of prompt_len ids (only where asked: --prompt-len). */
    const char *prompt, *prompt_file, *prompt_ids;
    char *prompt_text;
    const char *system; /* --system: the chat's system prompt (NULL: the template's default) */
    const char *write_safetensors; /* a folder: write the weights there and stop */
    const char *stop[GEN_MAX_STOP]; /* --stop STR, repeatable: stop strings */
    int n_stop;
    int64_t prompt_len;
    int64_t num_tokens; /* -n; -1: until the end of sequence or the cache is full */
    int64_t top_k, max_seq_len, chunk, check_determinism;
    int64_t threads;      /* -t; 0: the device's default (FERRUM_WORKERS, else the CPUs) */
    int64_t repeat_last_n; /* tokens the penalties look back over (default 64; -1: all) */
    double temperature, top_p, min_p;
    double repeat_penalty, presence_penalty, frequency_penalty; /* 1, 0, 0: off */
    uint64_t seed;
    bool seed_given; /* false: a random seed, printed so the run can be repeated */
    uint64_t random_seed;
    bool random_weights, chat, each_step, check_accuracy, verbose, profile;
    bool json; /* --json: text, ids and timings as one JSON object on stdout */
    int prefill_dot, decode_dot; /* fe_causal_options' */
} gen_args;

void gen_args_deinit(gen_args *a);
int fe_generate_run(const gen_args *a, const fe_cli_io *io);

#endif
