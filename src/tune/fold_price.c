/* tune/fold_price.c: pricing the fold pass's folds (see ferrum/tune.h). A log records the
 * sites a compile finds (labels copied: the trace's are borrowed); sites of one version that
 * share a step form a group, priced from a cost table of the graph compiled without folds and
 * one compiled with every fold: the group is kept only where its folded steps model faster
 * than the steps it replaces plus the barriers between them. The price function then answers
 * the pass's question for each fold of a kept group. Invariant: a call's priced time is its
 * unfolded time less the saving of each kept group, so "none" >= "priced" always. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "tune/cost_table.h"

enum { LABEL = 64, SITE_LABELS = 1 + FE_FOLD_MAX_INTO + 2 };

typedef struct site_rec {
    fe_fold_kind kind;
    int version;
    char key[FE_FOLD_KEY_LEN]; /* the site's key (profiles' fold decisions) */
    char step[LABEL];
    char into[FE_FOLD_MAX_INTO][LABEL];
    int n_into;
    char also[2][LABEL];
    int n_also;
    int group;
} site_rec;

struct fe_fold_log {
    site_rec *sites;
    int n, cap;
    bool lost; /* a site could not be recorded (out of memory) */
};

fe_status fe_fold_log_create(fe_fold_log **out, fe_error *err) {
    *out = fe_calloc(1, sizeof **out);
    return *out ? FE_OK : fe_error_set(err, FE_E_NOMEM, "fold log: out of memory");
}

void fe_fold_log_destroy(fe_fold_log *l) {
    if (!l) return;
    fe_free(l->sites);
    fe_free(l);
}

bool fe_fold_log_record(void *user, const fe_fold_site *site) {
    fe_fold_log *l = user;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        site_rec *p = fe_realloc(l->sites, (size_t)cap * sizeof *p);
        if (!p) {
            l->lost = true;
            return true;
        }
        l->sites = p, l->cap = cap;
    }
    site_rec *r = &l->sites[l->n++];
    memset(r, 0, sizeof *r);
    r->kind = site->kind;
    r->version = site->version;
    snprintf(r->step, sizeof r->step, "%s", site->step);
    snprintf(r->key, sizeof r->key, "%s", site->key ? site->key : "");
    for (int i = 0; i < site->n_into && i < FE_FOLD_MAX_INTO; i++)
        snprintf(r->into[r->n_into++], LABEL, "%s", site->into[i]);
    for (int i = 0; i < site->n_also && i < 2; i++)
        snprintf(r->also[r->n_also++], LABEL, "%s", site->also[i]);
    return true;
}

int fe_fold_log_sites(const fe_fold_log *l) { return l->lost ? -1 : l->n; }

typedef struct fold_group {
    int call;                   /* index into the tables' calls */
    double unfolded_ns, folded_ns;
    bool priced, kept;
    char what[160];             /* "epilogue SiLU + epilogue ElementwiseMul into GEMV" */
} fold_group;

typedef struct asked_rec {
    char key[FE_FOLD_KEY_LEN];
    char step[LABEL];
    int version;
    bool kept;
} asked_rec;

struct fe_fold_pricing {
    site_rec *sites; /* a copy of the log's, each with its group */
    int n_sites;
    asked_rec *asked; /* every site a compile asked fe_fold_pricing_keeps about, answered */
    int n_asked, cap_asked;
    bool asked_lost;  /* out of memory recording one */
    fold_group *groups;
    int n_groups, n_calls;
    double *none_ns, *all_ns, *priced_ns; /* per call */
    char (*call_names)[64];
};

void fe_fold_pricing_destroy(fe_fold_pricing *p) {
    if (!p) return;
    fe_free(p->sites);
    fe_free(p->asked);
    fe_free(p->groups);
    fe_free(p->none_ns);
    fe_free(p->all_ns);
    fe_free(p->priced_ns);
    fe_free(p->call_names);
    fe_free(p);
}

/* The labels a site joins: the step that goes, those taking it in, those going with it. */
static int site_labels(const site_rec *r, const char **out) {
    int n = 0;
    out[n++] = r->step;
    for (int i = 0; i < r->n_into; i++) out[n++] = r->into[i];
    for (int i = 0; i < r->n_also; i++) out[n++] = r->also[i];
    return n;
}

static bool share_a_step(const site_rec *a, const site_rec *b) {
    if (a->version != b->version) return false;
    const char *la[SITE_LABELS], *lb[SITE_LABELS];
    int na = site_labels(a, la), nb = site_labels(b, lb);
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (strcmp(la[i], lb[j]) == 0) return true;
    return false;
}

static int find(int *parent, int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}

