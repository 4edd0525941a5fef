/* tune/tune.h: the tuner's internal pieces, shared by its files and its tests: search
 * domains enumerated, the candidate gate, seeded operand buffers, and probes. */
#ifndef FE_TUNE_TUNE_H
#define FE_TUNE_TUNE_H

#include "ferrum/tune.h"
#include "ops/kernel.h"

enum { FE_TUNE_MAX_DOMAIN = 64, FE_TUNE_MAX_POINTS = 8 };
/* Tunables set together in one setting of a search (a pair: joint search over small
 * domains), and the most combinations other than the default's a pair may add. */
enum { FE_TUNE_MAX_JOINT = 2, FE_TUNE_JOINT_COMBOS = 24 };

/* The values a tunable's domain takes at these extents on n_workers, ascending, with `def`
 * (the resolved default) always among them. WIDTH: def, the powers of two up to n_workers
 * and n_workers. DIVISORS(of, step, cap): the multiples of step dividing the extent `of`, at
 * most cap. CHOICES: the choices. Returns how many (at most FE_TUNE_MAX_DOMAIN). */
int fe_tune_domain_values(const fe_op *op, const fe_domain *d, const int64_t *ext,
                          int n_workers, int64_t def, int64_t *out);

/* Whether tunable i of kernel k is searched: a design tunable that neither the call site
 * nor a profile gave. */
bool fe_tune_searched(const fe_kernel *k, int i);

/* One output compared: the default's, a candidate's and the reference's, as dtype dt. */
typedef struct fe_gate_output {
    const void *def, *cand, *ref;
    size_t bytes;
    fe_dtype dt;
} fe_gate_output;

/* The candidate gate: true when every output of the candidate is bit-identical to the
 * default's, or (where the op declares a tolerance) both are within it of the reference.
 * On false, `why` says by how much, e.g. "y: max |diff| 3e-05 > tol 0 (bit-identical
 * required)". */
bool fe_tune_gate(const fe_op *op, const fe_gate_output *outs, int n, char *why, size_t why_n);

/* Operand buffers for a kernel's shapes: inputs drawn from a seeded source (floats in the
 * case's range or the operand's, block dtypes quantised from them, integers in the operand's
 * declared range, kept below the extent its draw_below names: ext may be NULL), outputs
 * zeroed. */
enum { FE_TUNE_MAX_COPIES = 4096 };
/* A run this long has brought in whatever the next run will find in cache: the probe starts
 * no warm-up run past it, and a figure whose kernel or call just ran this long (a gate's run,
 * the calls writing their states) takes none */
#define FE_TUNE_WARM_NS 20e6

typedef struct fe_tune_buffers {
    fe_tensor t[FE_MAX_OPERANDS];
    void *mem[FE_MAX_OPERANDS];
    size_t bytes[FE_MAX_OPERANDS];
    int n;
    uint64_t input_hash; /* of every input's bytes (and whether they are spread) */
    /* fe_tune_buffers_spread: copies of the inputs (set 0 is t) that timed runs rotate
     * through, the outputs shared; sets [n_sets][operand] and the copies' bytes on the heap */
    fe_tensor (*sets)[FE_MAX_OPERANDS];
    char *copies;
    int n_sets, next_set;
    int stride; /* sets between one run's and the next's (see fe_tune_buffers_next) */
} fe_tune_buffers;

fe_status fe_tune_buffers_init(fe_tune_buffers *b, const fe_op *op, const fe_tensor *desc,
                               const int64_t *ext, double lo, double hi, uint64_t seed,
                               fe_error *err);
void fe_tune_buffers_deinit(fe_tune_buffers *b);
/* Copies of the inputs spanning at least `bytes` together (at most FE_TUNE_MAX_COPIES sets;
 * two at least while the inputs are under twice `bytes`), so a run that takes the next set
 * finds its inputs in memory, not in the cache, as a step of a model's call finds its
 * weights. The input hash changes with it (a figure from memory is not one from the cache).
 * FE_E_NOMEM when the copies cannot be made (b as it was). */
fe_status fe_tune_buffers_spread(fe_tune_buffers *b, const fe_op *op, size_t bytes, fe_error *err);
/* The next set of operands to run on (t itself when not spread): the sets are visited far
 * apart (a stride near half their count, prime to it), not in the order they lie in memory,
 * where a run found its inputs in the stream the run before had started into them. */
