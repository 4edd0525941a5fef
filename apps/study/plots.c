/* apps/study/plots.c: SVG and PNG plots of every study, drawn by gnuplot (Debian's
 * gnuplot-nox, installed by scripts/setup) from the run's CSVs. For each plot this writes
 * plots/<name>.dat (the numbers drawn) and plots/<name>.gp (the script), then runs gnuplot
 * once for <name>.svg and <name>.png, so a plot can be redrawn or restyled by hand. Sequence
 * lengths are drawn on log2 axes (64..16384), times and bandwidths on log axes where they
 * span decades. Without gnuplot the job fails and says to run scripts/setup. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"

enum { C_JOB = 2, C_FAMILY = 3, C_KIND = 4, C_MODE = 5, C_SEQ = 6, C_VARIANT = 7, C_METRIC = 8,
       C_UNIT = 9, C_MEDIAN = 11, C_P10 = 12, C_P90 = 13, C_FLOPS = 15, C_BYTES = 16,
       C_BEST = 18, C_NOTE = 22 };

typedef struct plotter {
    study_job_ctx *c;
    int made, failed;
} plotter;

static const char terminal_svg[] = "set terminal svg size 960,600 dynamic font 'Helvetica,13' background rgb 'white'";
static const char terminal_png[] = "set terminal pngcairo size 1280,800 font 'Helvetica,13' background rgb 'white'";

/* runs the script `body` (everything after terminal and output) for name.svg and name.png */
static void draw(plotter *p, const char *name, const char *body) {
    char gp[4096], base[4096];
    study_path(p->c, base, sizeof base, "plots/%s", name);
    snprintf(gp, sizeof gp, "%s.gp", base);
    FILE *f = fopen(gp, "w");
    if (!f) {
        p->failed++;
        return;
    }
    fprintf(f, "# %s: drawn by `ferrum study` from the run's CSVs (data: %s.dat)\n", name, name);
    /* noenhanced: names like baseline_768 are text, not subscripts */
    fprintf(f, "%s\nset termoption noenhanced\nset output '%s.svg'\n%s\n", terminal_svg, base, body);
    fprintf(f, "reset\n%s\nset termoption noenhanced\nset output '%s.png'\n%s\n", terminal_png, base, body);
    fclose(f);
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    printf("plot %s\n", name);
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0) {
        printf("gnuplot failed (%d) on %s\n", rc, gp);
        p->failed++;
    } else {
        p->made++;
    }
}

static FILE *dat(plotter *p, const char *name) {
    char path[4096];
    study_path(p->c, path, sizeof path, "plots/%s.dat", name);
    return fopen(path, "w");
}

static bool load(plotter *p, const char *study, study_table *t) {
    char path[4096], msg[512];
    study_path(p->c, path, sizeof path, "%s/results.csv", study);
    if (study_table_load(path, t, msg, sizeof msg)) return true;
    printf("no plot of %s: %s\n", study, msg);
    return false;
}

