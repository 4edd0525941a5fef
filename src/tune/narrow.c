/* tune/narrow.c: joint narrowing over a cost table. The model of one call is
 *   fused:     dispatch + sum over steps of (cost - dispatch) + (steps - 1) * barrier
 *   each_step: sum over steps of cost (each step a dispatch of its own)
 * where a step's cost is its design's figure at the setting chosen for its group (a design
 * alone is timed as one dispatch, hence the dispatch taken off in a fused call). A group is
 * what one profile entry covers: the designs of one op and shape key, which therefore take
 * one setting together, chosen to minimise the sum of every call's modelled time over the
 * group's steps. The default stays unless a setting beats it by more than half of both
 * totals' p10..p90 ranges. Kinds turn decisions off for ablations: widths (WIDTH), designs
 * (every other tunable), folds (none recorded yet). Memory-neutral unless kinds.copies: a
 * setting that reads some step's weight in a layout (format) that no step of the defaults
 * reads that weight in would hold a second copy of it, and is held out (reported, with the
 * bytes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "tune/cost_table.h"

typedef struct group {
    int design;           /* its first design (op and key) */
    int n_steps;
    int choice;           /* option index in the first design */
    bool decided;         /* on reliable figures: another setting won, or the default's own
                           * figures are reliable and some other setting could compete */
    bool reverted;        /* put back at the default: its call measured slower tuned */
    double def_ns, chosen_ns; /* the group's part of every call's time */
    double chosen_bytes;  /* the copies its choice makes (kinds.copies) */
    int held;             /* the fastest setting held out for its copies (-1: none) */
    double held_ns, held_bytes;
} group;

/* A weight read in a layout: (the step's weight id, the layout's format). */
typedef struct laid {
    uint64_t weight, format;
} laid;

struct fe_narrowing {
    const fe_cost_table *t; /* borrowed: lives as long as the narrowing is used */
    group *groups;
    int n_groups;
    int *group_of;        /* per design */
    double *predicted, *def;
    laid *defaults;       /* every (weight, format) the defaults read, sorted */
    int n_defaults;
};

fe_narrow_kinds fe_narrow_kinds_all(void) {
    return (fe_narrow_kinds){.widths = true, .designs = true, .folds = true, .copies = false};
}

static int laid_order(const void *a, const void *b) {
    const laid *x = a, *y = b;
    if (x->weight != y->weight) return x->weight < y->weight ? -1 : 1;
    return x->format < y->format ? -1 : x->format > y->format;
}

static bool same_key(const fe_table_design *a, const fe_table_design *b) {
    if (strcmp(a->op, b->op) != 0 || a->n_when != b->n_when) return false;
    for (int i = 0; i < a->n_when; i++) {
        bool found = false;
        for (int j = 0; j < b->n_when && !found; j++)
            found = strcmp(a->when[i].name, b->when[j].name) == 0 &&
                    a->when[i].value == b->when[j].value &&
                    strcmp(a->when[i].choice, b->when[j].choice) == 0;
        if (!found) return false;
    }
    return true;
}

static const fe_table_option *option_named(const fe_table_design *d, const char *setting) {
    for (int i = 0; i < d->n_options; i++)
        if (strcmp(d->options[i].setting, setting) == 0) return &d->options[i];
    return NULL;
}

static bool allowed(const char *setting, fe_narrow_kinds k) {
    if (strcmp(setting, "default") == 0) return true;
    bool width = strncmp(setting, "WIDTH=", 6) == 0;
    return width ? k.widths : k.designs;
}

/* A step's share of its call's modelled time at option o (a figure's field by `which`:
 * 0 median, 1 p10, 2 p90). */
static double step_ns(const fe_cost_table *t, const fe_table_call *c, const fe_table_option *o,
                      int which) {
    double v = which == 0 ? o->cost.median_ns : which == 1 ? o->cost.p10_ns : o->cost.p90_ns;
    if (!c->each_step) v -= t->dispatch.median_ns;
    return v > 0 ? v : 0;
}

/* The group's total at a setting over every call (all three fields); false when some design
 * of the group lacks it as a reliable candidate. */
static bool group_total(const fe_narrowing *n, int g, const char *setting, double tot[3],
                        bool *reliable) {
    const fe_cost_table *t = n->t;
    tot[0] = tot[1] = tot[2] = 0;
    *reliable = true;
    for (int c = 0; c < t->n_calls; c++)
        for (int s = 0; s < t->calls[c].n_steps; s++) {
            int d = t->calls[c].steps[s].design;
            if (n->group_of[d] != g) continue;
            const fe_table_option *o = option_named(&t->designs[d], setting);
            if (!o || o->verdict != FE_TUNE_CANDIDATE) return false;
            if (!o->cost.reliable && strcmp(setting, "default") != 0) return false;
            *reliable = *reliable && o->cost.reliable;
            for (int w = 0; w < 3; w++) tot[w] += step_ns(t, &t->calls[c], o, w);
        }
    return true;
}

