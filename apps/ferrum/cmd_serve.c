/* apps/ferrum/cmd_serve.c: `ferrum serve [MODEL] [--embedding-model DIR]`: its options (one
 * args.h table, every limit with its range and default), checked before the models load; then
 * the chat model and the encoder opened (either or both), the server started
 * (apps/serve/server.h), one line saying where it listens, and a wait for SIGINT or SIGTERM,
 * which stop it cleanly. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../serve/server.h"
#include "args.h"
#include "ferrum/device.h"
#include "ferrum/lm.h"
#include "lm_args.h"

typedef struct serve_args {
    model_args model;
    const char *host, *api_key, *alias, *embedding_model, *embedding_alias;
    int64_t max_embedding_inputs, embedding_batch;
    int64_t port, parallel, ctx, chunk, queue, max_body, max_prompt_tokens, max_tokens;
    int64_t request_seconds, client_seconds, max_connections, groups, cache_type;
    bool batch, no_batch; /* --batch (the default, said explicitly), --no-batch */
} serve_args;

enum { MAX_GROUPS = 16 };

#define INT(n, sh, mv, field, l, h, d, text) \
    {n, sh, ARG_INT, mv, text, d, .lo = l, .hi = h, .i = field}
#define STRING(n, mv, field, text) {n, 0, ARG_STRING, mv, text, NULL, .s = field}

enum { MAX_SERVE_OPTS = 25 + MODEL_MAX_OPTS };

static int serve_options_table(serve_args *a, arg_opt *t) {
    const arg_opt opts[] = {
        {"host", 0, ARG_STRING, "ADDR", "the IPv4 address to listen on", "127.0.0.1", .s = &a->host},
        INT("port", 'p', "N", &a->port, 0, 65535, "8080", "the TCP port; 0: any free one (printed)"),
        STRING("api-key", "KEY", &a->api_key, "ask every /v1/ request for \"Authorization: Bearer "
               "KEY\" (/health and /metrics stay open)"),
        STRING("alias", "NAME", &a->alias, "the model's name in /v1/models and requests (default: "
               "MODEL's file name without .gguf)"),
        INT("parallel", 'n', "N", &a->parallel, 1, 64, "4",
            "slots: requests generated at once, each with its own KV cache"),
        INT("ctx", 'c', "N", &a->ctx, 16, 1 << 20, "min(2048, the model's context)",
            "KV cache rows per slot: a request's prompt plus its tokens"),
        INT("groups", 0, "K", &a->groups, 1, MAX_GROUPS, "1",
            "device groups: the workers (-t) split into K pools of -t/K unpinned workers, each "
            "with its own copy of the model's state over the same mapped weights; slot i is in "
            "group i mod K, and the K groups decode side by side (each group one batch, or with "
            "--no-batch its slots taking turns). For a small model on many cores, whose one "
            "decode step cannot use them all"),
        {"batch", 0, ARG_FLAG, NULL, "batched decode (the default): a group's slots are the "
         "rows of one batch, and every step is one decode call for all of them (the weights "
         "read once a step for every row), with the prompts' chunks run between steps. Its "
         "tokens are `ferrum generate`'s however many rows decode together. At most 12 slots "
         "a group", NULL, .flag = &a->batch},
        {"no-batch", 0, ARG_FLAG, NULL, "the slots take turns on the device instead, a token "
         "(or a prompt chunk) at a time, each its own decode call: up to 64 slots a group, "
         "each step reading every weight for one row", NULL, .flag = &a->no_batch},
        INT("chunk", 0, "N", &a->chunk, 1, 1 << 16, "256",
            "prompt rows per prefill turn; the slots decoding wait at most one chunk"),
        cache_type_option(&a->cache_type),
        INT("queue", 0, "N", &a->queue, 0, 1 << 16, "16",
            "requests that may wait for a slot; past it, 503 with Retry-After"),
        INT("max-body", 0, "BYTES", &a->max_body, 64, (int64_t)1 << 30, "1048576",
            "the largest request body; larger is refused with 413"),
        INT("max-prompt-tokens", 0, "N", &a->max_prompt_tokens, 1, 1 << 20, "--ctx - 1",
            "the longest prompt, in tokens"),
        INT("max-tokens", 0, "N", &a->max_tokens, 1, 1 << 20, "1024",
            "the most tokens one request may ask for (and what it gets when it names none, "
            "within the slot's room)"),
        INT("request-time", 0, "S", &a->request_seconds, 1, 86400, "300",
            "seconds a request may take from admission to its last token"),
        INT("client-timeout", 0, "S", &a->client_seconds, 1, 3600, "30",
            "a client idle this long, or taking longer to send its body, is dropped"),
        INT("max-connections", 0, "N", &a->max_connections, 1, 4096, "64",
            "open connections at most"),
        STRING("embedding-model", "DIR", &a->embedding_model, "serve POST /v1/embeddings with the "
               "text encoder in folder DIR (as `ferrum embed` takes it: a BERT-family model such "
               "as all-MiniLM-L6-v2, or EmbeddingGemma), beside MODEL or alone"),
        STRING("embedding-alias", "NAME", &a->embedding_alias, "the embedding model's name in "
               "/v1/models and requests (default: DIR's last part)"),
        INT("max-embedding-inputs", 0, "N", &a->max_embedding_inputs, 1, 65536, "512",
            "inputs one embeddings request may hold"),
        INT("embedding-batch", 0, "N", &a->embedding_batch, 1, 32, "8",
            "texts per encoder call (its graph is compiled for N texts of the longest length)"),
    };
    int n = model_options(&a->model, true, t);
    memcpy(t + n, opts, sizeof opts);
    return n + (int)(sizeof opts / sizeof opts[0]);
}

