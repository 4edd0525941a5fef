/* lm/model/blocks.c: the layer blocks of a model body (see blocks.h): each traces one or a
 * few plain operator steps (the fold pass fuses them), choosing GEMV or GEMM and the
 * activation design from the mode; under the mode's hand_fused, the fused forms directly. */
#include "lm/model/blocks.h"

#include <stdio.h>

void fe_block_fold_options(fe_body_form f, fe_fold_price_fn price, void *user,
                           fe_compile_options *co) {
    co->fold = f == FE_BODY_FOLD_ALL ? FE_FOLD_ALL : f == FE_BODY_FOLD_PRICED ? FE_FOLD_PRICED
                                                                             : FE_FOLD_NONE;
    co->fold_price = price;
    co->fold_user = user;
}

fe_h fe_block_apply(fe_trace *t, const char *op, fe_h a, fe_h b) {
    fe_h in[2] = {a, b};
    return fe_apply(t, op, in, b.id ? 2 : 1, NULL, 0, NULL, 0);
}

/* RMSNorm with the model's epsilon */
fe_h fe_block_rmsnorm(fe_trace *t, fe_h x, fe_h w, double eps) {
    fe_h in[2] = {x, w};
    fe_setting e = {"eps", eps};
    return fe_apply(t, "RMSNorm", in, 2, &e, 1, NULL, 0);
}

fe_h fe_block_layer_weight(fe_trace *t, int64_t l, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "layers.%lld.%s", (long long)l, name);
    return fe_weight(t, path);
}

fe_block_act fe_block_plain(fe_h x) { return (fe_block_act){x, FE_NO_TENSOR}; }

/* Whether matrix w takes int8 activations: block-quantised, with the mode's act_int8 on (a in
 * int8 per 32-block, or per 256 for the K types, integer dot products, as llama.cpp's Q8
 * activations) */
static bool int8_for(fe_trace *t, fe_block_mode mm, fe_h w) {
    fe_dtype wdt = fe_dtype_of(t, w);
    const fe_dtype_traits *tr = fe_dtype_info(wdt); /* NULL for no tensor (a failed trace) */
    return mm.act_int8 && tr && tr->block > 1;       /* q8_0 .. q6_k: GEMV/GEMM act_int8 */
}

/* y = epilogue(W a) for the one row of a decode step; into dst when dst is a tensor; GEMV
 * act_int8 where int8_for */
fe_h fe_block_gemv(fe_trace *t, fe_block_mode mm, fe_h dst, fe_h w, fe_block_act a, fe_h up,
                   fe_h res, const char *epi) {
    fe_h in[5] = {w, a.x, up, res, a.norm};
    bool int8 = int8_for(t, mm, w);
    fe_setting s[4] = {FE_CHOICE("epilogue", epi), {"act_int8", 1}, FE_CHOICE("prologue", "rmsnorm"),
                       {"eps", mm.eps}};
    int n_in = a.norm.id ? 5 : res.id ? 4 : up.id ? 3 : 2, n = 1;
    if (int8) s[n++] = s[1];
    if (a.norm.id) s[n++] = s[2], s[n++] = s[3];
    if (dst.id) return fe_apply_into(t, dst, "GEMV", in, n_in, s, n, NULL, 0) == FE_OK ? dst : FE_NO_TENSOR;
    return fe_apply(t, "GEMV", in, n_in, s, n, NULL, 0);
}

/* C = epilogue(A B^T) over the rows of a chunk, with act_bf16 where B's dtype is one of the
 * mode's bf16_dtypes (else act_int8 where int8_for B) and up to one more setting; into dst
 * when dst is a tensor */
