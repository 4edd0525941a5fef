/* apps/ferrum/generate.c: the run behind `ferrum generate`, on the public API alone
 * (ferrum/lm.h): open the model (GGUF, a Hugging Face safetensors checkpoint, or random
 * weights), optionally write it out as a safetensors folder and stop, build the prompt (text
 * through the tokenizer and chat template, ids, or random ids where asked), generate with the
 * stop conditions and sampling asked for, streaming the text (or one JSON object at the
 * end), then the summary and the checks. A failed write to stdout is an error. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "ferrum/lm.h"
#include "generate.h"
#include "generate_report.h"

static int fail(const fe_cli_io *io, const char *what, const char *msg) {
    return cli_fail(io->err, "generate", what, msg);
}

static int load(gen_run *r) {
    int code = model_open(&r->a->open, false, "generate", r->io, &r->m);
    if (code == FE_EXIT_OK) fe_lm_model_get_info(r->m, &r->info);
    return code;
}

/* The text prompt in the chat template (when --chat and the model has one ferrum knows),
 * through the tokenizer. */
static int text_prompt(gen_run *r, const char *raw) {
    const gen_args *a = r->a;
    const fe_lm_model_info *in = &r->info;
    if (!in->tokenizer) return fail(r->io, "a text prompt needs a tokenizer", "give --tokenizer, or --prompt-ids");
    if (!*raw) return fail(r->io, "the prompt is empty", "give some text (or --prompt-len N for N random ids)");
    char *full = NULL;
    if (a->chat) {
        bool known = in->chat_format == FE_LM_CHAT_CHATML || in->chat_format == FE_LM_CHAT_LLAMA3 ||
                     in->chat_format == FE_LM_CHAT_GEMMA;
        fprintf(r->io->err, "ferrum: %s%s\n", in->chat_note,
                known && in->chat_source && in->chat_default_system && !a->system
                    ? ", with its default system prompt" : "");
        fe_lm_message msgs[2] = {{"system", a->system}, {"user", raw}};
        if (known && fe_lm_chat_apply(r->m, a->system ? msgs : msgs + 1, a->system ? 2 : 1, true, &full) != FE_OK)
            return fail(r->io, "applying the chat template", fe_lm_model_message(r->m));
    }
    const char *use = full ? full : raw;
    size_t n = 0;
    fe_status st = fe_lm_tokenize(r->m, use, strlen(use), true, full != NULL, &r->ids, &n);
    fe_lm_free(full);
    if (st != FE_OK) return fail(r->io, "encoding the prompt", fe_lm_model_message(r->m));
    r->n_ids = (int64_t)n;
    r->ids_ours = false;
    return FE_EXIT_OK;
}

static int make_prompt(gen_run *r) {
    const gen_args *a = r->a;
    const char *text = a->prompt ? a->prompt : a->prompt_text;
    char *read = NULL; /* the parser reads --prompt-file; a gen_args made by hand may not have */
    if (!text && a->prompt_file) {
        int code = cli_read_text(a->prompt_file, stdin, "generate", "--prompt-file", &read, r->io->err);
        if (code != FE_EXIT_OK) return code;
        text = read;
    }
    if (text) {
        int code = text_prompt(r, text);
        free(read);
        return code;
    }
    r->ids_ours = true;
    if (a->prompt_ids) {
        size_t n = 0;
        int code = cli_parse_ids(a->prompt_ids, r->info.vocab, "generate", "--prompt-ids", &r->ids,
                                 &n, r->io->err);
        r->n_ids = (int64_t)n;
        return code;
    }
    if (r->info.tokenizer && !a->prompt_len)
        return fail(r->io, "no prompt", "give --prompt, --prompt-file or --prompt-ids (or "
                    "--prompt-len N for N random ids)");
    int64_t n = a->prompt_len ? a->prompt_len : 16;
    r->ids = malloc((size_t)n * sizeof *r->ids);
    if (!r->ids) return fail(r->io, "out of memory", "");
    uint64_t x = a->sampling.seed * 2654435761u + 12345;
    for (int64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        r->ids[r->n_ids++] = (int32_t)((x >> 33) % (uint64_t)r->info.vocab);
    }
    return FE_EXIT_OK;
}

