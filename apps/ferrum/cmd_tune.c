/* apps/ferrum/cmd_tune.c: `ferrum tune OP k=v ...`: one operator's settings measured on this
 * machine (ferrum/tune.h): a table of setting, median, spread, throughput from the op's cost
 * model, and whether each is a candidate (or gated out, and why), cached or measured; the
 * best is marked *. Progress goes to stderr. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "cmd_tune_model.h"
#include "ferrum/lm.h"
#include "ferrum/tune.h"

enum { MAX_SETTINGS = 16 };

static const char tune_synopsis[] =
    "usage: ferrum tune [options] OP [NAME=VALUE...]\n"
    "       ferrum tune [options] MODEL   (a model's graph; `ferrum tune MODEL --help`)\n\n"
    "Measures every setting of operator OP at one shape on this machine: the default;\n"
    "one tunable at a time, each other value of its search domain; and every combination\n"
    "of two design tunables whose domains are small (at most 24 besides the default's,\n"
    "e.g. GEMV rows_per_step x prefetch; WIDTH alone). A setting is a\n"
    "candidate when its output is bit-identical to the default's on seeded random inputs\n"
    "(or both are within the op's tolerance of the reference); candidates are timed alone\n"
    "on the pool and kept in the cost cache (${FERRUM_CACHE_HOME:-~/.cache/ferrum}/costs).\n\n"
    "NAME=VALUE gives an extent (N=2048), a param (epilogue=swiglu), a tunable (held, not\n"
    "searched: rows_per_step=4), dtype=DTYPE, or case=NAME (the catalog case the shape\n"
    "starts from; `ferrum ops OP` prints the names: params, tunables, per-call values,\n"
    "extents and cases). --write-profile keeps the best as data: `ferrum generate` and\n"
    "`ferrum chat` load this device's profile\n"
    "(${FERRUM_CACHE_HOME:-~/.cache/ferrum}/profiles/<device id>.json). Example:\n"
    "  ferrum tune GEMV N=2048 K=2048 B=1 dtype=q8_0 --write-profile\n";

/* "N=2048" into a setting: a number where the value is one, else the text (a choice name). */
static bool parse_kv(const char *arg, fe_setting *s, char *name, size_t n) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= n || !eq[1]) return false;
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    char *end;
    errno = 0;
    double v = strtod(eq + 1, &end);
    *s = (fe_setting){.name = name};
    if (!errno && !*end && isfinite(v)) s->value = v;
    else s->choice = eq + 1;
    return true;
}

static const char *verdict_text(const fe_tune_row *row) {
    switch (row->verdict) {
    case FE_TUNE_CANDIDATE: return row->cost.reliable ? "candidate" : "unreliable";
    case FE_TUNE_GATED_OUT: return "gated out";
    case FE_TUNE_SAME_DESIGN: return "same design";
    case FE_TUNE_REFUSED: return "refused";
    }
    return "?";
}

/* text as a JSON string's contents */
static void json_text(FILE *f, const char *text) {
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        if (*p == '\n') fputs("\\n", f);
        else fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
    }
}

static void print_json(FILE *f, const fe_tune_result *r) {
    fputs("{\"shape\": \"", f);
    json_text(f, fe_tune_result_shape(r));
    fprintf(f, "\", \"dispatch_us\": %.3f, \"rows\": [\n",
            fe_tune_result_dispatch(r).median_ns / 1e3);
    for (int i = 0; i < fe_tune_result_count(r); i++) {
        const fe_tune_row *row = fe_tune_result_row(r, i);
        fprintf(f, "  {\"setting\": \"%s\", \"verdict\": \"%s\", \"design\": \"%016llx\"",
                row->setting, verdict_text(row), (unsigned long long)row->design);
        if (row->verdict == FE_TUNE_CANDIDATE)
            fprintf(f, ", \"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f, "
                    "\"flops\": %.0f, \"bytes\": %.0f, \"cached\": %s, \"reliable\": %s, "
                    "\"best\": %s, \"read_gbps\": %.2f", row->cost.median_ns / 1e3,
                    row->cost.p10_ns / 1e3, row->cost.p90_ns / 1e3, row->flops, row->bytes,
                    row->cached ? "true" : "false", row->cost.reliable ? "true" : "false",
                    row->best ? "true" : "false", row->cost.read_gbps);
        fputs(", \"reason\": \"", f);
        json_text(f, row->reason);
        fprintf(f, "\"}%s\n", i + 1 < fe_tune_result_count(r) ? "," : "");
    }
    fprintf(f, "]}\n");
}