/* A step's share of its call's modelled time (as narrow.c models it), or NAN when the call
 * has no step of that label. */
static double step_share(const fe_cost_table *t, const fe_table_call *c, const char *label) {
    for (int s = 0; s < c->n_steps; s++) {
        if (strcmp(c->steps[s].label, label) != 0) continue;
        double v = t->designs[c->steps[s].design].options[0].cost.median_ns;
        if (!c->each_step) v -= t->dispatch.median_ns;
        return v > 0 ? v : 0;
    }
    return NAN;
}

/* The modelled time of call c with every setting at its default. */
static double call_ns(const fe_cost_table *t, const fe_table_call *c) {
    double ns = c->each_step ? 0 : t->dispatch.median_ns + (c->n_steps - 1) * t->barrier.median_ns;
    for (int s = 0; s < c->n_steps; s++) {
        double v = t->designs[c->steps[s].design].options[0].cost.median_ns;
        if (!c->each_step) v -= t->dispatch.median_ns;
        ns += v > 0 ? v : 0;
    }
    return ns;
}

static bool listed(const char *const *labels, int n, const char *l) {
    for (int i = 0; i < n; i++)
        if (strcmp(labels[i], l) == 0) return true;
    return false;
}

/* The op of a label ("GEMV#12" -> "GEMV") into buf. */
static const char *op_of(const char *label, char *buf, size_t n) {
    snprintf(buf, n, "%s", label);
    char *hash = strchr(buf, '#');
    if (hash) *hash = 0;
    return buf;
}

static const char *const kind_names[FE_FOLD_KINDS] = {"epilogue", "prologue", "drain"};

/* Prices group g (its sites in the log's order) from the tables' call c. */
static void price_group(fe_fold_pricing *p, int g, const fe_cost_table *u, const fe_cost_table *f) {
    fold_group *gr = &p->groups[g];
    const fe_table_call *uc = &u->calls[gr->call], *fc = &f->calls[gr->call];
    const char *gone[64], *into[64];
    int n_gone = 0, n_into = 0;
    size_t w = 0;
    for (int i = 0; i < p->n_sites; i++) {
        const site_rec *r = &p->sites[i];
        if (r->group != g) continue;
        char a[LABEL], b[LABEL];
        if (w < sizeof gr->what)
            w += (size_t)snprintf(gr->what + w, sizeof gr->what - w, "%s%s %s into %s",
                                  w ? " + " : "", kind_names[r->kind], op_of(r->step, a, sizeof a),
                                  op_of(r->into[0], b, sizeof b));
        if (n_gone < 64 && !listed(gone, n_gone, r->step)) gone[n_gone++] = r->step;
        for (int k = 0; k < r->n_also; k++)
            if (n_gone < 64 && !listed(gone, n_gone, r->also[k])) gone[n_gone++] = r->also[k];
        for (int k = 0; k < r->n_into; k++)
            if (n_into < 64 && !listed(into, n_into, r->into[k])) into[n_into++] = r->into[k];
    }
    /* a step both taken in and gone (a chain's middle) counts as gone */
    int keep_into = 0;
    for (int i = 0; i < n_into; i++)
        if (!listed(gone, n_gone, into[i])) into[keep_into++] = into[i];
    n_into = keep_into;
    double unf = uc->each_step ? 0 : n_gone * u->barrier.median_ns, fol = 0;
    for (int i = 0; i < n_gone; i++) unf += step_share(u, uc, gone[i]);
    for (int i = 0; i < n_into; i++) {
        unf += step_share(u, uc, into[i]);
        fol += step_share(f, fc, into[i]);
    }
    gr->unfolded_ns = unf, gr->folded_ns = fol;
    gr->priced = !isnan(unf) && !isnan(fol);
    gr->kept = gr->priced && fol < unf;
}