/* Each token's text as it comes (ids without a tokenizer), or kept for --json. */
static int on_token(void *user, int32_t tok, const char *text, size_t len) {
    gen_run *r = user;
    if (tok >= 0 && gen_report_keep(r, tok, text, len) != 0) return 1;
    if (r->a->json) return 0;
    if (!r->info.tokenizer && tok >= 0) fprintf(r->io->out, "%d ", tok);
    else fwrite(text, 1, len, r->io->out);
    if (fflush(r->io->out) != 0 || ferror(r->io->out)) {
        r->write_errno = errno ? errno : EIO;
        return 1;
    }
    return 0;
}

/* The KV cache rows: --max-seq-len, else what the prompt and -n need (rounded up to a whole
 * CACHE_ROW_STEP), or for -n -1 min(CACHE_ROWS_OPEN, the model's context); never past the
 * context. Sized to the run, an f32 cache no longer dwarfs a small model's weights: SmolLM2
 * with a 32-token prompt and -n 64 takes 256 rows (11 MiB), not 4096 (180 MiB). */
enum { CACHE_ROW_STEP = 256, CACHE_ROWS_OPEN = 4096 };
static int64_t cache_rows(const gen_run *r) {
    const gen_args *a = r->a;
    if (a->max_seq_len) return a->max_seq_len;
    int64_t ctx = r->info.context > 0 ? r->info.context : CACHE_ROWS_OPEN;
    int64_t want = a->num_tokens < 0 ? CACHE_ROWS_OPEN : r->n_ids + a->num_tokens + 1;
    want = (want + CACHE_ROW_STEP - 1) / CACHE_ROW_STEP * CACHE_ROW_STEP;
    return want < ctx ? want : ctx;
}

static int make_session(gen_run *r) {
    const gen_args *a = r->a;
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = cache_rows(r);
    so.chunk = a->chunk;
    so.prefill_dot = a->prefill_dot;
    so.decode_dot = a->decode_dot;
    so.cache_type = a->cache_type;
    so.each_step = a->each_step;
    so.verbose = a->verbose;
    so.profiling = a->profile;
    so.sampling = r->sampling;
    int code = tuning_load(&a->tuning, r->m, "generate", r->io, &r->profile);
    if (code != FE_EXIT_OK) return code;
    so.profile = r->profile;
    if (a->num_tokens >= 0 && r->n_ids + a->num_tokens > so.max_seq_len) {
        fprintf(r->io->err, "ferrum generate: %lld prompt tokens plus %lld to generate pass "
                "max_seq_len %lld; give a larger --max-seq-len or fewer tokens\n",
                (long long)r->n_ids, (long long)a->num_tokens, (long long)so.max_seq_len);
        return FE_EXIT_FAILURE;
    }
    if (r->n_ids >= so.max_seq_len) {
        fprintf(r->io->err, "ferrum generate: the prompt's %lld tokens leave no row of max_seq_len "
                "%lld to generate in; give a larger --max-seq-len (the model's context is %lld) "
                "or a shorter prompt\n", (long long)r->n_ids, (long long)so.max_seq_len,
                (long long)r->info.context);
        return FE_EXIT_FAILURE;
    }
    fe_error err = {0};
    if (fe_lm_session_create(r->m, &so, &r->s, &err) != FE_OK) return fail(r->io, "building the model", err.message);
    return FE_EXIT_OK;
}

/* The sampling asked for; without --seed and with a temperature, a seed drawn and said. */
static void choose_sampling(gen_run *r) {
    r->sampling = r->a->sampling;
    sampling_choose_seed(&r->sampling, r->a->seed_given, r->io->err);
}

