/* apps/study/offload.c: the offload mode. The host thread runs the layer itself over host
 * buffers: LayerNorm, biases, the softmax, GELU and the residuals in plain C, one row at a
 * time. Each GEMM goes to the device as its own dispatch (fe_kernel_run on a GEMM kernel):
 * its operands are copied into device buffers first and its result copied out after, as a
 * framework that calls a BLAS on an accelerator would. The weights are uploaded once, at
 * create. Per call: Q, K, V, then per head (K_h and V_h^T uploaded once a head: GEMM takes B as
 * (N, K)) and per block of up to STUDY_OFFLOAD_ROWS query rows, scores = Q_h K_h^T and
 * O_h = P_h V_h, then the out-projection, FFN-up and FFN-down: 6 + 2 x heads x blocks
 * dispatches (30 for 12 heads up to 512 tokens). Row blocks keep the score buffers at
 * STUDY_OFFLOAD_ROWS x seq (32 MiB at 16384 tokens, not 1 GiB); the last block runs the same
 * design with GEMM's `rows` bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"

enum { K_PROJ, K_UP, K_DOWN, K_SCORES, K_PV, K_COUNT };
enum { STUDY_OFFLOAD_ROWS = 512 }; /* query rows per scores / P.V dispatch */

struct study_offload {
    fe_device *dev;
    const study_weights *w;
    fe_kernel *k[K_COUNT];
    /* device buffers: the resident weights, then the staging for activations */
    float *d_wq, *d_wk, *d_wv, *d_wo, *d_up, *d_down;
    float *d_a, *d_c;         /* A in, C out; each the largest use */
    float *d_kh, *d_vt;       /* the head's K_h (seq, d) and V_h^T (d, seq) */
    /* host buffers */
    float *q, *k_, *v, *att, *t, *x1, *mid, *p;
    size_t device_bytes;
    int dispatches;
};

static fe_kernel *make_gemm(fe_device *dev, int64_t M, int64_t N, int64_t K, char *msg,
                            size_t msg_n) {
    const int64_t as[2] = {M, K}, bs[2] = {N, K}, cs[2] = {M, N};
    fe_tensor ops[5] = {fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, as),
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, bs), {0}, {0},
                        fe_tensor_contiguous(NULL, FE_DTYPE_F32, 2, cs)};
    fe_op_request req = {.op = "GEMM", .operands = ops, .n_operands = 5};
    fe_kernel *k = NULL;
    fe_error err = {0};
    if (fe_kernel_create(dev, &req, &k, &err) != FE_OK)
        snprintf(msg, msg_n, "offload GEMM (%lld x %lld x %lld): %s", (long long)M,
                 (long long)N, (long long)K, err.message);
    return k;
}

static float *device_copy(study_offload *o, const float *src, int64_t n) {
    float *d = malloc((size_t)n * sizeof *d);
    if (d && src) memcpy(d, src, (size_t)n * sizeof *d);
    o->device_bytes += (size_t)n * sizeof *d;
    return d;
}

/* C (rows, N) = A (rows, K) B (N, K)^T on the device, with kernel `kind` (made for M >= rows
 * rows): A copied in, B resident, C copied out to c_host */
static bool device_gemm(study_offload *o, int kind, const float *a_host, int64_t rows, int64_t M,
                        int64_t K, const float *b_dev, int64_t N, float *c_host, char *msg,
                        size_t msg_n) {
    memcpy(o->d_a, a_host, (size_t)(rows * K) * sizeof(float));
    const int64_t as[2] = {M, K}, bs[2] = {N, K}, cs[2] = {M, N}, values[2] = {rows, K};
    fe_tensor ops[5] = {fe_tensor_contiguous(o->d_a, FE_DTYPE_F32, 2, as),
                        fe_tensor_contiguous((void *)b_dev, FE_DTYPE_F32, 2, bs), {0}, {0},
                        fe_tensor_contiguous(o->d_c, FE_DTYPE_F32, 2, cs)};
    if (fe_kernel_run(o->k[kind], ops, 5, values, 2) != FE_OK) {
        snprintf(msg, msg_n, "offload GEMM: %s", fe_kernel_message(o->k[kind]));
        return false;
    }
    o->dispatches++;
    memcpy(c_host, o->d_c, (size_t)(rows * N) * sizeof(float));
    return true;
}

