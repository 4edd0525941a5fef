/* apps/ferrum/cmd_embed.c: `ferrum embed MODEL --text T [--text T ...] | --file F`: texts to
 * embedding vectors with a BERT-family encoder folder (all-MiniLM-L6-v2 as sentence-transformers
 * saves it). Texts run a batch per graph call; each batch's vectors are written as soon as they
 * are computed (JSON, or NumPy .npy float32 rows), so a long file streams; progress and a
 * timing summary go to stderr. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "ferrum/lm.h"
#include "lm_args.h"

static const char synopsis[] =
    "usage: ferrum embed MODEL --text TEXT [--text TEXT ...] [options]\n"
    "       ferrum embed MODEL --file FILE [options]\n\n"
    "Embeds each text (--text, or one text a line of FILE, - for stdin) with the encoder in\n"
    "the folder MODEL (config.json, model.safetensors and tokenizer.json, with the\n"
    "sentence-transformers files when there are: modules.json, 1_Pooling/, prompts) and\n"
    "prints one vector per text, in order: JSON ({\"model\", \"dim\", \"embeddings\": [[...],\n"
    "...]}) or a NumPy .npy array (float32, texts x dim). Texts longer than the model's\n"
    "maximum are cut there, as sentence-transformers cuts them. Vectors are written a batch\n"
    "at a time; progress and a timing summary go to stderr.\n"
    "Encoders: BERT family (BERT, MiniLM; WordPiece) and EmbeddingGemma (config.json\n"
    "model_type gemma3_text, Gemma's SentencePiece tokenizer.json, 2_Dense/ and 3_Dense/;\n"
    "mean pooling; --prompt-name query or document).\n";

enum { EMBED_MAX_TEXTS = 4096 };

typedef struct embed_args {
    const char *model, *file, *pooling, *prompt_name, *format, *dot;
    const char *texts[EMBED_MAX_TEXTS];
    int n_texts;
    int64_t dim, batch, max_tokens, threads;
    bool no_normalize, quiet, profile;
} embed_args;

static const char *const poolings[] = {"model", "mean", "cls", "last", NULL};
static const char *const formats[] = {"json", "npy", NULL};
static const char *const dots[] = {"auto", "f32", "bf16", NULL};

static int embed_options(embed_args *a, arg_opt *t) {
    const arg_opt opts[] = {
        {"text", 0, ARG_STRINGS, "TEXT", "a text to embed", NULL, .empty_ok = true,
         .strs = a->texts, .count = &a->n_texts, .max = EMBED_MAX_TEXTS},
        {"file", 'f', ARG_STRING, "FILE", "the texts, one a line, from FILE (- for stdin)", NULL,
         .s = &a->file},
        {"pooling", 0, ARG_CHOICE, "MODE", "how a text's token vectors become one: the model's "
         "pooling module, mean, cls (the first token) or last", "model", .choices = poolings,
         .s = &a->pooling},
        {"dim", 0, ARG_INT, "N", "keep the first N values of each vector (Matryoshka), "
         "normalised after the cut; 0: all", "0", .lo = 0, .hi = 1 << 20, .i = &a->dim},
        {"prompt-name", 0, ARG_STRING, "NAME", "put the model's prompt NAME (query, document, "
         "... as its config_sentence_transformers.json names them) before each text; \"\": none",
         "the model's default prompt, if any", .empty_ok = true, .s = &a->prompt_name},
        {"no-normalize", 0, ARG_FLAG, NULL, "leave the vectors unnormalised even when the model "
         "L2-normalises them", NULL, .flag = &a->no_normalize},
        {"format", 0, ARG_CHOICE, "FMT", "json, or npy (binary float32 rows)", "json",
         .choices = formats, .s = &a->format},
        {"batch", 'b', ARG_INT, "N", "texts per graph call (the graph is compiled for N texts "
         "of the maximum length)", "8", .lo = 1, .hi = 32, .i = &a->batch},
        {"dot", 0, ARG_CHOICE, "DTYPE", "the products' precision: f32, bf16 (matrices and "
         "activations rounded to bf16, sums in f32: about 1.6x as fast where the CPU has "
         "AVX512_BF16, vectors within ~1e-4 in cosine; BERT family only), or auto: bf16 where "
         "the CPU runs it faster than f32 (AMX-BF16 tiles, or AVX512_BF16 on AMD's cores) and "
         "the model is BERT-family, else f32", "auto",
         .choices = dots, .s = &a->dot},
        {"max-tokens", 0, ARG_INT, "N", "cut texts at N tokens ([CLS] and [SEP] included)",
         "the model's max_seq_length", .lo = 2, .hi = 1 << 20, .i = &a->max_tokens},
        {"threads", 't', ARG_INT, "N", "worker threads", "the CPUs this process may use",
         .lo = 1, .hi = 1024, .i = &a->threads},
        {"quiet", 'q', ARG_FLAG, NULL, "no progress or timing on stderr", NULL, .flag = &a->quiet},
        {"profile", 0, ARG_FLAG, NULL, "time every step of the encoder graph; print where a call's "
         "time goes (steps grouped by operator and weight) on stderr, and the time spent "
         "tokenizing", NULL, .flag = &a->profile},
    };
    memcpy(t, opts, sizeof opts);
    return (int)(sizeof opts / sizeof opts[0]);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- where the texts come from: --text values, or the lines of a file ---- */

