/* device/device.c: the CPU device: features from cpuid (checked against what the OS saves,
 * via XGETBV), caches from sysfs, the ISA kernels are chosen for, and the worker pool. */
#include <cpuid.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "device/counters.h"
#include "device/cpu/pool.h"
#include "device/read_gauge.h"

struct fe_device {
    fe_device_info info;
    fe_pool *pool;
    atomic_ullong dispatches;
    fe_read_gauge gauge;
};

static const char *const isa_names[FE_ISA_COUNT] = {"scalar", "avx2", "avx512"};

const char *fe_isa_name(fe_isa isa) {
    return (unsigned)isa < FE_ISA_COUNT ? isa_names[isa] : "?";
}

fe_status fe_isa_from_name(const char *name, fe_isa *out) {
    for (int i = 0; name && i < FE_ISA_COUNT; i++) {
        if (strcmp(name, isa_names[i]) == 0) {
            *out = (fe_isa)i;
            return FE_OK;
        }
    }
    return FE_E_NOTFOUND;
}

static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* Asks Linux for this process's use of the AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA = 18): true when granted (again: asking twice is harmless). */
static bool request_amx(void) {
#ifdef __linux__
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return false;
#endif
}

/* The CPU's vendor is AMD (cpuid leaf 0: "AuthenticAMD"). */
static bool vendor_amd(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = '\0';
    return strcmp(v, "AuthenticAMD") == 0;
}

static void read_features(fe_cpu_features *f, char *name, size_t name_len) {
    unsigned a, b, c, d;
    memset(f, 0, sizeof *f);
    snprintf(name, name_len, "x86-64");
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = c & (1u << 27), avx = c & (1u << 28);
    f->fma = c & (1u << 12);
    f->f16c = c & (1u << 29);
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    bool os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = (xcr0 & 0xe6) == 0xe6;
    if (!(avx && os_ymm)) f->fma = f->f16c = false;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f->avx2 = avx && os_ymm && (b & (1u << 5));
        if (os_zmm) {
            f->avx512f = b & (1u << 16);
            f->avx512dq = b & (1u << 17);
            f->avx512bw = b & (1u << 30);
            f->avx512vl = b & (1u << 31);
            f->avx512vnni = c & (1u << 11);
        }
        /* AMX: the tiles (leaf 7 EDX bit 24) with bf16 (bit 22) or int8 (bit 25) products,
         * the OS saving the tile state (XCR0 bits 17, 18), and Linux's per-process grant of
         * it (ARCH_REQ_XCOMP_PERM for XTILEDATA; without it the first tile instruction
         * faults); used by the AVX-512 kernels only */
        const bool bf16_tiles = d & (1u << 22), int8_tiles = d & (1u << 25);
        const bool tiles = (d & (1u << 24)) && (xcr0 & 0x60000) == 0x60000 && f->avx512f &&
                           (bf16_tiles || int8_tiles) && request_amx();
        const bool sub1 = __get_cpuid_count(7, 1, &a, &b, &c, &d); /* leaf 7.1's EAX */
        f->avxvnni = sub1 && f->avx2 && (a & (1u << 4));
        f->avx512bf16 = sub1 && os_zmm && (a & (1u << 5));
        f->amx_bf16 = tiles && bf16_tiles && f->avx512bf16;
        f->amx_int8 = tiles && int8_tiles;
    }
    unsigned brand[12];
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002 + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2],
                        &brand[4 * i + 3]);
        char s[49];
        memcpy(s, brand, 48);
        s[48] = '\0';
        char *p = s;
        while (*p == ' ') p++;
        size_t n = strlen(p);
        while (n && p[n - 1] == ' ') p[--n] = '\0';
        if (n) snprintf(name, name_len, "%s", p);
    }
}

static fe_isa best_isa_of(const fe_cpu_features *f) {
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma) return FE_ISA_AVX512;
    if (f->avx2 && f->fma && f->f16c) return FE_ISA_AVX2;
    return FE_ISA_SCALAR;
}