/* Every (weight, format) that a step of some call reads at its design's default. */
static fe_status collect_defaults(fe_narrowing *n) {
    const fe_cost_table *t = n->t;
    size_t cap = 0;
    for (int c = 0; c < t->n_calls; c++) cap += (size_t)t->calls[c].n_steps * FE_MAX_OPERANDS;
    n->defaults = fe_malloc((cap ? cap : 1) * sizeof *n->defaults);
    if (!n->defaults) return FE_E_NOMEM;
    for (int c = 0; c < t->n_calls; c++)
        for (int s = 0; s < t->calls[c].n_steps; s++) {
            const fe_table_step *st = &t->calls[c].steps[s];
            const fe_table_option *def = &t->designs[st->design].options[0];
            for (int i = 0; i < FE_MAX_OPERANDS; i++)
                if (st->weight[i] && def->layout_format[i])
                    n->defaults[n->n_defaults++] = (laid){st->weight[i], def->layout_format[i]};
        }
    qsort(n->defaults, (size_t)n->n_defaults, sizeof *n->defaults, laid_order);
    return FE_OK;
}

/* The bytes of the layouts group g's steps would read at `setting` that the defaults do not
 * make, each (weight, format) counted once (seen: room for every operand of the group's
 * steps). */
static double copy_bytes(const fe_narrowing *n, int g, const char *setting, laid *seen) {
    const fe_cost_table *t = n->t;
    int n_seen = 0;
    double bytes = 0;
    for (int c = 0; c < t->n_calls; c++)
        for (int s = 0; s < t->calls[c].n_steps; s++) {
            const fe_table_step *st = &t->calls[c].steps[s];
            if (n->group_of[st->design] != g) continue;
            const fe_table_option *o = option_named(&t->designs[st->design], setting);
            for (int i = 0; o && i < FE_MAX_OPERANDS; i++) {
                laid x = {st->weight[i], o->layout_format[i]};
                if (!x.weight || !x.format ||
                    bsearch(&x, n->defaults, (size_t)n->n_defaults, sizeof x, laid_order))
                    continue;
                bool again = false;
                for (int j = 0; j < n_seen && !again; j++) again = !laid_order(&seen[j], &x);
                if (again) continue;
                seen[n_seen++] = x;
                bytes += o->layout_bytes[i];
            }
        }
    return bytes;
}

static void choose(fe_narrowing *n, int g, fe_narrow_kinds k, laid *seen) {
    const fe_table_design *first = &n->t->designs[n->groups[g].design];
    group *gr = &n->groups[g];
    double def[3], best[3], best_bytes = 0;
    bool def_reliable, reliable;
    group_total(n, g, "default", def, &def_reliable);
    int pick = 0, rivals = 0;
    memcpy(best, def, sizeof best);
    gr->held = -1;
    for (int i = 1; i < first->n_options; i++) {
        double tot[3];
        if (!allowed(first->options[i].setting, k) ||
            !group_total(n, g, first->options[i].setting, tot, &reliable))
            continue;
        double bytes = copy_bytes(n, g, first->options[i].setting, seen);
        if (bytes > 0 && !k.copies) {
            if (gr->held < 0 || tot[0] < gr->held_ns) {
                gr->held = i;
                gr->held_ns = tot[0];
                gr->held_bytes = bytes;
            }
            continue;
        }
        rivals++;
        if (!(tot[0] < best[0])) continue;
        pick = i;
        best_bytes = bytes;
        memcpy(best, tot, sizeof best);
    }
    double margin = ((best[2] - best[1]) + (def[2] - def[1])) / 2;
    if (pick != 0 && !(best[0] + margin < def[0])) {
        pick = 0;
        best_bytes = 0;
        memcpy(best, def, sizeof best);
    }
    if (gr->held >= 0 && !(gr->held_ns < best[0])) gr->held = -1;
    gr->choice = pick;
    gr->decided = pick != 0 || (def_reliable && rivals > 0);
    gr->def_ns = def[0];
    gr->chosen_ns = best[0];
    gr->chosen_bytes = best_bytes;
}

