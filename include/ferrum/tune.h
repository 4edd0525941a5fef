/* ferrum/tune.h: the tuner, first part: one operator's settings measured on this machine.
 *
 * fe_tune_op builds an operator at the extents and params given by name, enumerates the
 * settings its declared search domains allow (a tunable the call site or a profile gives is
 * held, a derived one never searched), gates each against the default's output on seeded
 * random inputs (bit-identical, or both within the op's tolerance of the reference), and
 * times every candidate alone on the pool, each figure refused and measured again when its
 * spread is wide or another process took the CPU. Measured costs go to the cost cache: one
 * JSON file per design under ${FERRUM_CACHE_HOME:-~/.cache/ferrum}/costs/<device id>/,
 * keyed on the design, the per-call values and the inputs' contents.
 *
 * A result's best is written as a profile entry (fe_tune_write_profile), the profile that
 * `ferrum generate` loads for this device.
 *
 * Not yet (later parts of the tuner): the cost table of a graph, folds, joint narrowing
 * (settings here are searched one tunable at a time around the default), tuning a model. The cost cache API below is what they build on. */
#ifndef FERRUM_TUNE_H
#define FERRUM_TUNE_H

#include <stdio.h>

#include "ferrum/core.h"
#include "ferrum/device.h"
#include "ferrum/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the cost cache ---- */

typedef struct fe_cost_cache fe_cost_cache;

enum { FE_COST_MAX_VALUES = 4 };

/* What identifies one measurement: the design, the per-call values it ran at (in the op's
 * declaration order) and a hash of its inputs' bytes. */
typedef struct fe_cost_key {
    uint64_t design;
    int64_t values[FE_COST_MAX_VALUES];
    int n_values;
    uint64_t input_hash;
} fe_cost_key;

/* One measured figure: the median and the 10th/90th percentiles of one run, in ns. */
typedef struct fe_cost_figure {
    double median_ns, p10_ns, p90_ns;
    int samples;
    bool reliable; /* false: every attempt was too noisy or shared the CPU; the figure is the
                    * last attempt's, kept only to show */
} fe_cost_figure;

/* The directory of this device's costs: `root` (NULL: $FERRUM_CACHE_HOME, else
 * $HOME/.cache/ferrum) + "/costs/" + fe_tune_device_id(). Created on first write. Caller
 * fe_cost_cache_close()s. */
FE_API fe_status fe_cost_cache_open(const fe_device *dev, const char *root, fe_cost_cache **out,
                                    fe_error *err);
FE_API void fe_cost_cache_close(fe_cost_cache *c);
/* The directory (borrowed, lives as long as the cache). */
FE_API const char *fe_cost_cache_dir(const fe_cost_cache *c);
/* Looks the key up. FE_OK with *hit true and the figure, or *hit false when absent.
 * FE_E_FORMAT when the design's file is malformed: err names the file and what is wrong (the
 * caller measures again; fe_cost_cache_put then replaces the file). FE_E_IO when it cannot be
 * read. */
FE_API fe_status fe_cost_cache_get(fe_cost_cache *c, const fe_cost_key *key,
                                   fe_cost_figure *out, bool *hit, fe_error *err);
/* Stores the figure under the key (replacing one there), with `label` (the op and setting,
 * for a reader of the file). The file is written whole to a temporary and renamed. */
FE_API fe_status fe_cost_cache_put(fe_cost_cache *c, const fe_cost_key *key,
                                   const fe_cost_figure *fig, const char *label, fe_error *err);
/* A stable id of the machine a cost belongs to: a hash of the CPU model, ISA, worker count and
 * cache sizes, 16 hex digits. */
FE_API void fe_tune_device_id(const fe_device *dev, char out[17]);

/* ---- tuning one operator ---- */

typedef struct fe_tune_options {
    bool remeasure;         /* ignore the cache (and overwrite it) */
    const char *cache_root; /* NULL: $FERRUM_CACHE_HOME, else ~/.cache/ferrum */
    double budget_ms;       /* per figure: repeats stop here if the median has not settled */
    double max_spread;      /* (p90 - p10) / median above this refuses a figure */
    int attempts;           /* figures measured before one is reported unreliable */
    uint64_t seed;          /* the inputs' random draw */
    FILE *progress;         /* a line per setting while measuring; NULL: quiet */
} fe_tune_options;

FE_API fe_tune_options fe_tune_options_default(void);

