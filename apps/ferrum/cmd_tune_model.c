/* apps/ferrum/cmd_tune_model.c: `ferrum tune MODEL`: a model's graph tuned on this machine.
 * Opens the model (a checkpoint, or a preset with --random-weights), builds a session of the
 * packaging asked for with every fold (logging the folds), and prices every distinct design
 * of its decode step and prefill chunk at a ladder of positions (the cost table, saved per
 * device and packaging); the same for the graph without folds (its own table), from which
 * each group of folds is kept only where it lowers the modelled time. It chooses the settings
 * by joint narrowing (with the ablations beside it), then measures both calls as they run,
 * with the defaults and, when narrowing or the folds changed something, with that choice: the
 * modelled time is printed beside the measured one. --write-profile keeps the settings as
 * this device's profile, which generate and chat load, with the fold decisions (one per
 * fold site key): the tuned graph measured is the one generate compiles from that profile. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "cmd_tune_model.h"
#include "ferrum/tune.h"
#include "lm_args.h"

static const char synopsis[] =
    "usage: ferrum tune [options] MODEL\n\n"
    "Tunes MODEL's graph on this machine: every distinct design of its decode step and\n"
    "prefill chunk is measured once at every setting its domains allow (through the cost\n"
    "cache; a warm run measures nothing again), priced at a ladder of positions over\n"
    "--context, and saved as the cost table\n"
    "(${FERRUM_CACHE_HOME:-~/.cache/ferrum}/tables/<device id>/NAME.PACKAGING.json). The\n"
    "graph without folds is priced too (as NAME-unfolded, at its default settings), and\n"
    "each group of folds is kept only where it lowers the modelled time at the defaults.\n"
    "Joint narrowing then chooses each shape's setting to minimise the modelled call time\n"
    "(dispatch + step costs + barriers); the ablations show it with widths, designs, every\n"
    "setting or the folds held.\n"
    "Both calls are then measured as they run, the tuned graph in turn with the defaults',\n"
    "and the modelled times printed beside the measured ones; a call whose tuned graph\n"
    "measured slower keeps the defaults for its steps. --write-profile keeps the choice for\n"
    "`ferrum generate` and `ferrum chat`.\n"
    "Example:\n"
    "  ferrum tune smollm2-135m --random-weights 1 --write-profile\n";

typedef struct tune_model_args {
    model_args model;
    const char *packaging;
    bool remeasure, write_profile, skip_measure, allow_copies;
    const char *profile_out;
    int64_t context, chunk, cache_type;
    double budget;
} tune_model_args;

static const char *const packagings[] = {"fused", "each_step", NULL};

enum { LADDER = 4 };

/* The model's name for its table: the preset, or the file or folder's base name without a
 * checkpoint's extension (.gguf, .safetensors, .json): "llama-3.2-1b" stays whole. */
static void table_name(const char *model, char *buf, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s", model);
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') path[--len] = 0; /* "dir/" */
    const char *base = strrchr(path, '/');
    const char *name = base ? base + 1 : path;
    len = strlen(name) < n ? strlen(name) : n - 1; /* cut to the buffer (a name, not a path) */
    memcpy(buf, name, len);
    buf[len] = 0;
    for (const char *ext = ".gguf\0.safetensors\0.json\0"; *ext; ext += strlen(ext) + 1)
        if (len > strlen(ext) && strcmp(buf + len - strlen(ext), ext) == 0) {
            buf[len - strlen(ext)] = 0;
            break;
        }
    if (!*buf || !strcmp(buf, ".") || !strcmp(buf, "..")) snprintf(buf, n, "model");
}

typedef struct calls {
    int32_t *tokens;
    fe_named_tensor prefill_in;
    fe_word words[2][LADDER * 2];
    fe_tune_call call[2];
} calls;

/* The decode step at positions in the middle of four equal slices of [0, context), and the
 * prefill chunk at up to four distinct starts spread over [0, context - chunk], each a
 * multiple of the chunk as a prompt's chunks start (1024 / 512: 0 and 512, each measured
 * once where four spread starts rounded down had measured 0 three times). */
