/* apps/ferrum/lm_args.c: the options and steps every command over a model shares (see
 * lm_args.h). One table fragment per concern, so generate and chat cannot drift apart in a
 * range, a default or a message. */
#include "lm_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ferrum/device.h"
#include "ferrum/tune.h"

static const char *const dtypes[] = {"bf16", "f32", NULL};

#define INT(n, sh, mv, field, l, h, d, text) \
    {n, sh, ARG_INT, mv, text, d, .lo = l, .hi = h, .i = field}
#define FLOAT(n, mv, field, l, h, open, d, text) \
    {n, 0, ARG_FLOAT, mv, text, d, .flo = l, .fhi = h, .lo_open = open, .f = field}
#define STRING(n, sh, mv, field, text) {n, sh, ARG_STRING, mv, text, NULL, .s = field}

model_args model_args_default(void) {
    return (model_args){.dtype = "bf16", .random_opt = -1};
}

int model_options(model_args *a, bool threads, arg_opt *t) {
    const arg_opt opts[] = {
        STRING("model", 'm', "MODEL", &a->model_opt, "the model, as the positional MODEL"),
        STRING("tokenizer", 0, "FILE", &a->tokenizer,
               "tokenizer.json (default: the GGUF's own, or the one beside a safetensors "
               "checkpoint)"),
        INT("random-weights", 0, "SEED", &a->random_opt, 0, INT64_MAX, NULL,
            "random weights in MODEL's shapes (then MODEL may also be a config.json, its "
            "folder, or a preset: llama-3.2-1b, smollm2-135m)"),
        {"dtype", 0, ARG_CHOICE, NULL, "the dtype of --random-weights", "bf16",
         .choices = dtypes, .s = &a->dtype},
        {"mmap", 0, ARG_FLAG, NULL, "read the weights from the mapped file, page by page "
         "(default: copied into memory in huge pages when they take at most half the memory "
         "available: faster to read)", NULL, .flag = &a->mmap},
        {"no-mmap", 0, ARG_FLAG, NULL, "copy the weights into memory whatever is available",
         NULL, .flag = &a->no_mmap},
        INT("threads", 't', "N", &a->threads, 1, 1024,
            "FERRUM_WORKERS, else one per CPU this process may use",
            "worker threads; at most the CPUs this process may use"),
    };
    int n = (int)(sizeof opts / sizeof opts[0]) - !threads;
    memcpy(t, opts, (size_t)n * sizeof opts[0]);
    return n;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int model_args_settle(model_args *a, const char *positional, const char *cmd, FILE *err) {
    if (a->model_opt && positional && strcmp(a->model_opt, positional) != 0)
        return cli_refuse(err, cmd, "a second MODEL: -m %s and %s; give one", a->model_opt, positional);
    a->model = a->model_opt ? a->model_opt : positional;
    if (a->mmap && a->no_mmap)
        return cli_refuse(err, cmd, "--mmap and --no-mmap: give one (or neither: the weights are "
                          "copied into memory when they fit)");
    a->random_weights = a->random_opt >= 0;
    a->random_seed = a->random_opt >= 0 ? (uint64_t)a->random_opt : 0;
    if (!a->model)
        return cli_refuse(err, cmd, "give a MODEL (a .gguf file, a safetensors checkpoint, or a "
                          "preset with --random-weights)");
    if (a->tokenizer && access(a->tokenizer, R_OK) != 0)
        return cli_refuse(err, cmd, "--tokenizer %s cannot be read: %s", a->tokenizer, strerror(errno));
    if (a->tokenizer && is_dir(a->tokenizer))
        return cli_refuse(err, cmd, "--tokenizer %s is a directory; give its tokenizer.json", a->tokenizer);
    int cpus = fe_device_cpus_allowed();
    if (a->threads > cpus)
        return cli_refuse(err, cmd, "-t/--threads %lld is more than the %d CPUs this process may "
                          "use; a spinning worker pool past them crawls. Give -t 1..%d (or leave "
                          "it out for one per CPU)", (long long)a->threads, cpus, cpus);
    return FE_EXIT_OK;
}

/* "ferrum: reading weights 45%" on one line, rewritten in place on a terminal */
static void show_progress(void *user, double done) {
    const fe_cli_io *io = user;
    bool tty = isatty(fileno(io->err));
    if (tty || done >= 1.0)
        fprintf(io->err, "%sferrum: reading weights %3.0f%%%s", tty ? "\r" : "", 100 * done,
                done >= 1.0 || !tty ? "\n" : "");
}

/* Whether path has a checkpoint's form (.gguf, .safetensors, an index .json, or a folder);
 * a name without it may be a preset the user meant for --random-weights. */
static bool checkpoint_form(const char *path) {
    size_t n = strlen(path);
    for (const char *ext = ".gguf\0.safetensors\0.json\0"; *ext; ext += strlen(ext) + 1)
        if (n >= strlen(ext) && strcmp(path + n - strlen(ext), ext) == 0) return true;
    return is_dir(path);
}

int model_open(const model_args *a, bool header_only, const char *cmd, const fe_cli_io *io,
               fe_lm_model **m) {
    fe_lm_open_options o = fe_lm_open_options_default();
    o.tokenizer = a->tokenizer;
    o.threads = (int)a->threads;
    o.header_only = header_only;
    o.prefault = false; /* model_read_in, once the command has checked what needs the model */
    o.weights = a->mmap ? FE_LM_WEIGHTS_MAPPED : a->no_mmap ? FE_LM_WEIGHTS_IN_MEMORY
                                                             : FE_LM_WEIGHTS_AUTO;
    if (a->random_weights) {
        o.random_weights = true;
        o.seed = a->random_seed;
        o.dtype = strcmp(a->dtype, "f32") == 0 ? FE_DTYPE_F32 : FE_DTYPE_BF16;
        if (!header_only)
            fprintf(io->err, "ferrum: drawing random %s weights in %s's shapes (seed %llu)...\n",
                    a->dtype, a->model, (unsigned long long)a->random_seed);
    } else if (!header_only) {
        fprintf(io->err, "ferrum: mapping %s...\n", a->model);
    }
    fe_error err = {0};
    fe_status st = fe_lm_model_open(a->model, &o, m, &err);
    if (st != FE_OK && !a->random_weights && !checkpoint_form(a->model))
        fprintf(io->err, "ferrum %s: %s; or give shapes (a preset or config.json) with "
                "--random-weights\n", cmd, err.message);
    else if (st != FE_OK)
        cli_fail(io->err, cmd, "", err.message);
    return st == FE_OK ? FE_EXIT_OK : FE_EXIT_FAILURE;
}

void model_read_in(fe_lm_model *m, const fe_cli_io *io) {
    fe_lm_model_prefault(m, show_progress, (void *)io);
    fe_lm_model_info info;
    if (fe_lm_model_get_info(m, &info) == FE_OK && info.weights_note && info.weights_note[0])
        fprintf(io->err, "ferrum: weights %s\n", info.weights_note);
}

int sampling_options(fe_lm_sampling *s, int64_t *seed, arg_opt *t) {
    const arg_opt opts[] = {
        FLOAT("temperature", "T", &s->temperature, 0, 1e6, false, "0", "0 = greedy"),
        INT("top-k", 0, "K", &s->top_k, 0, 1 << 30, "0", "keep the K likeliest tokens; 0: all"),
        FLOAT("top-p", "P", &s->top_p, 0, 1, true, "1",
              "keep the likeliest tokens whose probabilities sum to P; 1: all"),
        FLOAT("min-p", "P", &s->min_p, 0, 1, false, "0",
              "drop tokens less likely than P times the likeliest; 0: none"),
        FLOAT("repeat-penalty", "R", &s->repeat_penalty, 0, 100, true, "1",
              "divide the logits of tokens seen in the last --repeat-last-n by R; 1: off"),
        INT("repeat-last-n", 0, "N", &s->repeat_last_n, -1, 1 << 24, "64",
            "tokens the penalties look back over; -1: all, 0: none"),
        FLOAT("presence-penalty", "A", &s->presence_penalty, -2, 2, false, "0",
              "subtract A from the logit of every token seen; 0: off"),
        FLOAT("frequency-penalty", "A", &s->frequency_penalty, -2, 2, false, "0",
              "subtract A times its count from the logit of every token seen; 0: off"),
        INT("seed", 's', "S", seed, 0, INT64_MAX, "a random one, printed",
            "sampling seed (the same seed draws the same tokens)"),
    };
    memcpy(t, opts, sizeof opts);
    return (int)(sizeof opts / sizeof opts[0]);
}

void sampling_choose_seed(fe_lm_sampling *s, bool seed_given, FILE *err) {
    if (seed_given || s->temperature <= 0) return;
    uint64_t x = fe_time_ns() ^ ((uint64_t)getpid() << 32);
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&x, sizeof x, 1, f) != 1) x ^= fe_time_ns();
        fclose(f);
    }
    s->seed = x >> 11; /* under 2^53: the device sampler's range */
    fprintf(err, "ferrum: seed %llu (give --seed %llu to repeat)\n", (unsigned long long)s->seed,
            (unsigned long long)s->seed);
}

