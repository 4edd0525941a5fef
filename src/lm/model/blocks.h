/* lm/model/blocks.h: the layer blocks a model body is written with (the seed's
 * iron.lm.blocks), shared by the causal LM and the encoders. Each block traces plain steps on
 * a fe_trace: RMSNorm, projections that are GEMVs in a decode step and GEMMs over the rows of
 * a chunk (with the activation designs the mode asks for), SiLU / GELU, Mul, the residual Add,
 * a Copy into a cache. The compiler's fold pass (graph/fold.c, fold = all by default) puts
 * them back together: the activation and the residual into the product's epilogue, the gated
 * product into the gate GEMV's swiglu / geglu, the RMSNorm into the GEMVs' prologue, the
 * Copy into the producer's drain. The mode's hand_fused traces those forms directly, as the
 * bodies were written before the fold pass: the reference fold = all must reproduce. */
#ifndef FE_LM_BLOCKS_H
#define FE_LM_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "ferrum/graph.h"

/* How a body multiplies: decode (GEMVs; one row) or a chunk (GEMMs over its rows), which of
 * the chunk's GEMMs round activations to bf16 for bf16 dot products (GEMM act_bf16), whether
 * products over block-quantised matrices take int8 activations (GEMV or GEMM act_int8), and
 * the model's RMSNorm epsilon. Both activation designs are the user's choice, not the
 * tuner's: they change the numbers beyond the f32 designs' tolerance. */
typedef struct fe_block_mode {
    bool decode, act_int8;
    double eps;
    /* bit t: a chunk's GEMMs over matrices of dtype t take act_bf16 (a block matrix's values
     * rounded to bf16 too, in place of act_int8; lm/model/dots.h); FE_BLOCK_EVERY_DTYPE: all */
    uint32_t bf16_dtypes;
    /* Trace the fused forms by hand (the GEMV prologue and epilogues, the GEMM activations and
     * residuals, products and RoPE written straight into a cache) instead of plain steps: the
     * graph the fold pass must recover, step for step, for tests (tests/test_plain_body.c) */
    bool hand_fused;
} fe_block_mode;
#define FE_BLOCK_EVERY_DTYPE UINT32_MAX

/* How a model's body is traced and folded: plain steps with every fold the pass admits
 * (the default: the zero value), plain steps each left a step of its own, plain steps with
 * each fold kept where the caller's price says (the tuner's), or the fused forms written by
 * hand and nothing folded (the reference fold = all reproduces, for tests). */
typedef enum fe_body_form {
    FE_BODY_FOLD_ALL = 0,
    FE_BODY_FOLD_NONE,
    FE_BODY_FOLD_PRICED,
    FE_BODY_HAND_FUSED
} fe_body_form;

/* Sets co's fold mode (and price, for FE_BODY_FOLD_PRICED) for a body of form f. */
void fe_block_fold_options(fe_body_form f, fe_fold_price_fn price, void *user,
                           fe_compile_options *co);

/* An activation: x itself, or (when norm is a tensor, hand_fused only) rmsnorm(x) * norm,
 * which a decode step's GEMVs compute themselves (their rmsnorm prologue) */
typedef struct fe_block_act {
    fe_h x, norm;
} fe_block_act;

fe_block_act fe_block_plain(fe_h x);

/* op(a) or op(a, b) with no settings (b may be FE_NO_TENSOR) */
fe_h fe_block_apply(fe_trace *t, const char *op, fe_h a, fe_h b);

/* rmsnorm(x) * w with epsilon eps */
fe_h fe_block_rmsnorm(fe_trace *t, fe_h x, fe_h w, double eps);

/* the weight "layers.<l>.<name>" */
fe_h fe_block_layer_weight(fe_trace *t, int64_t l, const char *name);

/* y = epilogue(W a) for the rows of a decode step, with the optional second matrix `up`
 * (swiglu) or residual `res`; into dst when dst is a tensor (one GEMV step as given: the
 * primitive the other blocks use) */
fe_h fe_block_gemv(fe_trace *t, fe_block_mode mm, fe_h dst, fe_h w, fe_block_act a, fe_h up,
                   fe_h res, const char *epilogue);

/* y = a W^T; when dst is a tensor (a cache window) y is copied into it (a Copy step, or
 * written there directly when hand_fused) and dst returned */
fe_h fe_block_project(fe_trace *t, fe_block_mode mm, fe_h dst, fe_block_act a, fe_h w);

/* RoPE of x (rows, heads, head_dim) by the table's rows from pos on, in the given form;
 * into dst as fe_block_project does */
fe_h fe_block_rope(fe_trace *t, fe_block_mode mm, fe_h dst, fe_h x, fe_h table, fe_setting form,
                   fe_val pos);

/* x + o W^T: the product, then the residual Add */
fe_h fe_block_project_add(fe_trace *t, fe_block_mode mm, fe_h o, fe_h w, fe_h x);

/* gelu_tanh(a Wg^T) * (a Wu^T) (Gemma): the gate product, GELU, the up product, Mul */
fe_h fe_block_geglu(fe_trace *t, fe_block_mode mm, fe_block_act a, fe_h wg, fe_h wu);

/* silu(a Wg^T) * (a Wu^T): the gate product, SiLU, the up product, Mul */
fe_h fe_block_gated(fe_trace *t, fe_block_mode mm, fe_block_act a, fe_h wg, fe_h wu);

/* The input of a layer's projections: rmsnorm(x) * w, a step of its own (hand_fused: in the
 * prologue of a decode step's GEMVs) */
fe_block_act fe_block_normed(fe_trace *t, fe_block_mode mm, fe_h x, fe_h w);

/* ---- encoder blocks (BERT family: post-LN, biases, plain FFN, bidirectional attention) ---- */

/* layernorm(x) * w + b with epsilon eps */
fe_h fe_block_layernorm(fe_trace *t, fe_h x, fe_h w, fe_h b, double eps);

/* a W^T + bias over the rows of a chunk (bias (out) may be FE_NO_TENSOR); with res a tensor,
 * res + (a W^T + bias), the residual Add after the product */
fe_h fe_block_linear(fe_trace *t, fe_block_mode mm, fe_h a, fe_h w, fe_h bias, fe_h res);

/* The plain feed-forward with its residual: res + GELU_erf(a Wi^T + bi) Wf^T + bf (GELU a
 * step after the first product) */
fe_h fe_block_ffn_gelu(fe_trace *t, fe_block_mode mm, fe_h a, fe_h wi, fe_h bi, fe_h wf, fe_h bf,
                       fe_h res);

/* Bidirectional attention of every query row over every key row of one sequence (q, k, v
 * windows of one sentence, (T, heads, head_dim) bounded to its length), written into dst */
fe_status fe_block_attend_all(fe_trace *t, fe_h dst, fe_h q, fe_h k, fe_h v);

#endif