/* Each call's modelled time at the groups' choices and at the defaults. */
static void model_calls(fe_narrowing *n) {
    const fe_cost_table *t = n->t;
    for (int c = 0; c < t->n_calls; c++) {
        const fe_table_call *call = &t->calls[c];
        double base = call->each_step ? 0
                    : t->dispatch.median_ns + (call->n_steps - 1) * t->barrier.median_ns;
        n->predicted[c] = n->def[c] = base;
        for (int s = 0; s < call->n_steps; s++) {
            int d = call->steps[s].design;
            const fe_table_design *des = &t->designs[d];
            const group *g = &n->groups[n->group_of[d]];
            const fe_table_option *chosen =
                option_named(des, t->designs[g->design].options[g->choice].setting);
            n->def[c] += step_ns(t, call, &des->options[0], 0);
            n->predicted[c] += step_ns(t, call, chosen ? chosen : &des->options[0], 0);
        }
    }
}

void fe_narrowing_destroy(fe_narrowing *n) {
    if (!n) return;
    fe_free(n->groups);
    fe_free(n->group_of);
    fe_free(n->predicted);
    fe_free(n->def);
    fe_free(n->defaults);
    fe_free(n);
}

fe_status fe_narrow(const fe_cost_table *t, fe_narrow_kinds kinds, fe_narrowing **out,
                    fe_error *err) {
    *out = NULL;
    fe_narrowing *n = fe_calloc(1, sizeof *n);
    int nd = t->n_designs ? t->n_designs : 1, nc = t->n_calls ? t->n_calls : 1;
    if (n) {
        n->t = t;
        n->groups = fe_calloc((size_t)nd, sizeof *n->groups);
        n->group_of = fe_calloc((size_t)nd, sizeof *n->group_of);
        n->predicted = fe_calloc((size_t)nc, sizeof *n->predicted);
        n->def = fe_calloc((size_t)nc, sizeof *n->def);
    }
    if (!n || !n->groups || !n->group_of || !n->predicted || !n->def ||
        collect_defaults(n) != FE_OK) {
        fe_narrowing_destroy(n);
        return fe_error_set(err, FE_E_NOMEM, "narrowing: out of memory");
    }
    for (int d = 0; d < t->n_designs; d++) {
        int g = 0;
        while (g < n->n_groups && !same_key(&t->designs[n->groups[g].design], &t->designs[d])) g++;
        if (g == n->n_groups) n->groups[n->n_groups++].design = d;
        n->group_of[d] = g;
    }
    for (int c = 0; c < t->n_calls; c++)
        for (int s = 0; s < t->calls[c].n_steps; s++)
            n->groups[n->group_of[t->calls[c].steps[s].design]].n_steps++;
    int most = 1; /* the most steps a group has */
    for (int g = 0; g < n->n_groups; g++)
        if (n->groups[g].n_steps > most) most = n->groups[g].n_steps;
    laid *seen = fe_malloc((size_t)most * FE_MAX_OPERANDS * sizeof *seen);
    if (!seen) {
        fe_narrowing_destroy(n);
        return fe_error_set(err, FE_E_NOMEM, "narrowing: out of memory");
    }
    for (int g = 0; g < n->n_groups; g++) choose(n, g, kinds, seen);
    fe_free(seen);
    model_calls(n);
    *out = n;
    return FE_OK;
}

int fe_narrowing_revert_call(fe_narrowing *n, int c) {
    const fe_cost_table *t = n->t;
    if (c < 0 || c >= t->n_calls) return 0;
    int changed = 0;
    for (int s = 0; s < t->calls[c].n_steps; s++) {
        group *g = &n->groups[n->group_of[t->calls[c].steps[s].design]];
        if (g->reverted) continue;
        changed += g->choice != 0;
        g->reverted = g->decided = true;
        g->choice = 0;
        g->chosen_ns = g->def_ns;
        g->chosen_bytes = 0;
        g->held = -1;
    }
    model_calls(n);
    return changed;
}

double fe_narrowing_predicted_ns(const fe_narrowing *n, int c) {
    return c >= 0 && c < n->t->n_calls ? n->predicted[c] : NAN;
}
double fe_narrowing_default_ns(const fe_narrowing *n, int c) {
    return c >= 0 && c < n->t->n_calls ? n->def[c] : NAN;
}
int fe_narrowing_groups(const fe_narrowing *n) { return n->n_groups; }
const char *fe_narrowing_choice(const fe_narrowing *n, int g) {
    if (g < 0 || g >= n->n_groups) return NULL;
    return n->t->designs[n->groups[g].design].options[n->groups[g].choice].setting;
}

