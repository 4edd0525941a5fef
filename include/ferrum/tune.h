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
 * fe_tune_graph does the same for every distinct design of a compiled graph (a model's
 * decode step and prefill chunk), priced at the graph's call points, into a cost table (one
 * graph's working set, JSON, per device and packaging); fe_narrow then chooses the settings
 * that minimise the modelled time of a whole call (dispatch, step costs, barriers), and the
 * choice is written as profile entries. Each design's settings are searched one tunable at a
 * time around its default, and in pairs where two design tunables' domains are small. The
 * folds are priced from a table of the graph without folds and one with all of them
 * (fe_fold_price): each group of folds is kept only where it lowers the modelled time.
 * The fold decisions are kept in the profile too (fe_fold_pricing_to_profile). */
#ifndef FERRUM_TUNE_H
#define FERRUM_TUNE_H

#include <stdio.h>

#include "ferrum/core.h"
#include "ferrum/device.h"
#include "ferrum/graph.h"
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
    bool in_turn;  /* measured in turn with the default's design, a run of each a round: its
                    * lead over the default is the one of the same stretch of time */
    /* the memory's read rate around the figure's runs (fe_device_read_gbps before and after
     * them, the higher), GB/s; 0 where not read (a figure of an older cache, or a probe
     * without the device's gauge). Narrowing prices figures at one read level
     * (fe_cost_table_at_level), so that figures taken minutes apart on a host whose memory
     * level drifts compare as if taken together. */
    double read_gbps;
    /* CPUs the process had over the figure's runs (its CPU time over the wall time; the
     * workers spin, so an undisturbed run of width w has about w); not saved in the cost
     * cache or table */
    double cpus;
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
    int warmup;             /* runs before a figure's samples (none begun 20 ms past the first) */
    int min_samples;        /* a figure stops at the budget once it has this many */
    bool recheck_unreliable; /* the default setting's cached figure, when marked unreliable,
                              * is measured again and the lower of the two medians kept
                              * (interference only adds time); other settings are reused */
    const char *recheck_setting; /* this setting's cached figure is measured again and the new
                                  * figure kept: the fastest setting of a search, so that the
                                  * figure it is priced at is not the one it won with */
    bool recheck_in_turn;        /* ... in turn with the default (a run of each a round), both
                                  * new figures kept: its lead is then the one it holds over
                                  * the default in the same stretch of time (ferrum tune OP;
                                  * tune MODEL's second pass where the default runs short,
                                  * its figure is unreliable or the setting leads it by more
                                  * than 10 %: tune_graph.c) */
    int second_pass_rounds;      /* tune MODEL's second pass: a design's fastest settings
                                  * measured again, at most (0: 3) */
    int setting_attempts;        /* attempts for the settings other than the default (0: as
                                  * `attempts`): tune MODEL's first pass takes one, since a
                                  * setting left unreliable never wins narrowing and the
                                  * fastest is measured again in the second pass anyway */
    bool default_only;           /* a search measures its default setting alone: tune MODEL's
                                  * graph without folds, whose figures price the folds with
                                  * every setting at its default (its full search took a
                                  * fifth of a cold AVX2 tune for an ablation's line) */
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
    bool cached;        /* every figure came from the cache (an unreliable one too, unless
                         * remeasure: its reason then says "cached (unreliable: ...)") */
    bool in_turn;       /* every figure measured in turn with the default (recheck_in_turn,
                         * in this run or one before: the cost cache keeps it), so its lead
                         * over the default is the one of the same stretch of time */
    bool best;          /* the fastest reliable candidate among the default and the rows
                         * measured in turn with it, when no unreliable figure is faster
                         * (else no row is best); the default unless the fastest beats it
                         * by more than half of both p10..p90 ranges */
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

/* ---- tuning a graph: the cost table ---- */

typedef struct fe_cost_table fe_cost_table;

enum { FE_TUNE_MAX_CALL_POINTS = 8, FE_TUNE_MAX_CALL_WORDS = 4 };