const fe_tensor *fe_tune_buffers_next(fe_tune_buffers *b);
/* Zeroes the outputs (every run the gate compares starts from the same bytes). */
void fe_tune_buffers_clear_outputs(const fe_op *op, fe_tune_buffers *b);
/* Copies of the outputs' bytes into `out` (fe_free each); FE_E_NOMEM. */
fe_status fe_tune_buffers_save_outputs(const fe_op *op, const fe_tune_buffers *b,
                                       void *out[FE_MAX_OPERANDS]);

/* A probe: times fn(ctx) alone, warm-up first, repeats until the median settles or the
 * budget ends; refuses a figure whose spread passes max_spread or during which the process
 * got less CPU than `width` workers would use (another process ran), and measures again, up
 * to `attempts` figures. why says what the last refusal was ("" when reliable). gauge (may
 * be NULL): the device whose read rate is taken before and after the runs, the higher of the
 * two the figure's read_gbps (one pass each side: about 2 x 2 ms on a 2-worker Zen 4). */
typedef void (*fe_probe_fn)(void *ctx);
fe_cost_figure fe_tune_probe(fe_probe_fn fn, void *ctx, int width, fe_device *gauge,
                             const fe_tune_options *o, char *why, size_t why_n);

/* As fe_tune_probe, but the figure ends at its first two samples when both took more than
 * far_ns (0: no bound): a setting that far above the default's time needs no finer figure to
 * lose to it, and its repeats were most of a cold `ferrum tune`'s time where the other
 * designs of an op are several times slower than its default (AMX tiles against vdpbf16ps:
 * 5-8x). */
fe_cost_figure fe_tune_probe_below(fe_probe_fn fn, void *ctx, int width, fe_device *gauge,
                                   const fe_tune_options *o, double far_ns, char *why,
                                   size_t why_n);

/* Two things timed in turn, a run of a then a run of b each round, as fe_tune_probe times
 * one (both medians settled; refused and measured again as it refuses): figures of the same
 * stretch of time, so that a host whose memory level drifts over minutes moves both alike.
 * A figure measured alone minutes before another is not comparable with it on such a host
 * (the same GEMV design measured 1015 and 1980 us in one `ferrum tune` run). */
void fe_tune_probe_pair(fe_probe_fn fa, void *ca, fe_probe_fn fb, void *cb, int width,
                        fe_device *gauge, const fe_tune_options *o, fe_cost_figure *a,
                        fe_cost_figure *b, char *why, size_t why_n);

/* The factor that moves a figure of `ns` reading `bytes`, measured at read level `from`
 * (GB/s), to level `to`, against the reference level `ref` (the table's): 1 - m + m * from'
 * / to', m the share bound by memory, min(1, 2 * (bytes / ns) / from), and each level taken
 * at most 1.2 times ref (read_level.c says why). 1 when a level or the time is unknown. */
double fe_cost_level_factor(double ns, double bytes, double from, double to, double ref);

/* A tune request made concrete: the catalog case it starts from, with the extents, params
 * and dtype the request names written in, the held tunables and per-call values. */
typedef struct fe_tune_shape {
    const fe_op *op;
    fe_case c;            /* the case: dims, params (numbers), held tunables */
    char case_name[64];   /* c.name points here (the dtype prefix may be replaced) */
    fe_tensor desc[FE_MAX_OPERANDS];
    /* inputs that stay the same from call to call (a graph's weights; every input of a
     * shape tuned alone): a design that reads one from a layout of its own (fe_op.layout)
     * is priced reading it so, as a plan runs it */
    bool constant[FE_MAX_OPERANDS];
    int64_t values[FE_MAX_VALUES]; /* -1: the value's default */
    int ladder;           /* index of the value priced over a ladder; -1: none */
    /* > 0: the per-call values at these points (a graph's call points, one per call the
     * tuner prices), priced at their mean; values and ladder are then unused */
    int n_points;
    int64_t points[FE_TUNE_MAX_POINTS][FE_MAX_VALUES];
    const fe_profile *profile;
} fe_tune_shape;

