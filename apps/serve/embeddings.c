/* apps/serve/embeddings.c: POST /v1/embeddings (embeddings.h). The request is parsed and
 * checked before the encoder is taken; the encoder's own checks (ids in its vocabulary, a
 * list no longer than its max_tokens) come back as 400s naming the input. A text longer than
 * the model's maximum is refused, as OpenAI refuses it, rather than cut without a word.
 *
 * Matryoshka: `dimensions` below the model's width is taken only for a model trained to be
 * cut (EmbeddingGemma: its first 512, 256 or 128 values are embeddings of their own); a
 * BERT-family model's first values are not, and OpenAI refuses dimensions for such a model
 * too. The vector is cut, then normalised again when the model normalises. */
#include "embeddings.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_request.h"
#include "reply.h"

struct serve_embedder {
    fe_lm_encoder *enc;
    fe_lm_encoder_info info;
    char model[128];
    size_t max_inputs;
    pthread_mutex_t mu; /* the encoder: one caller at a time */
};

serve_embedder *embedder_create(fe_lm_encoder *enc, const embedder_options *o) {
    serve_embedder *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->enc = enc;
    fe_lm_encoder_get_info(enc, &s->info);
    snprintf(s->model, sizeof s->model, "%s", o->model_id);
    s->max_inputs = o->max_inputs;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void embedder_destroy(serve_embedder *s) {
    if (!s) return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *embedder_model(const serve_embedder *s) { return s->model; }

/* Whether the model was trained so that its vectors' first values are embeddings too. */
static bool matryoshka(const fe_lm_encoder_info *info) {
    return strcmp(info->architecture, "gemma3_text") == 0;
}

static int check(const serve_embedder *s, const serve_embed_request *r, serve_error *e) {
    if (strcmp(r->model, s->model) != 0)
        return serve_error_set(e, 404, "invalid_request_error", "model", "model_not_found", "the "
                               "model \"%.100s\" is not an embedding model served here; give \"%s\" "
                               "(GET /v1/models)", r->model, s->model);
    int64_t width = s->info.hidden;
    if (r->dimensions > width)
        return serve_error_set(e, 400, "invalid_request_error", "dimensions", NULL, "dimensions is "
                               "%lld, wider than the model's %lld values; give at most %lld",
                               (long long)r->dimensions, (long long)width, (long long)width);
    if (r->dimensions && r->dimensions < width && !matryoshka(&s->info))
        return serve_error_set(e, 400, "invalid_request_error", "dimensions", NULL, "the model "
                               "\"%s\" (%s) was not trained for Matryoshka truncation, so its first "
                               "%lld values are no embedding; leave dimensions out (or give %lld)",
                               s->model, s->info.architecture, (long long)r->dimensions, (long long)width);
    return 0;
}

int embedder_answer(serve_embedder *s, const char *body, size_t len, char **reply, int64_t *inputs,
                    int64_t *tokens, serve_error *e) {
    *reply = NULL;
    *inputs = *tokens = 0;
    serve_embed_request r;
    int code = serve_embed_request_parse(body, len, s->max_inputs, &r, e);
    if (!code) code = check(s, &r, e);
    if (code) {
        serve_embed_request_free(&r);
        return code;
    }
    int64_t dim = r.dimensions ? r.dimensions : s->info.hidden;
    float *v = malloc(r.n * (size_t)dim * sizeof *v);
    if (!v) {
        serve_embed_request_free(&r);
        return serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory for %zu vectors", r.n);
    }
    fe_lm_embed_options o = fe_lm_embed_options_default();
    o.dim = r.dimensions;
    fe_lm_embed_stats stats = {0};
    pthread_mutex_lock(&s->mu);
    fe_status st = r.texts ? fe_lm_embed(s->enc, (const char *const *)r.texts, r.n, &o, v, NULL, &stats)
                           : fe_lm_embed_ids(s->enc, (const int32_t *const *)r.ids, r.n_ids, r.n, &o, v,
                                             NULL, &stats);
    if (st == FE_E_INVALID)
        code = serve_error_set(e, 400, "invalid_request_error", "input", NULL, "%s",
                               fe_lm_encoder_message(s->enc));
    else if (st != FE_OK)
        code = serve_error_set(e, 500, "server_error", NULL, NULL, "embedding failed: %s",
                               fe_lm_encoder_message(s->enc));
    pthread_mutex_unlock(&s->mu);
    if (!code && stats.truncated)
        code = serve_error_set(e, 400, "invalid_request_error", "input", "context_length_exceeded",
                               "%lld of the inputs pass the model's maximum of %lld tokens (with "
                               "its special tokens); shorten them", (long long)stats.truncated,
                               (long long)s->info.max_tokens);
    if (!code) {
        *inputs = (int64_t)r.n;
        *tokens = stats.tokens;
        *reply = reply_embeddings(s->model, v, r.n, dim, r.base64, stats.tokens);
        if (!*reply) code = serve_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    free(v);
    serve_embed_request_free(&r);
    return code;
}
