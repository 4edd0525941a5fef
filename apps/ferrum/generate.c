/* apps/ferrum/generate.c: the run behind `ferrum generate`: load the model (GGUF or a Hugging
 * Face safetensors checkpoint, mapped; or random weights), optionally write it out as a
 * safetensors folder and stop, build the prompt (text through the tokenizer and chat
 * template, ids, or random ids), prefill, stream the decoded tokens, print the summary, run
 * the checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "core/alloc.h"
#include "generate.h"
#include "lm/model/causal.h"
#include "lm/tokenizer/chat_template.h"
#include "lm/model/checkpoint.h"
#include "lm/eval/checks.h"
#include "lm/format/mapped.h"
#include "lm/eval/oracle.h"
#include "lm/model/weights_safetensors_write.h"
#include "lm/tokenizer/tokenizer.h"

typedef struct session {
    fe_device *dev;
    fe_gguf *gguf;
    fe_safetensors *st;
    fe_lm_config cfg;
    fe_llama_weights w;
    fe_tokenizer *tok;
    fe_causal *m;
    int32_t *ids;
    int64_t n_ids, cap_ids;
    int32_t stop[3];
    int n_stop;
} session;

typedef struct streamer {
    session *s;
    const fe_cli_io *io;
    fe_token_stream ts;
    char *buf;
    size_t cap;
    int64_t made, limit;
} streamer;

static double secs(uint64_t a, uint64_t b) { return (double)(b - a) / 1e9; }

static int fail(const fe_cli_io *io, const char *what, const char *msg) {
    fprintf(io->err, "ferrum generate: %s%s%s\n", what, *msg ? ": " : "", msg);
    return FE_EXIT_FAILURE;
}

/* "ferrum: reading weights 45%" on one line, rewritten in place on a terminal */
static void show_progress(void *user, double done) {
    const fe_cli_io *io = user;
    bool tty = isatty(fileno(io->err));
    if (tty || done >= 1.0)
        fprintf(io->err, "%sferrum: reading weights %3.0f%%%s", tty ? "\r" : "", 100 * done,
                done >= 1.0 || !tty ? "\n" : "");
}

static int load(session *s, const gen_args *a, const fe_cli_io *io) {
    fe_error err = {0};
    if (a->random_weights) {
        fe_status st = fe_lm_config_preset(a->model, &s->cfg, &err);
        if (st == FE_E_NOTFOUND) st = fe_lm_config_from_json_file(a->model, &s->cfg, &err);
        if (st != FE_OK) return fail(io, a->model, err.message);
        fe_dtype dt = strcmp(a->dtype, "f32") == 0 ? FE_DTYPE_F32 : FE_DTYPE_BF16;
        fprintf(io->err, "ferrum: drawing random %s weights in %s's shapes (seed %llu)...\n", a->dtype,
                a->model, (unsigned long long)a->random_seed);
        if (fe_llama_weights_random(&s->cfg, dt, a->random_seed, &s->w, &err) != FE_OK)
            return fail(io, "random weights", err.message);
    } else if (!fe_checkpoint_path_ok(a->model)) {
        return fail(io, a->model, "not a .gguf or .safetensors file, an index or a folder; "
                    "ferrum generate reads GGUF and Hugging Face safetensors checkpoints, or "
                    "shapes (a preset or config.json) with --random-weights");
    } else {
        fprintf(io->err, "ferrum: mapping %s...\n", a->model);
        if (fe_checkpoint_open(a->model, false, &s->gguf, &s->st, &s->cfg, &s->w, &err) != FE_OK)
            return fail(io, a->model, err.message);
        fe_llama_weights_prefault(&s->w, show_progress, (void *)io);
        if (!a->tokenizer && s->gguf && fe_tokenizer_from_gguf(s->gguf, &s->tok, &err) != FE_OK)
            return fail(io, "the GGUF's tokenizer", err.message);
        /* a Hugging Face checkpoint's tokenizer.json, from its folder when there is one */
        char *tok = s->st && !a->tokenizer ? fe_checkpoint_beside(a->model, "tokenizer.json") : NULL;
        fe_status st = tok && fe_path_is_file(tok) ? fe_tokenizer_load_json(tok, &s->tok, &err) : FE_OK;
        int code = st == FE_OK ? FE_EXIT_OK : fail(io, tok, err.message);
        fe_free(tok);
        if (code != FE_EXIT_OK) return code;
    }
    if (a->tokenizer && fe_tokenizer_load_json(a->tokenizer, &s->tok, &err) != FE_OK)
        return fail(io, a->tokenizer, err.message);
    return FE_EXIT_OK;
}

