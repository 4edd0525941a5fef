#!/usr/bin/env bash
# bench/read_level_fit.sh: how one design's time alone follows the memory's read level on this
# host. Times the design (every tunable held, so only the default row) ROUNDS times a second
# apart with `ferrum tune OP ... --remeasure`, each figure with the read gauge's level around
# it (the "read" column), and prints: the fit of log(time) on log(level) (the elasticity: -1
# for a time that follows the level in full), and the spread (coefficient of variation) of the
# times as measured, moved to the median level by the level in full, and by the level capped
# at 1.2x the median (the rule src/tune/read_level.c prices figures by).
#
#   bench/read_level_fit.sh ROUNDS OP NAME=VALUE...
#   e.g. bench/read_level_fit.sh 40 GEMV case=q8_0/2048x8192i8 WIDTH=2 rows_per_step=2 \
#          int8_dot=1 prefetch=2048 batches_per_pass=1 panel=1
# FERRUM: the binary (default build/ferrum). The cost cache is a temporary directory.
set -euo pipefail
rounds=${1:?usage: bench/read_level_fit.sh ROUNDS OP NAME=VALUE...}
shift
[ $# -ge 1 ] || { echo "read_level_fit: give the op and its settings" >&2; exit 2; }
ferrum=${FERRUM:-build/ferrum}
cache=$(mktemp -d)
rows=$(mktemp)
trap 'rm -rf "$cache" "$rows"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  FERRUM_CACHE_HOME=$cache "$ferrum" tune "$@" --remeasure 2>/dev/null |
    awk '$1 == "*" && $2 == "default" { print $3, $7 } $1 == "default" && $2 + 0 > 0 { print $2, $6 }' >> "$rows"
  sleep 1
done
python3 - "$rows" <<'PY'
import math, statistics as st, sys
d = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
if len(d) < 3: sys.exit("read_level_fit: fewer than 3 figures with a read level")
t = [a for a, _ in d]; g = [b for _, b in d]; m = st.median(g)
fit = st.linear_regression([math.log(b) for b in g], [math.log(a) for a in t])
cv = lambda v: st.pstdev(v) / st.mean(v)
print(f"{len(d)} figures: time {min(t):.1f}..{max(t):.1f} us (median {st.median(t):.1f}), "
      f"read level {min(g):.1f}..{max(g):.1f} GB/s (median {m:.1f})")
print(f"elasticity (log time on log level): {fit.slope:.2f}")
print(f"spread of the times (CV): as measured {cv(t):.3f}, moved by the level {cv([a * b / m for a, b in d]):.3f}, "
      f"by the level capped at 1.2x the median {cv([a * min(b, 1.2 * m) / m for a, b in d]):.3f}")
PY