static fe_h gemm(fe_trace *t, fe_block_mode mm, fe_h dst, fe_h *in, int n_in, const fe_setting *extra) {
    const fe_dtype wdt = fe_dtype_of(t, in[1]);
    const bool bf16 = wdt < FE_DTYPE_COUNT && (mm.bf16_dtypes >> wdt & 1u);
    fe_setting s[2] = {{bf16 ? "act_bf16" : "act_int8", 1}};
    int n = bf16 || int8_for(t, mm, in[1]) ? 1 : 0;
    if (extra) s[n++] = *extra;
    if (dst.id) return fe_apply_into(t, dst, "GEMM", in, n_in, n ? s : NULL, n, NULL, 0) == FE_OK ? dst : FE_NO_TENSOR;
    return fe_apply(t, "GEMM", in, n_in, n ? s : NULL, n, NULL, 0);
}

/* y into dst when dst is a tensor: a Copy step, or a Convert step where dst keeps another
 * dtype (a KV cache in f16); returns where y now is */
static fe_h store(fe_trace *t, fe_h dst, fe_h y) {
    if (!dst.id) return y;
    if (fe_dtype_of(t, dst) != fe_dtype_of(t, y))
        return fe_apply_into(t, dst, "Convert", &y, 1, NULL, 0, NULL, 0) == FE_OK ? dst : FE_NO_TENSOR;
    return fe_copy_into(t, dst, y) == FE_OK ? dst : FE_NO_TENSOR;
}

/* Whether hand_fused writes a product's or RoPE's f32 result straight into dst: where dst
 * is f32 (a cache in f16 takes a Convert step after it) */
static bool writes_into(fe_trace *t, fe_block_mode mm, fe_h dst) {
    return mm.hand_fused && dst.id && fe_dtype_of(t, dst) == FE_DTYPE_F32;
}

/* y = a W^T (GEMV or GEMM by the mode), into dst when dst is a tensor (hand_fused: written
 * there by the product itself) */
fe_h fe_block_project(fe_trace *t, fe_block_mode mm, fe_h dst, fe_block_act a, fe_h w) {
    const bool direct = writes_into(t, mm, dst);
    fe_h into = direct ? dst : FE_NO_TENSOR, y;
    if (mm.decode) {
        y = fe_block_gemv(t, mm, into, w, a, FE_NO_TENSOR, FE_NO_TENSOR, "none");
    } else {
        fe_h in[2] = {a.x, w};
        y = gemm(t, mm, into, in, 2, NULL);
    }
    return direct ? y : store(t, dst, y);
}

fe_h fe_block_rope(fe_trace *t, fe_block_mode mm, fe_h dst, fe_h x, fe_h table, fe_setting form,
                   fe_val pos) {
    fe_h in[2] = {x, table};
    fe_value_set at = {"pos", pos};
    if (writes_into(t, mm, dst))
        return fe_apply_into(t, dst, "RoPE", in, 2, &form, 1, &at, 1) == FE_OK ? dst : FE_NO_TENSOR;
    return store(t, dst, fe_apply(t, "RoPE", in, 2, &form, 1, &at, 1));
}

/* x + o W^T */
fe_h fe_block_project_add(fe_trace *t, fe_block_mode mm, fe_h o, fe_h w, fe_h x) {
    if (!mm.hand_fused)
        return fe_block_apply(t, "ElementwiseAdd", x,
                              fe_block_project(t, mm, FE_NO_TENSOR, fe_block_plain(o), w));
    if (mm.decode)
        return fe_block_gemv(t, mm, FE_NO_TENSOR, w, fe_block_plain(o), FE_NO_TENSOR, x, "residual");
    fe_h in[4] = {o, w, FE_NO_TENSOR, x};
    return gemm(t, mm, FE_NO_TENSOR, in, 4, NULL);
}

/* act(a Wg^T) * (a Wu^T) with act the step `act` (SiLU, or GELU in its tanh form), written
 * plainly; hand_fused: the GEMV's `epilogue` (swiglu, geglu) in a decode step; in a chunk the
 * gate GEMM's `activation` (silu, gelu), and the up GEMM's multiplier the gate's result */