/* log2 sequence axis over the run's lengths, half a step beyond each end, a tic at each */
static void seq_axis(const study_config *cfg, char *buf, size_t n) {
    long long lo = cfg->seqs[0], hi = cfg->seqs[0];
    for (int i = 0; i < cfg->n_seqs; i++) {
        if (cfg->seqs[i] < lo) lo = cfg->seqs[i];
        if (cfg->seqs[i] > hi) hi = cfg->seqs[i];
    }
    size_t len = (size_t)snprintf(buf, n, "set logscale x 2\nset xrange [%g:%g]\nset xtics (", lo / 1.5, hi * 1.5);
    for (int i = 0; i < cfg->n_seqs && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", (long long)cfg->seqs[i]);
    if (len < n)
        snprintf(buf + len, n - len, ")\nset xlabel 'sequence length (tokens, log2 scale)'\nset grid\n"
                 "set key outside right top\n");
}

/* one series per mode of metric `metric` against seq, for family fam, from study tables */
static void seq_plot(plotter *p, study_table *const *tabs, int n_tabs, const char *fam,
                     const char *metric, const char *name, const char *title, const char *ylabel) {
    FILE *f = dat(p, name);
    if (!f) return;
    const char *modes[] = {"offload", "runlist", "runlist_each_step", "hybrid", "pytorch_cpu"};
    char body[8192], axis[512], plot[4096];
    seq_axis(p->c->cfg, axis, sizeof axis);
    int len = snprintf(plot, sizeof plot, "plot ");
    int series = 0;
    double lo = INFINITY, hi = 0;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        int pts = 0;
        for (int ti = 0; ti < n_tabs; ti++)
            for (int i = 0; i < tabs[ti]->n; i++) {
                char **r = tabs[ti]->rows[i];
                if (strcmp(r[C_FAMILY], fam) || strcmp(r[C_MODE], modes[m]) || strcmp(r[C_METRIC], metric) || !*r[C_MEDIAN])
                    continue;
                if (!pts) fprintf(f, "# %s\n", modes[m]);
                fprintf(f, "%s %s %s %s\n", r[C_SEQ], r[C_MEDIAN], *r[C_P10] ? r[C_P10] : r[C_MEDIAN],
                        *r[C_P90] ? r[C_P90] : r[C_MEDIAN]);
                lo = fmin(lo, atof(*r[C_P10] ? r[C_P10] : r[C_MEDIAN]));
                hi = fmax(hi, atof(*r[C_P90] ? r[C_P90] : r[C_MEDIAN]));
                pts++;
            }
        if (!pts) continue;
        fprintf(f, "\n\n");
        /* each mode a little to the side (x by 2^(0.05 k)), so equal lengths do not overlap */
        len += snprintf(plot + len, sizeof plot - (size_t)len,
                        "%s'%s/plots/%s.dat' index %d using ($1*%.4f):2:3:4 with yerrorlines lw 2 pt 7 ps 1.2 title '%s'",
                        series ? ", \\\n     " : "", p->c->run_dir, name, series,
                        pow(2.0, 0.05 * ((double)m - 2.0)), modes[m]);
        series++;
    }
    fclose(f);
    /* a log axis only where the values span a decade; else a linear one from zero */
    const bool logy = hi > 10 * lo;
    snprintf(body, sizeof body, "set title '%s'\n%sset ylabel '%s%s'\n%s\nset format y '%%g'\n%s\n", title,
             axis, ylabel, logy ? ", log scale" : "", logy ? "set logscale y" : "set yrange [0:*]", plot);
    if (series) draw(p, name, body);
}

static void end_to_end(plotter *p) {
    study_table e2e, host;
    if (!load(p, "end_to_end", &e2e)) return;
    bool have_host = load(p, "host_comparison", &host);
    for (int fi = 0; fi < p->c->cfg->n_families; fi++) {
        const char *fam = p->c->cfg->families[fi]->name;
        char name[128], title[256];
        study_table *one[1] = {&e2e}, *both[2] = {&e2e, &host};
        snprintf(name, sizeof name, "end_to_end_latency_%s", fam);
        snprintf(title, sizeof title, "%s layer (%s): latency per call, median and p10..p90", fam,
                 study_kind_name(study_family_kind(p->c->cfg->families[fi])));
        seq_plot(p, one, 1, fam, "latency", name, title, "latency (ms)");
        snprintf(name, sizeof name, "end_to_end_gflops_%s", fam);
        snprintf(title, sizeof title, "%s layer: throughput (6sh^2+4s^2h+2sh^2+4shi FLOPs per call)", fam);
        seq_plot(p, one, 1, fam, "gflops", name, title, "GFLOP/s");
        snprintf(name, sizeof name, "end_to_end_tokens_%s", fam);
        snprintf(title, sizeof title, "%s layer: tokens per second", fam);
        seq_plot(p, one, 1, fam, "tokens_per_s", name, title, "tokens/s");
        if (have_host) {
            snprintf(name, sizeof name, "host_comparison_%s", fam);
            snprintf(title, sizeof title, "%s layer: ferrum modes against PyTorch on the CPU (same weights, input)", fam);
            seq_plot(p, both, 2, fam, "latency", name, title, "latency (ms)");
        }
    }
    study_table_free(&e2e);
    if (have_host) study_table_free(&host);
}

