/* apps/study/family.c: the six families (hidden / FFN / heads) and the names of kinds and
 * modes (see family.h). The GPT-2 families carry GPT-2's own widths: FFN = 4 x hidden. */
#include "family.h"

#include <stdio.h>
#include <string.h>

static const study_family families[] = {
    {"tinybert_512", 512, 2048, 8},
    {"baseline_768", 768, 3072, 12},
    {"baseline_1024", 1024, 4096, 16},
    {"gpt2_small_768", 768, 3072, 12},
    {"gpt2_medium_1024", 1024, 4096, 16},
    {"gpt2_512", 512, 2048, 8},
};

/* Not in the matrix: a layer small enough for the tests and the smoke run to take seconds
 * (`ferrum study quick --family tiny_32 --seq 16`). */
static const study_family test_family = {"tiny_32", 32, 64, 4};

static const char *const kind_names[STUDY_KIND_COUNT] = {"bert", "gpt2"};
static const char *const mode_names[STUDY_MODE_COUNT] = {"offload", "runlist", "hybrid",
                                                         "runlist_each_step"};

int study_family_count(void) { return (int)(sizeof families / sizeof families[0]); }
const study_family *study_family_at(int i) {
    return i >= 0 && i < study_family_count() ? &families[i] : NULL;
}
const study_family *study_family_find(const char *name) {
    for (int i = 0; i < study_family_count(); i++)
        if (strcmp(families[i].name, name) == 0) return &families[i];
    return strcmp(test_family.name, name) == 0 ? &test_family : NULL;
}

const char *study_kind_name(study_kind k) { return k < STUDY_KIND_COUNT ? kind_names[k] : "?"; }
const char *study_mode_name(study_mode m) { return m < STUDY_MODE_COUNT ? mode_names[m] : "?"; }

bool study_kind_from_name(const char *name, study_kind *out) {
    for (int i = 0; i < STUDY_KIND_COUNT; i++)
        if (strcmp(kind_names[i], name) == 0) return *out = (study_kind)i, true;
    return false;
}
bool study_mode_from_name(const char *name, study_mode *out) {
    for (int i = 0; i < STUDY_MODE_COUNT; i++)
        if (strcmp(mode_names[i], name) == 0) return *out = (study_mode)i, true;
    return false;
}

double study_layer_flops(const study_shape *s) {
    const double S = (double)s->seq, h = (double)s->hidden, i = (double)s->ffn;
    return 6 * S * h * h + 4 * S * S * h + 2 * S * h * h + 4 * S * h * i;
}

bool study_shape_make(const study_family *f, study_kind kind, int64_t seq, study_shape *out,
                      char *msg, int msg_n) {
    if (f->heads <= 0 || f->hidden % f->heads != 0) {
        snprintf(msg, (size_t)msg_n, "family %s: hidden %lld is not a multiple of its %lld "
                 "heads; give a hidden size that splits into whole heads", f->name,
                 (long long)f->hidden, (long long)f->heads);
        return false;
    }
    if (seq < 1) {
        snprintf(msg, (size_t)msg_n, "sequence length %lld: give at least 1 token",
                 (long long)seq);
        return false;
    }
    *out = (study_shape){kind, seq, f->hidden, f->ffn, f->heads};
    return true;
}