/* One version of a graph, as the tuner prices and measures it: the version's inputs (with
 * data: the measured calls read them) and the call points, each a set of words (position=P,
 * n=C); every point weighs the same, so a ladder of positions prices work that follows the
 * context at its mean. Borrowed for the call. */
typedef struct fe_tune_call {
    const char *name; /* "decode step", "prefill chunk" */
    const fe_named_tensor *inputs;
    int n_inputs;
    const fe_word *words; /* n_points * n_words, point after point */
    int n_words, n_points;
} fe_tune_call;

typedef struct fe_tune_graph_request {
    fe_graph *graph;  /* borrowed; its states are overwritten by the measured calls */
    const char *name; /* the table's name (the model), at most 95 characters */
    const fe_tune_call *calls;
    int n_calls;
} fe_tune_graph_request;

/* Walks each call's version of the graph (compiling it if needed): every step, at every call
 * point, made into a shape (operands, params, held tunables, values); each distinct design at
 * its points is searched once as fe_tune_op searches one (costs through the cost cache),
 * then the dispatch and barrier probes. A design of `previous` (may be NULL; a table of an
 * earlier run) with the same key is reused as it is, its unreliable figures too (their
 * reason then says "cached (unreliable: spread X%)"), with previous's dispatch and barrier
 * figures (no gate or probe runs again; opts->remeasure ignores previous). Progress on opts->progress (a bar on a terminal).
 * Caller fe_cost_table_destroy()s. */
FE_API fe_status fe_tune_graph(fe_device *dev, const fe_tune_graph_request *req,
                               const fe_tune_options *opts, const fe_cost_table *previous,
                               fe_cost_table **out, fe_error *err);
/* Measures each call of the request as the graph now runs (fe_graph_call at every point,
 * the mean of their medians) into measured[0..n_calls) and records it in t (may be NULL) as
 * the call's measured time. Before the first figure every call runs once at each point, so
 * the graph's states (a KV cache) hold what the calls write when they are timed. A call's
 * figure is kept in the cost cache under the call's signature (each step's design, operands
 * and values at every point): a later run of the same graph at the same points takes it from
 * there (cached[c] true; cached may be NULL) unless opts->remeasure. */
FE_API fe_status fe_tune_measure_calls(fe_device *dev, const fe_tune_graph_request *req,
                                       const fe_tune_options *opts, fe_cost_table *t,
                                       fe_cost_figure *measured, bool *cached, fe_error *err);
/* Whether two graphs compute the same bytes at the same calls: each call at its first point
 * (every point runs the same kernels; one keeps a warm `ferrum tune` short) on a, then on b
 * (so their states advance alike), every output compared byte for byte, until a call
 * differs. *same false names the call and point that differed in `where`. A tuned graph whose fold
 * decisions or settings are within tolerance rather than bit-identical can draw other
 * greedy tokens; this tells. */
FE_API fe_status fe_tune_calls_same_outputs(const fe_tune_graph_request *a,
                                            const fe_tune_graph_request *b, bool *same,
                                            char *where, size_t where_n, fe_error *err);
/* Two graphs at the same calls (a model's defaults against its tuned graph), measured in
 * turn point by point, three rounds (two where both graphs' agree within 2 %; each figure
 * the median of the rounds' means), so that
 * a host whose memory level or load drifts hits both alike: measured_a / measured_b are
 * comparable, where two fe_tune_measure_calls minutes apart are not. t (may be NULL) gets
 * a's figures. Both calls' figures are cached as a pair (cached[c]: both from the cache). */
FE_API fe_status fe_tune_measure_calls_paired(fe_device *dev, const fe_tune_graph_request *a,
                                              const fe_tune_graph_request *b,
                                              const fe_tune_options *opts, fe_cost_table *t,
                                              fe_cost_figure *measured_a,
                                              fe_cost_figure *measured_b, bool *cached,
                                              fe_error *err);

/* The table as JSON (its fields: src/tune/cost_table.c), written whole to a temporary and
 * renamed. FE_E_IO names the path. */