/* Reads the request's names into a shape (dev: kernels are made to find which case dim
 * gives which extent). Unknown names and bad values are FE_E_INVALID naming the fix. */
fe_status fe_tune_shape_init(fe_device *dev, const fe_tune_request *req, fe_tune_shape *s,
                             fe_error *err);
/* A request for a kernel at the shape with the held tunables plus extra[0..n_extra) (may be
 * NULL; at most FE_TUNE_MAX_JOINT). */
fe_status fe_tune_shape_kernel(fe_device *dev, const fe_tune_shape *s, const fe_setting *extra,
                               int n_extra, fe_kernel **k, fe_error *err);

enum { FE_TUNE_MAX_ROWS = 1 + FE_MAX_TUNABLES * FE_TUNE_MAX_DOMAIN };

struct fe_tune_result {
    fe_tune_row rows[FE_TUNE_MAX_ROWS];
    int n;
    fe_cost_figure dispatch;
    uint64_t input_hash;  /* of the inputs every row was gated and timed on */
    char shape[512];
    char notes[2048];
    /* for a profile entry: the op, its shape's key (every extent, param and present
     * operand's dtype; names static or in dtype_keys), each row's design tunables and the
     * pure default's (no held tunable, no profile) */
    const fe_op *op;
    fe_setting when[FE_MAX_EXTENTS + FE_MAX_PARAMS + FE_MAX_OPERANDS];
    int n_when;
    char dtype_keys[FE_MAX_OPERANDS][48]; /* "w.dtype" */
    int64_t tunables[FE_TUNE_MAX_ROWS][FE_MAX_TUNABLES];
    int64_t base[FE_MAX_TUNABLES];
    /* each candidate row's layouts of the shape's constant inputs (fe_op.layout): format 0
     * where the design reads operand i as it is. A graph tuner compares them with the
     * layouts its defaults make: a setting reading a weight in another layout holds a second
     * copy of it */
    uint64_t layout_format[FE_TUNE_MAX_ROWS][FE_MAX_OPERANDS];
    double layout_bytes[FE_TUNE_MAX_ROWS][FE_MAX_OPERANDS];
};

/* A setting's verdict from an earlier search of the same shape on the same inputs (its
 * gate's answer stands: the inputs and the designs are the same). */
typedef struct fe_tune_known {
    const char *setting;
    fe_tune_verdict verdict;
    const char *reason;
} fe_tune_known;

/* Every setting of the shape, gated and priced, into r (zeroed by the caller): what
 * fe_tune_op does once the request is a shape. The graph tuner calls it per distinct design
 * of a graph, with the shape read from a step and the values at the graph's call points.
 * known[0..n_known) (may be NULL): settings an earlier search gated, not gated again (a
 * search measuring its fastest again, whose every other figure comes from the cache). */
fe_status fe_tune_shape_search(fe_device *dev, const fe_tune_shape *s, const fe_tune_options *o,
                               const fe_tune_known *known, int n_known, fe_cost_cache *cache,
                               fe_tune_result *r, fe_error *err);

/* The reason a reused unreliable figure is shown with: "cached (unreliable: spread 31%)"
 * (the spread: (p90 - p10) / median). */
void fe_tune_unreliable_cached(const fe_cost_figure *f, char *why, size_t n);

/* Marks r's best row (fe_tune_row.best): the fastest reliable candidate, none when an
 * unreliable figure is faster, and the default (row 0) unless the fastest beats it by more
 * than half of both figures' p10..p90 ranges. */
void fe_tune_mark_best(fe_tune_result *r);

/* The cache's root: `root`, else $FERRUM_CACHE_HOME, else $HOME/.cache/ferrum. FE_E_INVALID
 * when none is set. */
fe_status fe_tune_cache_root(const char *root, char *buf, size_t n, fe_error *err);
/* mkdir -p; 0 or -1 with errno. */
int fe_tune_mkdirs(const char *dir);
/* Writes row i of r (a gated-in candidate, reliable or not) as its shape's entry in the
 * profile at path: what fe_tune_write_profile does with the best row. Tests use it to write
 * a row without depending on the machine's load. */
fe_status fe_tune_write_profile_row(const fe_tune_result *r, int i, const char *path,
                                    fe_error *err);

#endif
