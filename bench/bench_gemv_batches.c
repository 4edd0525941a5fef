/* bench/bench_gemv_batches.c: what GEMV's batch passes buy (batches_per_pass, ops/gemv): the
 * time of one GEMV over B = 1, 2, 4, 8, 16 x rows with each W block decoded once per pass of
 * up to 8 rows (batches_per_pass = 8) against batch after batch (batches_per_pass = 1), the
 * value resolve picks printed beside them, at the
 * batched decode's shapes: SmolLM2-135M's q4_1 act_int8 GEMVs (attention 576x576 with the
 * rmsnorm prologue, the fused gate/up 1536x576 with swiglu, down 576x1536 with the residual,
 * the 49152x576 head), Llama 3.2 1B's down (2048x8192) in q8_0 act_int8 and bf16, and Gemma 3
 * 270M's down (640x2048) in q4_k and q6_k act_int8 (its Q4_K_M file has both; warm, B = 1
 * shows what the panel kernels' decoding costs).
 *
 * For each (shape, B) the two designs run alternately (so drift in the host's load hits both
 * alike); printed are the median and the spread (min-max) of ms per call, ms per row, and
 * the ratio of the medians. W stays warm in the caches that hold it (a decode step reads
 * every matrix once: the small ones stay in L2/L3, as here). With --cpu-time the figures are
 * this process's CPU seconds per call divided by the workers (the pool's rate while it ran,
 * less sensitive to the other jobs on a shared host than the wall clock); the default is the
 * wall clock. The device line and the load average are printed first.
 *
 * Usage: bench_gemv_batches [--cpu-time] [TEXT]  (TEXT: only shapes whose name holds it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"
#include "ops/gemv/gemv.h"
#include "ops/kernel.h"
#include "support/bench_device.h"
#include "support/layouts.h"
#include "support/peak.h"

enum { RUNS = 15, MAX_B = 16 };

typedef struct shape {
    const char *name;
    fe_dtype dt;
    int64_t N, K;
    int i8, epi, pro;
} shape;

static const shape shapes[] = {
    {"smollm2/q4_1/attn_576x576", FE_DTYPE_Q4_1, 576, 576, 1, GEMV_EPI_NONE, GEMV_PRO_RMSNORM},
    {"smollm2/q4_1/gate_up_1536x576", FE_DTYPE_Q4_1, 1536, 576, 1, GEMV_EPI_SWIGLU, GEMV_PRO_RMSNORM},
    {"smollm2/q4_1/down_576x1536", FE_DTYPE_Q4_1, 576, 1536, 1, GEMV_EPI_RESIDUAL, GEMV_PRO_NONE},
    {"smollm2/q4_1/head_49152x576", FE_DTYPE_Q4_1, 49152, 576, 1, GEMV_EPI_NONE, GEMV_PRO_NONE},
    {"llama1b/q8_0/down_2048x8192", FE_DTYPE_Q8_0, 2048, 8192, 1, GEMV_EPI_NONE, GEMV_PRO_NONE},
    {"llama1b/bf16/down_2048x8192", FE_DTYPE_BF16, 2048, 8192, 0, GEMV_EPI_NONE, GEMV_PRO_NONE},
    {"gemma3/q4_k/down_640x2048", FE_DTYPE_Q4_K, 640, 2048, 1, GEMV_EPI_RESIDUAL, GEMV_PRO_NONE},
    {"gemma3/q6_k/down_640x2048", FE_DTYPE_Q6_K, 640, 2048, 1, GEMV_EPI_RESIDUAL, GEMV_PRO_NONE},
};

static bool cpu_time;

static double clock_s(void) { return cpu_time ? fe_peak_clock_s() : (double)fe_time_ns() * 1e-9; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned char next_byte(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (unsigned char)((rng * 0x2545f4914f6cdd1dull) >> 56);
}

/* fills W (bytes whose f16 scales are kept finite: every byte below 0x3c) and the f32 inputs */
static void fill_bytes(void *p, size_t n) {
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) b[i] = next_byte() % 0x3c;
}
static void fill_f32(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = (float)(next_byte() % 200) / 100.0f - 1.0f;
}

static fe_kernel *make(fe_device *dev, const shape *s, fe_tensor *ops, int bpp) {
    const fe_setting params[3] = {{"act_int8", s->i8}, {"epilogue", s->epi}, {"prologue", s->pro}};
    const fe_setting tun[1] = {{"batches_per_pass", bpp}};
    fe_op_request req = {.op = "GEMV", .operands = ops, .n_operands = 6, .params = params,
                         .n_params = 3, .tunables = tun, .n_tunables = bpp > 0 ? 1 : 0};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK) {
        printf("  %s: cannot make the kernel: %s\n", s->name, err.message);
        return NULL;
    }
    return k;
}

