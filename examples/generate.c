/* examples/generate.c: generate text through the public API alone (ferrum/lm.h).
 *   generate MODEL PROMPT [N]             a GGUF file or a Hugging Face checkpoint folder
 *   generate --random PRESET PROMPT [N]   a preset's shapes with random weights (no tokenizer:
 *                                         the prompt's bytes are the ids, ids are printed) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferrum/lm.h>

static int print_piece(void *user, int32_t token, const char *text, size_t len) {
    if (*(const int *)user) printf("%d ", token);  /* no tokenizer: the ids */
    else fwrite(text, 1, len, stdout);
    return fflush(stdout) != 0;                    /* a failed write stops generating */
}

int main(int argc, char **argv) {
    fe_lm_open_options o = fe_lm_open_options_default();
    int a = argc > 1 && strcmp(argv[1], "--random") == 0 ? 2 : 1;
    o.random_weights = a == 2;
    if (argc < a + 2) {
        fprintf(stderr, "usage: %s [--random] MODEL PROMPT [N]\n", argv[0]);
        return 2;
    }
    fe_error err = {0};
    fe_lm_model *m;
    if (fe_lm_model_open(argv[a], &o, &m, &err) != FE_OK) {
        fprintf(stderr, "generate: %s\n", err.message);
        return 1;
    }
    fe_lm_model_info info;
    fe_lm_model_get_info(m, &info);
    int ids_only = info.tokenizer == NULL;
    const char *prompt = argv[a + 1];
    size_t n = strlen(prompt);
    int32_t *ids = NULL;
    if (ids_only) {
        ids = malloc((n + 1) * sizeof *ids);
        for (size_t i = 0; ids && i < n; i++) ids[i] = (unsigned char)prompt[i];
    } else if (fe_lm_tokenize(m, prompt, n, true, false, &ids, &n) != FE_OK) {
        fprintf(stderr, "generate: %s\n", fe_lm_model_message(m));
    }
    fe_lm_session *s = NULL;
    fe_lm_stop stop = fe_lm_stop_default();
    stop.max_tokens = argc > a + 2 ? atoi(argv[a + 2]) : 32;
    fe_lm_generate_result r;
    int code = 1;
    if (ids && fe_lm_session_create(m, NULL, &s, &err) != FE_OK)
        fprintf(stderr, "generate: %s\n", err.message);
    else if (ids && fe_lm_session_generate(s, ids, (int64_t)n, NULL, &stop, print_piece, &ids_only, &r) != FE_OK)
        fprintf(stderr, "generate: %s\n", fe_lm_session_message(s));
    else if (ids)
        code = printf("\n%lld prompt tokens, %lld generated (%s), %.1f tokens/s\n",
                      (long long)r.prompt_tokens, (long long)r.generated_tokens,
                      fe_lm_stop_reason_name(r.stop_reason),
                      r.decode_seconds > 0 ? (double)(r.generated_tokens - 1) / r.decode_seconds : 0.0) < 0;
    fe_lm_session_destroy(s);
    if (ids_only) free(ids);
    else fe_lm_free(ids);
    fe_lm_model_close(m);
    return code;
}