static int make_calls(calls *c, int64_t context, int64_t chunk) {
    c->tokens = calloc((size_t)chunk, sizeof *c->tokens);
    if (!c->tokens) return -1;
    c->prefill_in = (fe_named_tensor){"tokens", fe_tensor_contiguous(c->tokens, FE_DTYPE_I32, 1,
                                                                    &chunk)};
    int starts = 0;
    const int64_t last = context > chunk ? context - chunk : 0;
    for (int p = 0; p < LADDER; p++) {
        c->words[0][p] = (fe_word){"position", context * (2 * p + 1) / (2 * LADDER)};
        const int64_t start = last * p / (LADDER - 1) / chunk * chunk;
        if (starts > 0 && c->words[1][2 * (starts - 1)].value == start) continue;
        c->words[1][2 * starts] = (fe_word){"position", start};
        c->words[1][2 * starts + 1] = (fe_word){"n", chunk};
        starts++;
    }
    c->call[0] = (fe_tune_call){"decode step", NULL, 0, c->words[0], 1, LADDER};
    c->call[1] = (fe_tune_call){"prefill chunk", &c->prefill_in, 1, c->words[1], 2, starts};
    return 0;
}

static int fail(const fe_cli_io *io, const char *msg) {
    fprintf(io->err, "ferrum tune: %s\n", msg);
    return FE_EXIT_FAILURE;
}

/* The modelled time of call c: the defaults with every fold, or (chosen) narrowing's
 * settings with the priced folds (the folds' saving and the settings' taken as adding up). */
static double modelled_ns(const fe_narrowing *n, const fe_fold_pricing *fp, int c, bool chosen) {
    if (!chosen) return fe_narrowing_default_ns(n, c);
    return fe_fold_pricing_call_ns(fp, c, FE_FOLD_PRICED) + fe_narrowing_predicted_ns(n, c) -
           fe_narrowing_default_ns(n, c);
}

static void print_calls(FILE *f, const char *what, const fe_narrowing *n,
                        const fe_fold_pricing *fp, const fe_cost_table *t,
                        const fe_tune_graph_request *req, const fe_cost_figure *measured,
                        const bool *cached, bool chosen, int workers) {
    for (int c = 0; c < req->n_calls; c++) {
        double pred = modelled_ns(n, fp, c, chosen);
        fprintf(f, "  %-14s %-9s modelled %10.3f ms", req->calls[c].name, what, pred / 1e6);
        if (measured) {
            double m = measured[c].median_ns, gbps = measured[c].read_gbps;
            /* the model at the read level the call was measured at */
            double at = fe_cost_table_call_at_level(t, c, pred, gbps);
            if (at != pred) fprintf(f, ", %10.3f at the call's %.1f GB/s", at / 1e6, gbps);
            fprintf(f, "   measured %10.3f ms (p10..p90 %.3f..%.3f)%s   model/measured %.2f",
                    m / 1e6, measured[c].p10_ns / 1e6, measured[c].p90_ns / 1e6,
                    measured[c].reliable ? "" : " unreliable", m > 0 ? at / m : 0);
            if (at != pred) fprintf(f, " (%.2f at the figures' level)", m > 0 ? pred / m : 0);
            if (cached[c])
                fprintf(f, "   (cached: the same call measured by an earlier run)");
            else
                fprintf(f, "   CPUs had %.2f of %d", measured[c].cpus, workers);
        }
        fputc('\n', f);
    }
}

/* The choice as entries of the profile at path (NULL: this device's), others kept. */
static int write_profile(fe_device *dev, const fe_narrowing *n, const fe_fold_pricing *fp,
                         const char *path, const fe_cli_io *io) {
    char def[1100];
    fe_error err;
    if (!path && fe_tune_profile_path(dev, NULL, def, sizeof def, &err) != FE_OK)
        return fail(io, err.message);
    if (!path) path = def;
    if (fe_tune_write_narrowing(n, path, &err) != FE_OK || fe_tune_write_folds(fp, path, &err) != FE_OK)
        return fail(io, err.message);
    fprintf(io->err, "ferrum tune: wrote %d entries and the fold decisions to %s (%d of %d "
            "groups had no reliable figure to decide on: none written)\n",
            fe_narrowing_decided(n), path, fe_narrowing_groups(n) - fe_narrowing_decided(n),
            fe_narrowing_groups(n));
    return FE_EXIT_OK;
}