FE_API fe_status fe_cost_table_save(const fe_cost_table *t, const char *path, fe_error *err);
/* Parses a table; anything malformed is FE_E_FORMAT naming the field, the rule and the fix.
 * `what` names the source in messages. */
FE_API fe_status fe_cost_table_parse(const char *text, size_t len, const char *what,
                                     fe_cost_table **out, fe_error *err);
FE_API fe_status fe_cost_table_load(const char *path, fe_cost_table **out, fe_error *err);
FE_API void fe_cost_table_destroy(fe_cost_table *t);
/* root (NULL: $FERRUM_CACHE_HOME, else ~/.cache/ferrum) + "/tables/<device id>/NAME.PACKAGING.json". */
FE_API fe_status fe_cost_table_path(const fe_device *dev, const char *root, const char *name,
                                    const char *packaging, char *buf, size_t n, fe_error *err);
/* Counts: the distinct designs, and the calls (versions) of the table. */
FE_API int fe_cost_table_designs(const fe_cost_table *t);
FE_API int fe_cost_table_calls(const fe_cost_table *t);
/* Designs taken from `previous` or the cache without measuring, of those in the table. */
FE_API int fe_cost_table_reused(const fe_cost_table *t);
/* fe_tune_graph's second pass in the run that made t (zeros for a loaded table): how many
 * times a design's fastest setting was measured again, how many of those in turn with the
 * default, and the seconds the pass took. */
FE_API void fe_cost_table_second_pass(const fe_cost_table *t, int *again, int *in_turn,
                                      double *seconds);
/* The table's overhead figures: one empty dispatch, and each more step's barrier in it. */
FE_API fe_cost_figure fe_cost_table_dispatch(const fe_cost_table *t);
FE_API fe_cost_figure fe_cost_table_barrier(const fe_cost_table *t);

/* ---- figures priced at one read level (fe_cost_figure.read_gbps) ---- */

/* The read level t's candidate figures were measured at: the median of those that have one
 * (lo, hi: the lowest and highest; n: how many; each may be NULL), 0 when none has. */
FE_API double fe_cost_table_read_level(const fe_cost_table *t, double *lo, double *hi, int *n);
/* Prices every candidate figure of t that has a read level at level gbps instead: the share
 * of its time that memory bounds is scaled by (its level / gbps), the rest kept, a level
 * taken at most 1.2 times gbps (a gauge reading far above the usual is the gauge finding
 * its buffer in a cache the host left free, which a kernel gains little from). That share is
 * what reading the option's bytes takes at twice the figure's own read rate, up to all of it
 * (a step that reads at half the read gauge's rate or more is taken as bound by memory: the
 * decode's GEMVs read at 0.7-1.0 of it, a prefill GEMM at a few per cent). Its figures then
 * carry gbps, and so does t (fe_cost_table_save writes it). Narrowing and fold pricing read
 * the figures as they are: put the tables they compare at one level first. gbps <= 0
 * changes nothing. */
FE_API void fe_cost_table_at_level(fe_cost_table *t, double gbps);
/* Call c's time `ns`, modelled from t's figures at t's level, moved to read level gbps (taken
 * at most 1.2 times t's): the part of the call's steps (their defaults) that memory bounds
 * scaled as fe_cost_table_at_level scales one figure, dispatch and barriers kept. What a
 * call measured at level gbps (its figure's read_gbps) is compared with. ns unchanged when
 * either level is unknown. */
FE_API double fe_cost_table_call_at_level(const fe_cost_table *t, int call, double ns,
                                          double gbps);

/* ---- pricing the folds ---- */

/* The folds a compile finds, by the trace's step labels (ferrum/graph.h fe_fold_site). */
typedef struct fe_fold_log fe_fold_log;
FE_API fe_status fe_fold_log_create(fe_fold_log **out, fe_error *err);
FE_API void fe_fold_log_destroy(fe_fold_log *l); /* NULL allowed */
/* A fe_fold_price_fn (user: the log) that records the site and keeps the fold: a compile
 * with fold = priced and this price folds as fold = all does. Out of memory it keeps the fold
 * unrecorded and the log says so (fe_fold_log_sites returns -1). */
