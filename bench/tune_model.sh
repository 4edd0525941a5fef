#!/usr/bin/env bash
# bench/tune_model.sh: how long `ferrum tune MODEL` takes cold (an empty cost cache) and warm
# (the cache and the cost table of the cold run), and what it predicts against what it
# measures. Prints the machine and the load average before each run: on a shared machine a
# figure the probes refuse (another process took the CPU) is measured again, so the cold and
# the warm time both grow with the load.
#
# usage: bench/tune_model.sh [FERRUM] [MODEL ARGS...]
#   default: build/ferrum smollm2-135m --random-weights 1
#   e.g.     bench/tune_model.sh build/ferrum llama-3.2-1b --random-weights 1
# KEEP=DIR: the runs' whole outputs (cold.out, warm.out, and their stderr) are copied there.
set -euo pipefail
FERRUM=${1:-build/ferrum}
shift || true
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(smollm2-135m --random-weights 1)
CACHE=$(mktemp -d /tmp/ferrum-tune-bench-XXXXXX)
trap 'rm -rf "$CACHE"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
for run in cold warm; do
    echo "== $run run: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    t0=$(date +%s.%N)
    FERRUM_CACHE_HOME=$CACHE "$FERRUM" tune "${ARGS[@]}" > "$CACHE/$run.out" 2> "$CACHE/$run.err"
    t1=$(date +%s.%N)
    grep -E '^(device|model|cost table|unfolded|read level):|modelled|in turn|measured slower' "$CACHE/$run.out"
    echo "$run: $(echo "$t1 - $t0" | bc) s wall"
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$CACHE/$run.out" "$CACHE/$run.err" "$KEEP/"; fi
done
