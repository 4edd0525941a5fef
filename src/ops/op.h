/* ops/op.h: the operator declaration (what one file in src/ops/<op>/ defines) and what its
 * functions see.
 *
 * A declaration is data: params, tunables with their search domains, operands by role,
 * extents (named sizes taken from the operands), per-call values bounded by extents, plus
 * infer (check and name the extents), resolve (fill tunables from the device), reference
 * (plain float32/double), kernels per ISA, cost, and test cases. The machinery in op.c,
 * kernel.c and tunable_profile.c turn it into runnable kernels; nothing there knows any one op. */
#ifndef FE_OPS_OP_H
#define FE_OPS_OP_H

#include "core/error.h"
#include "device/split.h"
#include "ferrum/ops.h"

enum {
    FE_MAX_OPERANDS = 6,
    FE_MAX_PARAMS = 6,
    FE_MAX_TUNABLES = 7,
    FE_MAX_EXTENTS = 4,
    FE_MAX_VALUES = 3,
    FE_MAX_CHOICES = 8,
};

/* Weight layout formats (fe_op.layout's *format). The ids are global: two ops that name one
 * format for one weight read the same bytes, so a graph's layout store keeps one copy for
 * both (the bf16 GEMM of a prefill chunk and the GEMV of a decode step). */
enum {
    FE_LAYOUT_BF16_PAIRS32 = 1, /* bf16 (N, K): k-pair panels of 32 rows (fe_gemm_dot_layout) */
    FE_LAYOUT_I8_PANELS16 = 2,  /* q8_0 / q4_0 / q4_1 (N, K): 16 rows' quants transposed per
                                 * 32-block, then their scales (ops/gemv/panel.h; the format id
                                 * is this << 8 | the dtype) */
};

#define FE_DT(t) (1u << (t))
#define FE_DT_ANY ((1u << FE_DTYPE_COUNT) - 1u)

typedef enum { FE_PARAM_INT, FE_PARAM_FLOAT, FE_PARAM_BOOL, FE_PARAM_CHOICE } fe_param_type;

typedef struct fe_param_decl {
    const char *name;
    fe_param_type type;
    double def;
    double lo, hi;                /* inclusive range (INT, FLOAT); ignored when lo > hi */
    const char *const *choices;   /* CHOICE: NULL-terminated names; the value is the index */
    const char *doc;
} fe_param_decl;

typedef enum { FE_DOMAIN_WIDTH, FE_DOMAIN_DIVISORS, FE_DOMAIN_CHOICES } fe_domain_kind;

/* The values a tunable may take, searched by the tuner.
 * WIDTH: 1..workers (the tuner tries powers of two and the worker count).
 * DIVISORS: divisors of the extent `of` that are multiples of `step`, at most `cap`.
 * CHOICES: one of `choices`. */
typedef struct fe_domain {
    fe_domain_kind kind;
    const char *of;
    int64_t step, cap;
    int64_t choices[FE_MAX_CHOICES];
    int n_choices;
} fe_domain;

typedef struct fe_tunable_decl {
    const char *name;
    fe_domain domain;
    int64_t def;    /* the declared default, last in precedence; WIDTH 0 means all workers */
    bool design;    /* part of the design's identity (else derived, e.g. from extents) */
    const char *doc;
} fe_tunable_decl;

typedef enum { FE_IN, FE_OUT } fe_role;

typedef struct fe_operand_decl {
    const char *name;
    fe_role role;
    uint32_t dtypes;   /* FE_DT(...) mask */
    int min_rank, max_rank;
    bool optional;
    bool strided;      /* accepts any strides; otherwise the view must be contiguous */
    double draw_lo, draw_hi; /* how tests draw it when lo < hi (else the case's range) */
    const char *draw_below;  /* an extent drawn integers stay below (ids into a table of V
                              * rows), whatever draw_hi says; NULL: none */
} fe_operand_decl;

/* How a graph derives a per-call value when the op call does not give it: from the bound a
 * view carries on one operand's axis (fe_bound). BOUND: the value is that bound. FLAT: the
 * bound times the sizes of the axes after it (a prefix of the flattened operand). NONE: only
 * given explicitly (a position, an offset); otherwise it takes its default. */
typedef enum { FE_MAP_BOUND = 0, FE_MAP_FLAT, FE_MAP_NONE } fe_value_map;

typedef struct fe_value_decl {
    const char *name;
    const char *extent; /* the value lies in [min, extent]; its default is the extent, or min
                         * for FE_MAP_NONE values (offsets, positions) */
    int64_t min;
    const char *doc;
    int operand, axis;  /* the operand axis whose bound the value follows; axis < 0 counts
                         * from the last (-1 is the last axis) */
    fe_value_map map;
    int bounds_out;     /* 1 + the output axis this value bounds in a graph (0: only the rule
                         * that outputs take operand 0's bounds on same-sized axes) */
} fe_value_decl;