FE_API bool fe_fold_log_record(void *log, const fe_fold_site *site);
FE_API int fe_fold_log_sites(const fe_fold_log *l);

/* The folds priced: each kept only where the modelled time drops. */
typedef struct fe_fold_pricing fe_fold_pricing;

/* Prices the logged folds of a graph from two cost tables of its calls, in the same order:
 * `unfolded` (compiled with fold = none) and `folded` (with every fold, as logged); each
 * call's version (fe_tune_graph sets it) names the logged sites it holds. Sites that share a
 * step are priced together (a chain into one GEMM, the gated product and its SiLU, an
 * RMSNorm's prologue and a drain into the same GEMV): their figures cannot be told apart. A
 * group's unfolded time is, in the unfolded table, the steps that go and the steps taking
 * them in, each as the call models a step (its default's median, less the dispatch in a
 * fused call), plus a barrier for each step that goes (fused); its folded time, the steps
 * taking them in, in the folded table. The group is kept only where folded < unfolded; one
 * whose steps a table lacks is not kept. FE_E_INVALID naming the call when the tables'
 * calls differ or a call's version is unknown. Caller fe_fold_pricing_destroy()s. */
FE_API fe_status fe_fold_price(const fe_cost_table *unfolded, const fe_cost_table *folded,
                               const fe_fold_log *log, fe_fold_pricing **out, fe_error *err);
FE_API void fe_fold_pricing_destroy(fe_fold_pricing *p); /* NULL allowed */
/* The answers fe_fold_pricing_keeps gave (a compile with fold = priced and this pricing
 * must come first) as the profile's fold decisions (fe_profile_put_fold), one per site key
 * (the sites of every layer share one): kept when at least half of its sites were. A
 * compile with fold = all and this profile then folds as the priced compile did, where the
 * layers agree (what `ferrum generate` does with the profile). Before any such compile,
 * the logged sites with their groups' decisions. */
FE_API fe_status fe_fold_pricing_to_profile(const fe_fold_pricing *p, fe_profile *prof,
                                            fe_error *err);
/* A fe_fold_price_fn (user: the pricing): keeps a fold whose group was kept; a site never
 * priced (one that opens only when another fold is refused) is not kept. Each answer is
 * recorded for fe_fold_pricing_to_profile. */
FE_API bool fe_fold_pricing_keeps(void *pricing, const fe_fold_site *site);
/* Groups priced, and those kept. */
/* Every group kept (and every answer given so far turned to "kept"; the priced calls'
 * times become the all-folds ones): what `ferrum tune` falls back to when the priced folds
 * change the outputs' bits. */
FE_API void fe_fold_pricing_keep_all(fe_fold_pricing *p);
FE_API int fe_fold_pricing_groups(const fe_fold_pricing *p);
FE_API int fe_fold_pricing_kept(const fe_fold_pricing *p);
/* The modelled time of call c (the tables' order) with the folds as `mode` says: none
 * (the unfolded table), all (the folded table) or priced (the unfolded, less what each kept
 * group saves), in ns with every setting at its default. */
FE_API double fe_fold_pricing_call_ns(const fe_fold_pricing *p, int call, fe_fold_mode mode);
/* The decisions as text: per call and kind of group (the ops folded and what took them in),
 * how many groups were kept of how many, their unfolded and folded times, then the calls
 * with no folds, all, and the priced ones. */
FE_API void fe_fold_pricing_print(const fe_fold_pricing *p, FILE *f);

/* ---- joint narrowing ---- */

