/* lm/model/gemma3.c: one Gemma 3 layer from the shared blocks (see gemma3.h). */
#include "lm/model/gemma3.h"

#include <stdio.h>

/* rmsnorm over the last axis of the (C, heads, hd) projection of h by w, per head with weight
 * nw: the projection lands in scratch state `name` (C * heads, hd), the norm in a second one;
 * returns the normed (C, heads, hd) rows bounded by n */
static fe_h head_normed(fe_trace *t, const fe_lm_config *c, const fe_gemma3_io *io,
                        fe_block_act h, fe_h w, fe_h nw, int64_t heads, const char *name) {
    const int64_t hd = c->head_dim, rows = io->C * heads;
    int64_t flat[2] = {rows, hd}, proj[2] = {io->C, heads * hd}, three[3] = {io->C, heads, hd};
    char path[64];
    snprintf(path, sizeof path, "gemma3.%s.%lld", name, (long long)io->C);
    fe_h raw = fe_state(t, path, FE_DTYPE_F32, 2, flat);
    snprintf(path, sizeof path, "gemma3.%s_normed.%lld", name, (long long)io->C);
    fe_h normed = fe_state(t, path, FE_DTYPE_F32, 2, flat);
    fe_block_project(t, io->mm, fe_bound(t, fe_reshape(t, raw, 2, proj), 0, io->n), h, w);
    fe_val nr = fe_val_mul(io->n, heads);
    fe_h in[2] = {fe_bound(t, raw, 0, nr), nw};
    fe_setting eps = {"eps", c->rms_eps};
    fe_apply_into(t, fe_bound(t, normed, 0, nr), "RMSNorm", in, 2, &eps, 1, NULL, 0);
    return fe_bound(t, fe_reshape(t, normed, 3, three), 0, io->n);
}

/* rmsnorm(y) * w, added to x */
static fe_h sandwich_add(fe_trace *t, const fe_lm_config *c, fe_h x, fe_h y, fe_h w) {
    return fe_block_apply(t, "ElementwiseAdd", x, fe_block_rmsnorm(t, y, w, c->rms_eps));
}

fe_h fe_gemma3_layer(fe_trace *t, const fe_lm_config *c, const fe_gemma3_io *io, int64_t l, fe_h x) {
    const fe_block_mode mm = io->mm;
    const int64_t hd = c->head_dim, C = io->C;
    int64_t cs[3] = {io->S, c->n_kv_heads, hd};
    /* attention */
    fe_block_act h = fe_block_normed(t, mm, x, fe_block_layer_weight(t, l, "attn_norm"));
    fe_h q = head_normed(t, c, io, h, fe_block_layer_weight(t, l, "wq"),
                         fe_block_layer_weight(t, l, "q_norm"), c->n_heads, "q");
    fe_h k = head_normed(t, c, io, h, fe_block_layer_weight(t, l, "wk"),
                         fe_block_layer_weight(t, l, "k_norm"), c->n_kv_heads, "k");
    char path[64];
    snprintf(path, sizeof path, "layers.%lld.k_cache", (long long)l);
    fe_h kc = fe_state(t, path, io->kv_dtype, 3, cs);
    snprintf(path, sizeof path, "layers.%lld.v_cache", (long long)l);
    fe_h vc = fe_state(t, path, io->kv_dtype, 3, cs);
    /* V, and K rotated, copied into the caches at [pos, pos + n) */
    int64_t kv_flat[2] = {C, c->n_kv_heads * hd};
    fe_block_project(t, mm, fe_reshape(t, fe_window(t, vc, 0, io->pos, C, io->n), 2, kv_flat), h,
                     fe_block_layer_weight(t, l, "wv"));
    fe_setting form = FE_CHOICE("form", "rotate_half");
    q = fe_block_rope(t, mm, FE_NO_TENSOR, q, io->rope, form, io->pos);
    fe_block_rope(t, mm, fe_window(t, kc, 0, io->pos, C, io->n), k, io->rope, form, io->pos);
    fe_h att_in[3] = {q, fe_bound(t, kc, 0, io->end), fe_bound(t, vc, 0, io->end)};
    fe_setting ap[2] = {{"scale", c->attn_scale}, {"window", (double)c->sliding_window}};
    fe_value_set off = {"q_offset", io->pos};
    fe_h att = fe_apply(t, "MHA", att_in, 3, ap, fe_lm_layer_is_local(c, l) ? 2 : 1, &off, 1);
    int64_t flat[2] = {C, c->n_heads * hd};
    fe_h o = fe_block_project(t, mm, FE_NO_TENSOR, fe_block_plain(fe_reshape(t, att, 2, flat)),
                              fe_block_layer_weight(t, l, "wo"));
    x = sandwich_add(t, c, x, o, fe_block_layer_weight(t, l, "post_attn_norm"));
    /* feed-forward */
    h = fe_block_normed(t, mm, x, fe_block_layer_weight(t, l, "ffn_norm"));
    fe_h a = fe_block_geglu(t, mm, h, fe_block_layer_weight(t, l, "w_gate"),
                            fe_block_layer_weight(t, l, "w_up"));
    fe_h f = fe_block_project(t, mm, FE_NO_TENSOR, fe_block_plain(a),
                              fe_block_layer_weight(t, l, "w_down"));
    return sandwich_add(t, c, x, f, fe_block_layer_weight(t, l, "post_ffn_norm"));
}
