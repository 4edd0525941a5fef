/* apps/ferrum/cmd_generate.c: `ferrum generate`: its options as one table (args.h), checked
 * strictly and all before a weight is read (a bad value names the option, the value and its
 * range; --prompt-file is read here); the work is in generate.c. */
#include "cmd_generate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "core/alloc.h"
#include "ferrum/device.h"
#include "lm/model/causal.h"

enum { PROMPT_FILE_MAX = 64 << 20 };

static const char *const dtypes[] = {"bf16", "f32", NULL};
static const char *const prefill_dots[] = {"bf16", "f32", NULL};
static const char *const decode_dots[] = {"int8", "f32", NULL};

/* Where the options land before they are checked and moved into gen_args. */
typedef struct gen_parse {
    gen_args *a;
    const char *model;
    int64_t seed, random_seed, prefill_dot, decode_dot;
} gen_parse;

#define INT(n, sh, mv, field, l, h, d, text) \
    {n, sh, ARG_INT, mv, text, d, .lo = l, .hi = h, .i = field}
#define FLOAT(n, mv, field, l, h, open, d, text) \
    {n, 0, ARG_FLOAT, mv, text, d, .flo = l, .fhi = h, .lo_open = open, .f = field}
#define STRING(n, sh, mv, field, text) {n, sh, ARG_STRING, mv, text, NULL, .s = field}
#define FLAG(n, field, text) {n, 0, ARG_FLAG, NULL, text, NULL, .flag = field}