/* bars of a block job's settings: time with p10..p90, the best in another colour */
static void block(plotter *p) {
    study_table t;
    if (!load(p, "block", &t)) return;
    char last[160] = "";
    FILE *f = NULL;
    int k = 0;
    char name[200] = "", title[300] = "";
    for (int i = 0; i <= t.n; i++) {
        if (i == t.n || strcmp(t.rows[i][C_JOB], last) != 0) {
            if (f) {
                fclose(f);
                char body[2048];
                snprintf(body, sizeof body, "set title '%s'\nset style fill solid 0.6 border -1\n"
                         "set boxwidth 0.7\nset offsets 0.7, 0.7, 0, 0\nset ylabel 'time per call (us)'\nset yrange [0:*]\n"
                         "set xtics rotate by -40 font ',10'\nset grid ytics\nset key top left\n"
                         "set bmargin 9\n"
                         "plot '%s/plots/%s.dat' using 1:($6==1?1/0:$3):4:5:(0.35):xtic(2) with boxerrorbars lc rgb '#7f9fbf' title 'candidate (median, p10..p90)', \\\n"
                         "     '' using 1:($6==1?$3:1/0):4:5:(0.35) with boxerrorbars lc rgb '#d95f02' title 'best (is_best)'\n",
                         title, p->c->run_dir, name);
                draw(p, name, body);
                f = NULL;
            }
            if (i == t.n) break;
            snprintf(last, sizeof last, "%s", t.rows[i][C_JOB]);
            snprintf(name, sizeof name, "%s", last);
            for (char *q = name; *q; q++) if (*q == '.') *q = '_';
            snprintf(title, sizeof title, "block tuning: %s (%s, seq %s), the tuner settings", strrchr(last, '.') + 1,
                     t.rows[i][C_FAMILY], t.rows[i][C_SEQ]);
            f = dat(p, name);
            if (!f) continue;
            k = 0;
            fprintf(f, "# index setting median_us p10 p90 is_best\n");
        }
        char **r = t.rows[i];
        if (f && *r[C_MEDIAN])
            fprintf(f, "%d \"%s\" %s %s %s %s\n", k++, r[C_VARIANT], r[C_MEDIAN], r[C_P10], r[C_P90], r[C_BEST]);
    }
    study_table_free(&t);
}

static void staging(plotter *p) {
    study_table t;
    if (!load(p, "memory_staging", &t)) return;
    FILE *f = dat(p, "memory_staging");
    if (!f) return;
    char body[2048];
    int len = snprintf(body, sizeof body, "set title 'memory staging: GEMM cache-blocking depth, speedup against depth 1'\n"
                       "set xlabel 'blocking depth (1: L1 panel, 2: + L2 block, 3: + LLC block)'\n"
                       "set ylabel 'speedup (x, depth-1 median / median)'\nset xrange [0.8:3.2]\nset xtics 1\n"
                       "set grid\nset key outside right top\nplot ");
    int series = 0;
    char last[160] = "";
    for (int i = 0; i < t.n; i++) {
        char **r = t.rows[i];
        if (!strstr(r[C_METRIC], "_speedup")) continue;
        if (strcmp(last, r[C_JOB])) {
            if (series) fprintf(f, "\n\n");
            snprintf(last, sizeof last, "%s", r[C_JOB]);
            len += snprintf(body + len, sizeof body - (size_t)len, "%s'%s/plots/memory_staging.dat' index %d using 1:2:3:4 "
                            "with yerrorlines lw 2 pt 7 title '%s %s'", series ? ", \\\n     " : "",
                            p->c->run_dir, series, r[C_FAMILY], strrchr(r[C_JOB], '.') + 1);
            series++;
        }
        int depth = 0;
        sscanf(r[C_VARIANT], "depth=%d", &depth);
        fprintf(f, "%d %s %s %s\n", depth, r[C_MEDIAN], r[C_P10], r[C_P90]);
    }
    fclose(f);
    study_table_free(&t);
    if (series) draw(p, "memory_staging", body);
}

