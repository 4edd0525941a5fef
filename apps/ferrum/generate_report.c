/* apps/ferrum/generate_report.c: what `ferrum generate` says about a run (generate_report.h).
 * The summary adds up: peak RSS is split into the weights' resident pages (a mapped weight
 * read only through a layout has its pages dropped), the weights the plan repacked once (the
 * layouts its GEMMs and GEMVs read: bf16 k-pair panels), the KV cache rows written (its
 * pages are resident only as far as written), the graph's scratch, and the rest (code,
 * tokenizer, heap) as the remainder. */
#include "generate_report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }
static double mib(double bytes) { return bytes / 1048576; }

int gen_report_keep(gen_run *r, int32_t tok, const char *text, size_t len) {
    if (!r->a->json) return 0;
    if (cli_text_append(&r->text, text, len) != 0) return 1;
    if (tok < 0) return 0;
    const int64_t per = 1 + 2 * (r->a->logprobs > 0 ? r->a->logprobs : 0);
    if (r->n_out == r->cap_out) {
        int64_t cap = 2 * r->cap_out + 64;
        int32_t *o = realloc(r->out, (size_t)cap * sizeof *o);
        if (!o) return 1;
        r->out = o;
        if (r->a->logprobs >= 0) {
            float *l = realloc(r->logprobs, (size_t)(cap * per) * sizeof *l);
            if (!l) return 1;
            r->logprobs = l;
        }
        r->cap_out = cap;
    }
    if (r->a->logprobs >= 0) {
        int n_top = (int)r->a->logprobs;
        float *at = r->logprobs + r->n_out * per;
        int32_t ids[FE_LM_MAX_TOP_LOGPROBS];
        if (fe_lm_logprobs(fe_lm_session_token_logits(r->s), r->info.vocab, tok, n_top, at, ids,
                           at + 1 + n_top) != FE_OK)
            return 1;
        for (int k = 0; k < n_top; k++) at[1 + k] = (float)ids[k];
    }
    r->out[r->n_out++] = tok;
    return 0;
}

/* --logprobs: "logprobs": [{"id", "logprob", "top": [[id, logprob], ...]}, ...] */
static void write_logprobs(gen_run *r, FILE *f) {
    const int64_t n_top = r->a->logprobs, per = 1 + 2 * n_top;
    fputs(", \"logprobs\": [", f);
    for (int64_t i = 0; i < r->n_out; i++) {
        const float *at = r->logprobs + i * per;
        fprintf(f, "%s{\"id\": %d, \"logprob\": %.9g, \"top\": [", i ? ", " : "", r->out[i], (double)at[0]);
        for (int64_t k = 0; k < n_top; k++)
            fprintf(f, "%s[%d, %.9g]", k ? ", " : "", (int)at[1 + k], (double)at[1 + n_top + k]);
        fputs("]}", f);
    }
    fputc(']', f);
}

static double decode_rate(const fe_lm_generate_result *g) {
    return g->generated_tokens > 1 && g->decode_seconds > 0 ? (double)(g->generated_tokens - 1) / g->decode_seconds : 0;
}

int gen_report_json(gen_run *r) {
    FILE *f = r->io->out;
    const fe_lm_generate_result *g = &r->res;
    fputs("{\"text\": ", f);
    cli_json_string(f, r->text.p ? r->text.p : "", r->text.len);
    fputs(", \"ids\": [", f);
    for (int64_t i = 0; i < r->n_out; i++) fprintf(f, "%s%d", i ? ", " : "", r->out[i]);
    fputc(']', f);
    if (r->a->logprobs >= 0) write_logprobs(r, f);
    fprintf(f, ", \"prompt_tokens\": %lld, \"generated_tokens\": %lld, \"stop_reason\": \"%s\", "
            "\"seed\": %llu, \"load_seconds\": %.6f, \"warmup_seconds\": %.6f, \"prefill_seconds\": %.6f, "
            "\"first_token_seconds\": %.6f, \"decode_seconds\": %.6f, "
            "\"decode_tokens_per_second\": %.3f}\n", (long long)g->prompt_tokens,
            (long long)g->generated_tokens, fe_lm_stop_reason_name(g->stop_reason),
            (unsigned long long)r->sampling.seed, (double)(r->t_start - r->t0) / 1e9,
            (double)r->warmup_ns / 1e9, g->prefill_seconds, g->first_token_seconds, g->decode_seconds, decode_rate(g));
    return cli_flush_out(r->io, "generate");
}

