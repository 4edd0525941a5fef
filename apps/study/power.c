/* apps/study/power.c: energy over a timed region, for the studies' power_w and energy_j
 * columns. Two sources, the first that works: the RAPL package counter of powercap
 * (/sys/class/powercap/intel-rapl:0/energy_uj, microjoules), then perf's power PMU (its
 * energy-pkg event read through perf_event_open on CPU 0, scaled by the event's .scale file).
 * Where neither exists or may be read (a VM, no privilege) the columns say which and why. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "jobs.h"

static const char rapl[] = "/sys/class/powercap/intel-rapl:0/energy_uj";
static const char pmu[] = "/sys/bus/event_source/devices/power";

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool read_uj(long long *v) {
    FILE *f = fopen(rapl, "r");
    if (!f) return false;
    bool ok = fscanf(f, "%lld", v) == 1;
    fclose(f);
    return ok;
}

/* the first line of dir/name into buf; false when absent */
static bool read_line(const char *name, char *buf, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", pmu, name);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    return ok;
}

/* opens energy-pkg; -1 and why on failure */
static int open_perf(double *scale, char *why, size_t n) {
    char type[32], event[64], sc[64];
    unsigned config = 0;
    if (!read_line("type", type, sizeof type)) {
        snprintf(why, n, "no perf power PMU (%s)", pmu);
        return -1;
    }
    if (!read_line("events/energy-pkg", event, sizeof event) || sscanf(event, "event=%x", &config) != 1 ||
        !read_line("events/energy-pkg.scale", sc, sizeof sc) || (*scale = atof(sc)) <= 0) {
        snprintf(why, n, "the perf power PMU has no energy-pkg event with a scale");
        return -1;
    }
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = (unsigned)atoi(type);
    attr.size = sizeof attr;
    attr.config = config;
    int fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0);
    if (fd < 0) snprintf(why, n, "perf_event_open(power/energy-pkg): %s", strerror(errno));
    return fd;
}

static bool read_count(int fd, unsigned long long *v) {
    return read(fd, v, sizeof *v) == (ssize_t)sizeof *v;
}

void study_power_begin(study_power *p) {
    memset(p, 0, sizeof *p);
    p->fd = -1;
    if (read_uj(&p->uj0)) {
        p->source = 1;
    } else {
        char perf_why[160];
        const int e = errno;
        p->fd = open_perf(&p->scale, perf_why, sizeof perf_why);
        if (p->fd >= 0 && read_count(p->fd, &p->c0)) p->source = 2;
        else
            snprintf(p->why, sizeof p->why, "unavailable: no RAPL powercap (%s: %s); %s", rapl,
                     strerror(e), p->fd >= 0 ? "the perf energy counter cannot be read" : perf_why);
    }
    p->t0 = mono_s();
}

void study_power_end(study_power *p, study_row *r) {
    const double dt = mono_s() - p->t0;
    double j = -1;
    long long uj1;
    unsigned long long c1;
    if (p->source == 1 && read_uj(&uj1) && uj1 >= p->uj0) j = (double)(uj1 - p->uj0) * 1e-6;
    else if (p->source == 2 && read_count(p->fd, &c1) && c1 >= p->c0) j = (double)(c1 - p->c0) * p->scale;
    else if (p->source)
        snprintf(p->why, sizeof p->why, "unavailable: the %s energy counter wrapped or failed",
                 p->source == 1 ? "RAPL" : "perf");
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    if (j >= 0 && dt > 0) {
        snprintf(r->energy_j, sizeof r->energy_j, "%.6g", r->samples > 0 ? j / r->samples : j);
        snprintf(r->power_w, sizeof r->power_w, "%.4g", j / dt);
        return;
    }
    snprintf(r->power_w, sizeof r->power_w, "%s", p->why);
    snprintf(r->energy_j, sizeof r->energy_j, "%s", p->why);
}