/* Where the chat template comes from: tokenizer_config.json beside the tokenizer given (or
 * beside a safetensors checkpoint), else the GGUF's metadata. FE_E_NOTFOUND when there is
 * none. */
static fe_status read_chat_template(const session *s, const gen_args *a, fe_chat_template *t,
                                    char *where, size_t n, fe_error *err) {
    char *path = a->tokenizer ? fe_checkpoint_beside(a->tokenizer, "tokenizer_config.json")
                 : s->st      ? fe_checkpoint_beside(a->model, "tokenizer_config.json")
                              : NULL;
    fe_status st = FE_E_NOTFOUND;
    if (path && fe_path_is_file(path)) {
        snprintf(where, n, "%s", path);
        st = fe_chat_template_from_tokenizer_config_file(path, t, err);
    } else if (s->gguf) {
        snprintf(where, n, "%s (tokenizer.chat_template)", a->model);
        st = fe_chat_template_from_gguf(s->gguf, t, err);
    }
    fe_free(path);
    return st;
}

static bool has_token(const session *s, const char *text) {
    return text && fe_tokenizer_find(s->tok, text, strlen(text)) >= 0;
}

/* The chat template for --chat, said on stderr: the checkpoint's when ferrum knows it (ChatML,
 * Llama 3) and the tokenizer has its special tokens; without a template (or with one that
 * cannot be read), the format whose special tokens the tokenizer has; otherwise none
 * (FE_CHAT_UNKNOWN: the prompt is used as it is). */
static void chat_template(const session *s, const gen_args *a, const fe_cli_io *io,
                          fe_chat_template *t) {
    fe_error err = {0};
    char where[1100];
    fe_status st = read_chat_template(s, a, t, where, sizeof where, &err);
    if (st == FE_OK && t->format == FE_CHAT_UNKNOWN) {
        fprintf(io->err, "ferrum: the chat template in %s is not one ferrum knows (ChatML, "
                "Llama 3); using the prompt as it is\n", where);
    } else if (st == FE_OK && !has_token(s, fe_chat_start_marker(t->format))) {
        fprintf(io->err, "ferrum: the chat template in %s is %s, but the tokenizer has no %s "
                "token; using the prompt as it is\n", where, fe_chat_format_name(t->format),
                fe_chat_start_marker(t->format));
        fe_chat_template_deinit(t);
    } else if (st == FE_OK) {
        fprintf(io->err, "ferrum: chat template %s, from %s%s\n", fe_chat_format_name(t->format),
                where, t->default_system && !a->system ? ", with its default system prompt" : "");
    } else {
        if (st != FE_E_NOTFOUND) fprintf(io->err, "ferrum: %s; ignoring it\n", err.message);
        fe_chat_template_deinit(t);
        t->format = has_token(s, fe_chat_start_marker(FE_CHAT_CHATML))   ? FE_CHAT_CHATML
                    : has_token(s, fe_chat_start_marker(FE_CHAT_LLAMA3)) ? FE_CHAT_LLAMA3
                                                                         : FE_CHAT_UNKNOWN;
        if (t->format != FE_CHAT_UNKNOWN)
            fprintf(io->err, "ferrum: no chat template in the checkpoint; the tokenizer has %s's "
                    "special tokens, so using %s\n", fe_chat_format_name(t->format),
                    fe_chat_format_name(t->format));
        else
            fprintf(io->err, "ferrum: no chat template in the checkpoint, and the tokenizer has "
                    "neither ChatML's nor Llama 3's special tokens; using the prompt as it is\n");
    }
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = fe_malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *nb = fe_realloc(b, cap *= 2);
            if (!nb) fe_free(b);
            b = nb;
        }
    }
    fclose(f);
    if (b) b[n] = '\0';
    *len = n;
    return b;
}

