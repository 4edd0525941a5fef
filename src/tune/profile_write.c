/* tune/profile_write.c: a tune's best written as a profile entry (ferrum/tune.h), the data
 * `ferrum generate` reads back. The entry is keyed on every extent, param and operand dtype of
 * the shape tuned (so it is the most specific entry there is for it) and sets only the design
 * tunables whose best value differs from the pure default (resolve's, with no held tunable
 * and no profile); its "note" keeps the medians. The fold decisions are written the same
 * way (one per site key). The rest of the file is kept as it was; a file that is not a
 * profile is refused, never overwritten. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "tune/tune.h"

fe_status fe_tune_profile_path(const fe_device *dev, const char *root, char *buf, size_t n,
                               fe_error *err) {
    char base[900], id[17];
    fe_status st = fe_tune_cache_root(root, base, sizeof base, err);
    if (st != FE_OK) return st;
    fe_tune_device_id(dev, id);
    if (snprintf(buf, n, "%s/profiles/%s.json", base, id) >= (int)n)
        return fe_error_set(err, FE_E_INVALID, "tune: the profile path under %s is too long; "
                            "set FERRUM_CACHE_HOME to a shorter directory", base);
    return FE_OK;
}

/* The directory part of path made (mkdir -p). */
static fe_status make_parent(const char *path, fe_error *err) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return FE_OK;
    *slash = 0;
    if (fe_tune_mkdirs(dir) != 0)
        return fe_error_set(err, FE_E_IO, "tune: cannot create %s: %s; give a writable path",
                            dir, strerror(errno));
    return FE_OK;
}

/* The profile at path, or an empty one when there is no file; a file that is not a profile
 * is refused (and left as it was). */
static fe_status open_profile(const char *path, fe_profile **p, fe_error *err) {
    if (access(path, F_OK) == 0) {
        fe_error lerr;
        fe_status st = fe_profile_load(path, p, &lerr);
        if (st != FE_OK)
            return fe_error_set(err, st, "%s; fix the file or remove it (it is left as it "
                                "was)", lerr.message);
        return FE_OK;
    }
    static const char empty[] = "{\"entries\": []}";
    return fe_profile_parse(empty, sizeof empty - 1, p, err);
}

fe_status fe_tune_write_narrowing(const fe_narrowing *n, const char *path, fe_error *err) {
    fe_profile *p = NULL;
    fe_status st = open_profile(path, &p, err);
    if (st == FE_OK) st = fe_narrowing_to_profile(n, p, err);
    if (st == FE_OK) st = make_parent(path, err);
    if (st == FE_OK) st = fe_profile_save(p, path, err);
    fe_profile_destroy(p);
    return st;
}

fe_status fe_tune_write_folds(const fe_fold_pricing *fp, const char *path, fe_error *err) {
    fe_profile *p = NULL;
    fe_status st = open_profile(path, &p, err);
    if (st == FE_OK) st = fe_fold_pricing_to_profile(fp, p, err);
    if (st == FE_OK) st = make_parent(path, err);
    if (st == FE_OK) st = fe_profile_save(p, path, err);
    fe_profile_destroy(p);
    return st;
}

fe_status fe_tune_write_profile_row(const fe_tune_result *r, int i, const char *path,
                                    fe_error *err) {
    if (!r || i < 0 || i >= r->n || r->rows[i].verdict != FE_TUNE_CANDIDATE || !path)
        return fe_error_set(err, FE_E_INVALID, "tune: give a candidate row and a path");
    const fe_op *op = r->op;
    fe_profile *p = NULL;
    fe_status st = open_profile(path, &p, err);
    if (st != FE_OK) return st;
    fe_setting tun[FE_MAX_TUNABLES];
    int n_tun = 0;
    for (int t = 0; t < op->n_tunables; t++)
        if (op->tunables[t].design && r->tunables[i][t] != r->base[t])
            tun[n_tun++] = (fe_setting){op->tunables[t].name, (double)r->tunables[i][t]};
    char note[800];
    const fe_tune_row *row = &r->rows[i];
    snprintf(note, sizeof note, "ferrum tune: %s, median %.3f us (p10 %.3f, p90 %.3f%s) vs "
             "%.3f us for the default; %.*s", row->setting, row->cost.median_ns / 1e3,
             row->cost.p10_ns / 1e3, row->cost.p90_ns / 1e3,
             row->cost.reliable ? "" : ", unreliable", r->rows[0].cost.median_ns / 1e3,
             (int)strcspn(r->shape, "\n"), r->shape);
    st = fe_profile_put(p, op->name, r->when, r->n_when, tun, n_tun, note, err);
    if (st == FE_OK) st = make_parent(path, err);
    if (st == FE_OK) st = fe_profile_save(p, path, err);
    fe_profile_destroy(p);
    return st;
}

fe_status fe_tune_write_profile(const fe_tune_result *r, const char *path, fe_error *err) {
    for (int i = 0; i < r->n; i++)
        if (r->rows[i].best) return fe_tune_write_profile_row(r, i, path, err);
    bool any = false;
    for (int i = 0; i < r->n; i++) any = any || r->rows[i].verdict == FE_TUNE_CANDIDATE;
    return fe_error_set(err, FE_E_STATE, "tune: no profile written to %s: %s", path,
                        any ? "no reliable best (a faster figure was unreliable: another "
                              "process took the CPU, or the spread was wide); run again on an "
                              "idle machine with --remeasure"
                            : "no setting was measured");
}
