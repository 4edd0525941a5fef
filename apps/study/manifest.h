/* apps/study/manifest.h: artifact_manifest.json, the run's provenance: git sha (and whether
 * the tree was dirty), the compiler and flags that built this binary, the CPU and ISA, the
 * workers, the kernel designs each mode compiled, the command lines that started and resumed
 * the run, its start and end, and each job's status and times. The runner rewrites it whole
 * after every job; the manifest job adds the device and the designs. */
#ifndef FE_STUDY_MANIFEST_H
#define FE_STUDY_MANIFEST_H

#include "plan.h"

void study_manifest_write(const char *run_dir, const study_config *cfg, const study_job *jobs,
                          int n);

#endif