static void memcpy_bw(plotter *p) {
    study_table t;
    if (!load(p, "memcpy_bandwidth", &t)) return;
    FILE *f = dat(p, "memcpy_bandwidth");
    if (!f) return;
    char body[4096];
    int len = snprintf(body, sizeof body, "set title 'memcpy bandwidth: sizes x workers (peaks circled)'\n"
                       "set logscale x 2\nset xlabel 'copy size (bytes, log scale)'\nset format x '%%.0b%%B'\n"
                       "set ylabel 'GB/s copied (1 GB = 1e9 B)'\nset grid\nset key outside right top\nplot ");
    int series = 0, last_w = -1;
    for (int i = 0; i < t.n; i++) {
        char **r = t.rows[i];
        long long bytes = 0;
        int w = 0;
        if (sscanf(r[C_VARIANT], "bytes=%lld workers=%d", &bytes, &w) != 2) continue;
        if (w != last_w) {
            if (series) fprintf(f, "\n\n");
            len += snprintf(body + len, sizeof body - (size_t)len, "%s'%s/plots/memcpy_bandwidth.dat' index %d "
                            "using 1:2:3:4 with yerrorlines lw 2 pt 7 title '%d worker%s', \\\n     "
                            "'' index %d using 1:($5==1?$2:1/0) with points pt 6 ps 3 lw 2 lc rgb 'black' notitle",
                            series ? ", \\\n     " : "", p->c->run_dir, series, w, w > 1 ? "s" : "", series);
            series++;
            last_w = w;
        }
        fprintf(f, "%lld %s %s %s %s\n", bytes, r[C_MEDIAN], r[C_P10], r[C_P90], r[C_BEST]);
    }
    fclose(f);
    study_table_free(&t);
    if (series) draw(p, "memcpy_bandwidth", body);
}

static void resources(plotter *p) {
    study_table t;
    if (!load(p, "resource_use", &t)) return;
    const char *metrics[] = {"arena_bytes", "weight_bytes", "peak_rss_bytes", "dispatches_per_layer", "distinct_designs"};
    char cases[16][96];
    int n_cases = 0;
    for (int i = 0; i < t.n; i++) {
        char key[96];
        snprintf(key, sizeof key, "%s_s%s", t.rows[i][C_FAMILY], t.rows[i][C_SEQ]);
        bool seen = false;
        for (int k = 0; k < n_cases; k++) seen = seen || !strcmp(cases[k], key);
        if (!seen && n_cases < 16) snprintf(cases[n_cases++], sizeof cases[0], "%s", key);
    }
    for (int k = 0; k < n_cases; k++) {
        char name[160];
        snprintf(name, sizeof name, "resource_use_%s", cases[k]);
        FILE *f = dat(p, name);
        if (!f) continue;
        fprintf(f, "# mode arena_MiB weights_MiB peak_RSS_MiB dispatches designs\n");
        const char *modes[] = {"offload", "runlist", "hybrid"};
        for (int m = 0; m < 3; m++) {
            double v[5] = {NAN, NAN, NAN, NAN, NAN};
            for (int i = 0; i < t.n; i++) {
                char **r = t.rows[i];
                char key[96];
                snprintf(key, sizeof key, "%s_s%s", r[C_FAMILY], r[C_SEQ]);
                if (strcmp(key, cases[k]) || strcmp(r[C_MODE], modes[m])) continue;
                for (int j = 0; j < 5; j++)
                    if (!strcmp(r[C_METRIC], metrics[j])) v[j] = atof(r[C_MEDIAN]) / (j < 3 ? 1048576.0 : 1.0);
            }
            fprintf(f, "%s %g %g %g %g %g\n", modes[m], v[0], v[1], v[2], v[3], v[4]);
        }
        fclose(f);
        char body[2048];
        snprintf(body, sizeof body, "set title 'resource use per mode: %s'\nset multiplot layout 1,2\n"
                 "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.7 border -1\n"
                 "set grid ytics\nset key top left\nset ylabel 'MiB'\nset yrange [0:*]\n"
                 "plot '%s/plots/%s.dat' using 2:xtic(1) title 'arena', '' using 3 title 'weights', '' using 4 title 'peak RSS'\n"
                 "set title 'dispatches and designs per layer call'\nset ylabel 'count (log scale)'\nset logscale y\nset yrange [0.5:*]\n"
                 "plot '%s/plots/%s.dat' using 5:xtic(1) title 'dispatches', '' using 6 title 'distinct designs'\n"
                 "unset multiplot\n", cases[k], p->c->run_dir, name, p->c->run_dir, name);
        draw(p, name, body);
    }
    study_table_free(&t);
}