int cli_parse(const arg_spec *sp, int argc, char **argv, const char **positional,
              const fe_cli_io *io, bool *help) {
    arg_result r = {.positional = positional};
    int code = args_parse(sp, argc, argv, &r, io->err);
    *help = code == FE_EXIT_OK && r.help;
    if (!*help) return code;
    args_usage(sp, io->out);
    return cli_flush_out(io, sp->cmd);
}

int cli_parse_ids(const char *s, int64_t vocab, const char *cmd, const char *opt, int32_t **ids,
                  size_t *n, FILE *err) {
    *n = 0;
    int32_t *out = malloc((strlen(s) / 2 + 1) * sizeof *out);
    *ids = NULL;
    if (!out) return cli_refuse(err, cmd, "%s: out of memory", opt);
    for (const char *p = s; *p;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || (*end && *end != ',')) {
            free(out);
            return cli_refuse(err, cmd, "%s \"%s\": \"%.*s\" is not an id; give comma-separated "
                              "ids (1,2,3)", opt, s, (int)strcspn(p, ","), p);
        }
        if (v < 0 || v >= vocab) {
            free(out);
            return cli_refuse(err, cmd, "%s: id %lld is outside the vocabulary of %lld; give ids "
                              "in 0..%lld", opt, v, (long long)vocab, (long long)vocab - 1);
        }
        out[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (!*n) {
        free(out);
        return cli_refuse(err, cmd, "%s is empty; give at least one id", opt);
    }
    *ids = out;
    return FE_EXIT_OK;
}

int cli_text_append(cli_text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = 2 * (t->len + n) + 256;
        char *b = realloc(t->p, cap);
        if (!b) return 1;
        t->p = b, t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
    return 0;
}

int cli_refuse(FILE *err, const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(err, "ferrum %s: ", cmd);
    vfprintf(err, fmt, ap);
    fprintf(err, "\n");
    va_end(ap);
    return FE_EXIT_USAGE;
}

int cli_fail(FILE *err, const char *cmd, const char *what, const char *msg) {
    fprintf(err, "ferrum %s: %s%s%s\n", cmd, what, *what && *msg ? ": " : "", msg);
    return FE_EXIT_FAILURE;
}

int cli_flush_out(const fe_cli_io *io, const char *cmd) {
    errno = 0;
    if (fflush(io->out) == 0 && !ferror(io->out)) return FE_EXIT_OK;
    return cli_fail(io->err, cmd, "writing the output", strerror(errno ? errno : EIO));
}

int cli_read_text(const char *path, FILE *in, const char *cmd, const char *opt, char **text,
                  FILE *err) {
    *text = NULL;
    bool std_in = strcmp(path, "-") == 0;
    if (std_in && !in) { /* an empty input (fe_cli_io) */
        *text = calloc(1, 1);
        return *text ? FE_EXIT_OK : cli_refuse(err, cmd, "%s -: out of memory", opt);
    }
    if (!std_in && is_dir(path))
        return cli_refuse(err, cmd, "%s %s is a directory; give a text file (or - for stdin)", opt, path);
    FILE *f = std_in ? in : fopen(path, "rb");
    if (!f)
        return cli_refuse(err, cmd, "%s %s cannot be read: %s; give a readable text file (or - "
                          "for stdin)", opt, path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    bool too_big = false;
    for (size_t got; b && !too_big && (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        too_big = n > CLI_TEXT_MAX;
        if (n + 1 == cap && !too_big) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    bool bad = ferror(f);
    int e = errno;
    if (!std_in) fclose(f);
    if (!b) return cli_refuse(err, cmd, "%s %s: out of memory reading it", opt, path);
    b[n] = '\0';
    if (bad || too_big) {
        free(b);
        if (bad) return cli_refuse(err, cmd, "%s %s cannot be read: %s", opt, path, strerror(e));
        return cli_refuse(err, cmd, "%s %s is larger than %d MiB; give a shorter text", opt, path,
                          CLI_TEXT_MAX >> 20);
    }
    *text = b;
    return FE_EXIT_OK;
}

/* The length of the UTF-8 character at s[0..n), or 0 when it is not one (cut, overlong,
 * a surrogate, past U+10FFFF). */
static size_t utf8_char(const unsigned char *s, size_t n) {
    size_t len = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
    if (!len || len > n) return 0;
    uint32_t c = len == 1 ? s[0] : s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    return len;
}

bool cli_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_char((const unsigned char *)s + i, n - i))) return false;
    return true;
}

void cli_json_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0, k; i < n; i += k) {
        unsigned char c = (unsigned char)s[i];
        k = utf8_char((const unsigned char *)s + i, n - i);
        if (!k) {
            fputs("\\ufffd", f);
            k = 1;
        } else if (k > 1) fwrite(s + i, 1, k, f);
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void cli_quote_piece(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0, k; i < n; i += k) {
        unsigned char c = (unsigned char)s[i];
        k = utf8_char((const unsigned char *)s + i, n - i);
        if (k > 1) fwrite(s + i, 1, k, f);
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (!k || c < 0x20 || c == 0x7f) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
        k = k ? k : 1;
    }
    fputc('"', f);
}

