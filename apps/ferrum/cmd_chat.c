/* apps/ferrum/cmd_chat.c: `ferrum chat MODEL`: a conversation, one user line at a time from
 * io->in (a terminal, where "> " prompts for it, or a pipe), each answer streamed in the
 * model's chat template until its end-of-turn token.
 *
 * Invariant: the session's KV cache holds the conversation so far, so each turn passes the
 * whole conversation's ids (fe_lm_chat_apply over every message, then fe_lm_tokenize) and
 * fe_lm_session_generate reuses the rows of the earlier turns, prefilling only what is new.
 * The library reuses whole prefill chunks, so chat's chunk is smaller than generate's. A turn
 * that cannot fit in the cache is refused (the conversation stays as it was) with the way
 * out: /reset, or a larger -c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "ferrum/lm.h"
#include "lm_args.h"

static const char synopsis[] =
    "usage: ferrum chat MODEL [options]\n\n"
    "Talks with a model: reads your lines from stdin (a terminal or a pipe), answers each one\n"
    "in the model's chat template (ChatML, Llama 3) and keeps the conversation, whose earlier\n"
    "turns stay in the KV cache. Lines that start with / are commands: /exit or /quit (or\n"
    "end of input) ends, /reset starts a new conversation, /help lists them.\n";

static const char commands_help[] =
    "/exit, /quit  end the chat (so does the end of input)\n"
    "/reset        forget the conversation and start a new one (the system prompt stays)\n"
    "/help         this list\n";

typedef struct chat_args {
    model_args open;
    tuning_args tuning;
    fe_lm_sampling sampling;
    int64_t seed, num_tokens, max_seq_len, chunk, cache_type;
    const char *system;
    bool verbose;
} chat_args;

enum { CHAT_MAX_OPTS = MODEL_MAX_OPTS + SAMPLING_MAX_OPTS + TUNING_MAX_OPTS + 7 };

static int chat_options(chat_args *a, arg_opt *t) {
    int n = model_options(&a->open, true, t);
    const arg_opt opts[] = {
        {"system", 0, ARG_STRING, "TEXT", "the system prompt (default: the template's own, if "
         "it has one; \"\" for none)", NULL, .empty_ok = true, .s = &a->system},
        {"num-tokens", 'n', ARG_INT, "N", "tokens an answer may take; -1: until the end of "
         "its turn (or the cache is full)", "-1", .lo = -1, .hi = 1 << 20, .i = &a->num_tokens},
        {"max-seq-len", 'c', ARG_INT, "N", "the context: KV cache rows, which the whole "
         "conversation shares", "min(4096, the model's context)", .lo = 1, .hi = 1 << 24,
         .i = &a->max_seq_len},
        {"chunk", 0, ARG_INT, "N", "prompt rows per prefill call; a turn reuses the cache up "
         "to the last whole chunk the conversation shares with the previous turn", "64",
         .lo = 1, .hi = 1 << 16, .i = &a->chunk},
        cache_type_option(&a->cache_type),
        {"verbose", 0, ARG_FLAG, NULL, "per turn: the prompt's tokens, those reused from the "
         "cache, the times and the cache rows used", NULL, .flag = &a->verbose},
    };
    memcpy(t + n, opts, sizeof opts);
    n += (int)(sizeof opts / sizeof opts[0]);
    n += tuning_options(&a->tuning, t + n);
    return n + sampling_options(&a->sampling, &a->seed, t + n);
}

/* The conversation: messages[0..n), each content owned. */
typedef struct chat {
    const chat_args *a;
    const fe_cli_io *io;
    fe_lm_model *m;
    fe_lm_session *s;
    fe_profile *profile; /* the tuning profile (NULL: none); outlives s */
    fe_lm_message *msgs;
    int n, cap;
    cli_text answer; /* the answer streaming in */
    int write_errno; /* a write to stdout failed */
    int64_t context; /* the model's */
} chat;

static int push(chat *c, const char *role, const char *content, size_t len) {
    if (c->n == c->cap) {
        int cap = 2 * c->cap + 8;
        fe_lm_message *nm = realloc(c->msgs, (size_t)cap * sizeof *nm);
        if (!nm) return -1;
        c->msgs = nm, c->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, content, len);
    copy[len] = '\0';
    c->msgs[c->n++] = (fe_lm_message){role, copy};
    return 0;
}

/* Drops messages from `keep` on. */
static void truncate_to(chat *c, int keep) {
    while (c->n > keep) free((char *)c->msgs[--c->n].content);
}