static void roofline(plotter *p) {
    study_table t;
    if (!load(p, "roofline", &t)) return;
    double pa = 0, p1 = 0, ba = 0, b1 = 0;
    int n_points = 0;
    FILE *f = dat(p, "roofline");
    if (!f) return;
    fprintf(f, "# ai gflops label limiter\n");
    for (int i = 0; i < t.n; i++) {
        char **r = t.rows[i];
        const bool all = !strcmp(r[C_BEST], "1");
        if (!strcmp(r[C_METRIC], "ceiling_compute")) *(all ? &pa : &p1) = atof(r[C_P90]);
        else if (!strcmp(r[C_METRIC], "ceiling_bandwidth")) *(all ? &ba : &b1) = atof(r[C_P90]);
        else if (!strcmp(r[C_METRIC], "attained")) {
            char lim[32] = "?";
            sscanf(r[C_NOTE], "limiter=%31[^;]", lim);
            /* labels fanned out vertically: points of one intensity (the layers) would overlap */
            const double ai = atof(r[C_FLOPS]) / atof(r[C_BYTES]), y = atof(r[C_MEDIAN]);
            fprintf(f, "%g %s \"%s [%s]\" %d %g %g\n", ai, r[C_MEDIAN], r[C_VARIANT], lim,
                    !strcmp(lim, "compute") ? 1 : !strcmp(lim, "bandwidth") ? 2 : 3, ai * 1.25,
                    y * pow(1.35, (double)(n_points % 6) - 2.5));
            n_points++;
        }
    }
    fclose(f);
    study_table_free(&t);
    if (pa <= 0 || ba <= 0) return;
    char body[4096];
    snprintf(body, sizeof body,
             "set title 'roofline: kernels and layers against the ceilings measured in this run'\n"
             "set logscale xy\nset xlabel 'arithmetic intensity (FLOP/byte, log scale)'\n"
             "set ylabel 'GFLOP/s (log scale)'\nset xrange [0.1:10000]\nset grid\nset key inside bottom right box opaque\n"
             "set samples 400\nall(x) = (x*%g < %g) ? x*%g : %g\none(x) = (x*%g < %g) ? x*%g : %g\n"
             "plot all(x) lw 2 lc rgb 'black' title 'roof, all workers (%.0f GFLOP/s, %.1f GB/s)', \\\n"
             "     one(x) lw 2 dt 2 lc rgb 'gray40' title 'roof, one worker (%.0f GFLOP/s, %.1f GB/s)', \\\n"
             "     '%s/plots/roofline.dat' using 1:($4==1?$2:1/0) with points pt 7 ps 1.5 lc rgb '#1b9e77' title 'compute-limited', \\\n"
             "     '' using 1:($4==2?$2:1/0) with points pt 5 ps 1.5 lc rgb '#d95f02' title 'bandwidth-limited', \\\n"
             "     '' using 1:($4==3?$2:1/0) with points pt 9 ps 1.5 lc rgb '#7570b3' title 'parallelism-limited', \\\n"
             "     '' using 5:6:3 with labels left font ',9' notitle, \\\n"
             "     '' using 1:2:($5-$1):($6-$2) with vectors nohead lc rgb 'gray70' notitle\n",
             ba, pa, ba, pa, b1, p1, b1, p1, pa, ba, p1, b1, p->c->run_dir);
    draw(p, "roofline", body);
}

study_job_status study_job_plots(study_job_ctx *c) {
    if (system("command -v gnuplot > /dev/null 2>&1") != 0) {
        snprintf(c->msg, sizeof c->msg, "gnuplot is not installed: run scripts/setup (it installs "
                 "Debian's gnuplot-nox), then `ferrum study resume %s`", c->run_dir);
        return JOB_FAILED;
    }
    plotter p = {c, 0, 0};
    end_to_end(&p);
    block(&p);
    staging(&p);
    memcpy_bw(&p);
    resources(&p);
    roofline(&p);
    study_row r = study_row_blank();
    snprintf(r.metric, sizeof r.metric, "plots");
    r.descriptive = true;
    snprintf(r.unit, sizeof r.unit, "count");
    r.median = p.made;
    snprintf(r.note, sizeof r.note, "%d plots drawn as SVG and PNG under plots/, %d failed", p.made, p.failed);
    study_emit(c, &r);
    if (p.failed || !p.made) {
        snprintf(c->msg, sizeof c->msg, "%d plot(s) failed, %d drawn: see the job's log", p.failed, p.made);
        return JOB_FAILED;
    }
    return JOB_OK;
}
