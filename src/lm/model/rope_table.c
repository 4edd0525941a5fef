/* lm/model/rope_table.c: RoPE's cos/sin table with optional Llama 3 frequency scaling (see
 * rope_table.h). Plain C in double; a host step done once per model, not a kernel. */
#include "lm/model/rope_table.h"

#include <math.h>

static bool args_ok(int64_t D, double theta, const fe_rope_scaling *s) {
    if (D < 2 || D % 2 != 0 || !(theta > 0) || !isfinite(theta)) return false;
    if (!s) return true;
    return isfinite(s->factor) && s->factor > 0 && isfinite(s->low_freq_factor) &&
           isfinite(s->high_freq_factor) && s->low_freq_factor > 0 &&
           s->high_freq_factor > s->low_freq_factor && s->original_max_position_embeddings > 0;
}

/* f_i for head size D: theta^(-2i/D), then Llama 3's rescaling when s is given */
static double inv_freq(int64_t i, int64_t D, double theta, const fe_rope_scaling *s) {
    const double pi = 3.14159265358979323846;
    double f = 1.0 / pow(theta, (double)(2 * i) / (double)D);
    if (!s) return f;
    double old = (double)s->original_max_position_embeddings;
    double low_wavelen = old / s->low_freq_factor, high_wavelen = old / s->high_freq_factor;
    double wavelen = 2.0 * pi / f;
    if (wavelen > low_wavelen) return f / s->factor;  /* low frequencies: slowed by factor */
    if (wavelen < high_wavelen) return f;             /* high frequencies: unchanged */
    double sm = (old / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
    return (1.0 - sm) * f / s->factor + sm * f;       /* between: blended */
}

fe_status fe_rope_inv_freq(double *out, int64_t D, double theta, const fe_rope_scaling *s) {
    if (!out || !args_ok(D, theta, s)) return FE_E_INVALID;
    for (int64_t i = 0; i < D / 2; i++) out[i] = inv_freq(i, D, theta, s);
    return FE_OK;
}

fe_status fe_rope_table(float *out, int64_t P, int64_t D, double theta,
                        const fe_rope_scaling *scaling) {
    if (!out || P < 1 || !args_ok(D, theta, scaling)) return FE_E_INVALID;
    int64_t half = D / 2;
    /* one frequency at a time (no scratch): column i and half + i of every row */
    for (int64_t i = 0; i < half; i++) {
        double f = inv_freq(i, D, theta, scaling);
        for (int64_t p = 0; p < P; p++) {
            double angle = (double)p * f;
            out[p * D + i] = (float)cos(angle);
            out[p * D + half + i] = (float)sin(angle);
        }
    }
    return FE_OK;
}