/* Size of the cache at `level` ("Data"/"Unified"), from sysfs; 0 when unknown. */
static size_t cache_size(int level) {
    for (int idx = 0; idx < 8; idx++) {
        char path[128], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        int lv = 0;
        if (fscanf(f, "%d", &lv) != 1) lv = 0;
        fclose(f);
        if (lv != level) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        f = fopen(path, "r");
        if (!f) continue;
        bool instr = fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) == 0;
        fclose(f);
        if (instr) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        f = fopen(path, "r");
        if (!f) continue;
        size_t kb = 0;
        char unit = 'K';
        int got = fscanf(f, "%zu%c", &kb, &unit);
        fclose(f);
        if (got >= 1) return kb * (unit == 'M' ? 1024 * 1024 : 1024);
    }
    return 0;
}

int fe_device_cpus_allowed(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

fe_device_options fe_device_options_default(void) {
    return (fe_device_options){.n_workers = 0, .max_isa = -1, .pin = true};
}

/* FERRUM_WORKERS and FERRUM_ISA, where the options leave the choice to the device: a value
 * that is not one is an error, never ignored; so is a pool past the CPUs this process may
 * use (a spinning barrier over more threads than CPUs crawls: 1000 workers on 2 CPUs gave
 * no token in 120 s) and an ISA the CPU lacks (asked for by name, it is not quietly capped). */
static fe_status apply_env(fe_device_options *o, fe_isa best, bool has_avxvnni,
                           fe_error *err) {
    const char *w = getenv("FERRUM_WORKERS"), *isa = getenv("FERRUM_ISA");
    int cpus = fe_device_cpus_allowed();
    if (o->n_workers == 0 && w && *w) {
        char *end;
        errno = 0;
        long n = strtol(w, &end, 10);
        if (errno || end == w || *end || n < 1)
            return fe_error_set(err, FE_E_INVALID, "FERRUM_WORKERS=%s is not a worker "
                                "count; give 1..%d (the CPUs this process may use), or unset it "
                                "for one per CPU", w, cpus);
        if (n > cpus)
            return fe_error_set(err, FE_E_INVALID, "FERRUM_WORKERS=%s is more than the %d "
                                "CPUs this process may use (sched_getaffinity); a spinning pool "
                                "past them crawls. Give FERRUM_WORKERS=1..%d, or unset it for one "
                                "per CPU", w, cpus, cpus);
        o->n_workers = (int)n;
    }
    if (o->max_isa == -1 && isa && *isa) {
        /* avxvnni: the avx2 kernels with AVX-VNNI; avx2: the AVX2 set alone; avx512noamx:
         * the avx512 kernels without the tiles */
        const bool vnni = strcmp(isa, "avxvnni") == 0, noamx = strcmp(isa, "avx512noamx") == 0;
        fe_isa cap = noamx ? FE_ISA_AVX512 : FE_ISA_AVX2;
        if (!vnni && !noamx && fe_isa_from_name(isa, &cap) != FE_OK)
            return fe_error_set(err, FE_E_INVALID, "FERRUM_ISA=%s is not a kernel ISA; "
                                "give scalar, avx2, avxvnni, avx512 or avx512noamx (at most %s "
                                "here), or unset it for the best this CPU has", isa,
                                fe_isa_name(best));
        if (cap > best)
            return fe_error_set(err, FE_E_UNSUPPORTED, "FERRUM_ISA=%s, but this CPU runs "
                                "at most %s kernels; give FERRUM_ISA=%s or lower, or unset it",
                                isa, fe_isa_name(best), fe_isa_name(best));
        if (vnni && !has_avxvnni)
            return fe_error_set(err, FE_E_UNSUPPORTED, "FERRUM_ISA=avxvnni, but this CPU has no "
                                "AVX-VNNI (cpuid leaf 7.1 EAX bit 4); give FERRUM_ISA=%s or lower, "
                                "or unset it", fe_isa_name(best));
        o->max_isa = (int)cap;
        if (cap == FE_ISA_AVX2 && !vnni) o->no_avxvnni = true;
        if (noamx) o->no_amx = true;
    }
    if (o->n_workers == 0) o->n_workers = cpus;
    return FE_OK;
}

fe_status fe_device_create(const fe_device_options *opts, fe_device **out, fe_error *err) {
    *out = NULL;
    fe_device_options o = opts ? *opts : fe_device_options_default();
    if (o.n_workers < 0 || o.n_workers > 1024)
        return fe_error_set(err, FE_E_INVALID,
                            "device: n_workers = %d; give 1..1024, or 0 for one per CPU",
                            o.n_workers);
    if (o.max_isa >= FE_ISA_COUNT || o.max_isa < -1)
        return fe_error_set(err, FE_E_INVALID,
                            "device: max_isa = %d; give -1 (best) or an fe_isa value",
                            o.max_isa);
    fe_cpu_features features;
    char cpu_name[sizeof ((fe_device_info *)0)->cpu_name];
    read_features(&features, cpu_name, sizeof cpu_name);
    fe_status st = apply_env(&o, best_isa_of(&features), features.avxvnni, err);
    if (st != FE_OK) return st;
    fe_device *dev = fe_calloc(1, sizeof *dev);
    if (!dev) return fe_error_set(err, FE_E_NOMEM, "device: out of memory");
    fe_device_info *in = &dev->info;
    in->features = features;
    if (o.no_amx) in->features.amx_bf16 = in->features.amx_int8 = false;
    memcpy(in->cpu_name, cpu_name, sizeof in->cpu_name);
    in->best_isa = best_isa_of(&in->features);
    in->isa = o.max_isa >= 0 && o.max_isa < (int)in->best_isa ? (fe_isa)o.max_isa : in->best_isa;
    in->avxvnni = in->isa == FE_ISA_AVX2 && in->features.avxvnni && !o.no_avxvnni;
    in->dpbusd = (in->isa >= FE_ISA_AVX512 && in->features.avx512vnni) || in->avxvnni;
    /* vdpbf16ps's rate against the FMAs' (bench_gemm's peaks, 2 workers): a Zen 4 471 against
     * 235 GFLOP/s, a Xeon (Sapphire Rapids class) 214 against 428 */
    in->bf16_dot_fast = in->isa >= FE_ISA_AVX512 && in->features.avx512bf16 && vendor_amd();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    in->n_cores = ncpu > 0 ? (int)ncpu : 1;
    in->n_workers = o.n_workers;
    in->l1d_bytes = cache_size(1);
    in->l2_bytes = cache_size(2);
    in->l3_bytes = cache_size(3);
    atomic_init(&dev->dispatches, 0);
    dev->pool = fe_pool_create(in->n_workers, o.pin, err);
    if (!dev->pool) {
        fe_free(dev);
        return err ? err->status : FE_E_NOMEM;
    }
    *out = dev;
    return FE_OK;
}

void fe_device_destroy(fe_device *dev) {
    if (!dev) return;
    fe_read_gauge_free(&dev->gauge);
    fe_pool_destroy(dev->pool);
    fe_free(dev);
}

const fe_device_info *fe_device_get_info(const fe_device *dev) { return &dev->info; }

double fe_device_read_gbps(fe_device *dev, int passes) {
    return fe_read_gauge_run(&dev->gauge, dev->pool, dev->info.l3_bytes, passes);
}

void fe_device_describe(const fe_device *dev, char *buf, size_t n) {
    const fe_device_info *i = &dev->info;
    const fe_cpu_features *f = &i->features;
    snprintf(buf, n,
             "%s, %d cores, %d workers, kernels %s%s (best %s; avx512f=%d bw=%d vl=%d vnni=%d "
             "bf16=%d amx_bf16=%d amx_int8=%d avx2=%d avxvnni=%d fma=%d f16c=%d), L1d %zu KiB, "
             "L2 %zu KiB, L3 %zu KiB",
             i->cpu_name, i->n_cores, i->n_workers, fe_isa_name(i->isa),
             i->avxvnni ? "+avxvnni" : "", fe_isa_name(i->best_isa), f->avx512f, f->avx512bw,
             f->avx512vl, f->avx512vnni, f->avx512bf16, f->amx_bf16, f->amx_int8, f->avx2,
             f->avxvnni, f->fma, f->f16c, i->l1d_bytes / 1024, i->l2_bytes / 1024,
             i->l3_bytes / 1024);
}

void fe_device_dispatch(fe_device *dev, const fe_step *steps, int n_steps) {
    fe_device_dispatch_timed(dev, steps, n_steps, NULL);
}

void fe_device_dispatch_timed(fe_device *dev, const fe_step *steps, int n_steps,
                              uint64_t *step_ns) {
    atomic_fetch_add_explicit(&dev->dispatches, 1, memory_order_relaxed);
    if (n_steps > 0) fe_pool_run(dev->pool, steps, n_steps, step_ns);
}

uint64_t fe_device_dispatch_count(const fe_device *dev) {
    return atomic_load_explicit(&dev->dispatches, memory_order_relaxed);
}