void gen_report_summary(const gen_run *r) {
    FILE *f = r->io->err;
    const fe_lm_generate_result *g = &r->res;
    fprintf(f, "ferrum: load %.2f s", (double)(r->t_start - r->t0) / 1e9);
    if (r->warmup_ns) fprintf(f, " (warm-up %.3f s)", (double)r->warmup_ns / 1e9);
    fprintf(f, " | prompt %lld token%s in %.3f s", (long long)g->prompt_tokens, plural(g->prompt_tokens),
            g->prefill_seconds);
    if (g->prompt_tokens >= 8) /* fewer is too short a run for a rate */
        fprintf(f, " (%.0f tok/s)", (double)g->prompt_tokens / g->prefill_seconds);
    fprintf(f, " | %lld token%s generated (stop: %s)", (long long)g->generated_tokens,
            plural(g->generated_tokens), fe_lm_stop_reason_name(g->stop_reason));
    if (g->generated_tokens >= 1) fprintf(f, ", the first %.3f s after the start", g->first_token_seconds);
    if (g->generated_tokens >= 2)
        fprintf(f, ", %lld more in %.2f s (%.2f tok/s)", (long long)g->generated_tokens - 1,
                g->decode_seconds, decode_rate(g));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double peak = (double)ru.ru_maxrss * 1024;
    double resident = (double)fe_lm_model_resident_bytes(r->m);
    int64_t rows = fe_lm_session_position(r->s), all = fe_lm_session_max_seq_len(r->s);
    double kv = (double)fe_lm_session_kv_bytes(r->s), written = all ? kv * (double)rows / (double)all : 0;
    fe_graph_stats gs = fe_graph_get_stats(fe_lm_session_graph(r->s));
    double arena = (double)gs.arena_bytes, laid = (double)gs.layout_bytes;
    double scratch = arena > kv ? arena - kv : 0;
    double rest = peak - resident - written - scratch - laid;
    fprintf(f, " | peak RSS %.1f MiB = weights %.1f MiB resident (of %.1f MiB %s) + weights "
            "repacked into layouts %.1f MiB + KV cache %.1f MiB written (%lld of %lld rows; "
            "%.1f MiB reserved) + graph scratch %.1f MiB + the rest %.1f MiB (code, tokenizer, "
            "heap)\n", mib(peak), mib(resident), mib((double)r->info.weight_bytes),
            r->info.weights_mapped ? "mapped" : "in memory", mib(laid), mib(written),
            (long long)rows, (long long)all, mib(kv), mib(scratch), mib(rest > 0 ? rest : 0));
}

void gen_report_accuracy(gen_run *r) {
    int64_t n = r->n_ids < 64 ? r->n_ids : 64;
    fe_lm_accuracy k;
    if (fe_lm_session_check_accuracy(r->s, r->ids, n, &k) != FE_OK) {
        fprintf(r->io->err, "check-accuracy: %s\n", fe_lm_session_message(r->s));
        return;
    }
    fprintf(r->io->err, "check-accuracy: %lld position%s teacher-forced against the float32 oracle: "
            "KL mean %.3g p90 %.3g max %.3g, top-1 mismatches %d/%lld, max |dlogit| %.3g "
            "(logit spread %.3g)\n", (long long)n, plural(n), k.kl_mean, k.kl_p90, k.kl_max,
            k.top1_mismatches, (long long)n, k.max_abs_diff, k.spread);
}

void gen_report_determinism(gen_run *r) {
    int differing = 0, runs = (int)r->a->check_determinism;
    if (fe_lm_session_check_determinism(r->s, r->ids, r->n_ids, runs, &differing) != FE_OK) {
        fprintf(r->io->err, "check-determinism: %s\n", fe_lm_session_message(r->s));
        return;
    }
    fprintf(r->io->err, "check-determinism: differing runs %d/%d (two prompts alternated, logits "
            "compared as bytes)\n", differing, runs);
}

void gen_report_deinit(gen_run *r) {
    free(r->text.p);
    free(r->out);
    free(r->logprobs);
    r->text = (cli_text){0}, r->out = NULL, r->logprobs = NULL;
}