static const char *const cache_types[] = {"f32", "f16", NULL};

arg_opt cache_type_option(int64_t *choice) {
    return (arg_opt){"cache-type", 0, ARG_CHOICE, NULL,
                     "the KV cache's keys and values: f16 takes half the memory and half the "
                     "bytes a decode step's attention reads, each new key and value rounded to "
                     "f16 once (as llama.cpp's default -ctk/-ctv f16; KL to f32 ~2e-7); f32 is "
                     "exact", "f16",
                     .choices = cache_types, .i = choice};
}

fe_lm_cache_type cache_type_of(int64_t choice) {
    return choice == 0 ? FE_LM_CACHE_F32 : FE_LM_CACHE_F16;
}

int tuning_options(tuning_args *a, arg_opt *t) {
    const arg_opt opts[TUNING_MAX_OPTS] = {
        {"tuning", 0, ARG_STRING, "FILE", "the tuning profile to compile with (`ferrum tune "
         "--write-profile` writes one)", "this device's, when `ferrum tune` made one",
         .s = &a->file},
        {"no-tuning", 0, ARG_FLAG, NULL, "compile with no tuning profile: every tunable at "
         "its default", NULL, .flag = &a->none},
    };
    memcpy(t, opts, sizeof opts);
    return TUNING_MAX_OPTS;
}