static const char synopsis[] =
    "usage: ferrum serve MODEL [--embedding-model DIR] [options]\n"
    "       ferrum serve --embedding-model DIR [options]\n\n"
    "Serves a Llama-family model over HTTP with the OpenAI API: POST /v1/chat/completions and\n"
    "/v1/completions (whole, or streamed as server-sent events), GET /v1/models, GET /health\n"
    "and GET /metrics (Prometheus); with --embedding-model DIR, POST /v1/embeddings too (or\n"
    "alone, without MODEL). --parallel slots generate at once: each step is one decode call\n"
    "for every slot generating (batched decode; the prompts' chunks run between steps), so\n"
    "the weights are read once a step for all of them; more requests wait in a bounded\n"
    "queue. A slot keeps\n"
    "its KV cache, so a prompt that starts as an earlier one did (a shared system prompt)\n"
    "reuses those rows. Stop with Ctrl-C (SIGINT) or SIGTERM.\n\n"
    "  ferrum serve ~/.cache/ferrum/models/SmolLM2-135M-Instruct.Q4_1.gguf --port 8080\n"
    "  curl http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \\\n"
    "    -d '{\"model\": \"SmolLM2-135M-Instruct.Q4_1\", \"messages\": [{\"role\": \"user\", "
    "\"content\": \"Hi\"}]}'\n\n"
    "  ferrum serve --embedding-model ~/.cache/ferrum/models/all-MiniLM-L6-v2 --port 8080\n"
    "  curl http://127.0.0.1:8080/v1/embeddings -H 'Content-Type: application/json' \\\n"
    "    -d '{\"model\": \"all-MiniLM-L6-v2\", \"input\": [\"a cat\", \"a dog\"]}'\n";

/* "dir/SmolLM2-135M-Instruct.Q4_1.gguf" -> "SmolLM2-135M-Instruct.Q4_1" (into buf) */
static const char *default_alias(const char *path, char *buf, size_t n) {
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    snprintf(buf, n, "%s", base);
    size_t len = strlen(buf);
    if (len > 5 && strcmp(buf + len - 5, ".gguf") == 0) buf[len - 5] = '\0';
    while ((len = strlen(buf)) > 1 && buf[len - 1] == '/') buf[len - 1] = '\0';
    return buf;
}

