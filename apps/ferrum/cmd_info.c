/* apps/ferrum/cmd_info.c: `ferrum info MODEL`: what a model is (fe_lm_model_info), as aligned
 * lines or one JSON object. The model is opened header-only, so no weight byte is read and a
 * large checkpoint answers at once; random weights give their shapes, nothing drawn. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "ferrum/lm.h"
#include "lm_args.h"

static const char synopsis[] =
    "usage: ferrum info MODEL [options]\n\n"
    "Says what a model is: architecture, file format, dtypes, context, shapes, rope theta,\n"
    "vocabulary, tokenizer, BOS/EOS, chat template and weight bytes. MODEL is a GGUF file, a\n"
    "Hugging Face safetensors checkpoint, or (with --random-weights) a preset or config.json.\n"
    "Reads the headers only, never the weights.\n";

static const char *dtype_name(fe_dtype t) {
    const fe_dtype_traits *d = fe_dtype_info(t);
    return d ? d->name : "?";
}

/* "bos             1 \"<|im_start|>\"": a special token's id and text, or none */
static void token_line(FILE *f, fe_lm_model *m, const char *key, int32_t id) {
    size_t len = 0;
    const char *p = id >= 0 ? fe_lm_token_piece(m, id, &len) : NULL;
    fprintf(f, "%-15s ", key);
    if (id < 0) fputs("none", f);
    else fprintf(f, "%d", id);
    if (p) fputc(' ', f), cli_quote_piece(f, p, len);
    fputc('\n', f);
}

static void text_out(fe_lm_model *m, const fe_lm_model_info *in, FILE *f) {
    fprintf(f, "%-15s %s\n", "model", in->path);
    fprintf(f, "%-15s %s\n", "architecture", in->architecture ? in->architecture : "?");
    fprintf(f, "%-15s %s\n", "format", in->format_name);
    fprintf(f, "%-15s embedding %s, matrices %s%s\n", "dtypes", dtype_name(in->embed_dtype),
            dtype_name(in->matrix_dtype), in->mixed_matrices ? " (mixed: some layers' "
            "matrices have other dtypes)" : "");
    fprintf(f, "%-15s %lld\n", "context", (long long)in->context);
    fprintf(f, "%-15s %lld\n", "layers", (long long)in->n_layers);
    fprintf(f, "%-15s %lld\n", "hidden", (long long)in->hidden);
    fprintf(f, "%-15s %lld\n", "heads", (long long)in->n_heads);
    fprintf(f, "%-15s %lld\n", "kv heads", (long long)in->n_kv_heads);
    fprintf(f, "%-15s %lld\n", "head dim", (long long)in->head_dim);
    fprintf(f, "%-15s %lld\n", "ffn", (long long)in->ffn);
    fprintf(f, "%-15s %g\n", "rope theta", in->rope_theta);
    fprintf(f, "%-15s %g\n", "rms eps", in->rms_eps);
    fprintf(f, "%-15s %lld\n", "vocab", (long long)in->vocab);
    fprintf(f, "%-15s %s\n", "embeddings", in->tied_embeddings ? "tied (the output head is the "
            "embedding)" : "untied (an output head of its own)");
    if (in->tokenizer)
        fprintf(f, "%-15s %s, from %s\n", "tokenizer", in->tokenizer, in->tokenizer_source);
    else
        fprintf(f, "%-15s none (give --tokenizer tokenizer.json)\n", "tokenizer");
    token_line(f, m, "bos", in->bos);
    token_line(f, m, "eos", in->eos);
    /* from a template: its format and where; else the note says what was chosen and why */
    if (in->chat_source)
        fprintf(f, "%-15s %s, from %s%s\n", "chat template", in->chat_format_name, in->chat_source,
                in->chat_default_system ? "; it writes a default system prompt" : "");
    else
        fprintf(f, "%-15s %s (%s)\n", "chat template", in->chat_format_name, in->chat_note);
    fprintf(f, "%-15s %zu bytes (%.1f MiB), %s; %zu bytes read\n", "weights", in->weight_bytes,
            (double)in->weight_bytes / 1048576,
            in->format == FE_LM_FORMAT_RANDOM ? "random (shapes only, none drawn)" : "mapped",
            fe_lm_model_resident_bytes(m));
}