/* An operator at a shape: every setting names an extent (N=2048), a param (epilogue=swiglu,
 * choice names allowed), a tunable (held at that value, not searched), or "dtype" / "case"
 * (the catalog case the shape starts from: its dims, dtype and params; default the first).
 * `values` names per-call values (kv_valid=100); `ladder` names one whose cost follows it: it
 * is measured at the midpoints of four equal slices of its range and priced at their mean.
 * All borrowed for the call. */
typedef struct fe_tune_request {
    const char *op;
    const fe_setting *settings;
    int n_settings;
    const fe_setting *values;
    int n_values;
    const char *ladder; /* NULL: none */
    const fe_profile *profile; /* may be NULL; the tunables it gives are held */
} fe_tune_request;

typedef enum {
    FE_TUNE_CANDIDATE = 0, /* gated in and measured */
    FE_TUNE_GATED_OUT,     /* its output differs from the default's past the gate */
    FE_TUNE_SAME_DESIGN,   /* resolves to a design already listed (resolve overrode it) */
    FE_TUNE_REFUSED,       /* the op refuses it at these extents */
} fe_tune_verdict;

typedef struct fe_tune_row {
    char setting[160];  /* "rows_per_step=2"; the first row is "default" */
    fe_tune_verdict verdict;
    char reason[512];   /* why it is gated out, refused or the same ("" for candidates) */
    uint64_t design;
    bool cached;        /* every figure came from the cache (only reliable figures are
                         * reused; an unreliable one is measured again) */
    bool best;          /* the fastest reliable candidate, when no unreliable figure is
                         * faster (else no row is best); the default unless the fastest
                         * beats it by more than half of both p10..p90 ranges */
    fe_cost_figure cost; /* priced: at the values, or the ladder's mean */
    double flops, bytes; /* the op's cost model at the same values (the ladder's mean) */
} fe_tune_row;

typedef struct fe_tune_result fe_tune_result;

/* Measures every setting. Errors (FE_E_INVALID and others) name the rule and the fix: an
 * unknown name lists the names the op takes. Caller fe_tune_result_destroy()s. */
FE_API fe_status fe_tune_op(fe_device *dev, const fe_tune_request *req,
                            const fe_tune_options *opts, fe_tune_result **out, fe_error *err);
FE_API void fe_tune_result_destroy(fe_tune_result *r);
FE_API int fe_tune_result_count(const fe_tune_result *r);
FE_API const fe_tune_row *fe_tune_result_row(const fe_tune_result *r, int i); /* borrowed */
/* The cost of an empty step on the pool at full width (dispatch and barrier), ns. */
FE_API fe_cost_figure fe_tune_result_dispatch(const fe_tune_result *r);
/* What was built, two lines: "GEMV w (2048, 2048) q8_0, x (1, 2048) ...; values rows=2048
 * batches=1" and "default setting: WIDTH=2 rows_per_step=4 ...". */
FE_API const char *fe_tune_result_shape(const fe_tune_result *r);
/* ---- profiles from the results ---- */

/* This device's profile: `root` (NULL: $FERRUM_CACHE_HOME, else $HOME/.cache/ferrum) +
 * "/profiles/" + fe_tune_device_id() + ".json", into buf. FE_E_INVALID when no root is set.
 * The file need not exist. */
FE_API fe_status fe_tune_profile_path(const fe_device *dev, const char *root, char *buf,
                                      size_t n, fe_error *err);
/* Writes the best row of r into the profile at path as the entry for r's op and shape (every
 * extent, param and operand dtype: the most specific entry for it), setting the design tunables whose best
 * value differs from the pure default (none when the default is best: the entry then keeps
 * a less specific one from applying), with a "note" of the medians. An entry for the same op
 * and shape is replaced, others kept; the file is written to a temporary and renamed, its
 * directory made. FE_E_STATE when r has no best (no reliable figure, or an unreliable one
 * faster than the best): nothing is written and err says why. A file there that is not a
 * profile is refused (FE_E_FORMAT or FE_E_IO naming it) and left as it was. The key does not
 * name per-call values (--value, --ladder): the entry applies whatever a call computes. */
FE_API fe_status fe_tune_write_profile(const fe_tune_result *r, const char *path, fe_error *err);
/* Messages about the cache (a malformed file refused and replaced), one a line; "" if none. */
FE_API const char *fe_tune_result_notes(const fe_tune_result *r);

#ifdef __cplusplus
}
#endif
#endif