double fe_narrowing_copy_bytes(const fe_narrowing *n, int g) {
    return g >= 0 && g < n->n_groups ? n->groups[g].chosen_bytes : 0;
}

const char *fe_narrowing_held_out(const fe_narrowing *n, int g, double *ns, double *bytes) {
    if (g < 0 || g >= n->n_groups || n->groups[g].held < 0) return NULL;
    const group *gr = &n->groups[g];
    if (ns) *ns = gr->held_ns;
    if (bytes) *bytes = gr->held_bytes;
    return n->t->designs[gr->design].options[gr->held].setting;
}

int fe_narrowing_decided(const fe_narrowing *n) {
    int k = 0;
    for (int g = 0; g < n->n_groups; g++) k += n->groups[g].decided;
    return k;
}

fe_status fe_narrowing_to_profile(const fe_narrowing *n, fe_profile *p, fe_error *err) {
    for (int g = 0; g < n->n_groups; g++) {
        if (!n->groups[g].decided) continue; /* no reliable evidence either way: say nothing */
        const fe_table_design *d = &n->t->designs[n->groups[g].design];
        const fe_table_option *o = &d->options[n->groups[g].choice], *def = &d->options[0];
        fe_setting when[FE_TABLE_MAX_WHEN], tun[FE_MAX_TUNABLES];
        int nt = 0;
        for (int i = 0; i < d->n_when; i++)
            when[i] = (fe_setting){d->when[i].name, d->when[i].value,
                                   d->when[i].choice[0] ? d->when[i].choice : NULL};
        for (int i = 0; i < o->n_tunables; i++) {
            bool differs = true;
            for (int j = 0; j < def->n_tunables; j++)
                if (strcmp(def->tunables[j], o->tunables[i]) == 0)
                    differs = def->values[j] != o->values[i];
            if (differs) tun[nt++] = (fe_setting){o->tunables[i], (double)o->values[i]};
        }
        char note[400];
        if (n->groups[g].reverted)
            snprintf(note, sizeof note, "ferrum tune %s: default: a call of its steps measured "
                     "slower tuned than with the defaults, in turn", n->t->name);
        else
            snprintf(note, sizeof note, "ferrum tune %s: %s, %.2f us over %d steps (default "
                     "%.2f us)", n->t->name, o->setting, n->groups[g].chosen_ns / 1e3,
                     n->groups[g].n_steps, n->groups[g].def_ns / 1e3);
        fe_status st = fe_profile_put(p, d->op, when, d->n_when, tun, nt, note, err);
        if (st != FE_OK) return st;
    }
    return FE_OK;
}

void fe_narrowing_print(const fe_narrowing *n, FILE *f) {
    const fe_cost_table *t = n->t;
    fprintf(f, "  %-60s %5s %12s %12s  %s\n", "group (op and shape key)", "steps", "default us",
            "chosen us", "choice");
    for (int g = 0; g < n->n_groups; g++) {
        const fe_table_design *d = &t->designs[n->groups[g].design];
        char key[400];
        size_t k = (size_t)snprintf(key, sizeof key, "%s", d->op);
        for (int i = 0; i < d->n_when && k < sizeof key; i++)
            k += d->when[i].choice[0]
                 ? (size_t)snprintf(key + k, sizeof key - k, " %s=%s", d->when[i].name, d->when[i].choice)
                 : (size_t)snprintf(key + k, sizeof key - k, " %s=%g", d->when[i].name, d->when[i].value);
        if (strlen(key) > 60) memcpy(key + 57, "...", 4);
        const group *gr = &n->groups[g];
        char memory[400] = "";
        if (gr->chosen_bytes > 0)
            snprintf(memory, sizeof memory, " (a second copy of weights: %.1f MiB more)",
                     gr->chosen_bytes / 1048576.0);
        else if (gr->held >= 0)
            snprintf(memory, sizeof memory, " (held out: %s at %.1f us reads weights in a "
                     "layout the defaults do not make, %.1f MiB more; --allow-copies)",
                     d->options[gr->held].setting, gr->held_ns / 1e3,
                     gr->held_bytes / 1048576.0);
        fprintf(f, "  %-60s %5d %12.1f %12.1f  %s%s%s\n", key, gr->n_steps, gr->def_ns / 1e3,
                gr->chosen_ns / 1e3, d->options[gr->choice].setting,
                gr->reverted  ? " (put back: its call measured slower tuned)"
                : gr->decided ? ""
                              : " (undecided: no reliable figure to compare)",
                memory);
    }
}