static int on_token(void *user, int32_t tok, const char *text, size_t len) {
    chat *c = user;
    (void)tok;
    if (cli_text_append(&c->answer, text, len) != 0) return 1;
    fwrite(text, 1, len, c->io->out);
    if (fflush(c->io->out) != 0 || ferror(c->io->out)) {
        c->write_errno = errno ? errno : EIO;
        return 1;
    }
    return 0;
}

static void turn_stats(const chat *c, const fe_lm_generate_result *g) {
    FILE *f = c->io->err;
    double rate = g->generated_tokens > 1 && g->decode_seconds > 0
                      ? (double)(g->generated_tokens - 1) / g->decode_seconds : 0;
    fprintf(f, "[%lld token%s, %.1f tok/s", (long long)g->generated_tokens,
            g->generated_tokens == 1 ? "" : "s", rate);
    if (c->a->verbose)
        fprintf(f, "; prompt %lld tokens, %lld reused from the cache, prefilled in %.3f s; "
                "stop: %s; cache %lld of %lld rows", (long long)g->prompt_tokens,
                (long long)g->prompt_reused, g->prefill_seconds,
                fe_lm_stop_reason_name(g->stop_reason), (long long)fe_lm_session_position(c->s),
                (long long)fe_lm_session_max_seq_len(c->s));
    fputs("]\n", f);
}

/* One exchange: the user's line, then the answer. FE_EXIT_OK (also for a turn refused because
 * it does not fit: the chat goes on), or FE_EXIT_FAILURE. */
static int exchange(chat *c, const char *line) {
    int before = c->n;
    if (push(c, "user", line, strlen(line)) != 0) return cli_fail(c->io->err, "chat", "out of memory", "");
    char *text = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int code = FE_EXIT_OK;
    if (fe_lm_chat_apply(c->m, c->msgs, c->n, true, &text) != FE_OK ||
        fe_lm_tokenize(c->m, text, strlen(text), true, true, &ids, &n) != FE_OK) {
        code = cli_fail(c->io->err, "chat", "", fe_lm_model_message(c->m));
        goto done;
    }
    int64_t rows = fe_lm_session_max_seq_len(c->s);
    if ((int64_t)n >= rows) {
        fprintf(c->io->err, "ferrum chat: the conversation with this line is %zu tokens and the "
                "cache holds %lld; /reset to start a new one (or give a larger -c; the model's "
                "context is %lld)\n", n, (long long)rows, (long long)c->context);
        truncate_to(c, before);
        goto done;
    }
    fe_lm_stop stop = fe_lm_stop_default();
    stop.max_tokens = c->a->num_tokens;
    fe_lm_generate_result g;
    c->answer.len = 0;
    if (fe_lm_session_generate(c->s, ids, (int64_t)n, &c->a->sampling, &stop, on_token, c, &g) != FE_OK) {
        code = cli_fail(c->io->err, "chat", "", fe_lm_session_message(c->s));
        goto done;
    }
    if (c->write_errno) {
        code = cli_fail(c->io->err, "chat", "writing the output", strerror(c->write_errno));
        goto done;
    }
    fputc('\n', c->io->out);
    if ((code = cli_flush_out(c->io, "chat")) != FE_EXIT_OK) goto done;
    if (push(c, "assistant", c->answer.p ? c->answer.p : "", c->answer.len) != 0) {
        code = cli_fail(c->io->err, "chat", "out of memory", "");
        goto done;
    }
    turn_stats(c, &g);
    if (g.stop_reason == FE_LM_STOP_CACHE_FULL)
        fprintf(c->io->err, "ferrum chat: the cache is full (%lld rows), so the answer was cut; "
                "/reset to start a new conversation (or give a larger -c)\n", (long long)rows);
done:
    fe_lm_free(text);
    fe_lm_free(ids);
    return code;
}