/* A session of the packaging asked for, with profile p (may be NULL) and the folds as
 * `folds` says (FE_LM_FOLDS_PRICED: asked of price with user). */
static int session(fe_lm_model *m, const tune_model_args *a, const fe_profile *p, int folds,
                   fe_fold_price_fn price, void *user, fe_lm_session **s, const fe_cli_io *io) {
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = a->context;
    so.chunk = a->chunk;
    so.each_step = strcmp(a->packaging, "each_step") == 0;
    so.cache_type = cache_type_of(a->cache_type);
    so.profile = p;
    so.folds = folds;
    so.fold_price = price;
    so.fold_user = user;
    fe_error err;
    if (fe_lm_session_create(m, &so, s, &err) != FE_OK) return fail(io, err.message);
    return FE_EXIT_OK;
}

/* Whether the tuned session's graph computes the bytes of the defaults' (`ferrum generate
 * --no-tuning`'s: every fold, no profile) at each call of req, both fresh (a call's
 * state depends on the calls before it). */
static int same_as_defaults(fe_lm_model *m, const tune_model_args *a, fe_lm_session *tuned,
                            const fe_tune_graph_request *req, bool *same, char *where,
                            size_t where_n, const fe_cli_io *io) {
    fe_lm_session *ref = NULL;
    int code = session(m, a, NULL, FE_LM_FOLDS_ALL, NULL, NULL, &ref, io);
    if (code != FE_EXIT_OK) return code;
    fe_tune_graph_request r = *req, t = *req;
    r.graph = fe_lm_session_graph(ref);
    t.graph = fe_lm_session_graph(tuned);
    fe_error err;
    if (fe_tune_calls_same_outputs(&r, &t, same, where, where_n, &err) != FE_OK)
        code = fail(io, err.message);
    fe_lm_session_destroy(ref);
    return code;
}

/* The table at path, or NULL (none there, --remeasure, or refused: said on stderr). */
static fe_cost_table *previous_table(const char *path, bool remeasure, const fe_cli_io *io) {
    fe_cost_table *t = NULL;
    FILE *old = remeasure ? NULL : fopen(path, "rb");
    if (old) {
        fclose(old);
        fe_error err;
        if (fe_cost_table_load(path, &t, &err) != FE_OK)
            fprintf(io->err, "ferrum tune: %s\n", err.message); /* measured again, replaced */
    }
    return t;
}