fe_status fe_fold_price(const fe_cost_table *unfolded, const fe_cost_table *folded,
                        const fe_fold_log *log, fe_fold_pricing **out, fe_error *err) {
    *out = NULL;
    if (log->lost)
        return fe_error_set(err, FE_E_NOMEM, "fold pricing: the log lost sites (out of memory)");
    if (unfolded->n_calls != folded->n_calls)
        return fe_error_set(err, FE_E_INVALID, "fold pricing: the unfolded table has %d calls, "
                            "the folded %d; price the same calls of both graphs",
                            unfolded->n_calls, folded->n_calls);
    for (int c = 0; c < folded->n_calls; c++)
        if (strcmp(unfolded->calls[c].name, folded->calls[c].name) != 0 ||
            unfolded->calls[c].version < 0 || unfolded->calls[c].version != folded->calls[c].version)
            return fe_error_set(err, FE_E_INVALID, "fold pricing: call %d is \"%s\" (version %d) "
                                "unfolded and \"%s\" (version %d) folded; give two tables "
                                "fe_tune_graph made of the same calls", c,
                                unfolded->calls[c].name, unfolded->calls[c].version,
                                folded->calls[c].name, folded->calls[c].version);
    fe_fold_pricing *p = fe_calloc(1, sizeof *p);
    int n = log->n ? log->n : 1, nc = folded->n_calls ? folded->n_calls : 1;
    int *parent = fe_malloc((size_t)n * sizeof *parent);
    if (p) {
        p->sites = fe_malloc((size_t)n * sizeof *p->sites);
        p->groups = fe_calloc((size_t)n, sizeof *p->groups);
        p->none_ns = fe_calloc((size_t)nc, sizeof *p->none_ns);
        p->all_ns = fe_calloc((size_t)nc, sizeof *p->all_ns);
        p->priced_ns = fe_calloc((size_t)nc, sizeof *p->priced_ns);
        p->call_names = fe_calloc((size_t)nc, sizeof *p->call_names);
    }
    if (!p || !parent || !p->sites || !p->groups || !p->none_ns || !p->all_ns || !p->priced_ns ||
        !p->call_names) {
        fe_free(parent);
        fe_fold_pricing_destroy(p);
        return fe_error_set(err, FE_E_NOMEM, "fold pricing: out of memory");
    }
    if (log->n) memcpy(p->sites, log->sites, (size_t)log->n * sizeof *p->sites);
    p->n_sites = log->n;
    p->n_calls = folded->n_calls;
    for (int i = 0; i < p->n_sites; i++) parent[i] = i;
    for (int i = 0; i < p->n_sites; i++)
        for (int j = 0; j < i; j++)
            if (share_a_step(&p->sites[i], &p->sites[j])) parent[find(parent, i)] = find(parent, j);
    for (int i = 0; i < p->n_sites; i++) {
        int root = find(parent, i);
        if (root == i) { /* a new group, for the call running the site's version */
            fold_group *g = &p->groups[p->n_groups];
            g->call = -1;
            for (int c = 0; c < folded->n_calls; c++)
                if (folded->calls[c].version == p->sites[i].version) g->call = c;
            p->sites[i].group = p->n_groups++;
        } else {
            p->sites[i].group = p->sites[root].group;
        }
    }
    fe_free(parent);
    for (int c = 0; c < p->n_calls; c++) {
        snprintf(p->call_names[c], sizeof p->call_names[c], "%s", folded->calls[c].name);
        p->none_ns[c] = call_ns(unfolded, &unfolded->calls[c]);
        p->all_ns[c] = call_ns(folded, &folded->calls[c]);
        p->priced_ns[c] = p->none_ns[c];
    }
    for (int g = 0; g < p->n_groups; g++) {
        if (p->groups[g].call < 0) continue; /* a version no call of the tables ran */
        price_group(p, g, unfolded, folded);
        if (p->groups[g].kept)
            p->priced_ns[p->groups[g].call] -= p->groups[g].unfolded_ns - p->groups[g].folded_ns;
    }
    *out = p;
    return FE_OK;
}

static bool answer(fe_fold_pricing *p, const fe_fold_site *site, bool kept) {
    if (!site->key) return kept;
    for (int i = 0; i < p->n_asked; i++) /* a refused site is asked again each pass */
        if (p->asked[i].version == site->version && strcmp(p->asked[i].step, site->step) == 0 &&
            strcmp(p->asked[i].key, site->key) == 0)
            return kept;
    if (p->n_asked == p->cap_asked) {
        int cap = p->cap_asked ? 2 * p->cap_asked : 64;
        asked_rec *a = fe_realloc(p->asked, (size_t)cap * sizeof *a);
        if (!a) {
            p->asked_lost = true;
            return kept;
        }
        p->asked = a, p->cap_asked = cap;
    }
    asked_rec *r = &p->asked[p->n_asked++];
    snprintf(r->key, sizeof r->key, "%s", site->key);
    snprintf(r->step, sizeof r->step, "%s", site->step);
    r->version = site->version;
    r->kept = kept;
    return kept;
}

bool fe_fold_pricing_keeps(void *pricing, const fe_fold_site *site) {
    fe_fold_pricing *p = pricing;
    for (int i = 0; i < p->n_sites; i++)
        if (p->sites[i].version == site->version && strcmp(p->sites[i].step, site->step) == 0)
            return answer(p, site, p->groups[p->sites[i].group].kept);
    /* never priced (a fold that only opens when another is refused): not kept */
    return answer(p, site, false);
}

