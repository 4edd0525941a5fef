/* bench/bench_graph.c: what a graph call costs beyond its kernels. A graph of 100 tiny steps
 * (ReLU over 64 floats, each reading the last), called many times: the median time of a
 * fused call (one dispatch) and of an each_step call (one dispatch a step), against the sum
 * of the same kernels run directly on one thread; and the cost of patching and checking the
 * per-call words and binding the steps, against one Llama 3.2 1B decode step at this
 * machine's read bandwidth (2.47 GB of BF16 weights a token). Prints the machine first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/membw.h"
#include "graph/internal.h"
#include "support/bench_device.h"

enum { STEPS = 100, LEN = 64, CALLS = 4000 };

static fe_status tiny_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_bound(t, fe_input(t, "x"), 0, fe_scratchpad(t, "n"));
    for (int i = 0; i < STEPS; i++) x = fe_apply(t, "ReLU", &x, 1, NULL, 0, NULL, 0);
    fe_output(t, x);
    return fe_trace_status(t);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_ns(uint64_t *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_u64);
    return (double)t[n / 2];
}

static uint64_t samples[CALLS];

int main(void) {
    fe_device *dev = bench_device_open("bench_graph");
    if (!dev) return 1;
    fe_error err;
    printf("\n");
    float x[LEN];
    for (int i = 0; i < LEN; i++) x[i] = (float)(i - LEN / 2);
    int64_t shape = LEN;
    fe_named_tensor in = {"x", fe_tensor_contiguous(x, FE_DTYPE_F32, 1, &shape)};
    fe_word n = {"n", LEN};
    double per_call[2];
    fe_graph *graphs[2];
    for (int p = 0; p < 2; p++) {
        if (fe_graph_create(dev, p ? "each_step" : "fused", tiny_body, NULL, &graphs[p], &err) != FE_OK) return 1;
        fe_compile_options co = fe_compile_options_default();
        co.packaging = p ? FE_PACK_EACH_STEP : FE_PACK_FUSED;
        if (fe_graph_compile(graphs[p], &in, 1, &co) != FE_OK) {
            fprintf(stderr, "bench_graph: %s\n", fe_graph_message(graphs[p]));
            return 1;
        }
        fe_tensor out;
        for (int i = 0; i < CALLS; i++) {
            uint64_t t0 = fe_time_ns();
            fe_graph_call(graphs[p], &in, 1, &n, 1, &out, 1, NULL);
            samples[i] = fe_time_ns() - t0;
        }
        per_call[p] = median_ns(samples, CALLS);
    }
    /* the same kernels run directly, one thread, no pool */
    fe_version *v = graphs[0]->versions[0];
    for (int i = 0; i < CALLS; i++) {
        uint64_t t0 = fe_time_ns();
        for (int s = 0; s < v->n_steps; s++) v->ctx[s].fn(v->ctx[s].args, v->ctx[s].design, 0, 1);
        samples[i] = fe_time_ns() - t0;
    }
    double kernels = median_ns(samples, CALLS);
    /* patching and checking: a call's work before its dispatch (words, checks, binds) */
    for (int i = 0; i < CALLS; i++) {
        uint64_t t0 = fe_time_ns();
        fe_device_dispatch(dev, v->runlist, v->n_steps);
        samples[i] = fe_time_ns() - t0;
    }
    double dispatch_only = median_ns(samples, CALLS);
    double patch = per_call[0] - dispatch_only;
    printf("graph of %d tiny steps (ReLU over %d floats), %d calls, medians:\n", STEPS, LEN, CALLS);
    printf("  fused call          %9.1f us  (1 dispatch)\n", per_call[0] / 1e3);
    printf("  each_step call      %9.1f us  (%d dispatches)\n", per_call[1] / 1e3, STEPS);
    printf("  kernels alone       %9.1f us  (the same %d kernels run directly on one thread)\n",
           kernels / 1e3, STEPS);
    printf("  fused overhead      %9.1f us  (%.2f us a step: barriers and the pool)\n",
           (per_call[0] - kernels) / 1e3, (per_call[0] - kernels) / 1e3 / STEPS);
    printf("  fused / each_step   %9.2f\n", per_call[0] / per_call[1]);
    printf("  patch + check + bind%9.1f us  (%.0f ns a step)\n", patch / 1e3, patch / STEPS);
    fe_membw_report rd;
    fe_membw_options mo = {.read_bytes = (size_t)128 << 20, .triad_bytes = (size_t)16 << 20, .repeats = 5};
    if (fe_membw_measure(dev, &mo, &rd) == FE_OK) {
        double decode_ns = 2.47e9 / (rd.read_gbs * 1e9) * 1e9;
        /* a Llama 3.2 1B decode step has about 16 layers x 12 steps */
        double llama_patch = patch / STEPS * 200;
        printf("\nLlama 3.2 1B decode step at the measured read bandwidth (%.1f GB/s): %.1f ms;\n"
               "patching ~200 steps costs %.1f us = %.4f%% of it (target < 1%%)\n",
               rd.read_gbs, decode_ns / 1e6, llama_patch / 1e3, 100 * llama_patch / decode_ns);
    }
    fe_graph_destroy(graphs[0]);
    fe_graph_destroy(graphs[1]);
    fe_device_destroy(dev);
    return 0;
}