static int run(const tune_model_args *a, fe_lm_model *m, const fe_cli_io *io) {
    fe_device *dev = fe_lm_model_device(m);
    fe_lm_session *s = NULL, *tuned = NULL, *plain = NULL;
    fe_cost_table *table = NULL, *previous = NULL, *unfolded = NULL, *previous_unfolded = NULL;
    fe_narrowing *n = NULL, *n_unfolded = NULL;
    fe_profile *chosen = NULL;
    fe_fold_log *log = NULL;
    fe_fold_pricing *fp = NULL;
    calls c = {0};
    fe_error err;
    if (fe_fold_log_create(&log, &err) != FE_OK) return fail(io, err.message);
    /* every fold, each logged (priced by a price that keeps them all) */
    int code = session(m, a, NULL, FE_LM_FOLDS_PRICED, fe_fold_log_record, log, &s, io);
    if (code != FE_EXIT_OK) {
        fe_fold_log_destroy(log);
        return code;
    }
    if (make_calls(&c, a->context, a->chunk) != 0) {
        code = fail(io, "out of memory");
        goto done;
    }
    char name[96], name_unfolded[120], path[1100], path_unfolded[1100];
    table_name(a->model.model, name, sizeof name);
    snprintf(name_unfolded, sizeof name_unfolded, "%.80s-unfolded", name);
    if (fe_cost_table_path(dev, NULL, name, a->packaging, path, sizeof path, &err) != FE_OK ||
        fe_cost_table_path(dev, NULL, name_unfolded, a->packaging, path_unfolded,
                           sizeof path_unfolded, &err) != FE_OK) {
        code = fail(io, err.message);
        goto done;
    }
    previous = previous_table(path, a->remeasure, io);
    previous_unfolded = previous_table(path_unfolded, a->remeasure, io);
    fe_tune_graph_request req = {fe_lm_session_graph(s), name, c.call, 2};
    fe_tune_options o = fe_tune_options_default();
    o.remeasure = a->remeasure;
    o.budget_ms = a->budget;
    o.progress = io->err;
    double t0 = fe_time_ns() * 1e-9;
    if (fe_tune_graph(dev, &req, &o, previous, &table, &err) != FE_OK) {
        code = fail(io, err.message);
        goto done;
    }
    /* the graph without folds: its own table, each design at its default setting alone
     * (most are the folded graph's, from the cost cache), then each group of folds priced
     * against it, every setting at its default on both sides */
    code = session(m, a, NULL, FE_LM_FOLDS_NONE, NULL, NULL, &plain, io);
    if (code != FE_EXIT_OK) goto done;
    fe_tune_graph_request ureq = {fe_lm_session_graph(plain), name_unfolded, c.call, 2};
    fe_tune_options uo = o;
    uo.default_only = true;
    if (fe_tune_graph(dev, &ureq, &uo, previous_unfolded, &unfolded, &err) != FE_OK) {
        code = fail(io, err.message);
        goto done;
    }
    /* both tables' figures at one read level (the folded table's median), so that figures
     * taken minutes apart compare, and the folds' prices too */
    double level_lo, level_hi;
    int n_level;
    const double level = fe_cost_table_read_level(table, &level_lo, &level_hi, &n_level);
    fe_cost_table_at_level(table, level);
    fe_cost_table_at_level(unfolded, level);
    if (fe_fold_price(unfolded, table, log, &fp, &err) != FE_OK ||
        fe_narrow(unfolded, fe_narrow_kinds_all(), &n_unfolded, &err) != FE_OK) {
        code = fail(io, err.message);
        goto done;
    }
    double t_tune = fe_time_ns() * 1e-9 - t0;
    fe_narrow_kinds kinds = fe_narrow_kinds_all();
    kinds.copies = a->allow_copies;
    if (fe_narrow(table, kinds, &n, &err) != FE_OK) {
        code = fail(io, err.message);
        goto done;
    }
    char desc[256];
    fe_device_describe(dev, desc, sizeof desc);
    FILE *f = io->out;
    fprintf(f, "device: %s\nmodel: %s, packaging %s, context %lld, chunk %lld, KV cache %s\n",
            desc, a->model.model, a->packaging, (long long)a->context, (long long)a->chunk,
            cache_type_of(a->cache_type) == FE_LM_CACHE_F16 ? "f16" : "f32");
    fprintf(f, "cost table: %s (%d designs, %d from the cache or the last table)\n", path,
            fe_cost_table_designs(table), fe_cost_table_reused(table));
    fprintf(f, "unfolded: %s (%d designs, %d from the cache or the last table); both in %.1f s\n",
            path_unfolded, fe_cost_table_designs(unfolded), fe_cost_table_reused(unfolded), t_tune);
    int again[2], in_turn[2];
    double again_s[2];
    fe_cost_table_second_pass(table, &again[0], &in_turn[0], &again_s[0]);
    fe_cost_table_second_pass(unfolded, &again[1], &in_turn[1], &again_s[1]);
    fprintf(f, "second pass: the fastest setting measured again %d times, %d of them in turn "
            "with the default (%.1f s of it)\n", again[0] + again[1], in_turn[0] + in_turn[1],
            again_s[0] + again_s[1]);
    if (n_level > 0)
        fprintf(f, "read level: the figures were measured at %.1f GB/s (the median of %d; "
                "%.1f..%.1f) and are priced there, each moved by its share bound by memory\n\n",
                level, n_level, level_lo, level_hi);
    else
        fprintf(f, "read level: no figure has one (all from an older cache): each is priced "
                "as measured\n\n");
    fprintf(f, "folds (each group kept only where it lowers the modelled time; settings at "
            "their defaults): %d of %d groups kept\n", fe_fold_pricing_kept(fp),
            fe_fold_pricing_groups(fp));
    fe_fold_pricing_print(fp, f);
    fputc('\n', f);
    fprintf(f, "joint narrowing (the chosen setting per op and shape):\n");
    fe_narrowing_print(n, f);
    fprintf(f, "\nablations (modelled call time, each decision held at its default; the "
            "first four with every fold):\n");
    static const struct { const char *what; fe_narrow_kinds k; } abl[] = {
        {"all decisions", {.widths = true, .designs = true, .folds = true}},
        {"widths held", {.designs = true, .folds = true}},
        {"designs held", {.widths = true, .folds = true}},
        {"all held", {.folds = true}},
    }; /* copies as asked (below) */
    for (size_t i = 0; i < sizeof abl / sizeof abl[0]; i++) {
        fe_narrowing *x = NULL;
        fe_narrow_kinds k = abl[i].k;
        k.copies = a->allow_copies;
        if (fe_narrow(table, k, &x, &err) != FE_OK) {
            code = fail(io, err.message);
            goto done;
        }
        fprintf(f, "  %-14s decode %10.3f ms   prefill chunk %10.3f ms\n", abl[i].what,
                fe_narrowing_predicted_ns(x, 0) / 1e6, fe_narrowing_predicted_ns(x, 1) / 1e6);
        fe_narrowing_destroy(x);
    }
    fprintf(f, "  %-14s decode %10.3f ms   prefill chunk %10.3f ms   (the unfolded graph, "
            "every setting held: against \"all held\")\n", "folds off",
            fe_narrowing_predicted_ns(n_unfolded, 0) / 1e6,
            fe_narrowing_predicted_ns(n_unfolded, 1) / 1e6);
    bool folds_changed = fe_fold_pricing_kept(fp) < fe_fold_pricing_groups(fp);
    bool changed = folds_changed;
    for (int g = 0; g < fe_narrowing_groups(n); g++)
        changed = changed || strcmp(fe_narrowing_choice(n, g), "default") != 0;
    fe_cost_figure measured[2], measured_tuned[2];
    bool cached[2] = {false, false}; /* a pair's: both graphs' figures from the cache */
    fe_tune_options mo = o;
    mo.warmup = 1;
    mo.min_samples = 3;
    mo.attempts = 1; /* a whole call is long: one figure, said unreliable when it is */
    mo.budget_ms = a->budget;
    /* the tuned graph, where narrowing or the folds changed something: measured in turn
     * with the defaults' (a drifting host then hits both alike) */
    fe_tune_graph_request treq = req;
    if (changed) {
        if (fe_profile_parse("{\"entries\": []}", 15, &chosen, &err) != FE_OK ||
            fe_narrowing_to_profile(n, chosen, &err) != FE_OK) {
            code = fail(io, err.message);
            goto done;
        }
        /* the weights' layouts the defaults' graph made (its versions compiled for the
         * tables), against those after the tuned graph has run: a setting that reads a
         * weight in a layout the defaults do not (GEMM's b_panels = 1 over q8_0 on AVX2,
         * whose decode GEMV reads the rows) holds a second copy of it */
        const size_t laid_defaults = fe_lm_model_layout_bytes(m);
        /* the priced folds (their answers become the profile's fold decisions, from which
         * `ferrum generate` compiles the same graph) */
        code = session(m, a, chosen, FE_LM_FOLDS_PRICED, fe_fold_pricing_keeps, fp, &tuned, io);
        if (code != FE_EXIT_OK) goto done;
        treq.graph = fe_lm_session_graph(tuned);
        /* the tuned graph must compute the defaults' bytes (its settings are gated, but a
         * fold left out computes a norm or an activation by another kernel: other bits, and
         * other greedy tokens); if the folds change them, every fold is kept */
        bool same = true;
        char where[128];
        code = same_as_defaults(m, a, tuned, &req, &same, where, sizeof where, io);
        if (code != FE_EXIT_OK) goto done;
        if (!same && folds_changed) {
            fprintf(f, "\nthe priced folds changed the outputs' bytes (first at %s): every fold "
                    "is kept, so that the tuned graph draws the defaults' tokens\n", where);
            fe_fold_pricing_keep_all(fp);
            folds_changed = false;
            fe_lm_session_destroy(tuned);
            tuned = NULL;
            code = session(m, a, chosen, FE_LM_FOLDS_PRICED, fe_fold_pricing_keeps, fp, &tuned,
                           io);
            if (code != FE_EXIT_OK) goto done;
            treq.graph = fe_lm_session_graph(tuned);
            code = same_as_defaults(m, a, tuned, &req, &same, where, sizeof where, io);
            if (code != FE_EXIT_OK) goto done;
        }
        if (!same)
            fprintf(f, "\nthe tuned settings changed the outputs' bytes (first at %s): each is "
                    "within its op's tolerance, but greedy tokens may differ from the "
                    "defaults'\n", where);
        else
            fprintf(f, "\nthe tuned graph computes the defaults' bytes at every call\n");
        const size_t laid_tuned = fe_lm_model_layout_bytes(m);
        if (laid_tuned > laid_defaults)
            fprintf(f, "memory: the tuned settings read weights in layouts the defaults do not "
                    "make: %.1f MiB more beside the weights (%.1f MiB at the defaults), which "
                    "`ferrum generate` holds under this profile%s\n",
                    (double)(laid_tuned - laid_defaults) / 1048576.0,
                    (double)laid_defaults / 1048576.0,
                    a->allow_copies ? " (--allow-copies)" : "");
    }
    if (!a->skip_measure) {
        fe_status mst = changed ? fe_tune_measure_calls_paired(dev, &req, &treq, &mo, table,
                                                               measured, measured_tuned,
                                                               cached, &err)
                                : fe_tune_measure_calls(dev, &req, &mo, table, measured, cached,
                                                        &err);
        if (mst != FE_OK) {
            code = fail(io, err.message);
            goto done;
        }
    }
    const fe_cost_figure dispatch = fe_cost_table_dispatch(table),
                         barrier = fe_cost_table_barrier(table);
    fprintf(f, "\noverheads: dispatch %.1f us, barrier %.2f us a step%s\n",
            dispatch.median_ns / 1e3, barrier.median_ns / 1e3,
            dispatch.reliable && barrier.reliable
                ? ""
                : " (unreliable: another process took the CPU while they were probed; the "
                  "modelled calls lean on them, --remeasure on a quiet machine)");
    fprintf(f, "\ncalls (the mean over %d decode positions and %d prefill starts; modelled: "
            "dispatch + steps + barriers; CPUs had: the process's CPU time over the wall time, "
            "less than the workers when it was descheduled):\n", req.calls[0].n_points,
            req.calls[1].n_points);
    int workers = fe_device_get_info(dev)->n_workers;
    print_calls(f, "defaults", n, fp, table, &req, a->skip_measure ? NULL : measured, cached,
                false, workers);
    if (changed) {
        print_calls(f, "tuned", n, fp, table, &req, a->skip_measure ? NULL : measured_tuned,
                    cached, true, workers);
        if (folds_changed)
            fprintf(f, "  (tuned: with the priced folds, modelled as the folds table prices "
                    "them, plus what narrowing's settings change)\n");
        if (!a->skip_measure) {
            fprintf(f, "  measured in turn (two rounds, or three where two disagree; each graph at each point), tuned over "
                    "defaults:");
            for (int c = 0; c < req.n_calls; c++)
                fprintf(f, "%s %s %.3fx", c ? "," : "", req.calls[c].name,
                        measured_tuned[c].median_ns > 0
                            ? measured[c].median_ns / measured_tuned[c].median_ns : 0);
            fprintf(f, " (above 1: the tuned graph is faster)\n");
            /* The figures are of designs alone; a call is the evidence. Where the tuned
             * graph measured slower in turn, the choices of that call's steps did not hold in
             * it (a cold SmolLM2 tune once chose WIDTH = 1 for the decode's SwiGLU GEMV, 45
             * against 76 us alone, and its decode measured 0.842x): they go back to the
             * defaults, and with them the priced folds. */
            for (int c = 0; c < req.n_calls; c++) {
                if (!(measured_tuned[c].median_ns > measured[c].median_ns)) continue;
                int back = fe_narrowing_revert_call(n, c);
                if (back > 0 || folds_changed)
                    fprintf(f, "  the tuned %s measured slower than the defaults: its %d "
                            "changed group%s go%s back to the defaults%s\n", req.calls[c].name,
                            back, back == 1 ? "" : "s", back == 1 ? "es" : "",
                            folds_changed ? ", and every fold is kept" : "");
                if (folds_changed) fe_fold_pricing_keep_all(fp);
                folds_changed = false;
            }
        }
    } else {
        fprintf(f, "  (narrowing kept every default and every fold: the tuned graph is the "
                "default one)\n");
    }
    if (fe_cost_table_save(table, path, &err) != FE_OK ||
        fe_cost_table_save(unfolded, path_unfolded, &err) != FE_OK) {
        code = fail(io, err.message);
        goto done;
    }
    if (a->write_profile) code = write_profile(dev, n, fp, a->profile_out, io);
done:
    fe_narrowing_destroy(n);
    fe_narrowing_destroy(n_unfolded);
    fe_cost_table_destroy(table);
    fe_cost_table_destroy(previous);
    fe_cost_table_destroy(unfolded);
    fe_cost_table_destroy(previous_unfolded);
    fe_fold_pricing_destroy(fp);
    fe_lm_session_destroy(tuned);
    fe_lm_session_destroy(plain);
    fe_lm_session_destroy(s);
    fe_fold_log_destroy(log);
    fe_profile_destroy(chosen);
    free(c.tokens);
    return code;
}

