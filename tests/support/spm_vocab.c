/* tests/support/spm_vocab.c: the small SentencePiece vocabulary of spm_vocab.h. */
#include "support/spm_vocab.h"

#include <stdio.h>
#include <string.h>

#define SP "\xe2\x96\x81"

static const struct {
    const char *text;
    float score;
    int type;
} PIECES[] = {
    {SP, -1.0f, 1},       {"a", -2.0f, 1},       {"b", -2.0f, 1},        {"c", -2.0f, 1},
    {"ab", -3.0f, 1},     {"bc", -4.0f, 1},      {SP "a", -3.5f, 1},     {SP "ab", -5.0f, 1},
    {"abc", -6.0f, 1},    {"cc", -4.0f, 1},      {"h", -2.0f, 1},        {"i", -2.0f, 1},
    {"hi", -2.5f, 1},     {SP "hi", -2.6f, 1},   {"\xc3\xa9", -3.0f, 1}, {"\n", 0.0f, 4},
    {"  ", 0.0f, 4},      {"<turn>", 0.0f, 3},   {"x", -2.0f, 1},        {"xx", -7.0f, 1},
    {"xxx", -1.5f, 1},
};
enum { N_PIECES = sizeof PIECES / sizeof PIECES[0], N = SPM_PIECES + N_PIECES };

int32_t spm_vocab_id(const char *s) {
    for (int i = 0; i < N_PIECES; i++)
        if (strcmp(PIECES[i].text, s) == 0) return SPM_PIECES + i;
    return -1;
}

fe_tokenizer *spm_vocab_make(bool add_space_prefix, bool unigram) {
    static char bytes[256][8];
    const char *tokens[N];
    float scores[N];
    int32_t types[N];
    const char *heads[4] = {"<pad>", "<eos>", "<bos>", "<unk>"};
    for (int i = 0; i < 4; i++) tokens[i] = heads[i], scores[i] = 0, types[i] = i == 3 ? 2 : 3;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        tokens[SPM_BYTE0 + b] = bytes[b], scores[SPM_BYTE0 + b] = 0, types[SPM_BYTE0 + b] = 6;
    }
    for (int i = 0; i < N_PIECES; i++) {
        tokens[SPM_PIECES + i] = PIECES[i].text;
        scores[SPM_PIECES + i] = PIECES[i].score;
        types[SPM_PIECES + i] = PIECES[i].type;
    }
    fe_spm_spec spec = fe_spm_spec_default();
    spec.tokens = tokens, spec.scores = scores, spec.token_types = types, spec.n_tokens = N;
    spec.bos_id = 2, spec.eos_id = 1, spec.add_space_prefix = add_space_prefix;
    spec.unigram = unigram, spec.unk_id = unigram ? 3 : -1;
    fe_tokenizer *t = NULL;
    fe_error err;
    if (fe_tokenizer_create_spm(&spec, &t, &err) != FE_OK) {
        fprintf(stderr, "spm_vocab_make: %s\n", err.message);
        return NULL;
    }
    return t;
}