static void print_table(FILE *f, const fe_tune_result *r) {
    fprintf(f, "%s\n", fe_tune_result_shape(r));
    fe_cost_figure d = fe_tune_result_dispatch(r);
    fprintf(f, "empty step (dispatch + barrier): %.2f us%s\n\n", d.median_ns / 1e3,
            d.reliable ? "" : " (unreliable)");
    fprintf(f, "  %-44s %10s %7s %8s %9s %6s  %-11s %s\n", "setting", "median us", "spread",
            "GB/s", "GFLOP/s", "read", "verdict", "source / reason");
    bool any_best = false;
    for (int i = 0; i < fe_tune_result_count(r); i++) {
        const fe_tune_row *row = fe_tune_result_row(r, i);
        any_best = any_best || row->best;
        if (row->verdict != FE_TUNE_CANDIDATE) {
            fprintf(f, "  %-44s %10s %7s %8s %9s %6s  %-11s %s\n", row->setting, "-", "-", "-",
                    "-", "-", verdict_text(row), row->reason);
            continue;
        }
        double s = row->cost.median_ns * 1e-9, spread = row->cost.median_ns > 0
            ? (row->cost.p90_ns - row->cost.p10_ns) / row->cost.median_ns : 0;
        char level[16] = "-";
        if (row->cost.read_gbps > 0) snprintf(level, sizeof level, "%.1f", row->cost.read_gbps);
        fprintf(f, "%c %-44s %10.2f %6.1f%% %8.2f %9.2f %6s  %-11s %s%s%s\n",
                row->best ? '*' : ' ', row->setting, row->cost.median_ns / 1e3, 100 * spread,
                s > 0 ? row->bytes / s / 1e9 : 0, s > 0 ? row->flops / s / 1e9 : 0, level,
                verdict_text(row),
                !strncmp(row->reason, "cached", 6) ? "" : row->cached ? "cached" : "measured",
                *row->reason && strncmp(row->reason, "cached", 6) ? ": " : "", row->reason);
    }
    fprintf(f, "\nread: the memory's read rate (GB/s) around the figure's runs, by the "
            "device's gauge (a host whose memory level drifts moves it, and memory-bound "
            "figures with it)\n");
    fprintf(f, "%s\n", any_best ? "* the best: the fastest reliable candidate, or the default when "
                                    "none beats it by more than their spreads"
                                  : "no best: the fastest figures are unreliable (another process "
                                    "took the CPU, or the spread was wide); run again on an idle "
                                    "machine (--remeasure)");
}

/* --write-profile: the best into path (NULL: this device's profile). */
static int write_entry(fe_device *dev, const fe_tune_result *res, const char *path,
                       const fe_cli_io *io) {
    char def[1100];
    fe_error err;
    if (!path && fe_tune_profile_path(dev, NULL, def, sizeof def, &err) != FE_OK) {
        fprintf(io->err, "ferrum tune: %s\n", err.message);
        return FE_EXIT_FAILURE;
    }
    if (!path) path = def;
    if (fe_tune_write_profile(res, path, &err) != FE_OK) {
        fprintf(io->err, "ferrum tune: %s\n", err.message);
        return FE_EXIT_FAILURE;
    }
    fprintf(io->err, "ferrum tune: wrote the entry for this shape to %s\n", path);
    return FE_EXIT_OK;
}

/* Whether word is a model preset's name (llama-3.2-1b, smollm2-135m): its shapes open. */
static bool names_preset(const char *word) {
    fe_lm_open_options o = fe_lm_open_options_default();
    o.random_weights = true;
    o.header_only = true;
    o.threads = 1;
    fe_lm_model *m = NULL;
    fe_error err = {0};
    if (fe_lm_model_open(word, &o, &m, &err) != FE_OK) return false;
    fe_lm_model_close(m);
    return true;
}

/* Whether the command line names a model (else an operator): --random-weights or -m/--model,
 * or a word that is no option, no NAME=VALUE and no operator's name but a file or folder
 * that exists (a .gguf, a checkpoint), ends as one would, or a preset's name (whose own
 * command then asks for --random-weights). */
static bool names_model(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--random-weights", 16) || !strcmp(a, "-m") || !strncmp(a, "--model", 7))
            return true;
        if (a[0] == '-' || strchr(a, '=') || fe_op_find(a)) continue;
        size_t n = strlen(a);
        if (access(a, F_OK) == 0 || (n > 5 && !strcmp(a + n - 5, ".gguf")) ||
            (n > 12 && !strcmp(a + n - 12, ".safetensors")) || names_preset(a))
            return true;
    }
    return false;
}

