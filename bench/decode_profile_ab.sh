#!/usr/bin/env bash
# bench/decode_profile_ab.sh: two or more builds or settings of ferrum over one model's decode,
# alternated round by round, compared step by step: each run is `ferrum generate MODEL
# --prompt-len PROMPT -n TOKENS --profile`, and the decode graph's per-operator time a call (the
# profile's "us a call" of version 2), the run's decode tok/s and (PROMPT >= 8) its prompt's
# tok/s are collected; printed are the
# medians with their ranges (min-max) per setting, the first setting's order. On a host whose
# memory level drifts over minutes, the alternation is what makes two columns comparable:
# read one column against another, not against a figure of another run.
#
# A setting is a word list: NAME=VALUE environment variables for the run (FERRUM_ISA=avx2),
# plus two that the script reads itself: BIN=PATH (the ferrum binary; default build/ferrum)
# and ARGS=--opt=value (one more generate option, e.g. ARGS=--tuning=/tmp/profile.json).
#
#   bench/decode_profile_ab.sh MODEL ROUNDS "SETTING" "SETTING" ...
#   e.g. bench/decode_profile_ab.sh gemma.gguf 4 "FERRUM_ISA=avx2" "BIN=/tmp/old/build/ferrum FERRUM_ISA=avx2"
# TOKENS: the environment's TOKENS, default 129; PROMPT: its PROMPT, default 1 (a decode from
# position PROMPT: the attention over a long cache, e.g. PROMPT=3072 with ARGS=--cache-type=f16).
set -euo pipefail

model=${1:?usage: bench/decode_profile_ab.sh MODEL ROUNDS SETTING...}
rounds=${2:?usage: bench/decode_profile_ab.sh MODEL ROUNDS SETTING...}
shift 2
[ $# -ge 1 ] || { echo "decode_profile_ab: give at least one setting" >&2; exit 2; }
[ -f "$model" ] || { echo "decode_profile_ab: $model is not a file" >&2; exit 2; }
tokens=${TOKENS:-129}
prompt=${PROMPT:-1}
ctx=$(( (prompt + tokens + 255) / 256 * 256 ))
[ "$ctx" -ge 1024 ] || ctx=1024

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"

for r in $(seq "$rounds"); do
  for setting in "$@"; do
    bin=build/ferrum
    args=()
    envs=()
    for w in $setting; do
      case $w in
        BIN=*) bin=${w#BIN=} ;;
        ARGS=*) args+=("${w#ARGS=}") ;;
        *=*) envs+=("$w") ;;
        *) echo "decode_profile_ab: \"$w\" in \"$setting\" is not NAME=VALUE" >&2; exit 2 ;;
      esac
    done
    [ -x "$bin" ] || { echo "decode_profile_ab: $bin is not built" >&2; exit 2; }
    env "${envs[@]}" "$bin" generate "$model" --prompt-len "$prompt" -n "$tokens" --max-seq-len "$ctx" \
        --profile "${args[@]}" 2>&1 >/dev/null | python3 -c '
import re, sys
setting, decode = sys.argv[1], False
for line in sys.stdin:
    m = re.search(r"more in [0-9.]+ s \(([0-9.]+) tok/s\)", line)
    if m:
        print(setting + "\ttok/s\t" + m.group(1))
    m = re.search(r"prompt [0-9]+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)", line)
    if m:
        print(setting + "\tprompt tok/s\t" + m.group(1))
    if line.startswith("graph "):
        decode = "version 2" in line
        continue
    f = line.split()
    if decode and len(f) >= 4 and re.match(r"^[0-9.]+$", f[-2]) and f[-1].endswith("%"):
        name = " ".join(f[:-3])
        print(setting + "\t" + name + "\t" + f[-2])' "$setting" >> "$rows"
  done
  echo "round $r of $rounds done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done

python3 - "$rows" "$@" <<'PY'
import collections, statistics, sys
rows, settings = sys.argv[1], sys.argv[2:]
d = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(rows):
    s, name, v = line.rstrip("\n").split("\t")
    d[name][s].append(float(v))
if not d:
    sys.exit("decode_profile_ab: no profile came back (does the model decode? run one setting by hand)")
w = 24
print("%-36s" % "decode step, us a call (tok/s)", "".join("%*s" % (w, ("#%d" % (i + 1))) for i in range(len(settings))))
for i, s in enumerate(settings):
    print("  #%d: %s" % (i + 1, s))
def cell(v):
    return "%10.1f (%.0f-%.0f)" % (statistics.median(v), min(v), max(v)) if v else ""
first = settings[0]
names = sorted(d, key=lambda n: (n not in ("tok/s", "prompt tok/s"), -statistics.median(d[n][first] or [0])))
for n in names:
    print("%-36s" % n[:36], "".join("%*s" % (w, cell(d[n][s])) for s in settings))
PY
