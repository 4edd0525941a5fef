/* apps/ferrum/cmd_generate.c: `ferrum generate`: its options as one table (args.h), checked
 * strictly and all before a weight is read (a bad value names the option, the value and its
 * range; --prompt-file is read here); the model, threads and sampling options are the ones
 * every command shares (lm_args.h); the work is in generate.c. */
#include "cmd_generate.h"

#include <stdlib.h>
#include <string.h>

#include "args.h"

static const char *const prefill_dots[] = {"bf16", "f32", "int8", NULL};
static const char *const decode_dots[] = {"int8", "f32", NULL};

/* Where the options land before they are checked and moved into gen_args. */
typedef struct gen_parse {
    gen_args *a;
    int64_t seed, prefill_dot, decode_dot, cache_type;
} gen_parse;

#define INT(n, sh, mv, field, l, h, d, text) \
    {n, sh, ARG_INT, mv, text, d, .lo = l, .hi = h, .i = field}
#define STRING(n, sh, mv, field, text) {n, sh, ARG_STRING, mv, text, NULL, .s = field}
#define FLAG(n, field, text) {n, 0, ARG_FLAG, NULL, text, NULL, .flag = field}

/* The table, pointing into p. Returns its length. */
static int generate_options(gen_parse *p, arg_opt *t) {
    gen_args *a = p->a;
    const arg_opt opts[] = {
        STRING("prompt", 'p', "TEXT", &a->prompt, "the prompt"),
        STRING("prompt-file", 'f', "F", &a->prompt_file,
               "the prompt, read from file F (- for stdin) before the model loads"),
        STRING("prompt-ids", 0, "1,2,3", &a->prompt_ids, "the prompt as token ids"),
        INT("prompt-len", 0, "N", &a->prompt_len, 1, 1 << 20, NULL,
            "a random prompt of N ids (a model without a tokenizer draws 16 when no prompt is "
            "given)"),
        FLAG("chat", &a->chat,
             "wrap the prompt in the model's chat template (from the GGUF, or "
             "tokenizer_config.json beside the checkpoint or --tokenizer); ferrum knows ChatML, "
             "Llama 3 and Gemma and says so when the template is another (the prompt is then used "
             "as it is)"),
        {"system", 0, ARG_STRING, "TEXT", "the chat's system prompt (default: the template's "
         "own, if it has one; \"\" for none)", NULL, .empty_ok = true, .s = &a->system},
        INT("num-tokens", 'n', "N", &a->num_tokens, -1, 1 << 20, "64",
            "tokens to generate; -1: until the end of sequence or the cache is full"),
        {"stop", 0, ARG_STRINGS, "STR", "stop when the text generated contains STR", NULL,
         .strs = a->stop, .count = &a->n_stop, .max = GEN_MAX_STOP},
        INT("max-seq-len", 'c', "N", &a->max_seq_len, 1, 1 << 24,
            "the prompt plus -n, rounded up to 256 (-n -1: 4096); at most the model's context",
            "the context: KV cache rows"),
        INT("chunk", 0, "N", &a->chunk, 1, 1 << 16, "512, at most the context",
            "prompt rows per prefill call: smaller takes less scratch memory, larger amortises "
            "more (each call reads every weight once)"),
        FLAG("each-step", &a->each_step, "one dispatch per step instead of one per call"),
        FLAG("no-warmup", &a->no_warmup, "skip the warm-up (one token through the model before "
             "the prompt, as llama.cpp's warm-up run, so that the prompt's time is not its first "
             "touch of the weights and buffers)"),
        STRING("write-safetensors", 0, "DIR",
               &a->write_safetensors, "write the weights (drawn with --random-weights, or loaded "
               "in f32/bf16/f16) to DIR as a Hugging Face folder (model.safetensors, "
               "config.json) and stop"),
        FLAG("check-accuracy", &a->check_accuracy,
             "teacher-forced KL of the model against the float32 oracle"),
        INT("check-determinism", 0, "N", &a->check_determinism, 1, 1000, NULL,
            "N alternated runs of two prompts, logits compared as bytes"),
        FLAG("json", &a->json, "print the text, ids and timings as one JSON object on stdout"),
        INT("logprobs", 0, "N", &a->logprobs, 0, FE_LM_MAX_TOP_LOGPROBS, NULL,
            "with --json, each generated token's log-probability (the log-softmax of the logits "
            "it was drawn from, before penalties and temperature) and the N most likely tokens'"),
        FLAG("verbose", &a->verbose, "print the graph's packaging and per-call values"),
        {"prefill-dot", 0, ARG_CHOICE, NULL,
         "prefill dot products: bf16 rounds the activations to bf16, and block matrices' "
         "values too (bf16 dot products: ~1.7x f32 where the CPU has AVX512_BF16, as llama.cpp "
         "does; AMX-BF16 tiles where it has them), int8 (over block matrices) quantises the "
         "activations per block and sums exact integer products (as llama.cpp's Q8 "
         "activations), f32 is exact",
         "bf16 over bf16 matrices; over block ones bf16 where the CPU has AMX-BF16 tiles "
         "(faster and nearer the f32 logits than int8), else int8",
         .choices = prefill_dots, .i = &p->prefill_dot},
        {"decode-dot", 0, ARG_CHOICE, NULL,
         "GEMV dot products over block matrices (q8_0 .. q6_k): int8 quantises the activations "
         "per block (q8_K's 256 for q4_k/q6_k) with exact integer sums (as llama.cpp does), f32 is exact", "int8",
         .choices = decode_dots, .i = &p->decode_dot},
        cache_type_option(&p->cache_type),
        FLAG("profile", &a->profile, "time every step; print where a prefill chunk and a "
             "decode step spend their time, by operator and weight"),
    };
    int n = model_options(&a->open, true, t);
    memcpy(t + n, opts, sizeof opts);
    n += (int)(sizeof opts / sizeof opts[0]);
    n += tuning_options(&a->tuning, t + n);
    return n + sampling_options(&a->sampling, &p->seed, t + n);
}