static int make_prompt(session *s, const gen_args *a, const fe_cli_io *io) {
    fe_error err = {0};
    s->n_stop = 0;
    if (s->tok && fe_tokenizer_eos(s->tok) >= 0) s->stop[s->n_stop++] = fe_tokenizer_eos(s->tok);
    if (a->prompt || a->prompt_file) {
        if (!s->tok) return fail(io, "a text prompt needs a tokenizer", "give --tokenizer, or --prompt-ids");
        size_t len = 0;
        char *text = a->prompt ? NULL : read_file(a->prompt_file, &len);
        if (a->prompt_file && !text) return fail(io, a->prompt_file, "cannot be read");
        const char *raw = a->prompt ? a->prompt : text;
        char *full = NULL;
        fe_chat_template tpl = {0};
        if (a->chat) chat_template(s, a, io, &tpl);
        if (tpl.format != FE_CHAT_UNKNOWN) {
            if (fe_chat_template_apply(&tpl, a->system, raw, &full, &err) != FE_OK) {
                fe_chat_template_deinit(&tpl);
                fe_free(text);
                return fail(io, "applying the chat template", err.message);
            }
            const char *end = fe_chat_end_marker(tpl.format);
            int32_t id = fe_tokenizer_find(s->tok, end, strlen(end));
            if (id >= 0 && s->n_stop < 3) s->stop[s->n_stop++] = id;
        }
        const char *use = full ? full : raw;
        size_t n_ids = 0;
        fe_status st = fe_tokenizer_encode_alloc(s->tok, use, strlen(use), fe_tokenizer_add_bos(s->tok),
                                                 full != NULL, &s->ids, &n_ids, &err);
        fe_chat_template_deinit(&tpl);
        fe_free(full);
        fe_free(text);
        if (st != FE_OK) return fail(io, "encoding the prompt", err.message);
        s->n_ids = (int64_t)n_ids;
    } else if (a->prompt_ids) {
        s->ids = fe_malloc((strlen(a->prompt_ids) / 2 + 1) * sizeof *s->ids);
        if (!s->ids) return fail(io, "out of memory", "");
        for (const char *p = a->prompt_ids; *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v >= s->cfg.vocab || (*end && *end != ','))
                return fail(io, "--prompt-ids", "give comma-separated ids inside the vocabulary");
            s->ids[s->n_ids++] = (int32_t)v;
            p = *end ? end + 1 : end;
        }
    } else {
        int64_t n = a->prompt_len ? a->prompt_len : 16;
        s->ids = fe_malloc((size_t)n * sizeof *s->ids);
        if (!s->ids) return fail(io, "out of memory", "");
        uint64_t x = a->seed * 2654435761u + 12345;
        for (int64_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            s->ids[s->n_ids++] = (int32_t)((x >> 33) % (uint64_t)s->cfg.vocab);
        }
    }
    if (s->n_ids < 1) return fail(io, "the prompt is empty", "give at least one token");
    return FE_EXIT_OK;
}

static void emit(streamer *st, int32_t tok) {
    size_t len = 0;
    if (st->s->tok && fe_token_stream_push(&st->ts, tok, st->buf, st->cap, &len, NULL) == FE_OK) {
        fwrite(st->buf, 1, len, st->io->out);
    } else if (!st->s->tok) {
        fprintf(st->io->out, "%d ", tok);
    }
    fflush(st->io->out);
}

static bool is_stop(const session *s, int32_t tok) {
    for (int i = 0; i < s->n_stop; i++)
        if (s->stop[i] == tok) return true;
    return false;
}

static int on_token(void *user, int32_t tok, const float *logits) {
    streamer *st = user;
    (void)logits;
    if (st->made >= st->limit || is_stop(st->s, tok)) return 1;
    emit(st, tok);
    st->made++;
    if (st->s->n_ids < st->s->cap_ids) st->s->ids[st->s->n_ids++] = tok;
    return st->made >= st->limit;
}