int fe_cmd_tune_model(int argc, char **argv, const fe_cli_io *io) {
    tune_model_args a = {.model = model_args_default(), .packaging = "fused", .context = 1024,
                         .chunk = 512, .budget = 300, .cache_type = -1};
    arg_opt opts[MODEL_MAX_OPTS + 10];
    int n = model_options(&a.model, true, opts);
    const arg_opt more[] = {
        {"packaging", 0, ARG_CHOICE, NULL, "fused: one dispatch per call; each_step: one per "
         "step (the table is kept per packaging)", "fused", .choices = packagings,
         .s = &a.packaging},
        {"remeasure", 0, ARG_FLAG, NULL, "measure every design and call again, ignoring (and "
         "replacing) the cost cache and the last table (without it a warm run reuses every "
         "cached figure, an unreliable one too, and says so)", NULL, .flag = &a.remeasure},
        {"context", 0, ARG_INT, "N", "positions the calls are priced over: the decode step at "
         "four points across [0, N), the prefill chunk at up to four distinct starts (multiples of "
         "the chunk) up to N - chunk; also "
         "the session's cache rows", "1024", .lo = 2, .hi = 1 << 20, .i = &a.context},
        {"chunk", 0, ARG_INT, "N", "prefill rows per call, as generate's", "512", .lo = 1,
         .hi = 1 << 16, .i = &a.chunk},
        cache_type_option(&a.cache_type),
        {"budget-ms", 0, ARG_FLOAT, "MS", "time one figure may take before its repeats stop",
         "300", .flo = 1, .fhi = 60000, .f = &a.budget},
        {"allow-copies", 0, ARG_FLAG, NULL, "let narrowing choose settings that read a "
         "weight in a layout the defaults do not make (a second copy of it in memory, said "
         "with its size); without it the tuned graph holds the defaults' layouts and such a "
         "setting is shown held out", NULL, .flag = &a.allow_copies},
        {"no-measure", 0, ARG_FLAG, NULL, "print the modelled call times only (the calls are "
         "not run)", NULL, .flag = &a.skip_measure},
        {"write-profile", 0, ARG_FLAG_VALUE, "FILE", "write the choice as profile entries "
         "(default: this device's profile, the one `ferrum generate` loads), keeping other "
         "entries", NULL, .flag = &a.write_profile, .s = &a.profile_out},
    };
    memcpy(opts + n, more, sizeof more);
    n += (int)(sizeof more / sizeof more[0]);
    arg_spec sp = {.cmd = "tune", .synopsis = synopsis, .opts = opts, .n_opts = n,
                   .max_positional = 1, .positional_what = "MODEL"};
    const char *pos[1] = {NULL};
    bool help = false;
    int code = cli_parse(&sp, argc, argv, pos, io, &help);
    if (code != FE_EXIT_OK || help) return code;
    code = model_args_settle(&a.model, pos[0], "tune", io->err);
    if (code != FE_EXIT_OK) return code;
    if (a.chunk > a.context)
        return cli_refuse(io->err, "tune", "--chunk %lld is more than --context %lld; give a "
                          "chunk at most the context", (long long)a.chunk, (long long)a.context);
    fe_lm_model *m = NULL;
    code = model_open(&a.model, false, "tune", io, &m);
    if (code != FE_EXIT_OK) return code;
    model_read_in(m, io);
    code = run(&a, m, io);
    fe_lm_model_close(m);
    return code == FE_EXIT_OK ? cli_flush_out(io, "tune") : code;
}
