/* examples/search.c: semantic search through the public API alone (ferrum/lm.h): embed a
 * query and some documents with a sentence-transformers folder (all-MiniLM-L6-v2), rank the
 * documents by cosine similarity (the vectors are unit length: a dot product).
 *   search MODEL_DIR QUERY DOC [DOC ...] */
#include <stdio.h>
#include <stdlib.h>

#include <ferrum/lm.h>

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL_DIR QUERY DOC [DOC ...]\n", argv[0]);
        return 2;
    }
    fe_error err = {0};
    fe_lm_encoder *e;
    if (fe_lm_encoder_open(argv[1], NULL, &e, &err) != FE_OK) {
        fprintf(stderr, "search: %s\n", err.message);
        return 1;
    }
    fe_lm_encoder_info in;
    fe_lm_encoder_get_info(e, &in);
    size_t n = (size_t)argc - 2; /* the query, then the documents */
    float *v = malloc(n * (size_t)in.hidden * sizeof *v);
    fe_lm_embed_options o = fe_lm_embed_options_default();
    o.normalize = 1;
    int64_t dim;
    if (!v || fe_lm_embed(e, (const char *const *)argv + 2, n, &o, v, &dim, NULL) != FE_OK) {
        fprintf(stderr, "search: %s\n", v ? fe_lm_encoder_message(e) : "out of memory");
        free(v);
        fe_lm_encoder_close(e);
        return 1;
    }
    int *order = malloc((n - 1) * sizeof *order);
    double *score = malloc((n - 1) * sizeof *score);
    for (size_t d = 0; order && score && d + 1 < n; d++) {
        double s = 0;
        for (int64_t i = 0; i < dim; i++) s += (double)v[i] * v[(d + 1) * (size_t)dim + (size_t)i];
        size_t k = d; /* insertion by score, best first */
        while (k > 0 && score[k - 1] < s) score[k] = score[k - 1], order[k] = order[k - 1], k--;
        score[k] = s, order[k] = (int)d;
    }
    for (size_t k = 0; order && score && k + 1 < n; k++) printf("%.4f  %s\n", score[k], argv[3 + order[k]]);
    free(order);
    free(score);
    free(v);
    fe_lm_encoder_close(e);
    return 0;
}