/* A resolved design: what one compiled kernel is, whatever its extents. */
typedef struct fe_design {
    const struct fe_op *op;
    fe_isa isa;
    fe_dtype dtypes[FE_MAX_OPERANDS];
    bool present[FE_MAX_OPERANDS];
    double params[FE_MAX_PARAMS];
    int64_t tunables[FE_MAX_TUNABLES];
    uint64_t key;
} fe_design;

/* What a kernel, reference and cost read: views, extents and per-call values. */
typedef struct fe_args {
    fe_tensor t[FE_MAX_OPERANDS];
    int64_t ext[FE_MAX_EXTENTS];
    int64_t v[FE_MAX_VALUES];
    void *ws;        /* the op's workspace (see fe_op.workspace), 64-byte aligned; NULL if none */
    size_t ws_bytes;
    /* operand i in the design's own layout (fe_op.layout), made once from t[i]'s contents,
     * which have not changed since; NULL: the kernel reads t[i] as stored */
    const void *layout[FE_MAX_OPERANDS];
    /* the kernel's own barrier between phases of one step (device/cpu/step_barrier.h), kept
     * across runs; a kernel that never waits on it ignores it */
    struct fe_step_barrier *barrier;
} fe_args;

typedef void (*fe_kernel_fn)(const fe_args *a, const fe_design *d, int ith, int nth);

typedef struct fe_kernel_decl {
    fe_isa isa;
    fe_kernel_fn fn;
    int tile; /* elements the inner loop takes at once: the catalog tests lengths around it */
} fe_kernel_decl;

/* What infer and resolve see. infer reads operands and params, checks them, and fills
 * extents; resolve fills tunables nobody gave (tunable_set false). */
typedef struct fe_op_ctx {
    const struct fe_op *op;
    fe_tensor operands[FE_MAX_OPERANDS];
    bool present[FE_MAX_OPERANDS];
    double params[FE_MAX_PARAMS];
    int64_t tunables[FE_MAX_TUNABLES];
    bool tunable_set[FE_MAX_TUNABLES];
    int64_t ext[FE_MAX_EXTENTS];
    const fe_device_info *dev;
    fe_error *err;
} fe_op_ctx;

typedef struct fe_cost {
    double flops, bytes;
} fe_cost;

/* Which measured memory figure a memory-bound op is judged against in bench/: streaming
 * ops that read and write (elementwise) against a STREAM triad, reductions that mostly read
 * (norms, softmax) against the read bandwidth. */
typedef enum { FE_ROOF_TRIAD = 0, FE_ROOF_READ, FE_ROOF_COMPUTE } fe_roof;

/* A test case: dims feed the op's `operands_for` (which builds operand descriptors), params
 * override defaults. The catalog also varies the last dim around each kernel's tile. */
typedef struct fe_case {
    const char *name;
    int64_t dims[FE_MAX_RANK];
    int n_dims;
    fe_setting params[FE_MAX_PARAMS];
    int n_params;
    /* tunables the case pins at the call site (WIDTH excepted: the catalog sets it), so a
     * design that resolve would not pick here is still checked, e.g. the packed bf16 GEMM;
     * resolve may still override a choice the device cannot run */
    fe_setting tunables[FE_MAX_TUNABLES];
    int n_tunables;
    double lo, hi;  /* inputs drawn uniform in [lo, hi]; both 0 means [-3, 3] */
    int64_t int_lo, int_hi; /* when int_hi > 0: integer inputs with a declared draw range are
                             * drawn in [int_lo, int_hi] instead (segment lengths of 1) */
    unsigned absent; /* bit i: optional operand i is left out (operands_for gives rank 0) */
    bool extensive; /* only in make test-extensive */
    bool bench;     /* a shape the benchmarks run */
} fe_case;

