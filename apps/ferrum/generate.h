/* apps/ferrum/generate.h: what `ferrum generate` was asked (cmd_generate.c parses it, and
 * checks everything that can be checked before a weight is read) and the run (generate.c:
 * load, prompt, stream, summarise, check). */
#ifndef FE_APPS_GENERATE_H
#define FE_APPS_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "ferrum/lm.h"
#include "lm_args.h"

enum { GEN_MAX_STOP = 8 };

typedef struct gen_args {
    model_args open; /* the model and how to open it (lm_args.h) */
    tuning_args tuning; /* --tuning FILE, --no-tuning (lm_args.h) */
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
    int64_t max_seq_len, chunk, check_determinism;
    fe_lm_sampling sampling; /* as asked; its seed is --seed's when seed_given */
    bool seed_given; /* false: a random seed, printed so the run can be repeated */
    bool chat, each_step, check_accuracy, verbose, profile;
    bool no_warmup; /* --no-warmup: no one-token prefill before the timed run */
    bool json; /* --json: text, ids and timings as one JSON object on stdout */
    int64_t logprobs; /* --logprobs N (with --json): each token's log-probability and the N
                         most likely tokens'; -1: none */
    fe_lm_prefill_dot prefill_dot;
    fe_lm_decode_dot decode_dot;
    fe_lm_cache_type cache_type;
} gen_args;

void gen_args_deinit(gen_args *a);
int fe_generate_run(const gen_args *a, const fe_cli_io *io);

#endif
