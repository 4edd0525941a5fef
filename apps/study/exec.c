/* apps/study/exec.c: study_exec, one executor interface over the offload and graph modes
 * (see layer.h). */
#include <stdio.h>
#include <stdlib.h>

#include "layer.h"

struct study_exec {
    study_mode mode;
    study_offload *off;
    study_graph_layer *g;
};

study_exec *study_exec_create(fe_device *dev, const study_weights *w, study_mode m, char *msg,
                              size_t msg_n) {
    if (m >= STUDY_MODE_COUNT) {
        snprintf(msg, msg_n, "mode %d is not a study mode: give offload, runlist, hybrid or "
                 "runlist_each_step", (int)m);
        return NULL;
    }
    study_exec *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(msg, msg_n, "out of memory creating the %s layer", study_mode_name(m));
        return NULL;
    }
    e->mode = m;
    if (m == STUDY_OFFLOAD) e->off = study_offload_create(dev, w, msg, msg_n);
    else e->g = study_graph_layer_create(dev, w, m, msg, msg_n);
    if (!e->off && !e->g) {
        free(e);
        return NULL;
    }
    return e;
}

bool study_exec_run(study_exec *e, const float *x, float *y, char *msg, size_t msg_n) {
    return e->off ? study_offload_run(e->off, x, y, msg, msg_n)
                  : study_graph_layer_run(e->g, x, y, msg, msg_n);
}

study_exec_stats study_exec_get_stats(const study_exec *e) {
    return e->off ? study_offload_stats(e->off) : study_graph_layer_stats(e->g);
}

int study_exec_write_designs(const study_exec *e, FILE *out) {
    return e->off ? study_offload_write_designs(e->off, out)
                  : study_graph_layer_write_designs(e->g, out);
}

void study_exec_destroy(study_exec *e) {
    if (!e) return;
    study_offload_destroy(e->off);
    study_graph_layer_destroy(e->g);
    free(e);
}
