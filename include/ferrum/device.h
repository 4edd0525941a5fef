/* ferrum/device.h: the device (this machine's CPU: a pool of cores) and dispatch.
 *
 * A device describes its ISA (from cpuid), worker count and caches, and owns a persistent
 * pool of pinned workers. A dispatch hands the pool a list of steps; a step uses WIDTH
 * workers (ith = 0..width-1) and steps are separated by a barrier. The caller's thread is
 * worker 0. One dispatch at a time per device. No globals: a device is passed explicitly. */
#ifndef FERRUM_DEVICE_H
#define FERRUM_DEVICE_H

#include "ferrum/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel instruction sets, in increasing order of capability. */
typedef enum fe_isa { FE_ISA_SCALAR = 0, FE_ISA_AVX2, FE_ISA_AVX512, FE_ISA_COUNT } fe_isa;

FE_API const char *fe_isa_name(fe_isa isa); /* "scalar", "avx2", "avx512" */
FE_API fe_status fe_isa_from_name(const char *name, fe_isa *out);

typedef struct fe_cpu_features {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
    bool avxvnni;  /* AVX-VNNI: vpdpbusd on ymm, VEX-encoded (Intel's cores since Alder Lake,
                      Zen 5), the int8 dot product of AVX2 machines without AVX-512 */
    bool amx_bf16; /* AMX tiles with TDPBF16PS, saved by the OS and granted to this process */
    bool amx_int8; /* ... and with TDPBSSD / TDPBSUD (int8 products, int32 sums) */
} fe_cpu_features;

typedef struct fe_device_info {
    char cpu_name[64];
    fe_cpu_features features; /* what the CPU and OS support, less the AMX tiles where the
                                 options withheld them (no_amx) */
    fe_isa best_isa;          /* the best kernel ISA the machine runs */
    fe_isa isa;               /* the ISA kernels are chosen for (<= best_isa) */
    bool avxvnni;             /* the avx2 kernels dot int8 by AVX-VNNI: isa is avx2, the CPU
                                 has it and nothing withheld it (no_avxvnni) */
    bool dpbusd;              /* the kernels' ISA dots int8 by vpdpbusd: AVX512-VNNI's on
                                 avx512, AVX-VNNI's on avx2 (avxvnni) */
    bool bf16_dot_fast;       /* the kernels' ISA dots bf16 by vdpbf16ps faster than f32 FMAs
                                 do the same products: avx512 with avx512bf16 on AMD's cores
                                 (a Zen 4: 471 against 235 GFLOP/s); Intel's run it at half
                                 the FMAs' rate (a Xeon: 214 against 428) */
    int n_cores;              /* online CPUs */
    int n_workers;            /* workers in the pool */
    size_t l1d_bytes, l2_bytes, l3_bytes; /* per core for L1/L2, total for L3; 0 unknown */
} fe_device_info;

/* Left at their defaults, n_workers, max_isa, no_avxvnni and no_amx come from the environment
 * where it says: FERRUM_WORKERS=N (1..the CPUs this process may use) and
 * FERRUM_ISA=scalar|avx2|avxvnni|avx512|avx512noamx (at most what the CPU has; avx2 is the
 * AVX2 set alone, as an AVX2-only Zen 3 runs it, avxvnni the avx2 kernels with AVX-VNNI's int8
 * dot products, avx512noamx the avx512 kernels without the AMX tiles, as a Zen 4 or an Ice
 * Lake runs them). fe_device_create refuses a value there that is not one, a worker count past the
 * allowed CPUs and an ISA the CPU lacks, naming the variable; it never ignores one. A count
 * given here is the caller's: it may pass the CPUs (tests of odd splits do; the pool then
 * spins less and runs slowly); the CLI refuses that from -t. */
typedef struct fe_device_options {
    int n_workers;   /* 0: FERRUM_WORKERS, else one per CPU this process may use */
    int max_isa;     /* -1: FERRUM_ISA, else the best the machine has; a cap otherwise */
    bool no_avxvnni; /* the avx2 kernels without AVX-VNNI where the CPU has it (as
                        FERRUM_ISA=avx2 asks; false: used wherever the CPU has it) */
    bool no_amx;     /* no AMX tiles where the CPU has them (as FERRUM_ISA=avx512noamx asks):
                        the device's features then say amx_bf16 = amx_int8 = false */
    bool pin;        /* pin each pool thread to one CPU */
} fe_device_options;

typedef struct fe_device fe_device;

FE_API fe_device_options fe_device_options_default(void);
/* The CPUs this process may run on (sched_getaffinity; the online CPUs if that fails), >= 1. */
FE_API int fe_device_cpus_allowed(void);
/* Creates a device and its pool. *out is NULL on error. Caller fe_device_destroy()s. */
FE_API fe_status fe_device_create(const fe_device_options *opts, fe_device **out, fe_error *err);
FE_API void fe_device_destroy(fe_device *dev);
/* Borrowed; lives as long as the device. */
FE_API const fe_device_info *fe_device_get_info(const fe_device *dev);
/* One line describing the device: "AMD EPYC, 2 workers, avx512 (...), L1d 48 KiB, ..." */
FE_API void fe_device_describe(const fe_device *dev, char *buf, size_t n);

typedef void (*fe_step_fn)(void *ctx, int ith, int nth);
typedef struct fe_step {
    fe_step_fn fn;
    void *ctx;
    int width; /* workers this step uses, 1..n_workers; larger values are clamped */
} fe_step;

/* Runs the steps in order, each on its width, a barrier after each; returns when all are done.
 * The steps array and contexts are borrowed for the call only. */
FE_API void fe_device_dispatch(fe_device *dev, const fe_step *steps, int n_steps);
/* The same, adding each step's wall time in ns to step_ns[s] (from the barrier before the
 * step to the one after it, on the dispatching thread's clock). */
FE_API void fe_device_dispatch_timed(fe_device *dev, const fe_step *steps, int n_steps,
                                     uint64_t *step_ns);

/* The memory's read rate now, GB/s (1e9 bytes a second): the best of `passes` passes in
 * which every worker sums its share of the next quarter of a buffer of four L3s (256 MiB to
 * 1 GiB, so a pass reads what three L3s of reads have passed since), made on first use and
 * kept until fe_device_destroy; 0 when it cannot be had. A gauge, not a roof:
 * its figure is compared with its own at another moment (a tuner reads it beside each
 * figure it takes, so that figures taken minutes apart, on a host whose memory level
 * drifts, can be priced at one level). One dispatch a pass. */
FE_API double fe_device_read_gbps(fe_device *dev, int passes);

#ifdef __cplusplus
}
#endif
#endif