static void json_str_field(FILE *f, const char *key, const char *v) {
    fprintf(f, ", \"%s\": ", key);
    if (v) cli_json_string(f, v, strlen(v));
    else fputs("null", f);
}

/* A special token as {"id": 2, "text": "<|im_end|>"}, or null */
static void json_token(FILE *f, fe_lm_model *m, const char *key, int32_t id) {
    size_t len = 0;
    const char *p = id >= 0 ? fe_lm_token_piece(m, id, &len) : NULL;
    fprintf(f, ", \"%s\": ", key);
    if (id < 0) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"id\": %d, \"text\": ", id);
    if (p) cli_json_string(f, p, len);
    else fputs("null", f);
    fputc('}', f);
}

static void json_out(fe_lm_model *m, const fe_lm_model_info *in, FILE *f) {
    fputs("{\"path\": ", f);
    cli_json_string(f, in->path, strlen(in->path));
    json_str_field(f, "architecture", in->architecture);
    json_str_field(f, "format", in->format_name);
    json_str_field(f, "embed_dtype", dtype_name(in->embed_dtype));
    json_str_field(f, "matrix_dtype", dtype_name(in->matrix_dtype));
    fprintf(f, ", \"mixed_matrices\": %s, \"context\": %lld, \"n_layers\": %lld, \"hidden\": %lld, "
            "\"n_heads\": %lld, \"n_kv_heads\": %lld, \"head_dim\": %lld, \"ffn\": %lld, "
            "\"rope_theta\": %g, \"rms_eps\": %g, \"vocab\": %lld, \"tied_embeddings\": %s",
            in->mixed_matrices ? "true" : "false", (long long)in->context, (long long)in->n_layers,
            (long long)in->hidden, (long long)in->n_heads, (long long)in->n_kv_heads,
            (long long)in->head_dim, (long long)in->ffn, in->rope_theta, in->rms_eps,
            (long long)in->vocab, in->tied_embeddings ? "true" : "false");
    json_str_field(f, "tokenizer", in->tokenizer);
    json_str_field(f, "tokenizer_source", in->tokenizer_source);
    json_token(f, m, "bos", in->bos);
    json_token(f, m, "eos", in->eos);
    json_str_field(f, "chat_format", in->chat_format_name);
    json_str_field(f, "chat_source", in->chat_source);
    fprintf(f, ", \"chat_default_system\": %s", in->chat_default_system ? "true" : "false");
    json_str_field(f, "chat_note", in->chat_note);
    fprintf(f, ", \"weight_bytes\": %zu, \"weights_read_bytes\": %zu}\n", in->weight_bytes,
            fe_lm_model_resident_bytes(m));
}

int fe_cmd_info(int argc, char **argv, const fe_cli_io *io) {
    model_args ma = model_args_default();
    bool json = false;
    arg_opt t[MODEL_MAX_OPTS + 1];
    int n = model_options(&ma, false, t);
    t[n++] = (arg_opt){"json", 0, ARG_FLAG, NULL, "print one JSON object", NULL, .flag = &json};
    arg_spec sp = {.cmd = "info", .synopsis = synopsis, .opts = t, .n_opts = n,
                   .max_positional = 1, .positional_what = "MODEL"};
    const char *pos[1] = {NULL};
    bool help;
    int code = cli_parse(&sp, argc, argv, pos, io, &help);
    if (code != FE_EXIT_OK || help) return code;
    code = model_args_settle(&ma, pos[0], "info", io->err);
    fe_lm_model *m = NULL;
    if (code == FE_EXIT_OK) code = model_open(&ma, true, "info", io, &m);
    if (code != FE_EXIT_OK) return code;
    fe_lm_model_info in;
    fe_lm_model_get_info(m, &in);
    if (json) json_out(m, &in, io->out);
    else text_out(m, &in, io->out);
    fe_lm_model_close(m);
    return cli_flush_out(io, "info");
}