static int bench_shape(fe_device *dev, const shape *s) {
    const int64_t nk[2] = {s->N, s->K}, bk[2] = {MAX_B, s->K}, bn[2] = {MAX_B, s->N};
    const size_t wbytes = fe_dtype_bytes(s->dt, s->N * s->K);
    void *w = fe_aligned_alloc(64, wbytes), *u = fe_aligned_alloc(64, wbytes);
    float *x = fe_aligned_alloc(64, (size_t)(MAX_B * s->K) * 4);
    float *r = fe_aligned_alloc(64, (size_t)(MAX_B * s->N) * 4);
    float *y = fe_aligned_alloc(64, (size_t)(MAX_B * s->N) * 4);
    float *nw = fe_aligned_alloc(64, (size_t)s->K * 4);
    int status = 0;
    if (!w || !u || !x || !r || !y || !nw) {
        printf("  %s: out of memory\n", s->name);
        status = 1;
        goto done;
    }
    fill_bytes(w, wbytes);
    fill_bytes(u, wbytes);
    fill_f32(x, MAX_B * s->K);
    fill_f32(r, MAX_B * s->N);
    for (int64_t i = 0; i < s->K; i++) nw[i] = 1.0f;
    for (int64_t B = 1; B <= MAX_B; B *= 2) {
        const int64_t xk[2] = {B, s->K}, yn[2] = {B, s->N};
        (void)bk, (void)bn;
        const bool gated = fe_gemv_epi_gated(s->epi), resid = s->epi == GEMV_EPI_RESIDUAL;
        fe_tensor ops[6] = {
            fe_tensor_contiguous(w, s->dt, 2, nk),
            fe_tensor_contiguous(x, FE_DTYPE_F32, 2, xk),
            gated ? fe_tensor_contiguous(u, s->dt, 2, nk) : (fe_tensor){.rank = 0},
            resid ? fe_tensor_contiguous(r, FE_DTYPE_F32, 2, yn) : (fe_tensor){.rank = 0},
            s->pro ? fe_tensor_contiguous(nw, FE_DTYPE_F32, 1, &s->K) : (fe_tensor){.rank = 0},
            fe_tensor_contiguous(y, FE_DTYPE_F32, 2, yn)};
        fe_kernel *k[2] = {make(dev, s, ops, 1), make(dev, s, ops, 8)}, *resolved = make(dev, s, ops, -1);
        const int bpp = resolved ? (int)fe_kernel_tunable(resolved, "batches_per_pass") : 0;
        fe_kernel_destroy(resolved);
        if (!k[0] || !k[1]) {
            fe_kernel_destroy(k[0]);
            fe_kernel_destroy(k[1]);
            status = 1;
            goto done;
        }
        double t[2][RUNS];
        void *lay[2][6] = {{0}}; /* a panel design reads W and up from layouts made once */
        const bool laid = bench_layouts_make(k[0], ops, 6, lay[0]) >= 0 &&
                          bench_layouts_make(k[1], ops, 6, lay[1]) >= 0;
        if (!laid) {
            printf("  %s: out of memory for the layouts\n", s->name);
            status = 1;
        }
        for (int i = 0; i < 2 && laid; i++) /* warm up */
            fe_kernel_run_layouts(k[i], ops, 6, (const void *const *)lay[i], NULL, 0);
        for (int run = 0; run < RUNS; run++)
            for (int i = 0; i < 2; i++) {
                const double t0 = clock_s();
                if (!laid || fe_kernel_run_layouts(k[i], ops, 6, (const void *const *)lay[i],
                                                   NULL, 0) != FE_OK)
                    status = 1;
                const double t1 = clock_s();
                t[i][run] = (t1 - t0) * 1e3 / (cpu_time ? fe_device_get_info(dev)->n_workers : 1);
            }
        for (int i = 0; i < 2; i++) qsort(t[i], RUNS, sizeof(double), cmp_double);
        const double m1 = t[0][RUNS / 2], mp = t[1][RUNS / 2];
        printf("  %-32s B=%-2lld  pass 1: %8.3f ms (%.3f-%.3f) %7.3f ms/row   pass 8: %8.3f ms "
               "(%.3f-%.3f) %7.3f ms/row   %.2fx  (resolved: %d)\n",
               s->name, (long long)B, m1, t[0][0], t[0][RUNS - 1], m1 / (double)B, mp,
               t[1][0], t[1][RUNS - 1], mp / (double)B, m1 / mp, bpp);
        fflush(stdout);
        bench_layouts_free(lay[0], 6);
        bench_layouts_free(lay[1], 6);
        fe_kernel_destroy(k[0]);
        fe_kernel_destroy(k[1]);
    }
done:
    fe_free(w);
    fe_free(u);
    fe_free(x);
    fe_free(r);
    fe_free(y);
    fe_free(nw);
    return status;
}

int main(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: bench_gemv_batches [--cpu-time] [TEXT]\n"
                   "  GEMV over B = 1..16 x rows, batches_per_pass 1 against 8 (the resolved\n"
                   "  value printed), at SmolLM2's and Llama 3.2 1B's decode shapes; TEXT runs only\n"
                   "  the shapes whose name holds it; --cpu-time times by this process's CPU\n"
                   "  time per worker instead of the wall clock\n");
            return 0;
        }
        if (!strcmp(argv[i], "--cpu-time")) cpu_time = true;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "bench_gemv_batches: unknown option %s; give --cpu-time, --help "
                            "or a TEXT to match shape names\n", argv[i]);
            return 2;
        } else only = argv[i];
    }
    fe_peak_cpu_time(cpu_time);
    fe_device *dev = bench_device_open("bench_gemv_batches");
    if (!dev) return 1;
    bench_print_load("start");
    printf("clock: %s; ms per GEMV call, median (min-max) of %d alternated runs\n",
           cpu_time ? "process CPU time / workers" : "wall", RUNS);
    int status = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!only || strstr(shapes[i].name, only)) status |= bench_shape(dev, &shapes[i]);
    bench_print_load("end");
    fe_device_destroy(dev);
    return status;
}