struct fe_op {
    const char *name;
    const char *summary;
    const fe_param_decl *params;
    int n_params;
    const fe_tunable_decl *tunables;
    int n_tunables;
    const fe_operand_decl *operands;
    int n_operands;
    const char *const *extents; /* names of the sizes infer fills, in ext[] order */
    int n_extents;
    const fe_value_decl *values;
    int n_values;
    fe_status (*infer)(fe_op_ctx *c);
    /* Optional. For graphs: fills the output operands' dtype, rank and shape from the inputs
     * and params (c->operands[out] arrive with rank 0). NULL: every output has operand 0's
     * dtype and shape. An output left at rank 0 (a cache the op writes rows of, whose shape
     * the inputs do not give) takes the shape of the view it is written into (fe_apply_into). */
    void (*shape_out)(fe_op_ctx *c);
    void (*resolve)(fe_op_ctx *c); /* may be NULL: defaults then */
    void (*reference)(const fe_args *a, const fe_design *d);
    const fe_kernel_decl *kernels;
    int n_kernels;
    void (*cost)(const fe_args *a, const fe_design *d, fe_cost *out);
    /* Optional. Scratch the kernel needs for nth workers at the kernel's extents (all of it
     * shared; split it by ith yourself); allocated once at create, never per run. */
    size_t (*workspace)(const fe_args *a, const fe_design *d, int nth);
    /* Optional. Checks what the per-value ranges cannot (pos + rows <= table rows, every id
     * inside its table) before any work; on failure writes why (naming the rule and the fix)
     * and returns FE_E_BOUNDS. */
    fe_status (*check)(const fe_args *a, const fe_design *d, char *why, size_t why_n);
    /* Optional. A layout of input operand i that the design reads in place of the operand
     * as stored (a weight repacked once, e.g. rows interleaved for a register tile), for an
     * operand whose contents stay the same from run to run: a graph's weights (the plan
     * makes and owns it), or what a caller declares constant (ops/kernel.h). `layout`
     * returns its bytes at the args' extents, 0 when the design reads operand i as stored,
     * and names its format (*format: layouts of one operand with equal formats are the same
     * bytes, so a graph makes one for every step that reads that weight); `layout_make`
     * writes it from a->t[operand] (its data) into dst (64-byte aligned), worker ith of nth
     * its share. Invariant: a kernel given a->layout[i] writes the same bytes as without it
     * (it then packs per run what the layout holds). */
    size_t (*layout)(const fe_args *a, const fe_design *d, int operand, uint64_t *format);
    void (*layout_make)(const fe_args *a, const fe_design *d, int operand, void *dst, int ith,
                        int nth);
    /* Test support: operand descriptors (dtype, rank, shape, strides) for a case's dims. */
    void (*operands_for)(const fe_case *c, const double *params, fe_tensor *out);
    const fe_case *cases;
    int n_cases;
    double rtol, atol; /* |got - ref| <= atol + rtol * |ref| */
    fe_roof roof;
};

/* Index of a named param / tunable / extent / value in a declaration; -1 when absent. */
int fe_op_param_index(const fe_op *op, const char *name);
int fe_op_tunable_index(const fe_op *op, const char *name);
int fe_op_extent_index(const fe_op *op, const char *name);
/* "WIDTH", "DIVISORS(of=cols, step=16, cap=4096)", "CHOICES(1, 2, 4)" */
void fe_domain_describe(const fe_domain *d, char *buf, size_t n);
/* Whether v lies in the domain, given the extents; on false, `why` says what would. */
bool fe_domain_contains(const fe_op *op, const fe_domain *d, const int64_t *ext,
                        int n_workers, int64_t v, char *why, size_t why_n);

/* The number a param setting gives: s->value, or for a setting by choice name (s->choice)
 * the index of that option of the op's CHOICE param s->name. FE_E_INVALID, with `why`
 * naming the param, the bad name and the valid ones (the caller adds the op or step), when the param is not a CHOICE or has
 * no such option. Other checks (ranges, unknown names of numbers) are fe_kernel_create's. */
fe_status fe_op_setting_value(const fe_op *op, const fe_setting *s, double *value, char *why,
                              size_t why_n);

/* Refusals from infer: sets c->err and returns the status, naming the op. */
fe_status fe_op_refuse(fe_op_ctx *c, fe_status s, const char *fmt, ...) FE_PRINTF(3, 4);
/* Common infer checks; each refuses with a message naming the operands and the fix. */
fe_status fe_op_same_shape(fe_op_ctx *c, int a, int b);
fe_status fe_op_same_dtype(fe_op_ctx *c, int a, int b);

/* Declares the three builds of one kernel, fe_<name>_scalar, fe_<name>_avx2 and
 * fe_<name>_avx512 (a family's kernels.inc defines FE_KNAME(name), compiled once per ISA),
 * and the table <name>_kernels listing them with the tile each build's inner loop takes:
 *   FE_KERNELS(relu, 1, 8, 16);   ...   .kernels = relu_kernels, .n_kernels = 3 */
#define FE_KERNELS(name, tile_scalar, tile_avx2, tile_avx512)                              \
    void fe_##name##_scalar(const fe_args *, const fe_design *, int, int);                \
    void fe_##name##_avx2(const fe_args *, const fe_design *, int, int);                  \
    void fe_##name##_avx512(const fe_args *, const fe_design *, int, int);                \
    static const fe_kernel_decl name##_kernels[] = {                                      \
        {FE_ISA_SCALAR, fe_##name##_scalar, tile_scalar},                                 \
        {FE_ISA_AVX2, fe_##name##_avx2, tile_avx2},                                       \
        {FE_ISA_AVX512, fe_##name##_avx512, tile_avx512},                                 \
    }

#define FE_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Defines the public fe_op for a declaration: FE_OP_DEFINE(relu) { .name = "ReLU", ... }; */
#define FE_OP_DEFINE(id) const fe_op fe_op_##id =

#endif