static void check_accuracy(session *s, const fe_cli_io *io) {
    int n = s->n_ids < 64 ? (int)s->n_ids : 64;
    int64_t V = s->cfg.vocab;
    float *ref = fe_malloc((size_t)n * (size_t)V * 4), *got = fe_malloc((size_t)n * (size_t)V * 4);
    fe_error err = {0};
    fe_kl_stats k;
    if (!ref || !got) {
        fprintf(io->err, "check-accuracy: out of memory\n");
    } else if (fe_oracle_logits(&s->w, s->ids, n, ref, &err) != FE_OK) {
        fprintf(io->err, "check-accuracy: oracle: %s\n", err.message);
    } else if (fe_causal_teacher_forced(s->m, s->ids, n, got) != FE_OK) {
        fprintf(io->err, "check-accuracy: %s\n", fe_causal_message(s->m));
    } else if (fe_kl_compare(ref, got, n, V, &k) == FE_OK) {
        fprintf(io->err, "check-accuracy: %d positions teacher-forced against the float32 oracle: "
                "KL mean %.3g p90 %.3g max %.3g, top-1 mismatches %d/%d, max |dlogit| %.3g "
                "(logit spread %.3g)\n", n, k.mean, k.p90, k.max, k.top1_mismatches, n,
                k.max_abs_diff, k.spread);
    }
    fe_free(ref);
    fe_free(got);
}

static void check_determinism(session *s, int64_t runs, const fe_cli_io *io) {
    int64_t V = s->cfg.vocab, n = s->n_ids;
    int32_t *other = fe_malloc((size_t)n * sizeof *other);
    float *first = fe_malloc((size_t)V * 4);
    if (!other || !first) {
        fprintf(io->err, "check-determinism: out of memory\n");
        fe_free(other), fe_free(first);
        return;
    }
    for (int64_t i = 0; i < n; i++) other[i] = s->ids[n - 1 - i];
    int differing = 0;
    for (int64_t r = 0; r < runs; r++) {
        const float *l;
        if (fe_causal_prompt(s->m, other, n, NULL, NULL) != FE_OK ||
            fe_causal_prompt(s->m, s->ids, n, &l, NULL) != FE_OK) {
            fprintf(io->err, "check-determinism: %s\n", fe_causal_message(s->m));
            break;
        }
        if (r == 0) memcpy(first, l, (size_t)V * 4);
        else differing += memcmp(first, l, (size_t)V * 4) != 0;
    }
    fprintf(io->err, "check-determinism: differing runs %d/%lld (two prompts alternated, logits "
            "compared as bytes)\n", differing, (long long)runs);
    fe_free(other);
    fe_free(first);
}