/* Reads lines until /exit, /quit or the end of input. */
static int repl(chat *c) {
    FILE *in = c->io->in;
    bool tty = in && isatty(fileno(in));
    int keep = c->n; /* the system message, if any */
    char *line = NULL;
    size_t cap = 0;
    int code = FE_EXIT_OK;
    for (;;) {
        if (tty) {
            fputs("> ", c->io->out);
            if ((code = cli_flush_out(c->io, "chat")) != FE_EXIT_OK) break;
        }
        ssize_t got = in ? getline(&line, &cap, in) : -1;
        if (got < 0) {
            if (tty) fputc('\n', c->io->out);
            break;
        }
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        if (got == 0) continue;
        if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) break;
        if (strcmp(line, "/reset") == 0) {
            truncate_to(c, keep);
            fprintf(c->io->err, "ferrum chat: a new conversation\n");
        } else if (strcmp(line, "/help") == 0) {
            fputs(commands_help, c->io->out);
        } else if (line[0] == '/') {
            fprintf(c->io->err, "ferrum chat: no command %s; /help lists them\n", line);
        } else if ((code = exchange(c, line)) != FE_EXIT_OK) {
            break;
        }
    }
    free(line);
    return code == FE_EXIT_OK ? cli_flush_out(c->io, "chat") : code;
}

/* The model's chat format must be one ferrum writes; the session over it. */
static int start(chat *c) {
    const chat_args *a = c->a;
    fe_lm_model_info in;
    fe_lm_model_get_info(c->m, &in);
    c->context = in.context;
    if (!in.tokenizer)
        return cli_fail(c->io->err, "chat", a->open.model, "the model has no tokenizer; give "
                        "--tokenizer tokenizer.json");
    if (in.chat_format != FE_LM_CHAT_CHATML && in.chat_format != FE_LM_CHAT_LLAMA3 &&
        in.chat_format != FE_LM_CHAT_GEMMA)
        return cli_fail(c->io->err, "chat", in.chat_note, "chat writes the conversation in a chat "
                        "template ferrum knows (ChatML, Llama 3); give a tokenizer that has one "
                        "(--tokenizer), or use `ferrum generate`, which takes the prompt as it is");
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = a->max_seq_len ? a->max_seq_len : in.context > 0 && in.context < 4096 ? in.context : 4096;
    so.chunk = a->chunk;
    so.cache_type = cache_type_of(a->cache_type);
    so.sampling = a->sampling;
    int code = tuning_load(&a->tuning, c->m, "chat", c->io, &c->profile);
    if (code != FE_EXIT_OK) return code;
    so.profile = c->profile;
    fe_error err = {0};
    if (fe_lm_session_create(c->m, &so, &c->s, &err) != FE_OK)
        return cli_fail(c->io->err, "chat", "building the model", err.message);
    if (a->system && push(c, "system", a->system, strlen(a->system)) != 0)
        return cli_fail(c->io->err, "chat", "out of memory", "");
    fprintf(c->io->err, "ferrum: %s; %lld cache rows; /help lists the commands\n", in.chat_note,
            (long long)so.max_seq_len);
    return FE_EXIT_OK;
}

int fe_cmd_chat(int argc, char **argv, const fe_cli_io *io) {
    chat_args a = {.open = model_args_default(), .sampling = fe_lm_sampling_default(),
                   .seed = -1, .num_tokens = -1, .chunk = 64, .cache_type = -1};
    arg_opt t[CHAT_MAX_OPTS];
    arg_spec sp = {.cmd = "chat", .synopsis = synopsis, .opts = t, .n_opts = chat_options(&a, t),
                   .max_positional = 1, .positional_what = "MODEL"};
    const char *pos[1] = {NULL};
    bool help;
    int code = cli_parse(&sp, argc, argv, pos, io, &help);
    if (code != FE_EXIT_OK || help) return code;
    code = model_args_settle(&a.open, pos[0], "chat", io->err);
    if (code == FE_EXIT_OK) code = tuning_settle(&a.tuning, "chat", io->err);
    if (code == FE_EXIT_OK && a.open.random_weights && !a.open.tokenizer)
        code = cli_refuse(io->err, "chat", "random weights come without a tokenizer; give "
                          "--tokenizer tokenizer.json (one with a chat template ferrum knows)");
    if (code != FE_EXIT_OK) return code;
    if (a.seed >= 0) a.sampling.seed = (uint64_t)a.seed;
    sampling_choose_seed(&a.sampling, a.seed >= 0, io->err);
    chat c = {.a = &a, .io = io};
    code = model_open(&a.open, false, "chat", io, &c.m);
    if (code == FE_EXIT_OK) model_read_in(c.m, io);
    if (code == FE_EXIT_OK) code = start(&c);
    if (code == FE_EXIT_OK) code = repl(&c);
    truncate_to(&c, 0);
    free(c.msgs);
    free(c.answer.p);
    fe_lm_session_destroy(c.s);
    fe_profile_destroy(c.profile);
    fe_lm_model_close(c.m);
    return code;
}
