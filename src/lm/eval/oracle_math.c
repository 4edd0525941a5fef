/* lm/eval/oracle_math.c: the oracles' shared primitives (see oracle_math.h). */
#include "lm/eval/oracle_math.h"

#include <math.h>

#include "core/quant.h"

void fe_oracle_matmul(const fe_tensor *w, const float *x, int n, float *out, float *row) {
    int64_t rows = w->shape[0], in = w->shape[1];
    for (int64_t r = 0; r < rows; r++) {
        fe_dequant_row(w->dtype, (const char *)w->data + fe_dtype_bytes(w->dtype, r * in), row, in);
        for (int i = 0; i < n; i++) {
            double acc = 0;
            for (int64_t k = 0; k < in; k++) acc += (double)row[k] * x[(int64_t)i * in + k];
            out[(int64_t)i * rows + r] = (float)acc;
        }
    }
}

void fe_oracle_rmsnorm(float *x, const fe_tensor *w, int64_t d, double eps) {
    const float *g = w->data;
    double ss = 0;
    for (int64_t k = 0; k < d; k++) ss += (double)x[k] * x[k];
    double inv = 1.0 / sqrt(ss / (double)d + eps);
    for (int64_t k = 0; k < d; k++) x[k] = (float)(x[k] * inv * g[k]);
}

void fe_oracle_rope_half(float *v, int64_t hd, int64_t pos, double theta) {
    for (int64_t i = 0; i < hd / 2; i++) {
        double a = (double)pos * pow(theta, -2.0 * (double)i / (double)hd);
        double c = cos(a), s = sin(a), x0 = v[i], x1 = v[i + hd / 2];
        v[i] = (float)(x0 * c - x1 * s);
        v[i + hd / 2] = (float)(x0 * s + x1 * c);
    }
}

double fe_oracle_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