int fe_generate_run(const gen_args *a, const fe_cli_io *io) {
    session s = {0};
    streamer st = {.s = &s, .io = io, .limit = a->num_tokens};
    uint64_t t0 = fe_time_ns();
    fe_error err = {0};
    int code = FE_EXIT_FAILURE;
    fe_device_options dop = fe_device_options_default();
    if (fe_device_create(&dop, &s.dev, &err) != FE_OK) {
        fail(io, "device", err.message);
        goto done;
    }
    if ((code = load(&s, a, io)) != FE_EXIT_OK) goto done;
    if (a->write_safetensors) {
        fprintf(io->err, "ferrum: writing %s as safetensors to %s...\n", a->model, a->write_safetensors);
        if (fe_llama_weights_write_safetensors(&s.w, a->write_safetensors, &err) != FE_OK) {
            code = fail(io, a->write_safetensors, err.message);
        } else {
            fprintf(io->out, "wrote %s/model.safetensors (weights %.1f MiB) and %s/config.json\n",
                    a->write_safetensors, (double)fe_llama_weights_bytes(&s.w) / 1048576, a->write_safetensors);
            code = FE_EXIT_OK;
        }
        goto done;
    }
    if ((code = make_prompt(&s, a, io)) != FE_EXIT_OK) {
        code = FE_EXIT_FAILURE;
        goto done;
    }
    code = FE_EXIT_FAILURE;
    fe_causal_options co = fe_causal_options_default();
    co.max_seq_len = a->max_seq_len;
    co.chunk = a->chunk; /* 0: the default */
    if (!co.max_seq_len) {
        int64_t want = s.n_ids + a->num_tokens + 1, ctx = s.cfg.max_context > 0 ? s.cfg.max_context : 4096;
        co.max_seq_len = want > 4096 ? want : 4096;
        if (co.max_seq_len > ctx) co.max_seq_len = ctx;
    }
    if (s.n_ids + a->num_tokens > co.max_seq_len) {
        fprintf(io->err, "ferrum generate: %lld prompt tokens plus %lld to generate pass max_seq_len "
                "%lld; give a larger --max-seq-len or fewer tokens\n", (long long)s.n_ids,
                (long long)a->num_tokens, (long long)co.max_seq_len);
        goto done;
    }
    co.temperature = a->temperature;
    co.top_k = a->top_k;
    co.top_p = a->top_p;
    co.seed = a->seed;
    co.packaging = a->each_step ? FE_PACK_EACH_STEP : FE_PACK_AUTO;
    co.verbose = a->verbose;
    co.prefill_dot = a->prefill_dot;
    co.decode_dot = a->decode_dot;
    if (fe_causal_create(s.dev, &s.w, &co, &s.m, &err) != FE_OK) {
        fail(io, "building the model", err.message);
        goto done;
    }
    fe_gguf_release_metadata(s.gguf); /* the tokenizer, config and tensor table are built */
    s.cap_ids = s.n_ids + a->num_tokens + 1;
    int32_t *grown = fe_realloc(s.ids, (size_t)s.cap_ids * sizeof *s.ids);
    if (!grown) goto done;
    s.ids = grown;
    if (a->profile) fe_graph_set_profiling(fe_causal_graph(s.m), true);
    uint64_t t1 = fe_time_ns();
    int64_t n_prompt = s.n_ids;
    int32_t next;
    if (fe_causal_prompt(s.m, s.ids, n_prompt, NULL, &next) != FE_OK) {
        fail(io, "prefill", fe_causal_message(s.m));
        goto done;
    }
    uint64_t t2 = fe_time_ns();
    if (s.tok) {
        st.cap = fe_token_stream_bound(s.tok);
        st.buf = fe_malloc(st.cap);
        fe_token_stream_init(&st.ts, s.tok);
    }
    bool stopped = a->num_tokens == 0 || is_stop(&s, next);
    if (!stopped) {
        emit(&st, next);
        st.made = 1;
        s.ids[s.n_ids++] = next;
    }
    if (!stopped && st.made < st.limit && fe_causal_decode(s.m, (int)(st.limit - st.made), on_token, &st) != FE_OK) {
        fail(io, "decode", fe_causal_message(s.m));
        goto done;
    }
    uint64_t t3 = fe_time_ns();
    if (s.tok && st.buf) {
        size_t len = 0;
        if (fe_token_stream_flush(&st.ts, st.buf, st.cap, &len, NULL) == FE_OK) fwrite(st.buf, 1, len, io->out);
    }
    fprintf(io->out, "\n");
    fflush(io->out); /* the text ends before the summary on stderr */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    size_t wb = fe_llama_weights_bytes(&s.w);
    size_t cache = (size_t)(2 * s.cfg.n_layers * co.max_seq_len * s.cfg.n_kv_heads * s.cfg.head_dim * 4);
    fprintf(io->err,
            "ferrum: load %.2f s | prompt %lld tokens, time to first token %.3f s, prefill %.1f tok/s | "
            "decode %lld tokens, %.2f tok/s | peak RSS %.1f MiB = weights %.1f MiB %s + KV caches "
            "%.1f MiB (%lld of %lld rows written) %+.1f%%\n",
            secs(t0, t1), (long long)n_prompt, secs(t1, t2), (double)n_prompt / secs(t1, t2),
            (long long)(st.made > 1 ? st.made - 1 : 0),
            st.made > 1 ? (double)(st.made - 1) / secs(t2, t3) : 0.0, (double)ru.ru_maxrss / 1024,
            (double)wb / 1048576, s.gguf || s.st ? "mapped" : "in memory", (double)cache / 1048576,
            (long long)fe_causal_position(s.m), (long long)co.max_seq_len,
            100.0 * ((double)ru.ru_maxrss * 1024 / (double)(wb + cache) - 1));
    if (a->profile) {
        fe_graph_set_profiling(fe_causal_graph(s.m), false);
        fe_graph_write_profile(fe_causal_graph(s.m), io->err);
    }
    if (a->check_accuracy) check_accuracy(&s, io);
    if (a->check_determinism) check_determinism(&s, a->check_determinism, io);
    code = FE_EXIT_OK;
done:
    fe_free(st.buf);
    fe_free(s.ids);
    fe_causal_destroy(s.m);
    fe_tokenizer_destroy(s.tok);
    fe_llama_weights_free(&s.w); /* zeroed, or the loaded weights */
    fe_gguf_close(s.gguf);
    fe_safetensors_close(s.st);
    fe_device_destroy(s.dev);
    return code;
}
