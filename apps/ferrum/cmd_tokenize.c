/* apps/ferrum/cmd_tokenize.c: `ferrum tokenize MODEL [TEXT]`: text through the model's
 * tokenizer, each token's id and piece (quoted so control bytes and half characters show),
 * the ids alone (as generate's --prompt-ids takes them) or one JSON object; and the reverse,
 * --detokenize 1,2,3, the text of ids. Only the tokenizer is needed, so the model is opened
 * header-only (no weight byte read). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "ferrum/lm.h"
#include "lm_args.h"

static const char synopsis[] =
    "usage: ferrum tokenize MODEL [TEXT] [options]\n"
    "       ferrum tokenize MODEL --detokenize 1,2,3\n\n"
    "Splits TEXT (or --prompt TEXT, or -f FILE, - for stdin) into the model's tokens and\n"
    "prints each one's id and piece, quoted: control bytes and bytes of a character cut\n"
    "between tokens show as \\xNN. --ids-only prints the ids as generate's --prompt-ids takes\n"
    "them. --detokenize turns ids back into text. Reads the model's headers and tokenizer\n"
    "only, never the weights.\n";

typedef struct tok_args {
    model_args open;
    const char *text, *prompt, *file, *detokenize;
    bool ids_only, no_bos, no_special, json;
} tok_args;

enum { TOK_MAX_OPTS = MODEL_MAX_OPTS + 8 };

static int tokenize_options(tok_args *a, arg_opt *t) {
    int n = model_options(&a->open, false, t);
    const arg_opt opts[] = {
        {"prompt", 'p', ARG_STRING, "TEXT", "the text (as the positional TEXT)", NULL,
         .empty_ok = true, .s = &a->prompt},
        {"file", 'f', ARG_STRING, "FILE", "the text, read from FILE (- for stdin)", NULL,
         .s = &a->file},
        {"ids-only", 0, ARG_FLAG, NULL, "print the ids alone, comma-separated (generate's "
         "--prompt-ids)", NULL, .flag = &a->ids_only},
        {"no-bos", 0, ARG_FLAG, NULL, "do not add the BOS token the model wants first", NULL,
         .flag = &a->no_bos},
        {"no-special", 0, ARG_FLAG, NULL, "read special tokens written in the text "
         "(<|im_start|>) as plain text", NULL, .flag = &a->no_special},
        {"detokenize", 0, ARG_STRING, "1,2,3", "print the text of these ids instead", NULL,
         .s = &a->detokenize},
        {"json", 0, ARG_FLAG, NULL, "print one JSON object: {\"ids\", \"tokens\": [{\"id\", "
         "\"piece\"}]} (a piece that is not whole UTF-8 adds \"bytes\"), or {\"text\"}", NULL,
         .flag = &a->json},
    };
    memcpy(t + n, opts, sizeof opts);
    return n + (int)(sizeof opts / sizeof opts[0]);
}

static int refuse(FILE *err, const char *msg) { return cli_refuse(err, "tokenize", "%s", msg); }

/* The checks across options, before the model is opened. */
static int check(const tok_args *a, FILE *err) {
    int texts = !!a->text + !!a->prompt + !!a->file;
    if (a->detokenize && (texts || a->ids_only || a->no_bos || a->no_special))
        return refuse(err, "--detokenize takes ids, not text; give it alone (with --json if "
                      "wanted), or give TEXT without it");
    if (!a->detokenize && texts == 0)
        return refuse(err, "give the TEXT (or --prompt TEXT, or -f FILE, - for stdin), or "
                      "--detokenize 1,2,3");
    if (texts > 1) return refuse(err, "give one of TEXT, --prompt, -f/--file");
    if (a->ids_only && a->json) return refuse(err, "give one of --ids-only, --json");
    return FE_EXIT_OK;
}

