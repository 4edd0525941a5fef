/* apps/ferrum/cmd_generate.c: `ferrum generate`: its options, checked strictly (a bad value
 * names the option and its range); the work is in generate.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "generate.h"
#include "lm/model/causal.h"



static void generate_usage(FILE *f) {
    fprintf(f,
            "usage: ferrum generate MODEL [options]\n\n"
            "Generates text from a Llama-family model. MODEL is a GGUF file, or a Hugging\n"
            "Face checkpoint: a folder with config.json and model.safetensors (or a sharded\n"
            "model.safetensors.index.json), or one .safetensors file with config.json beside\n"
            "it (tokenizer.json from the same folder when present). With --random-weights it\n"
            "may also be a config.json (or its folder) or a preset name (llama-3.2-1b,\n"
            "smollm2-135m). Without a tokenizer the prompt is given as ids or drawn at\n"
            "random, and the output is printed as ids.\n\n"
            "  --prompt TEXT          the prompt\n"
            "  --prompt-file F        the prompt, from a file\n"
            "  --prompt-ids 1,2,3     the prompt as token ids\n"
            "  --prompt-len N         a random prompt of N ids (default 16 without a tokenizer)\n"
            "  --tokenizer FILE       tokenizer.json (default: the GGUF's own, or the one\n"
            "                         beside a safetensors checkpoint)\n"
            "  --chat                 wrap the prompt in the model's chat template (from the\n"
            "                         GGUF, or tokenizer_config.json beside the checkpoint or\n"
            "                         --tokenizer); ferrum knows ChatML and Llama 3 and says\n"
            "                         so when the template is another (the prompt is then\n"
            "                         used as it is)\n"
            "  --system TEXT          the chat's system prompt (default: the template's own,\n"
            "                         if it has one; \"\" for none)\n"
            "  --num-tokens N         tokens to generate (default 64)\n"
            "  --temperature T        0 = greedy (default 0)\n"
            "  --top-k K, --top-p P   truncate the distribution (default off)\n"
            "  --seed S               sampling seed (default 0)\n"
            "  --max-seq-len N        KV cache rows (default min(4096, the model's context))\n"
            "  --chunk N              prompt rows per prefill call (default 256): smaller\n"
            "                         takes less scratch memory, larger amortises more\n"
            "  --each-step            one dispatch per step instead of one per call\n"
            "  --random-weights SEED  random weights in MODEL's shapes (--dtype f32|bf16, default bf16)\n"
            "  --write-safetensors DIR  write the weights (drawn with --random-weights, or\n"
            "                         loaded in f32/bf16/f16) to DIR as a Hugging Face folder\n"
            "                         (model.safetensors, config.json) and stop\n"
            "  --check-accuracy       teacher-forced KL of the model against the float32 oracle\n"
            "  --check-determinism N  N alternated runs of two prompts, logits compared as bytes\n"
            "  --verbose              print the graph's packaging and per-call values\n"
            "  --prefill-dot bf16|f32 prefill dot products over bf16 matrices: bf16 (the default:\n"
            "                         activations rounded to bf16, ~1.7x faster where the CPU\n"
            "                         has AVX512_BF16, as llama.cpp does) or f32 (exact)\n"
            "  --decode-dot int8|f32  GEMV dot products over q8_0/q4_0/q4_1 matrices: int8 (the\n"
            "                         default: activations in int8 per 32-block, exact integer\n"
            "                         sums, as llama.cpp does) or f32 (exact)\n"
            "  --profile              time every step; print where a prefill chunk and a decode\n"
            "                         step spend their time, by operator and weight\n");
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_f64(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

/* Parses argv; returns FE_EXIT_OK, or FE_EXIT_USAGE after printing what is wrong. */
static int parse(int argc, char **argv, gen_args *a, const fe_cli_io *io, bool *help) {
    *a = (gen_args){.num_tokens = 64, .top_p = 1, .dtype = "bf16", .repeat_last_n = 64,
                    .repeat_penalty = 1, .seed_given = true};
    *help = false;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true, takes = true;
        int64_t n;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            *help = true;
            return FE_EXIT_OK;
        } else if (!strcmp(o, "--chat")) a->chat = true, takes = false;
        else if (!strcmp(o, "--each-step")) a->each_step = true, takes = false;
        else if (!strcmp(o, "--check-accuracy")) a->check_accuracy = true, takes = false;
        else if (!strcmp(o, "--verbose")) a->verbose = true, takes = false;
        else if (!strcmp(o, "--profile")) a->profile = true, takes = false;
        else if (o[0] == '-' && o[1] == '-' && !v) {
            fprintf(io->err, "ferrum generate: %s needs a value (or is unknown); see --help\n", o);
            return FE_EXIT_USAGE;
        } else if (!strcmp(o, "--prompt")) a->prompt = v;
        else if (!strcmp(o, "--prompt-file")) a->prompt_file = v;
        else if (!strcmp(o, "--prompt-ids")) a->prompt_ids = v;
        else if (!strcmp(o, "--tokenizer")) a->tokenizer = v;
        else if (!strcmp(o, "--system")) a->system = v;
        else if (!strcmp(o, "--write-safetensors")) a->write_safetensors = v, ok = *v != '\0';
        else if (!strcmp(o, "--dtype")) a->dtype = v, ok = !strcmp(v, "f32") || !strcmp(v, "bf16");
        else if (!strcmp(o, "--decode-dot"))
            ok = !strcmp(v, "int8") || !strcmp(v, "f32"),
            a->decode_dot = !strcmp(v, "f32") ? FE_DECODE_DOT_F32 : FE_DECODE_DOT_AUTO;
        else if (!strcmp(o, "--prefill-dot"))
            ok = !strcmp(v, "bf16") || !strcmp(v, "f32"),
            a->prefill_dot = !strcmp(v, "bf16") ? FE_PREFILL_DOT_BF16 : FE_PREFILL_DOT_F32;
        else if (!strcmp(o, "--prompt-len")) ok = parse_i64(v, 1, 1 << 20, &a->prompt_len);
        else if (!strcmp(o, "--num-tokens")) ok = parse_i64(v, 0, 1 << 20, &a->num_tokens);
        else if (!strcmp(o, "--top-k")) ok = parse_i64(v, 0, 1 << 30, &a->top_k);
        else if (!strcmp(o, "--max-seq-len")) ok = parse_i64(v, 1, 1 << 24, &a->max_seq_len);
        else if (!strcmp(o, "--chunk")) ok = parse_i64(v, 1, 1 << 16, &a->chunk);
        else if (!strcmp(o, "--check-determinism")) ok = parse_i64(v, 1, 1000, &a->check_determinism);
        else if (!strcmp(o, "--temperature")) ok = parse_f64(v, 0, 1e6, &a->temperature);
        else if (!strcmp(o, "--top-p")) ok = parse_f64(v, 1e-9, 1, &a->top_p);
        else if (!strcmp(o, "--seed")) ok = parse_i64(v, 0, INT64_MAX, &n), a->seed = (uint64_t)n;
        else if (!strcmp(o, "--random-weights"))
            ok = parse_i64(v, 0, INT64_MAX, &n), a->random_seed = (uint64_t)n, a->random_weights = true;
        else if (o[0] == '-') {
            fprintf(io->err, "ferrum generate: unknown option \"%s\"; `ferrum generate --help` lists them\n", o);
            return FE_EXIT_USAGE;
        } else if (!a->model) {
            a->model = o, takes = false;
        } else {
            fprintf(io->err, "ferrum generate: a second MODEL \"%s\"; give one\n", o);
            return FE_EXIT_USAGE;
        }
        if (!ok) {
            fprintf(io->err, "ferrum generate: %s %s is not a valid value; see --help for its range\n", o, v);
            return FE_EXIT_USAGE;
        }
        if (takes) i++;
    }
    if (!a->model) {
        fprintf(io->err, "ferrum generate: give a MODEL (a .gguf file, a safetensors checkpoint, or a "
                "preset with --random-weights)\n");
        return FE_EXIT_USAGE;
    }
    int prompts = !!a->prompt + !!a->prompt_file + !!a->prompt_ids + (a->prompt_len > 0);
    if (prompts > 1) {
        fprintf(io->err, "ferrum generate: give one of --prompt, --prompt-file, --prompt-ids, --prompt-len\n");
        return FE_EXIT_USAGE;
    }
    if (a->system && !a->chat) {
        fprintf(io->err, "ferrum generate: --system is the chat's system prompt; give --chat too\n");
        return FE_EXIT_USAGE;
    }
    if (a->write_safetensors && (prompts || a->chat || a->check_accuracy || a->check_determinism)) {
        fprintf(io->err, "ferrum generate: --write-safetensors writes the weights and stops; it takes "
                "no prompt, --chat or checks\n");
        return FE_EXIT_USAGE;
    }
    return FE_EXIT_OK;
}

int fe_cmd_generate(int argc, char **argv, const fe_cli_io *io) {
    gen_args a;
    bool help;
    int code = parse(argc, argv, &a, io, &help);
    if (code != FE_EXIT_OK) return code;
    if (help) {
        generate_usage(io->out);
        return FE_EXIT_OK;
    }
    return fe_generate_run(&a, io);
}

void gen_args_deinit(gen_args *a) {
    free(a->prompt_text);
    a->prompt_text = NULL;
}