enum { MAX_GEN_OPTS = 32 + MODEL_MAX_OPTS + SAMPLING_MAX_OPTS + TUNING_MAX_OPTS };

static const char synopsis[] =
    "usage: ferrum generate MODEL [options]\n\n"
    "Generates text from a Llama-family model. MODEL is a GGUF file, or a Hugging Face\n"
    "checkpoint: a folder with config.json and model.safetensors (or a sharded\n"
    "model.safetensors.index.json), or one .safetensors file with config.json beside it\n"
    "(tokenizer.json from the same folder when present). Without a tokenizer the prompt is\n"
    "given as ids or drawn at random, and the output is printed as ids. Every option is\n"
    "checked before the model loads.\n";

static arg_spec generate_spec(gen_parse *p, arg_opt *t) {
    return (arg_spec){.cmd = "generate", .synopsis = synopsis, .opts = t,
                      .n_opts = generate_options(p, t), .max_positional = 1,
                      .positional_what = "MODEL"};
}

void fe_generate_usage(FILE *out) {
    gen_args a = {0};
    gen_parse p = {.a = &a};
    arg_opt t[MAX_GEN_OPTS];
    arg_spec sp = generate_spec(&p, t);
    args_usage(&sp, out);
}

static int refuse(FILE *err, const char *msg) { return cli_refuse(err, "generate", "%s", msg); }

/* The checks across options: all before a weight is read. */
static int check(gen_args *a, FILE *err) {
    int prompts = !!a->prompt + !!a->prompt_file + !!a->prompt_ids + (a->prompt_len > 0);
    if (prompts > 1) return refuse(err, "give one of --prompt, --prompt-file, --prompt-ids, --prompt-len");
    if (a->system && !a->chat) return refuse(err, "--system is the chat's system prompt; give --chat too");
    if (a->logprobs >= 0 && !a->json) return refuse(err, "--logprobs is written into the --json object; give --json too");
    if (a->write_safetensors && (prompts || a->chat || a->check_accuracy || a->check_determinism))
        return refuse(err, "--write-safetensors writes the weights and stops; it takes no prompt, "
                      "--chat or checks");
    if (a->prompt_ids) { /* its form now; the vocabulary's bound is the run's (it needs the model) */
        int32_t *ids;
        size_t n;
        if (cli_parse_ids(a->prompt_ids, INT32_MAX, "generate", "--prompt-ids", &ids, &n, err) != FE_EXIT_OK)
            return FE_EXIT_USAGE;
        free(ids);
    }
    if (a->prompt_file)
        return cli_read_text(a->prompt_file, stdin, "generate", "--prompt-file", &a->prompt_text, err);
    return FE_EXIT_OK;
}

int fe_generate_parse(int argc, char **argv, gen_args *a, bool *help, FILE *err) {
    *a = (gen_args){.open = model_args_default(), .num_tokens = 64, .logprobs = -1,
                    .sampling = fe_lm_sampling_default()};
    gen_parse p = {.a = a, .seed = -1, .prefill_dot = -1, .decode_dot = -1, .cache_type = -1};
    arg_opt t[MAX_GEN_OPTS];
    arg_spec sp = generate_spec(&p, t);
    const char *pos[1] = {NULL};
    arg_result r = {.positional = pos};
    int code = args_parse(&sp, argc, argv, &r, err);
    *help = r.help;
    if (code != FE_EXIT_OK || r.help) return code;
    if ((code = model_args_settle(&a->open, pos[0], "generate", err)) != FE_EXIT_OK) return code;
    if ((code = tuning_settle(&a->tuning, "generate", err)) != FE_EXIT_OK) return code;
    a->seed_given = p.seed >= 0;
    a->sampling.seed = p.seed >= 0 ? (uint64_t)p.seed : 0;
    a->prefill_dot = p.prefill_dot < 0 ? FE_LM_PREFILL_DOT_AUTO
                     : p.prefill_dot == 1 ? FE_LM_PREFILL_DOT_F32
                     : p.prefill_dot == 2 ? FE_LM_PREFILL_DOT_INT8
                                          : FE_LM_PREFILL_DOT_BF16;
    a->decode_dot = p.decode_dot == 1 ? FE_LM_DECODE_DOT_F32 : FE_LM_DECODE_DOT_AUTO;
    a->cache_type = cache_type_of(p.cache_type);
    return check(a, err);
}

int fe_cmd_generate(int argc, char **argv, const fe_cli_io *io) {
    gen_args a;
    bool help;
    int code = fe_generate_parse(argc, argv, &a, &help, io->err);
    if (code == FE_EXIT_OK && help) fe_generate_usage(io->out);
    else if (code == FE_EXIT_OK) code = fe_generate_run(&a, io);
    gen_args_deinit(&a);
    return code;
}

void gen_args_deinit(gen_args *a) {
    free(a->prompt_text);
    a->prompt_text = NULL;
}