/* The warm-up, as llama.cpp's: one token (the prompt's first) through the model, so that the
 * timed prompt is not the process's first touch of the mapped weights, the caches and the
 * scratch. The prompt then runs from row 0 again (a prefill reuses only whole chunks that
 * match, and a one-row run matches none of a longer prompt's), so the output is unchanged. */
static int warm_up(gen_run *r) {
    if (r->a->no_warmup || r->n_ids < 1) return FE_EXIT_OK;
    uint64_t t = fe_time_ns();
    if (fe_lm_session_prefill(r->s, r->ids, 1, NULL) != FE_OK)
        return fail(r->io, "the warm-up", fe_lm_session_message(r->s));
    r->warmup_ns = fe_time_ns() - t;
    if (r->a->profile) fe_graph_set_profiling(fe_lm_session_graph(r->s), true); /* clears the clocks */
    return FE_EXIT_OK;
}

static int generate(gen_run *r) {
    const gen_args *a = r->a;
    fe_lm_stop stop = fe_lm_stop_default();
    stop.max_tokens = a->num_tokens;
    for (int i = 0; i < a->n_stop && i < FE_LM_MAX_STOP_STRINGS; i++) stop.strings[stop.n_strings++] = a->stop[i];
    if (warm_up(r) != FE_EXIT_OK) return FE_EXIT_FAILURE;
    r->t_start = fe_time_ns();
    if (fe_lm_session_generate(r->s, r->ids, r->n_ids, &r->sampling, &stop, on_token, r, &r->res) != FE_OK)
        return fail(r->io, "", fe_lm_session_message(r->s));
    if (r->write_errno) return fail(r->io, "writing the output", strerror(r->write_errno));
    if (a->json) return gen_report_json(r);
    fputc('\n', r->io->out);
    return cli_flush_out(r->io, "generate"); /* the text ends before the summary */
}

static int write_safetensors(gen_run *r) {
    const char *dir = r->a->write_safetensors;
    fprintf(r->io->err, "ferrum: writing %s as safetensors to %s...\n", r->a->open.model, dir);
    if (fe_lm_model_write_safetensors(r->m, dir) != FE_OK) return fail(r->io, "", fe_lm_model_message(r->m));
    fprintf(r->io->out, "wrote %s/model.safetensors (weights %.1f MiB) and %s/config.json\n", dir,
            (double)r->info.weight_bytes / 1048576, dir);
    return cli_flush_out(r->io, "generate");
}

int fe_generate_run(const gen_args *a, const fe_cli_io *io) {
    gen_run r = {.a = a, .io = io, .t0 = fe_time_ns()};
    int code = load(&r);
    if (code == FE_EXIT_OK && a->write_safetensors) {
        code = write_safetensors(&r);
        goto done;
    }
    if (code == FE_EXIT_OK) code = make_prompt(&r);
    if (code == FE_EXIT_OK) choose_sampling(&r);
    if (code == FE_EXIT_OK) code = make_session(&r);
    /* after the session's plans: the weights they read through layouts are not copied */
    if (code == FE_EXIT_OK) {
        model_read_in(r.m, io);
        fe_lm_model_get_info(r.m, &r.info); /* where the weights now are */
    }
    if (code == FE_EXIT_OK) code = generate(&r);
    if (code != FE_EXIT_OK) goto done;
    gen_report_summary(&r);
    if (a->profile) {
        fe_graph_set_profiling(fe_lm_session_graph(r.s), false);
        fe_graph_write_profile(fe_lm_session_graph(r.s), io->err);
    }
    if (a->check_accuracy) gen_report_accuracy(&r);
    if (a->check_determinism) gen_report_determinism(&r);
done:
    if (r.ids_ours) free(r.ids);
    else fe_lm_free(r.ids);
    gen_report_deinit(&r);
    fe_lm_session_destroy(r.s);
    fe_profile_destroy(r.profile);
    fe_lm_model_close(r.m);
    return code;
}