typedef struct source {
    const embed_args *a;
    FILE *f;
    bool own_f;
    size_t next;      /* --text: the next index */
    size_t total;     /* texts in all, when known (npy needs it first); 0: unknown */
    char *line;       /* getline's buffer */
    size_t line_cap;
    char **held;      /* this batch's lines */
} source;

/* The next text (NULL at the end), valid until the next call for a file's line */
static int next_text(source *s, int slot, const char **text, FILE *err) {
    *text = NULL;
    if (!s->f) {
        if (s->next < (size_t)s->a->n_texts) *text = s->a->texts[s->next++];
        return FE_EXIT_OK;
    }
    errno = 0;
    ssize_t n = getline(&s->line, &s->line_cap, s->f);
    if (n < 0) {
        if (errno != 0 && !feof(s->f))
            return cli_refuse(err, "embed", "--file %s: cannot read (%s)", s->a->file, strerror(errno));
        return FE_EXIT_OK;
    }
    while (n > 0 && (s->line[n - 1] == '\n' || s->line[n - 1] == '\r')) s->line[--n] = '\0';
    if (memchr(s->line, '\0', (size_t)n))
        return cli_refuse(err, "embed", "--file %s: line %zu holds a NUL byte; give text, one "
                          "a line", s->a->file, s->next + 1);
    free(s->held[slot]);
    if (!(s->held[slot] = strdup(s->line))) return cli_fail(err, "embed", "--file", "out of memory");
    s->next++;
    *text = s->held[slot];
    return FE_EXIT_OK;
}

/* Counts a regular file's lines (npy's header needs the count), then rewinds */
static size_t count_lines(FILE *f) {
    size_t n = 0;
    int c, last = '\n';
    while ((c = getc(f)) != EOF) {
        if (c == '\n') n++;
        last = c;
    }
    rewind(f);
    return n + (last != '\n');
}

static int open_source(source *s, const embed_args *a, const fe_cli_io *io, bool need_total) {
    memset(s, 0, sizeof *s);
    s->a = a;
    if (!a->file) {
        s->total = (size_t)a->n_texts;
        return FE_EXIT_OK;
    }
    if (strcmp(a->file, "-") == 0) {
        s->f = io->in;
        if (!s->f) return FE_EXIT_OK; /* no input stream: no texts */
    } else if (!(s->f = fopen(a->file, "rb"))) {
        return cli_refuse(io->err, "embed", "--file %s: cannot open (%s); give a readable file of "
                          "texts, one a line", a->file, strerror(errno));
    } else {
        s->own_f = true;
    }
    if (need_total && s->own_f) s->total = count_lines(s->f);
    return FE_EXIT_OK;
}

static void close_source(source *s, int batch) {
    if (s->own_f) fclose(s->f);
    free(s->line);
    for (int i = 0; s->held && i < batch; i++) free(s->held[i]);
    free(s->held);
}

/* ---- output ---- */

static void json_header(FILE *f, const char *model, int64_t dim) {
    fputs("{\"model\": ", f);
    cli_json_string(f, model, strlen(model));
    fprintf(f, ", \"dim\": %lld, \"embeddings\": [", (long long)dim);
}