study_offload *study_offload_create(fe_device *dev, const study_weights *w, char *msg,
                                    size_t msg_n) {
    study_offload *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(msg, msg_n, "out of memory creating the offload layer");
        return NULL;
    }
    o->dev = dev;
    o->w = w;
    const study_shape *s = &w->shape;
    const int64_t S = s->seq, h = s->hidden, i = s->ffn, d = h / s->heads;
    const int64_t R = S < STUDY_OFFLOAD_ROWS ? S : STUDY_OFFLOAD_ROWS; /* rows per block */
    const int64_t big = S * i > R * S ? S * i : R * S; /* the largest A or C */
    o->k[K_PROJ] = make_gemm(dev, S, h, h, msg, msg_n);
    if (o->k[K_PROJ]) o->k[K_UP] = make_gemm(dev, S, i, h, msg, msg_n);
    if (o->k[K_UP]) o->k[K_DOWN] = make_gemm(dev, S, h, i, msg, msg_n);
    if (o->k[K_DOWN]) o->k[K_SCORES] = make_gemm(dev, R, S, d, msg, msg_n);
    if (o->k[K_SCORES]) o->k[K_PV] = make_gemm(dev, R, d, S, msg, msg_n);
    if (!o->k[K_PV]) {
        study_offload_destroy(o);
        return NULL;
    }
    o->d_wq = device_copy(o, w->wq, h * h);
    o->d_wk = device_copy(o, w->wk, h * h);
    o->d_wv = device_copy(o, w->wv, h * h);
    o->d_wo = device_copy(o, w->wo, h * h);
    o->d_up = device_copy(o, w->w_up, i * h);
    o->d_down = device_copy(o, w->w_down, h * i);
    o->d_a = device_copy(o, NULL, big > S * h ? big : S * h);
    o->d_kh = device_copy(o, NULL, S * d);
    o->d_vt = device_copy(o, NULL, S * d);
    o->d_c = device_copy(o, NULL, big > S * h ? big : S * h);
    const size_t sh = (size_t)(S * h) * sizeof(float);
    o->q = malloc(sh), o->k_ = malloc(sh), o->v = malloc(sh), o->att = malloc(sh);
    o->t = malloc(sh), o->x1 = malloc(sh);
    o->mid = malloc((size_t)(big > S * h ? big : S * h) * sizeof(float));
    o->p = malloc((size_t)(R * d) * sizeof(float));
    if (!o->d_wq || !o->d_wk || !o->d_wv || !o->d_wo || !o->d_up || !o->d_down || !o->d_a ||
        !o->d_kh || !o->d_vt || !o->d_c || !o->q || !o->k_ || !o->v || !o->att || !o->t || !o->x1 ||
        !o->mid || !o->p) {
        snprintf(msg, msg_n, "offload layer: out of memory for its buffers (seq %lld)",
                 (long long)S);
        study_offload_destroy(o);
        return NULL;
    }
    return o;
}

static void add_bias(float *y, const float *b, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] += b[c];
}

static void host_layernorm(const float *x, const float *g, const float *b, float *y,
                           int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++) mean += xr[c];
        mean /= (float)cols;
        for (int64_t c = 0; c < cols; c++) var += (xr[c] - mean) * (xr[c] - mean);
        const float rstd = 1.0f / sqrtf(var / (float)cols + 1e-5f);
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = (xr[c] - mean) * rstd * g[c] + b[c];
    }
}