/* The table, pointing into p. Returns its length. */
static int generate_options(gen_parse *p, arg_opt *t) {
    gen_args *a = p->a;
    const arg_opt opts[] = {
        STRING("model", 'm', "MODEL", &p->model, "the model, as the positional MODEL"),
        STRING("prompt", 'p', "TEXT", &a->prompt, "the prompt"),
        STRING("prompt-file", 'f', "F", &a->prompt_file,
               "the prompt, read from file F (- for stdin) before the model loads"),
        STRING("prompt-ids", 0, "1,2,3", &a->prompt_ids, "the prompt as token ids"),
        INT("prompt-len", 0, "N", &a->prompt_len, 1, 1 << 20, NULL,
            "a random prompt of N ids (a model without a tokenizer draws 16 when no prompt is "
            "given)"),
        STRING("tokenizer", 0, "FILE", &a->tokenizer,
               "tokenizer.json (default: the GGUF's own, or the one beside a safetensors "
               "checkpoint)"),
        FLAG("chat", &a->chat,
             "wrap the prompt in the model's chat template (from the GGUF, or "
             "tokenizer_config.json beside the checkpoint or --tokenizer); ferrum knows ChatML "
             "and Llama 3 and says so when the template is another (the prompt is then used "
             "as it is)"),
        {"system", 0, ARG_STRING, "TEXT", "the chat's system prompt (default: the template's "
         "own, if it has one; \"\" for none)", NULL, .empty_ok = true, .s = &a->system},
        INT("num-tokens", 'n', "N", &a->num_tokens, -1, 1 << 20, "64",
            "tokens to generate; -1: until the end of sequence or the cache is full"),
        {"stop", 0, ARG_STRINGS, "STR", "stop when the text generated contains STR", NULL,
         .strs = a->stop, .count = &a->n_stop, .max = GEN_MAX_STOP},
        FLOAT("temperature", "T", &a->temperature, 0, 1e6, false, "0", "0 = greedy"),
        INT("top-k", 0, "K", &a->top_k, 0, 1 << 30, "0", "keep the K likeliest tokens; 0: all"),
        FLOAT("top-p", "P", &a->top_p, 0, 1, true, "1",
              "keep the likeliest tokens whose probabilities sum to P; 1: all"),
        FLOAT("min-p", "P", &a->min_p, 0, 1, false, "0",
              "drop tokens less likely than P times the likeliest; 0: none"),
        FLOAT("repeat-penalty", "R", &a->repeat_penalty, 0, 100, true, "1",
              "divide the logits of tokens seen in the last --repeat-last-n by R; 1: off"),
        INT("repeat-last-n", 0, "N", &a->repeat_last_n, -1, 1 << 24, "64",
            "tokens the penalties look back over; -1: all, 0: none"),
        FLOAT("presence-penalty", "A", &a->presence_penalty, -2, 2, false, "0",
              "subtract A from the logit of every token seen; 0: off"),
        FLOAT("frequency-penalty", "A", &a->frequency_penalty, -2, 2, false, "0",
              "subtract A times its count from the logit of every token seen; 0: off"),
        INT("seed", 's', "S", &p->seed, 0, INT64_MAX, "a random one, printed",
            "sampling seed (the same seed draws the same tokens)"),
        INT("threads", 't', "N", &a->threads, 1, 1024,
            "FERRUM_WORKERS, else one per CPU this process may use",
            "worker threads; at most the CPUs this process may use"),
        INT("max-seq-len", 'c', "N", &a->max_seq_len, 1, 1 << 24,
            "min(4096, the model's context)", "the context: KV cache rows"),
        INT("chunk", 0, "N", &a->chunk, 1, 1 << 16, "256",
            "prompt rows per prefill call: smaller takes less scratch memory, larger amortises "
            "more"),
        FLAG("each-step", &a->each_step, "one dispatch per step instead of one per call"),
        INT("random-weights", 0, "SEED", &p->random_seed, 0, INT64_MAX, NULL,
            "random weights in MODEL's shapes (then MODEL may also be a config.json, its "
            "folder, or a preset: llama-3.2-1b, smollm2-135m)"),
        {"dtype", 0, ARG_CHOICE, NULL, "the dtype of --random-weights", "bf16",
         .choices = dtypes, .s = &a->dtype},
        STRING("write-safetensors", 0, "DIR",
               &a->write_safetensors, "write the weights (drawn with --random-weights, or loaded "
               "in f32/bf16/f16) to DIR as a Hugging Face folder (model.safetensors, "
               "config.json) and stop"),
        FLAG("check-accuracy", &a->check_accuracy,
             "teacher-forced KL of the model against the float32 oracle"),
        INT("check-determinism", 0, "N", &a->check_determinism, 1, 1000, NULL,
            "N alternated runs of two prompts, logits compared as bytes"),
        FLAG("json", &a->json, "print the text, ids and timings as one JSON object on stdout"),
        FLAG("verbose", &a->verbose, "print the graph's packaging and per-call values"),
        {"prefill-dot", 0, ARG_CHOICE, NULL,
         "prefill dot products over bf16 matrices: bf16 rounds the activations to bf16 (~1.7x "
         "faster where the CPU has AVX512_BF16, as llama.cpp does), f32 is exact", "bf16",
         .choices = prefill_dots, .i = &p->prefill_dot},
        {"decode-dot", 0, ARG_CHOICE, NULL,
         "GEMV dot products over q8_0/q4_0/q4_1 matrices: int8 quantises the activations per "
         "32-block with exact integer sums (as llama.cpp does), f32 is exact", "int8",
         .choices = decode_dots, .i = &p->decode_dot},
        FLAG("profile", &a->profile, "time every step; print where a prefill chunk and a "
             "decode step spend their time, by operator and weight"),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    memcpy(t, opts, sizeof opts);
    return n;
}

enum { MAX_GEN_OPTS = 40 };

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

__attribute__((format(printf, 2, 3)))
static int refuse(FILE *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(err, "ferrum generate: ");
    vfprintf(err, fmt, ap);
    fprintf(err, "\n");
    va_end(ap);
    return FE_EXIT_USAGE;
}

/* Reads the prompt file ("-": stdin) into a->prompt_text. */
static int read_prompt_file(gen_args *a, FILE *err) {
    const char *path = a->prompt_file;
    bool std_in = strcmp(path, "-") == 0;
    struct stat sb;
    if (!std_in && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return refuse(err, "--prompt-file %s is a directory; give a text file (or - for stdin)", path);
    FILE *f = std_in ? stdin : fopen(path, "rb");
    if (!f)
        return refuse(err, "--prompt-file %s cannot be read: %s; give a readable text file (or - "
                      "for stdin)", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *b = fe_malloc(cap);
    bool too_big = false, bad = false;
    for (size_t got; b && !too_big && (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        too_big = n > PROMPT_FILE_MAX;
        if (n + 1 == cap && !too_big) {
            char *nb = fe_realloc(b, cap *= 2);
            if (!nb) fe_free(b);
            b = nb;
        }
    }
    bad = ferror(f);
    if (!std_in) fclose(f);
    if (!b) return refuse(err, "--prompt-file %s: out of memory reading it", path);
    b[n] = '\0';
    a->prompt_text = b;
    if (bad) return refuse(err, "--prompt-file %s cannot be read: %s", path, strerror(errno));
    if (too_big)
        return refuse(err, "--prompt-file %s is larger than %d MiB; give a shorter prompt", path,
                      PROMPT_FILE_MAX >> 20);
    return FE_EXIT_OK;
}

/* "1,2,3": ids, each a count below 2^31, separated by single commas (the vocabulary's
 * bound is the run's to check: it needs the model) */
static bool ids_well_formed(const char *s) {
    for (const char *p = s;; p++) {
        const char *digits = p;
        while (*p >= '0' && *p <= '9') p++;
        if (p == digits || p - digits > 10 || strtoll(digits, NULL, 10) > INT32_MAX) return false;
        if (*p == '\0') return true;
        if (*p != ',') return false;
    }
}

/* A file the run will read (not a folder, and readable), checked before anything loads. */
static int check_readable_file(const char *option, const char *path, FILE *err) {
    struct stat sb;
    if (stat(path, &sb) != 0 || access(path, R_OK) != 0)
        return refuse(err, "%s %s cannot be read: %s", option, path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return refuse(err, "%s %s is a directory; give a file", option, path);
    return FE_EXIT_OK;
}

/* The checks across options: all before a weight is read. */
static int check(gen_args *a, FILE *err) {
    if (!a->model)
        return refuse(err, "give a MODEL (a .gguf file, a safetensors checkpoint, or a preset "
                      "with --random-weights)");
    int prompts = !!a->prompt + !!a->prompt_file + !!a->prompt_ids + (a->prompt_len > 0);
    if (prompts > 1) return refuse(err, "give one of --prompt, --prompt-file, --prompt-ids, --prompt-len");
    if (a->system && !a->chat) return refuse(err, "--system is the chat's system prompt; give --chat too");
    if (a->write_safetensors && (prompts || a->chat || a->check_accuracy || a->check_determinism))
        return refuse(err, "--write-safetensors writes the weights and stops; it takes no prompt, "
                      "--chat or checks");
    int cpus = fe_device_cpus_allowed();
    if (a->threads > cpus)
        return refuse(err, "-t/--threads %lld is more than the %d CPUs this process may use; a "
                      "spinning worker pool past them crawls. Give -t 1..%d (or leave it out for "
                      "one per CPU)", (long long)a->threads, cpus, cpus);
    if (a->prompt_ids && !ids_well_formed(a->prompt_ids))
        return refuse(err, "--prompt-ids \"%s\" is not a list of token ids; give them as "
                      "1,2,3 (no spaces)", a->prompt_ids);
    if (a->tokenizer && check_readable_file("--tokenizer", a->tokenizer, err) != FE_EXIT_OK)
        return FE_EXIT_USAGE;
    if (a->prompt_file) return read_prompt_file(a, err);
    return FE_EXIT_OK;
}

int fe_generate_parse(int argc, char **argv, gen_args *a, bool *help, FILE *err) {
    *a = (gen_args){.num_tokens = 64, .top_p = 1, .dtype = "bf16", .repeat_last_n = 64,
                    .repeat_penalty = 1};
    gen_parse p = {.a = a, .seed = -1, .random_seed = -1, .prefill_dot = -1, .decode_dot = -1};
    arg_opt t[MAX_GEN_OPTS];
    arg_spec sp = generate_spec(&p, t);
    const char *pos[1] = {NULL};
    arg_result r = {.positional = pos};
    int code = args_parse(&sp, argc, argv, &r, err);
    *help = r.help;
    if (code != FE_EXIT_OK || r.help) return code;
    if (p.model && pos[0] && strcmp(p.model, pos[0]) != 0)
        return refuse(err, "a second MODEL: -m %s and %s; give one", p.model, pos[0]);
    a->model = p.model ? p.model : pos[0];
    a->seed_given = p.seed >= 0;
    a->seed = p.seed >= 0 ? (uint64_t)p.seed : 0;
    a->random_weights = p.random_seed >= 0;
    a->random_seed = p.random_seed >= 0 ? (uint64_t)p.random_seed : 0;
    a->prefill_dot = p.prefill_dot < 0 ? FE_PREFILL_DOT_AUTO
                     : p.prefill_dot == 1 ? FE_PREFILL_DOT_F32 : FE_PREFILL_DOT_BF16;
    a->decode_dot = p.decode_dot == 1 ? FE_DECODE_DOT_F32 : FE_DECODE_DOT_AUTO;
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
    fe_free(a->prompt_text);
    a->prompt_text = NULL;
}
