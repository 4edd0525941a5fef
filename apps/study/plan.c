/* apps/study/plan.c: run.conf and the job list (see plan.h). Order matters: the reference
 * before the e2e jobs that validate against it, the block jobs before the staging jobs that
 * read their CSV, the e2e and block rows and the ceilings before the roofline, every study
 * before the plots, the manifest last. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const block_names[BLK_COUNT] = {"qkv", "attention", "attn_out", "ffn_up",
                                                   "ffn_down"};
const char *study_block_name(study_block b) { return b < BLK_COUNT ? block_names[b] : "?"; }

study_kind study_family_kind(const study_family *f) {
    return strncmp(f->name, "gpt2", 4) == 0 ? STUDY_GPT2 : STUDY_BERT;
}

static void base(study_config *c, const char *profile) {
    memset(c, 0, sizeof *c);
    snprintf(c->profile, sizeof c->profile, "%s", profile);
    c->reps = 10;
    c->tune_ms = 150;
    c->seed = 1;
}

void study_config_quick(study_config *c) {
    base(c, "quick");
    c->families[c->n_families++] = study_family_find("baseline_768");
    c->seqs[c->n_seqs++] = 512;
}

void study_config_full(study_config *c) {
    base(c, "full");
    for (int i = 0; i < study_family_count(); i++) c->families[c->n_families++] = study_family_at(i);
    for (int64_t s = STUDY_SEQ_MIN; s <= STUDY_SEQ_MAX; s *= 2) c->seqs[c->n_seqs++] = s;
}

void study_config_format(const study_config *c, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "profile=%s\nrun_id=%s\nreps=%d\nworkers=%d\ntune_ms=%d\n"
                                  "seed=%llu\nfamilies=", c->profile, c->run_id, c->reps, c->workers,
                                  c->tune_ms, c->seed);
    for (int i = 0; i < c->n_families && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "", c->families[i]->name);
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "\nseqs=");
    for (int i = 0; i < c->n_seqs && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)c->seqs[i]);
    if (len < n) snprintf(buf + len, n - len, "\ncommand=%s\n", c->command);
}

bool study_config_parse(const char *text, study_config *c, char *msg, size_t msg_n) {
    memset(c, 0, sizeof *c);
    char line[2048];
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        lineno++;
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        p = e ? e + 1 : p + strlen(p);
        if (!line[0]) continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            snprintf(msg, msg_n, "run.conf line %d has no '=': each line is key=value", lineno);
            return false;
        }
        *eq = 0;
        const char *k = line, *v = eq + 1;
        if (!strcmp(k, "profile")) snprintf(c->profile, sizeof c->profile, "%s", v);
        else if (!strcmp(k, "run_id")) snprintf(c->run_id, sizeof c->run_id, "%s", v);
        else if (!strcmp(k, "reps")) c->reps = atoi(v);
        else if (!strcmp(k, "workers")) c->workers = atoi(v);
        else if (!strcmp(k, "tune_ms")) c->tune_ms = atoi(v);
        else if (!strcmp(k, "seed")) c->seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "command")) snprintf(c->command, sizeof c->command, "%s", v);
        else if (!strcmp(k, "families") || !strcmp(k, "seqs")) {
            char list[2048];
            snprintf(list, sizeof list, "%s", v);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                if (!strcmp(k, "seqs")) {
                    if (c->n_seqs == STUDY_MAX_LIST) break;
                    c->seqs[c->n_seqs++] = atoll(tok);
                    continue;
                }
                const study_family *f = study_family_find(tok);
                if (!f) {
                    snprintf(msg, msg_n, "run.conf line %d: unknown family \"%s\"", lineno, tok);
                    return false;
                }
                if (c->n_families < STUDY_MAX_LIST) c->families[c->n_families++] = f;
            }
        }
    }
    if (!c->run_id[0] || c->n_families == 0 || c->n_seqs == 0 || c->reps < 1 || c->tune_ms < 1) {
        snprintf(msg, msg_n, "run.conf lacks run_id, families, seqs, reps >= 1 or tune_ms >= 1: "
                 "it is not a study run's configuration");
        return false;
    }
    return true;
}

typedef struct { study_job *jobs; int n, cap; } job_list;

static study_job *add(job_list *l, study_job_type type, const char *study) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        study_job *j = realloc(l->jobs, (size_t)cap * sizeof *j);
        if (!j) return NULL;
        l->jobs = j, l->cap = cap;
    }
    study_job *j = &l->jobs[l->n++];
    memset(j, 0, sizeof *j);
    j->type = type;
    j->study = study;
    return j;
}

#define ADD(type_, study_, ...)                                                    \
    do {                                                                           \
        study_job *j_ = add(&l, type_, study_);                                    \
        if (!j_) goto nomem;                                                       \
        *j_ = (study_job){.type = type_, .study = study_, __VA_ARGS__};            \
    } while (0)

static void name_jobs(job_list *l) {
    for (int i = 0; i < l->n; i++) {
        study_job *j = &l->jobs[i];
        const char *f = j->family ? j->family->name : "", *k = study_kind_name(j->kind);
        const long long s = (long long)j->seq;
        switch (j->type) {
        case JOB_REFERENCE: snprintf(j->id, sizeof j->id, "reference.%s.%s.s%lld", k, f, s); break;
        case JOB_E2E: snprintf(j->id, sizeof j->id, "e2e.%s.%s.s%lld.%s", k, f, s, study_mode_name(j->mode)); break;
        case JOB_RESOURCE: snprintf(j->id, sizeof j->id, "resource.%s.%s.s%lld.%s", k, f, s, study_mode_name(j->mode)); break;
        case JOB_HOST: snprintf(j->id, sizeof j->id, "host.%s.%s.s%lld", k, f, s); break;
        case JOB_BLOCK: snprintf(j->id, sizeof j->id, "block.%s.%s.s%lld.%s", k, f, s, study_block_name(j->block)); break;
        case JOB_STAGING: snprintf(j->id, sizeof j->id, "staging.%s.%s.s%lld.%s", k, f, s, study_block_name(j->block)); break;
        case JOB_MEMCPY: snprintf(j->id, sizeof j->id, "memcpy"); break;
        case JOB_CEILINGS: snprintf(j->id, sizeof j->id, "ceilings"); break;
        case JOB_ROOFLINE: snprintf(j->id, sizeof j->id, "roofline"); break;
        case JOB_PLOTS: snprintf(j->id, sizeof j->id, "plots"); break;
        case JOB_MANIFEST: snprintf(j->id, sizeof j->id, "manifest"); break;
        default: break;
        }
    }
}

int study_plan(const study_config *c, study_job **out) {
    job_list l = {0};
    const study_mode e2e_modes[] = {STUDY_OFFLOAD, STUDY_RUNLIST, STUDY_HYBRID, STUDY_RUNLIST_EACH_STEP};
    const study_mode res_modes[] = {STUDY_OFFLOAD, STUDY_RUNLIST, STUDY_HYBRID};
    /* the tuning and staging studies run at one length per family: 512 where the run has it */
    int64_t tune_seq = c->seqs[0];
    for (int i = 0; i < c->n_seqs; i++)
        if (c->seqs[i] == 512) tune_seq = 512;
    for (int fi = 0; fi < c->n_families; fi++) {
        const study_family *f = c->families[fi];
        const study_kind k = study_family_kind(f);
        for (int si = 0; si < c->n_seqs; si++) {
            const int64_t s = c->seqs[si];
            ADD(JOB_REFERENCE, "", .family = f, .kind = k, .seq = s);
            for (size_t m = 0; m < sizeof e2e_modes / sizeof e2e_modes[0]; m++)
                ADD(JOB_E2E, "end_to_end", .family = f, .kind = k, .seq = s, .mode = e2e_modes[m]);
        }
        for (int b = 0; b < BLK_COUNT; b++)
            ADD(JOB_BLOCK, "block", .family = f, .kind = k, .seq = tune_seq, .block = (study_block)b);
        ADD(JOB_STAGING, "memory_staging", .family = f, .kind = k, .seq = tune_seq, .block = BLK_ATTN_OUT);
        ADD(JOB_STAGING, "memory_staging", .family = f, .kind = k, .seq = tune_seq, .block = BLK_FFN_DOWN);
    }
    ADD(JOB_MEMCPY, "memcpy_bandwidth", .seq = 0);
    ADD(JOB_CEILINGS, "roofline", .seq = 0);
    for (int fi = 0; fi < c->n_families; fi++) {
        const study_family *f = c->families[fi];
        const study_kind k = study_family_kind(f);
        for (int si = 0; si < c->n_seqs; si++) {
            for (size_t m = 0; m < sizeof res_modes / sizeof res_modes[0]; m++)
                ADD(JOB_RESOURCE, "resource_use", .family = f, .kind = k, .seq = c->seqs[si], .mode = res_modes[m]);
            ADD(JOB_HOST, "host_comparison", .family = f, .kind = k, .seq = c->seqs[si]);
        }
    }
    ADD(JOB_ROOFLINE, "roofline", .seq = 0);
    ADD(JOB_PLOTS, "plots", .seq = 0);
    ADD(JOB_MANIFEST, "", .seq = 0);
    name_jobs(&l);
    *out = l.jobs;
    return l.n;
nomem:
    free(l.jobs);
    *out = NULL;
    return -1;
}