static void host_gelu(float *x, int64_t n, bool erf_form) {
    for (int64_t e = 0; e < n; e++) {
        const float v = x[e];
        x[e] = erf_form ? 0.5f * v * (1.0f + erff(v * 0.70710678f))
                        : 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

/* out = Attn(u) */
static bool attn(study_offload *o, const float *u, float *out, char *msg, size_t msg_n) {
    const study_shape *s = &o->w->shape;
    const study_weights *w = o->w;
    const int64_t S = s->seq, h = s->hidden, H = s->heads, d = h / H;
    const int64_t R = S < STUDY_OFFLOAD_ROWS ? S : STUDY_OFFLOAD_ROWS;
    if (!device_gemm(o, K_PROJ, u, S, S, h, o->d_wq, h, o->q, msg, msg_n) ||
        !device_gemm(o, K_PROJ, u, S, S, h, o->d_wk, h, o->k_, msg, msg_n) ||
        !device_gemm(o, K_PROJ, u, S, S, h, o->d_wv, h, o->v, msg, msg_n))
        return false;
    add_bias(o->q, w->bq, S, h), add_bias(o->k_, w->bk, S, h), add_bias(o->v, w->bv, S, h);
    const bool causal = s->kind == STUDY_GPT2;
    const float scale = 1.0f / sqrtf((float)d);
    float *qh = o->t; /* a block's head slice of Q, (R, d), host side */
    for (int64_t hd = 0; hd < H; hd++) {
        for (int64_t r = 0; r < S; r++) { /* upload K_h and V_h^T for the head's blocks */
            memcpy(o->d_kh + r * d, o->k_ + r * h + hd * d, (size_t)d * sizeof(float));
            for (int64_t c = 0; c < d; c++) o->d_vt[c * S + r] = o->v[r * h + hd * d + c];
        }
        for (int64_t r0 = 0; r0 < S; r0 += R) {
            const int64_t rows = S - r0 < R ? S - r0 : R;
            for (int64_t r = 0; r < rows; r++)
                memcpy(qh + r * d, o->q + (r0 + r) * h + hd * d, (size_t)d * sizeof(float));
            if (!device_gemm(o, K_SCORES, qh, rows, R, d, o->d_kh, S, o->mid, msg, msg_n)) return false;
            for (int64_t r = 0; r < rows; r++) { /* softmax over the keys row r0 + r attends */
                float *row = o->mid + r * S, mx = -INFINITY, sum = 0;
                const int64_t keys = causal ? r0 + r + 1 : S;
                for (int64_t j = 0; j < keys; j++) mx = fmaxf(mx, row[j] * scale);
                for (int64_t j = 0; j < keys; j++) sum += row[j] = expf(row[j] * scale - mx);
                for (int64_t j = 0; j < keys; j++) row[j] /= sum;
                for (int64_t j = keys; j < S; j++) row[j] = 0;
            }
            if (!device_gemm(o, K_PV, o->mid, rows, R, S, o->d_vt, d, o->p, msg, msg_n)) return false;
            for (int64_t r = 0; r < rows; r++)
                memcpy(o->att + (r0 + r) * h + hd * d, o->p + r * d, (size_t)d * sizeof(float));
        }
    }
    if (!device_gemm(o, K_PROJ, o->att, S, S, h, o->d_wo, h, out, msg, msg_n)) return false;
    add_bias(out, w->bo, S, h);
    return true;
}

/* out = FFN(u) */
static bool ffn(study_offload *o, const float *u, float *out, char *msg, size_t msg_n) {
    const study_shape *s = &o->w->shape;
    const int64_t S = s->seq, h = s->hidden, i = s->ffn;
    if (!device_gemm(o, K_UP, u, S, S, h, o->d_up, i, o->mid, msg, msg_n)) return false;
    add_bias(o->mid, o->w->b_up, S, i);
    host_gelu(o->mid, S * i, s->kind == STUDY_BERT);
    if (!device_gemm(o, K_DOWN, o->mid, S, S, i, o->d_down, h, out, msg, msg_n)) return false;
    add_bias(out, o->w->b_down, S, h);
    return true;
}

bool study_offload_run(study_offload *o, const float *x, float *y, char *msg, size_t msg_n) {
    const study_weights *w = o->w;
    const int64_t S = w->shape.seq, h = w->shape.hidden, n = S * h;
    float *f = o->att; /* a block's output: the out-projection reads att before writing it */
    o->dispatches = 0;
    if (w->shape.kind == STUDY_BERT) {
        if (!attn(o, x, f, msg, msg_n)) return false;
        for (int64_t e = 0; e < n; e++) f[e] += x[e];
        host_layernorm(f, w->ln1_w, w->ln1_b, o->x1, S, h);
        if (!ffn(o, o->x1, f, msg, msg_n)) return false;
        for (int64_t e = 0; e < n; e++) f[e] += o->x1[e];
        host_layernorm(f, w->ln2_w, w->ln2_b, y, S, h);
    } else {
        float *ln = y; /* y is free until the end: LN1(x) goes there */
        host_layernorm(x, w->ln1_w, w->ln1_b, ln, S, h);
        if (!attn(o, ln, f, msg, msg_n)) return false;
        for (int64_t e = 0; e < n; e++) o->x1[e] = x[e] + f[e];
        host_layernorm(o->x1, w->ln2_w, w->ln2_b, ln, S, h);
        if (!ffn(o, ln, f, msg, msg_n)) return false;
        for (int64_t e = 0; e < n; e++) y[e] = o->x1[e] + f[e];
    }
    return true;
}

study_exec_stats study_offload_stats(const study_offload *o) {
    int designs = 0;
    for (int k = 0; k < K_COUNT; k++) {
        bool seen = false;
        for (int j = 0; j < k; j++)
            seen = seen || fe_kernel_design_key(o->k[j]) == fe_kernel_design_key(o->k[k]);
        designs += !seen;
    }
    return (study_exec_stats){.dispatches = o->dispatches, .steps = o->dispatches,
                              .designs = designs, .arena_bytes = o->device_bytes};
}

int study_offload_write_designs(const study_offload *o, FILE *out) {
    static const char *const names[K_COUNT] = {"GEMM projection", "GEMM ffn_up", "GEMM ffn_down",
                                               "GEMM scores", "GEMM p.v"};
    for (int k = 0; k < K_COUNT; k++)
        fprintf(out, "offload %s %s width %lld key %016llx\n", names[k],
                fe_isa_name(fe_kernel_isa(o->k[k])), (long long)fe_kernel_tunable(o->k[k], "WIDTH"),
                (unsigned long long)fe_kernel_design_key(o->k[k]));
    return study_offload_stats(o).designs;
}

void study_offload_destroy(study_offload *o) {
    if (!o) return;
    for (int k = 0; k < K_COUNT; k++) fe_kernel_destroy(o->k[k]);
    float *all[] = {o->d_wq, o->d_wk, o->d_wv, o->d_wo, o->d_up, o->d_down, o->d_a, o->d_kh,
                    o->d_vt, o->d_c, o->q, o->k_, o->v, o->att, o->t, o->x1, o->mid, o->p};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) free(all[k]);
    free(o);
}