/* Loads path into *p, or refuses naming the file and the fixes. */
static int load_profile(const char *path, const char *cmd, FILE *errf, fe_profile **p) {
    fe_error err;
    if (fe_profile_load(path, p, &err) == FE_OK) return FE_EXIT_OK;
    return cli_refuse(errf, cmd, "the tuning profile %s; fix or remove the file (`ferrum tune "
                      "... --write-profile` writes a new one), give another with --tuning "
                      "FILE, or run without one: --no-tuning", err.message);
}

int tuning_settle(const tuning_args *a, const char *cmd, FILE *err) {
    if (a->file && a->none)
        return cli_refuse(err, cmd, "--tuning %s and --no-tuning disagree; give one", a->file);
    fe_profile *p = NULL; /* a --tuning file is checked before the model loads */
    int code = a->file ? load_profile(a->file, cmd, err, &p) : FE_EXIT_OK;
    fe_profile_destroy(p);
    return code;
}

int tuning_load(const tuning_args *a, fe_lm_model *m, const char *cmd, const fe_cli_io *io,
                fe_profile **p) {
    *p = NULL;
    char def[1100];
    fe_error err;
    const char *path = a->file;
    if (!a->none && !path &&
        fe_tune_profile_path(fe_lm_model_device(m), NULL, def, sizeof def, &err) == FE_OK &&
        access(def, F_OK) == 0)
        path = def;
    if (!path) {
        fprintf(io->err, "ferrum: tuning: none (%s)\n", a->none ? "--no-tuning"
                : "ferrum tune MODEL --write-profile makes one");
        return FE_EXIT_OK;
    }
    int code = load_profile(path, cmd, io->err, p);
    if (code != FE_EXIT_OK) return code;
    int n = fe_profile_count(*p), folds = fe_profile_folds(*p);
    fprintf(io->err, "ferrum: tuning: %s (%d entr%s, %d fold decision%s)\n", path, n,
            n == 1 ? "y" : "ies", folds, folds == 1 ? "" : "s");
    return FE_EXIT_OK;
}