/* Which decisions narrowing may take; an ablation turns one off (held at the default). */
typedef struct fe_narrow_kinds {
    bool widths;  /* WIDTH */
    bool designs; /* every other design tunable */
    bool folds;   /* folds (the table records none yet) */
    /* settings that read a weight in a layout the defaults' graph does not make: a second
     * copy of it beside the weights (GEMM's b_panels = 1 over q8_0 on AVX2, whose decode
     * GEMV reads the rows: 884 MiB more for the Llama 3.2 1B shape). Off unless asked
     * (`ferrum tune MODEL --allow-copies`): narrowing is memory-neutral by default */
    bool copies;
} fe_narrow_kinds;

/* Every decision on, copies off. */
FE_API fe_narrow_kinds fe_narrow_kinds_all(void);

typedef struct fe_narrowing fe_narrowing;

/* Chooses one setting per group (the designs a profile entry would cover: same op and shape
 * key), minimising the modelled time of every call together: fused, dispatch + sum over the
 * steps of (cost - dispatch) + (steps - 1) * barrier; each_step, the sum of the step costs
 * (each a dispatch of its own). A group keeps its default unless another eligible setting
 * (a reliable candidate of every design in the group, allowed by kinds) beats it by more
 * than half of both totals' p10..p90 ranges. Caller fe_narrowing_destroy()s. */
FE_API fe_status fe_narrow(const fe_cost_table *t, fe_narrow_kinds kinds, fe_narrowing **out,
                           fe_error *err);
FE_API void fe_narrowing_destroy(fe_narrowing *n);
/* The modelled time of call i with the chosen settings, and with every default, in ns. */
FE_API double fe_narrowing_predicted_ns(const fe_narrowing *n, int call);
FE_API double fe_narrowing_default_ns(const fe_narrowing *n, int call);
/* Groups, and the chosen setting of group g ("default", "WIDTH=1", ...; borrowed). */
FE_API int fe_narrowing_groups(const fe_narrowing *n);
FE_API const char *fe_narrowing_choice(const fe_narrowing *n, int g);
/* The memory group g's chosen setting adds beside the weights (layouts the defaults do not
 * make; 0 unless kinds.copies), bytes. */
FE_API double fe_narrowing_copy_bytes(const fe_narrowing *n, int g);
/* The setting of group g that modelled faster than its choice but was held out for a second
 * copy of a weight (kinds.copies off), with its time over the group's steps (ns) and the
 * bytes it would add; NULL when none. */
FE_API const char *fe_narrowing_held_out(const fe_narrowing *n, int g, double *ns,
                                         double *bytes);
/* Groups decided on reliable figures: another setting won, or the default's figures are
 * reliable and some other setting could compete with it. */
FE_API int fe_narrowing_decided(const fe_narrowing *n);
/* Puts every group with a step in call `call` back at its default, decided so (its profile
 * entry then pins the default), and models the calls again: what `ferrum tune MODEL` does
 * where the tuned graph of that call measured slower than the defaults' in turn, the
 * designs' figures alone having missed what their steps pay in the call. Returns how many
 * groups changed their choice. */
FE_API int fe_narrowing_revert_call(fe_narrowing *n, int call);
/* The chosen settings as one profile entry per decided group (keyed on the op and every
 * extent, param and operand dtype; the tunables that differ from the default, none where the
 * default stays, which keeps a less specific entry from applying), put into p. A group with
 * no reliable figure to compare gets no entry. */
FE_API fe_status fe_narrowing_to_profile(const fe_narrowing *n, fe_profile *p, fe_error *err);
/* The choice as entries of the profile at path (its other entries kept; made with its
 * directory when missing), as fe_tune_write_profile writes one; a file there that is not a
 * profile is refused and left as it was. */
FE_API fe_status fe_tune_write_narrowing(const fe_narrowing *n, const char *path, fe_error *err);
/* The fold decisions (fe_fold_pricing_to_profile) into the profile at path, the same way. */
FE_API fe_status fe_tune_write_folds(const fe_fold_pricing *fp, const char *path, fe_error *err);
/* The groups with their choices and totals, and per call the modelled default and chosen
 * times, as text. */
FE_API void fe_narrowing_print(const fe_narrowing *n, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