static int check(serve_args *a, FILE *err) {
    if (a->embedding_alias && (strchr(a->embedding_alias, '/') || strlen(a->embedding_alias) > 100))
        return cli_refuse(err, "serve", "--embedding-alias \"%s\" holds a '/' or passes 100 bytes; "
                          "give a plain name", a->embedding_alias);
    if (a->batch && a->no_batch)
        return cli_refuse(err, "serve", "--batch and --no-batch contradict each other; give one "
                          "(batched decode is the default)");
    if (!a->model.model && (a->batch || a->no_batch || a->groups > 1 || a->alias ||
                            a->cache_type >= 0))
        return cli_refuse(err, "serve", "--batch, --no-batch, --groups, --alias and --cache-type "
                          "are for a chat MODEL, and none is given; give MODEL, or leave them out");
    if (!a->model.model) return FE_EXIT_OK; /* embeddings only */
    if (a->model.random_weights)
        return cli_refuse(err, "serve", "--random-weights has no tokenizer to serve text with; "
                          "give a GGUF file or a checkpoint with tokenizer.json");
    if (a->alias && (strchr(a->alias, '/') || strlen(a->alias) > 100))
        return cli_refuse(err, "serve", "--alias \"%s\" holds a '/' or passes 100 bytes; give a "
                          "plain name", a->alias);
    if (a->api_key && strlen(a->api_key) > 256)
        return cli_refuse(err, "serve", "--api-key passes 256 bytes; give a shorter key");
    if (a->groups > a->parallel)
        return cli_refuse(err, "serve", "--groups %lld is more than --parallel %lld: a group "
                          "would have no slot; give at most %lld groups", (long long)a->groups,
                          (long long)a->parallel, (long long)a->parallel);
    if (!a->no_batch && (a->parallel + a->groups - 1) / a->groups > FE_LM_BATCH_MAX_SLOTS)
        return cli_refuse(err, "serve", "--parallel %lld in %lld group%s puts more than %d slots "
                          "in one batch (batched decode, the default); give at most %lld slots, "
                          "more --groups, or --no-batch (the slots then take turns)",
                          (long long)a->parallel, (long long)a->groups, a->groups == 1 ? "" : "s",
                          FE_LM_BATCH_MAX_SLOTS, (long long)a->groups * FE_LM_BATCH_MAX_SLOTS);
    int workers = a->model.threads ? (int)a->model.threads : fe_device_cpus_allowed();
    if (a->groups > workers)
        return cli_refuse(err, "serve", "--groups %lld splits %d workers into groups of none; "
                          "give at most %d groups (or more -t)", (long long)a->groups, workers, workers);
    if (a->max_prompt_tokens && a->ctx && a->max_prompt_tokens >= a->ctx)
        return cli_refuse(err, "serve", "--max-prompt-tokens %lld leaves no row of --ctx %lld to "
                          "generate in; give at most %lld", (long long)a->max_prompt_tokens,
                          (long long)a->ctx, (long long)a->ctx - 1);
    return FE_EXIT_OK;
}

/* Blocks SIGINT and SIGTERM in every thread (the server's inherit the mask), to take them
 * with sigwait here. */