static int detokenize(fe_lm_model *m, const tok_args *a, const fe_lm_model_info *in,
                      const fe_cli_io *io) {
    int32_t *ids;
    size_t n;
    int code = cli_parse_ids(a->detokenize, in->vocab, "tokenize", "--detokenize", &ids, &n, io->err);
    char *text = NULL;
    size_t len = 0;
    if (code == FE_EXIT_OK && fe_lm_detokenize(m, ids, n, &text, &len) != FE_OK)
        code = cli_fail(io->err, "tokenize", "--detokenize", fe_lm_model_message(m));
    if (code == FE_EXIT_OK && a->json) {
        fputs("{\"text\": ", io->out);
        cli_json_string(io->out, text, len);
        fputs("}\n", io->out);
    } else if (code == FE_EXIT_OK) {
        fwrite(text, 1, len, io->out);
        fputc('\n', io->out);
    }
    fe_lm_free(text);
    free(ids);
    return code;
}

static void print_tokens(fe_lm_model *m, const tok_args *a, const int32_t *ids, size_t n, FILE *f) {
    if (a->ids_only) {
        for (size_t i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
        fputc('\n', f);
        return;
    }
    if (a->json) {
        fputs("{\"ids\": [", f);
        for (size_t i = 0; i < n; i++) fprintf(f, "%s%d", i ? ", " : "", ids[i]);
        fputs("], \"tokens\": [", f);
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *p = fe_lm_token_piece(m, ids[i], &len);
        if (!a->json) {
            fprintf(f, "%6d  ", ids[i]);
            cli_quote_piece(f, p, len);
            fputc('\n', f);
            continue;
        }
        fprintf(f, "%s{\"id\": %d, \"piece\": ", i ? ", " : "", ids[i]);
        cli_json_string(f, p, len);
        if (!cli_utf8_valid(p, len)) {
            fputs(", \"bytes\": [", f);
            for (size_t k = 0; k < len; k++) fprintf(f, "%s%u", k ? ", " : "", (unsigned char)p[k]);
            fputc(']', f);
        }
        fputc('}', f);
    }
    if (a->json) fputs("]}\n", f);
}

static int tokenize(fe_lm_model *m, const tok_args *a, const fe_cli_io *io) {
    char *read = NULL;
    const char *text = a->text ? a->text : a->prompt;
    if (!text) {
        int code = cli_read_text(a->file, io->in, "tokenize", "-f/--file", &read, io->err);
        if (code != FE_EXIT_OK) return code;
        text = read;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    int code = FE_EXIT_OK;
    if (fe_lm_tokenize(m, text, strlen(text), !a->no_bos, !a->no_special, &ids, &n) != FE_OK)
        code = cli_fail(io->err, "tokenize", "", fe_lm_model_message(m));
    else
        print_tokens(m, a, ids, n, io->out);
    fe_lm_free(ids);
    free(read);
    return code;
}

int fe_cmd_tokenize(int argc, char **argv, const fe_cli_io *io) {
    tok_args a = {.open = model_args_default()};
    arg_opt t[TOK_MAX_OPTS];
    arg_spec sp = {.cmd = "tokenize", .synopsis = synopsis, .opts = t,
                   .n_opts = tokenize_options(&a, t), .max_positional = 2,
                   .positional_what = "MODEL and TEXT"};
    const char *pos[2] = {NULL, NULL};
    bool help;
    int code = cli_parse(&sp, argc, argv, pos, io, &help);
    if (code != FE_EXIT_OK || help) return code;
    /* with -m, the one positional is the TEXT */
    const char *model = a.open.model_opt ? NULL : pos[0];
    a.text = a.open.model_opt ? pos[0] : pos[1];
    if (a.open.model_opt && pos[1])
        return cli_refuse(io->err, "tokenize", "a second TEXT \"%s\" (-m gives the MODEL); give one", pos[1]);
    code = model_args_settle(&a.open, model, "tokenize", io->err);
    if (code == FE_EXIT_OK) code = check(&a, io->err);
    fe_lm_model *m = NULL;
    if (code == FE_EXIT_OK) code = model_open(&a.open, true, "tokenize", io, &m);
    if (code != FE_EXIT_OK) return code;
    fe_lm_model_info in;
    fe_lm_model_get_info(m, &in);
    if (!in.tokenizer)
        code = cli_fail(io->err, "tokenize", a.open.model, "the model has no tokenizer; give "
                        "--tokenizer tokenizer.json");
    else if (a.detokenize)
        code = detokenize(m, &a, &in, io);
    else
        code = tokenize(m, &a, io);
    fe_lm_model_close(m);
    return code == FE_EXIT_OK ? cli_flush_out(io, "tokenize") : code;
}