void fe_fold_pricing_keep_all(fe_fold_pricing *p) {
    for (int g = 0; g < p->n_groups; g++) p->groups[g].kept = true;
    for (int i = 0; i < p->n_asked; i++) p->asked[i].kept = true;
    for (int c = 0; c < p->n_calls; c++) p->priced_ns[c] = p->all_ns[c];
}

int fe_fold_pricing_groups(const fe_fold_pricing *p) { return p->n_groups; }

int fe_fold_pricing_kept(const fe_fold_pricing *p) {
    int k = 0;
    for (int g = 0; g < p->n_groups; g++) k += p->groups[g].kept;
    return k;
}

double fe_fold_pricing_call_ns(const fe_fold_pricing *p, int c, fe_fold_mode mode) {
    if (c < 0 || c >= p->n_calls) return NAN;
    return mode == FE_FOLD_NONE ? p->none_ns[c] : mode == FE_FOLD_ALL ? p->all_ns[c] : p->priced_ns[c];
}

void fe_fold_pricing_print(const fe_fold_pricing *p, FILE *f) {
    fprintf(f, "  %-14s %-60s %5s %5s %12s %12s\n", "call", "folds (kind, step into step)", "groups",
            "kept", "unfolded us", "folded us");
    bool *shown = fe_calloc((size_t)(p->n_groups ? p->n_groups : 1), sizeof *shown);
    for (int g = 0; shown && g < p->n_groups; g++) {
        if (shown[g]) continue;
        const fold_group *a = &p->groups[g];
        int sites = 0, kept = 0;
        double unf = 0, fol = 0;
        bool priced = true;
        for (int h = g; h < p->n_groups; h++) {
            const fold_group *b = &p->groups[h];
            if (shown[h] || b->call != a->call || strcmp(b->what, a->what) != 0) continue;
            shown[h] = true;
            sites++, kept += b->kept, unf += b->unfolded_ns, fol += b->folded_ns;
            priced = priced && b->priced;
        }
        char what[160];
        snprintf(what, sizeof what, "%s", a->what);
        if (strlen(what) > 60) memcpy(what + 57, "...", 4);
        fprintf(f, "  %-14.14s %-60s %5d %5d %12.1f %12.1f%s\n",
                a->call >= 0 ? p->call_names[a->call] : "(no call)", what, sites, kept, unf / 1e3,
                fol / 1e3, priced ? "" : "  (a step missing from a table: not kept)");
    }
    fe_free(shown);
    for (int c = 0; c < p->n_calls; c++)
        fprintf(f, "  %s: modelled %.3f ms with no folds, %.3f ms with all, %.3f ms priced\n",
                p->call_names[c], p->none_ns[c] / 1e6, p->all_ns[c] / 1e6, p->priced_ns[c] / 1e6);
}

fe_status fe_fold_pricing_to_profile(const fe_fold_pricing *p, fe_profile *prof, fe_error *err) {
    if (p->asked_lost)
        return fe_error_set(err, FE_E_NOMEM, "fold pricing: an answer was lost (out of memory)");
    for (int i = 0; i < p->n_asked; i++) {
        const asked_rec *r = &p->asked[i];
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(p->asked[j].key, r->key) == 0;
        if (seen) continue;
        int sites = 0, kept = 0;
        for (int j = i; j < p->n_asked; j++)
            if (strcmp(p->asked[j].key, r->key) == 0) sites++, kept += p->asked[j].kept;
        char note[96];
        snprintf(note, sizeof note, "ferrum tune: kept at %d of %d sites (priced)", kept, sites);
        fe_status st = fe_profile_put_fold(prof, r->key, 2 * kept >= sites, note, err);
        if (st != FE_OK) return st;
    }
    /* no priced compile asked: the logged sites with their groups' decisions */
    for (int i = 0; !p->n_asked && i < p->n_sites; i++) {
        const site_rec *r = &p->sites[i];
        bool seen = !r->key[0];
        for (int j = 0; j < i && !seen; j++) seen = strcmp(p->sites[j].key, r->key) == 0;
        if (seen) continue;
        int sites = 0, kept = 0;
        for (int j = i; j < p->n_sites; j++)
            if (strcmp(p->sites[j].key, r->key) == 0)
                sites++, kept += p->groups[p->sites[j].group].kept;
        char note[96];
        snprintf(note, sizeof note, "ferrum tune: kept at %d of %d sites (priced)", kept, sites);
        fe_status st = fe_profile_put_fold(prof, r->key, 2 * kept >= sites, note, err);
        if (st != FE_OK) return st;
    }
    return FE_OK;
}