static fe_h gated(fe_trace *t, fe_block_mode mm, fe_block_act a, fe_h wg, fe_h wu, const char *act,
                  const char *epilogue, const char *activation) {
    if (!mm.hand_fused) {
        fe_h g = fe_block_apply(t, act, fe_block_project(t, mm, FE_NO_TENSOR, a, wg), FE_NO_TENSOR);
        return fe_block_apply(t, "ElementwiseMul", g, fe_block_project(t, mm, FE_NO_TENSOR, a, wu));
    }
    if (mm.decode) return fe_block_gemv(t, mm, FE_NO_TENSOR, wg, a, wu, FE_NO_TENSOR, epilogue);
    fe_setting s = FE_CHOICE("activation", activation);
    fe_h gin[2] = {a.x, wg};
    fe_h g = gemm(t, mm, FE_NO_TENSOR, gin, 2, &s);
    fe_h uin[5] = {a.x, wu, FE_NO_TENSOR, FE_NO_TENSOR, g}; /* a, b, bias, residual, multiplier */
    return gemm(t, mm, FE_NO_TENSOR, uin, 5, NULL);
}

/* gelu_tanh(a Wg^T) * (a Wu^T): Gemma's GeGLU (GELU's default form is tanh) */
fe_h fe_block_geglu(fe_trace *t, fe_block_mode mm, fe_block_act a, fe_h wg, fe_h wu) {
    return gated(t, mm, a, wg, wu, "GELU", "geglu", "gelu");
}

/* silu(a Wg^T) * (a Wu^T) */
fe_h fe_block_gated(fe_trace *t, fe_block_mode mm, fe_block_act a, fe_h wg, fe_h wu) {
    return gated(t, mm, a, wg, wu, "SiLU", "swiglu", "silu");
}

/* The input of a layer's projections: rmsnorm(x) * w */
fe_block_act fe_block_normed(fe_trace *t, fe_block_mode mm, fe_h x, fe_h w) {
    return mm.decode && mm.hand_fused ? (fe_block_act){x, w}
                                      : fe_block_plain(fe_block_rmsnorm(t, x, w, mm.eps));
}


/* ---- encoder blocks ---- */

fe_h fe_block_layernorm(fe_trace *t, fe_h x, fe_h w, fe_h b, double eps) {
    fe_h in[3] = {x, w, b};
    fe_setting e = {"eps", eps};
    return fe_apply(t, "LayerNorm", in, 3, &e, 1, NULL, 0);
}

fe_h fe_block_linear(fe_trace *t, fe_block_mode mm, fe_h a, fe_h w, fe_h bias, fe_h res) {
    fe_h in[4] = {a, w, bias, mm.hand_fused ? res : FE_NO_TENSOR};
    int n_in = in[3].id ? 4 : bias.id ? 3 : 2;
    fe_h y = gemm(t, mm, FE_NO_TENSOR, in, n_in, NULL);
    return mm.hand_fused || !res.id ? y : fe_block_apply(t, "ElementwiseAdd", res, y);
}

/* GELU (erf) after the first product and its bias (hand_fused: the GEMM's activation), then
 * the second product and the residual */
fe_h fe_block_ffn_gelu(fe_trace *t, fe_block_mode mm, fe_h a, fe_h wi, fe_h bi, fe_h wf, fe_h bf,
                       fe_h res) {
    fe_setting gelu = FE_CHOICE("activation", "gelu_erf"), erf_form = FE_CHOICE("form", "erf");
    fe_h in[3] = {a, wi, bi};
    fe_h h = gemm(t, mm, FE_NO_TENSOR, in, bi.id ? 3 : 2, mm.hand_fused ? &gelu : NULL);
    if (!mm.hand_fused) h = fe_apply(t, "GELU", &h, 1, &erf_form, 1, NULL, 0);
    return fe_block_linear(t, mm, h, wf, bf, res);
}

fe_status fe_block_attend_all(fe_trace *t, fe_h dst, fe_h q, fe_h k, fe_h v) {
    fe_h in[3] = {q, k, v};
    fe_setting bidirectional = {"causal", 0};
    return fe_apply_into(t, dst, "MHA", in, 3, &bidirectional, 1, NULL, 0);
}