static void wait_for_stop(const sigset_t *set, FILE *err) {
    int sig = 0;
    sigwait(set, &sig);
    fprintf(err, "ferrum serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* The model once per device group: group 0 as every command opens it (its own pinned
 * device); with --groups K, every group on an unpinned device of -t/K workers of its own
 * (pinned pools would all take CPUs 0, 1, ...), the weights mapped once by the OS. */
typedef struct groups {
    fe_lm_model *m[MAX_GROUPS];
    fe_device *dev[MAX_GROUPS];
    int n;
} groups;

static void groups_close(groups *g) {
    for (int i = 0; i < g->n; i++) {
        fe_lm_model_close(g->m[i]);
        fe_device_destroy(g->dev[i]);
    }
    g->n = 0;
}

static int groups_open(const serve_args *a, const fe_cli_io *io, groups *g) {
    if (a->groups == 1) {
        int code = model_open(&a->model, false, "serve", io, &g->m[0]);
        g->n = code == FE_EXIT_OK;
        return code;
    }
    int workers = (a->model.threads ? (int)a->model.threads : fe_device_cpus_allowed()) / (int)a->groups;
    fprintf(io->err, "ferrum: mapping %s %lld times, each over %d unpinned workers...\n", a->model.model,
            (long long)a->groups, workers);
    for (int i = 0; i < a->groups; i++) {
        fe_device_options d = fe_device_options_default();
        d.n_workers = workers;
        d.pin = false;
        fe_error err = {0};
        fe_lm_open_options o = fe_lm_open_options_default();
        o.tokenizer = a->model.tokenizer;
        o.prefault = false;
        /* groups share the file's pages unless asked: a copy each would multiply the memory */
        o.weights = a->model.no_mmap ? FE_LM_WEIGHTS_IN_MEMORY : FE_LM_WEIGHTS_MAPPED;
        if (fe_device_create(&d, &g->dev[i], &err) == FE_OK) {
            o.device = g->dev[i];
            g->n++;
            if (fe_lm_model_open(a->model.model, &o, &g->m[i], &err) == FE_OK) continue;
        }
        groups_close(g);
        return cli_fail(io->err, "serve", "", err.message);
    }
    return FE_EXIT_OK;
}

/* The chat model's groups (none without MODEL), read in, and the slots' rows (*ctx). */
static int open_chat(const serve_args *a, const fe_cli_io *io, groups *g, int64_t *ctx) {
    if (!a->model.model) return FE_EXIT_OK;
    int code = groups_open(a, io, g);
    if (code != FE_EXIT_OK) return code;
    fe_lm_model_info info;
    fe_lm_model_get_info(g->m[0], &info);
    if (!info.tokenizer) {
        groups_close(g);
        return cli_fail(io->err, "serve", "the model has no tokenizer", "give --tokenizer tokenizer.json");
    }
    model_read_in(g->m[0], io);
    *ctx = a->ctx ? a->ctx : (info.context > 0 && info.context < 2048 ? info.context : 2048);
    if (info.context > 0 && *ctx > info.context) {
        groups_close(g);
        return cli_refuse(io->err, "serve", "--ctx %lld passes the model's context of %lld; give "
                          "at most %lld", (long long)*ctx, (long long)info.context, (long long)info.context);
    }
    return FE_EXIT_OK;
}

/* The encoder of --embedding-model (none without it), on a device of its own: the chat
 * slots' devices run one dispatch at a time, and an embeddings request must not wait on
 * them. */
static int open_encoder(const serve_args *a, const fe_cli_io *io, fe_lm_encoder **enc) {
    if (!a->embedding_model) return FE_EXIT_OK;
    fe_lm_encoder_options o = fe_lm_encoder_options_default();
    o.batch = (int)a->embedding_batch;
    o.threads = (int)a->model.threads;
    fe_error err = {0};
    if (fe_lm_encoder_open(a->embedding_model, &o, enc, &err) != FE_OK)
        return cli_fail(io->err, "serve", "--embedding-model", err.message);
    return FE_EXIT_OK;
}

static int run(serve_args *a, const fe_cli_io *io) {
    groups g = {0};
    int64_t ctx = 0;
    fe_lm_encoder *enc = NULL;
    int code = open_chat(a, io, &g, &ctx);
    if (code == FE_EXIT_OK && (code = open_encoder(a, io, &enc)) != FE_EXIT_OK) groups_close(&g);
    if (code != FE_EXIT_OK) return code;
    char alias[128], embedding_alias[128];
    serve_options o = {
        .host = a->host, .port = (int)a->port, .api_key = a->api_key,
        .model_id = !a->model.model ? NULL : a->alias ? a->alias
                    : default_alias(a->model.model, alias, sizeof alias),
        .encoder = enc,
        .embedding_model_id = !enc ? NULL : a->embedding_alias ? a->embedding_alias
                              : default_alias(a->embedding_model, embedding_alias, sizeof embedding_alias),
        .max_embedding_inputs = (size_t)a->max_embedding_inputs,
        .max_body = (size_t)a->max_body,
        .max_prompt_tokens = a->max_prompt_tokens ? a->max_prompt_tokens : ctx - 1,
        .max_tokens = a->max_tokens, .request_seconds = (double)a->request_seconds,
        .client_seconds = (unsigned)a->client_seconds, .max_connections = (unsigned)a->max_connections,
        .pool = {.slots = (int)a->parallel, .ctx = ctx, .chunk = a->chunk, .queue = (int)a->queue,
                 .batch = !a->no_batch, .cache_type = cache_type_of(a->cache_type)},
    };
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    serve_server *s = NULL;
    fe_error err = {0};
    if (o.model_id && o.embedding_model_id && strcmp(o.model_id, o.embedding_model_id) == 0) {
        groups_close(&g);
        fe_lm_encoder_close(enc);
        return cli_refuse(io->err, "serve", "the chat and the embedding model are both named \"%s\"; "
                          "give one another name with --alias or --embedding-alias", o.model_id);
    }
    if (server_start(g.m, g.n, &o, &s, &err) != FE_OK) {
        groups_close(&g);
        fe_lm_encoder_close(enc);
        return cli_fail(io->err, "serve", "", err.message);
    }
    char chat[256] = "", embed[160] = "";
    if (o.model_id)
        snprintf(chat, sizeof chat, "model \"%s\", %lld slots of %lld rows in %d device group%s%s, "
                 "queue %lld", o.model_id, (long long)a->parallel, (long long)ctx, g.n,
                 g.n == 1 ? "" : "s", a->no_batch ? ", taking turns" : ", batched decode",
                 (long long)a->queue);
    if (enc) snprintf(embed, sizeof embed, "%sembedding model \"%s\"", o.model_id ? "; " : "", o.embedding_model_id);
    fprintf(io->err, "ferrum serve: listening on http://%s:%d (%s%s)\n", a->host, server_port(s), chat, embed);
    fflush(io->err);
    wait_for_stop(&set, io->err);
    server_stop(s);
    groups_close(&g);
    fe_lm_encoder_close(enc);
    return FE_EXIT_OK;
}

int fe_cmd_serve(int argc, char **argv, const fe_cli_io *io) {
    serve_args a = {.model = model_args_default(), .host = "127.0.0.1", .port = 8080,
                    .parallel = 4, .chunk = 256, .queue = 16, .max_body = 1 << 20,
                    .max_tokens = 1024, .request_seconds = 300, .client_seconds = 30,
                    .max_connections = 64, .groups = 1, .max_embedding_inputs = 512,
                    .embedding_batch = 8, .cache_type = -1};
    arg_opt t[MAX_SERVE_OPTS];
    arg_spec sp = {.cmd = "serve", .synopsis = synopsis, .opts = t,
                   .n_opts = serve_options_table(&a, t), .max_positional = 1,
                   .positional_what = "MODEL"};
    const char *pos[1] = {NULL};
    bool help = false;
    int code = cli_parse(&sp, argc, argv, pos, io, &help);
    if (code != FE_EXIT_OK || help) return code;
    if (!pos[0] && !a.model.model_opt && a.embedding_model) { /* embeddings only */
        if (a.model.threads > fe_device_cpus_allowed())
            return cli_refuse(io->err, "serve", "-t/--threads %lld is more than the %d CPUs this "
                              "process may use; give -t 1..%d", (long long)a.model.threads,
                              fe_device_cpus_allowed(), fe_device_cpus_allowed());
    } else if ((code = model_args_settle(&a.model, pos[0], "serve", io->err)) != FE_EXIT_OK) {
        return code;
    }
    if ((code = check(&a, io->err)) != FE_EXIT_OK) return code;
    return run(&a, io);
}