static void json_rows(FILE *f, const float *v, size_t rows, int64_t dim, size_t done) {
    for (size_t r = 0; r < rows; r++) {
        fputs(done + r ? ",\n  [" : "\n  [", f);
        for (int64_t i = 0; i < dim; i++) fprintf(f, "%s%.8g", i ? ", " : "", v[r * (size_t)dim + (size_t)i]);
        fputc(']', f);
    }
}

/* NumPy .npy version 1.0: magic, header length, a Python dict padded to 64 bytes */
static void npy_header(FILE *f, size_t rows, int64_t dim) {
    char dict[128];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %lld), }",
                     rows, (long long)dim);
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    uint16_t hl = (uint16_t)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    unsigned char le[2] = {(unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    fwrite(le, 1, 2, f);
    fwrite(dict, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
}

/* ---- the command ---- */

static int check(const embed_args *a, FILE *err) {
    if (!!a->n_texts + !!a->file != 1)
        return cli_refuse(err, "embed", "give the texts: --text TEXT (repeatable) or --file FILE "
                          "(one text a line, - for stdin), not both");
    return FE_EXIT_OK;
}

static fe_lm_embed_options embed_opts(const embed_args *a) {
    fe_lm_embed_options o = fe_lm_embed_options_default();
    o.pooling = !strcmp(a->pooling, "mean") ? FE_LM_POOLING_MEAN : !strcmp(a->pooling, "cls")
                ? FE_LM_POOLING_CLS : !strcmp(a->pooling, "last") ? FE_LM_POOLING_LAST : FE_LM_POOLING_MODEL;
    o.dim = a->dim;
    o.normalize = a->no_normalize ? 0 : -1;
    o.prompt_name = a->prompt_name;
    return o;
}

static int run(fe_lm_encoder *e, const embed_args *a, const fe_cli_io *io, double t_load) {
    fe_lm_encoder_info in;
    fe_lm_encoder_get_info(e, &in);
    if (a->dim > in.hidden)
        return cli_refuse(io->err, "embed", "--dim %lld is more than the model's %lld values; give "
                          "1..%lld (or 0 for all)", (long long)a->dim, (long long)in.hidden,
                          (long long)in.hidden);
    bool npy = !strcmp(a->format, "npy");
    source s;
    int code = open_source(&s, a, io, npy);
    const int batch = in.batch;
    s.held = calloc((size_t)batch, sizeof *s.held);
    float *v = malloc((size_t)batch * (size_t)in.hidden * sizeof *v);
    const char **texts = calloc((size_t)batch, sizeof *texts);
    if (code == FE_EXIT_OK && (!s.held || !v || !texts)) code = cli_fail(io->err, "embed", "", "out of memory");
    /* npy from a stream: read every line first, the header needs the count */
    char **all = NULL;
    size_t n_all = 0;
    if (code == FE_EXIT_OK && npy && s.f && !s.own_f) {
        const char *t;
        size_t cap = 0;
        while ((code = next_text(&s, 0, &t, io->err)) == FE_EXIT_OK && t) {
            if (n_all == cap) {
                char **p = realloc(all, (cap = cap ? 2 * cap : 256) * sizeof *p);
                if (!p) { code = cli_fail(io->err, "embed", "", "out of memory"); break; }
                all = p;
            }
            if (!(all[n_all++] = strdup(t))) { code = cli_fail(io->err, "embed", "", "out of memory"); break; }
        }
        s.total = n_all;
    }
    fe_lm_embed_options o = embed_opts(a);
    fe_lm_embed_stats st = {0};
    int64_t dim = a->dim ? a->dim : in.hidden;
    size_t done = 0, next_all = 0;
    bool tty = !a->quiet && isatty(fileno(io->err));
    double t0 = now();
    if (code == FE_EXIT_OK) {
        if (npy) npy_header(io->out, s.total, dim);
        else json_header(io->out, a->model, dim);
    }
    while (code == FE_EXIT_OK) {
        int k = 0;
        for (; code == FE_EXIT_OK && k < batch; k++) {
            if (all) texts[k] = next_all < n_all ? all[next_all++] : NULL;
            else code = next_text(&s, k, &texts[k], io->err);
            if (!texts[k]) break;
        }
        if (code != FE_EXIT_OK || k == 0) break;
        if (npy && s.total && done + (size_t)k > s.total) { /* the file grew while read */
            code = cli_fail(io->err, "embed", a->file, "the file changed while it was read");
            break;
        }
        if (fe_lm_embed(e, texts, (size_t)k, &o, v, NULL, &st) != FE_OK) {
            code = cli_refuse(io->err, "embed", "%s", fe_lm_encoder_message(e));
            break;
        }
        if (npy) fwrite(v, sizeof *v, (size_t)k * (size_t)dim, io->out);
        else json_rows(io->out, v, (size_t)k, dim, done);
        done += (size_t)k;
        fflush(io->out);
        if (tty) fprintf(io->err, "\rembed: %zu texts", done);
        else if (!a->quiet && done / 1000 != (done - (size_t)k) / 1000) fprintf(io->err, "embed: %zu texts\n", done);
    }
    if (code == FE_EXIT_OK && !npy) fputs(done ? "\n]}\n" : "]}\n", io->out);
    if (code == FE_EXIT_OK && npy && done != s.total)
        code = cli_fail(io->err, "embed", a->file, "the file changed while it was read");
    double secs = now() - t0;
    if (tty) fputc('\n', io->err);
    if (code == FE_EXIT_OK && !a->quiet)
        fprintf(io->err, "embed: %zu texts, %lld tokens (%lld texts cut at %lld tokens) in %.3f s: %.1f texts/s, "
                "%.0f tokens/s, batch %d, %s dot products; model loaded in %.3f s\n", done,
                (long long)st.tokens, (long long)st.truncated, (long long)in.max_tokens, secs,
                secs > 0 ? (double)done / secs : 0, secs > 0 ? (double)st.tokens / secs : 0, batch,
                in.dot_bf16 ? "bf16" : "f32", t_load);
    if (code == FE_EXIT_OK && a->profile) {
        fprintf(io->err, "embed: tokenizing %.3f s, the encoder graph %.3f s, the rest (pooling, "
                "output) %.3f s\n", 1e-9 * (double)st.tokenize_ns, 1e-9 * (double)st.graph_ns,
                secs - 1e-9 * (double)(st.tokenize_ns + st.graph_ns));
        fe_graph_set_profiling(fe_lm_encoder_graph(e), false);
        fe_graph_write_profile(fe_lm_encoder_graph(e), io->err);
    }
    for (size_t i = 0; i < n_all; i++) free(all[i]);
    free(all);
    close_source(&s, batch);
    free(v);
    free(texts);
    return code;
}

int fe_cmd_embed(int argc, char **argv, const fe_cli_io *io) {
    embed_args a = {.pooling = "model", .format = "json", .dot = "auto", .batch = 8};
    arg_opt t[16];
    arg_spec sp = {.cmd = "embed", .synopsis = synopsis, .opts = t, .n_opts = embed_options(&a, t),
                   .max_positional = 1, .positional_what = "MODEL"};
    const char *pos[1] = {NULL};
    bool help;
    int code = cli_parse(&sp, argc, argv, pos, io, &help);
    if (code != FE_EXIT_OK || help) return code;
    a.model = pos[0];
    if (!a.model) return cli_refuse(io->err, "embed", "give the MODEL folder (config.json, "
                                    "model.safetensors, tokenizer.json)");
    code = check(&a, io->err);
    if (code != FE_EXIT_OK) return code;
    fe_lm_encoder_options eo = fe_lm_encoder_options_default();
    eo.batch = (int)a.batch;
    eo.max_tokens = a.max_tokens;
    eo.threads = (int)a.threads;
    eo.dot = !strcmp(a.dot, "bf16")  ? FE_LM_ENCODER_DOT_BF16
             : !strcmp(a.dot, "f32") ? FE_LM_ENCODER_DOT_F32 : FE_LM_ENCODER_DOT_AUTO;
    fe_lm_encoder *e = NULL;
    fe_error err = {0};
    double t0 = now();
    if (fe_lm_encoder_open(a.model, &eo, &e, &err) != FE_OK)
        return cli_fail(io->err, "embed", a.model, err.message);
    if (a.profile) fe_graph_set_profiling(fe_lm_encoder_graph(e), true);
    code = run(e, &a, io, now() - t0);
    fe_lm_encoder_close(e);
    return code == FE_EXIT_OK ? cli_flush_out(io, "embed") : code;
}