int fe_cmd_tune(int argc, char **argv, const fe_cli_io *io) {
    if (names_model(argc, argv)) return fe_cmd_tune_model(argc, argv, io);
    bool remeasure = false, json = false, write_profile = false;
    const char *profile_out = NULL;
    double budget = 300;
    const char *values[MAX_SETTINGS], *ladder = NULL, *profile_path = NULL;
    int n_values = 0;
    const arg_opt opts[] = {
        {"value", 0, ARG_STRINGS, "NAME=N", "a per-call value (kv_valid=100); others are at "
         "their default (the full extent)", NULL, .strs = values, .count = &n_values,
         .max = MAX_SETTINGS},
        {"ladder", 0, ARG_STRING, "NAME", "a per-call value the work follows (kv_valid, rows): "
         "measured at 4 points across its range and priced at their mean", NULL, .s = &ladder},
        {"profile", 0, ARG_STRING, "FILE", "a profile (JSON, as `ferrum ops` tunables): the "
         "tunables it gives are held, not searched", NULL, .s = &profile_path},
        {"remeasure", 0, ARG_FLAG, NULL, "measure again, ignoring (and replacing) the cost "
         "cache", NULL, .flag = &remeasure},
        {"budget-ms", 0, ARG_FLOAT, "MS", "time one figure may take before its repeats stop",
         "300", .flo = 1, .fhi = 60000, .f = &budget},
        {"json", 0, ARG_FLAG, NULL, "print the table as JSON", NULL, .flag = &json},
        {"write-profile", 0, ARG_FLAG_VALUE, "FILE", "write the best setting as this op and "
         "shape's entry in the profile FILE (default: this device's, the one `ferrum generate` "
         "loads), keeping its other entries; refused when no best is reliable", NULL,
         .flag = &write_profile, .s = &profile_out},
    };
    arg_spec sp = {.cmd = "tune", .synopsis = tune_synopsis, .opts = opts,
                   .n_opts = (int)(sizeof opts / sizeof opts[0]), .max_positional = 1 + MAX_SETTINGS,
                   .positional_what = "NAME=VALUE"};
    const char *pos[1 + MAX_SETTINGS];
    arg_result r = {.positional = pos};
    int code = args_parse(&sp, argc, argv, &r, io->err);
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        return code;
    }
    if (r.n_positional < 1) {
        fprintf(io->err, "ferrum tune: give an operator (`ferrum ops --names` lists them), or a "
                "MODEL (a .gguf file, a checkpoint folder, or a preset with --random-weights)\n");
        return FE_EXIT_USAGE;
    }
    fe_setting settings[MAX_SETTINGS], vals[MAX_SETTINGS];
    char names[MAX_SETTINGS][64], vnames[MAX_SETTINGS][64];
    for (int i = 1; i < r.n_positional; i++)
        if (!parse_kv(pos[i], &settings[i - 1], names[i - 1], sizeof names[0])) {
            fprintf(io->err, "ferrum tune: \"%s\" is not NAME=VALUE; give e.g. N=2048 or "
                    "dtype=q8_0 (`ferrum ops %s` lists the names)\n", pos[i], pos[0]);
            return FE_EXIT_USAGE;
        }
    for (int i = 0; i < n_values; i++)
        if (!parse_kv(values[i], &vals[i], vnames[i], sizeof vnames[0])) {
            fprintf(io->err, "ferrum tune: --value \"%s\" is not NAME=N; give e.g. --value "
                    "kv_valid=100\n", values[i]);
            return FE_EXIT_USAGE;
        }
    fe_error err;
    fe_profile *profile = NULL;
    if (profile_path && fe_profile_load(profile_path, &profile, &err) != FE_OK) {
        fprintf(io->err, "ferrum tune: %s\n", err.message);
        return FE_EXIT_USAGE;
    }
    fe_device_options dopts = fe_device_options_default();
    fe_device *dev = NULL;
    if (fe_device_create(&dopts, &dev, &err) != FE_OK) {
        fprintf(io->err, "ferrum tune: %s\n", err.message);
        fe_profile_destroy(profile);
        return FE_EXIT_FAILURE;
    }
    fe_tune_request req = {.op = pos[0], .settings = settings, .n_settings = r.n_positional - 1,
                           .values = vals, .n_values = n_values, .ladder = ladder,
                           .profile = profile};
    fe_tune_options o = fe_tune_options_default();
    o.remeasure = remeasure;
    o.budget_ms = budget;
    o.progress = io->err;
    fe_tune_result *res = NULL;
    fe_status st = fe_tune_op(dev, &req, &o, &res, &err);
    if (st != FE_OK) {
        fprintf(io->err, "ferrum tune: %s%s\n", err.message, st == FE_E_NOTFOUND
                ? "; to tune a model, give its file or folder, or a preset with --random-weights"
                : "");
        fe_device_destroy(dev);
        fe_profile_destroy(profile);
        return st == FE_E_INVALID || st == FE_E_NOTFOUND || st == FE_E_SHAPE || st == FE_E_DTYPE
                   ? FE_EXIT_USAGE : FE_EXIT_FAILURE;
    }
    char desc[256];
    fe_device_describe(dev, desc, sizeof desc);
    if (*fe_tune_result_notes(res)) fprintf(io->err, "%s", fe_tune_result_notes(res));
    if (json) {
        print_json(io->out, res);
    } else {
        fprintf(io->out, "device: %s\n", desc);
        print_table(io->out, res);
    }
    int code_out = write_profile ? write_entry(dev, res, profile_out, io) : FE_EXIT_OK;
    fe_tune_result_destroy(res);
    fe_device_destroy(dev);
    fe_profile_destroy(profile);
    return code_out;
}
