/* lm/model/rope_table.c: RoPE's cos/sin table with optional Llama 3 frequency scaling, or a
 * checkpoint's frequency divisors (see rope_table.h). Plain C in double; a host step done once
 * per model, not a kernel. */
#include "lm/model/rope_table.h"

#include <math.h>

#include "core/alloc.h"
#include "core/error.h"

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

/* The frequencies divided by the checkpoint's divisors (llama.cpp's rope_freqs.weight), cos then
 * sin per position. */
static fe_status freqs_table(float *out, int64_t P, const fe_lm_config *c, const fe_tensor *div,
                             const char *who, fe_error *err) {
    int64_t hd = c->head_dim, half = hd / 2;
    if (!div->data || div->dtype != FE_DTYPE_F32 || fe_tensor_numel(div) != half)
        return fe_error_set(err, FE_E_FORMAT, "the config asks for rope_freqs divisors but the "
                            "weights hold no (head_dim / 2) f32 rope_freqs tensor");
    double *f = fe_malloc((size_t)half * sizeof *f);
    if (!f) return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", who);
    fe_status st = fe_rope_inv_freq(f, hd, c->rope_theta, NULL);
    for (int64_t i = 0; st == FE_OK && i < half; i++) {
        float d = ((const float *)div->data)[i];
        if (!(d > 0))
            st = fe_error_set(err, FE_E_FORMAT, "rope_freqs[%lld] = %g; divisors must be > 0",
                              (long long)i, d);
        f[i] /= d;
    }
    for (int64_t p = 0; st == FE_OK && p < P; p++)
        for (int64_t i = 0; i < half; i++) {
            double a = (double)p * f[i];
            out[p * hd + i] = (float)cos(a);
            out[p * hd + half + i] = (float)sin(a);
        }
    fe_free(f);
    return st;
}

fe_status fe_lm_rope_table(float *out, int64_t P, const fe_llama_weights *w, const char *who,
                           fe_error *err) {
    const fe_lm_config *c = &w->cfg;
    if (c->rope_scaling.type == FE_LM_ROPE_FREQS_TENSOR)
        return freqs_table(out, P, c, &w->rope_freqs, who, err);
    fe_rope_scaling sc = {c->rope_scaling.factor, c->rope_scaling.low_freq_factor,
                          c->rope_scaling.high_freq_factor,
                          c->rope_scaling.original_max_position_embeddings};
    fe_status st = fe_rope_table(out, P, c->head_dim, c->rope_theta,
                                 c->rope_scaling.type == FE_LM_ROPE_LLAMA3 ? &sc : NULL);
    return st == FE_OK ? FE_OK : fe_error_set(err, st, "%s: cannot build the RoPE table (%s)",
                                              who, fe_status_str(st));
}
