#!/usr/bin/env bash
# bench/tuned_vs_untuned.sh: ferrum tuned against ferrum untuned on one model, in one run:
# `ferrum generate` with a profile that `ferrum tune MODEL` wrote (--tuning FILE) against
# --no-tuning, rounds alternating so that the host's drifting memory level and load hit both
# alike. Each round times a prompt of 512 tokens (-n 1, fresh cache) and a decode of 64 tokens
# after a 16-token prompt, and keeps the greedy text of the decode: the two must be the same
# (the tuner's candidates are bit-identical to the defaults, or within the op's tolerance).
# Prints the machine, each round's tok/s with the load average, the medians with their
# spread, tuned over untuned, and whether the greedy tokens matched.
#
#   bench/tuned_vs_untuned.sh MODEL.gguf [ROUNDS (default 3)] [FERRUM (default build/ferrum)]
#
# The profile: FERRUM_PROFILE=FILE names one; else `ferrum tune MODEL --write-profile=FILE`
# makes it first (warm when the cost cache holds the model's figures; cold: minutes).
set -euo pipefail
model=${1:?usage: bench/tuned_vs_untuned.sh MODEL.gguf [ROUNDS] [FERRUM]}
rounds=${2:-3}
ferrum=${3:-build/ferrum}
[ -f "$model" ] || { echo "tuned_vs_untuned: $model is not a file" >&2; exit 2; }
[ -x "$ferrum" ] || { echo "tuned_vs_untuned: $ferrum is not built (make build/ferrum)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profile=${FERRUM_PROFILE:-$work/profile.json}
if [ -z "${FERRUM_PROFILE:-}" ]; then
    echo "tuned_vs_untuned: ferrum tune $model --write-profile (the cost cache makes it fast when warm)"
    "$ferrum" tune "$model" --write-profile="$profile" > "$work/tune.out" 2>&1 ||
        { tail -5 "$work/tune.out" >&2; exit 1; }
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
     "$(if grep -q avx512_bf16 /proc/cpuinfo; then echo avx512 with bf16; elif grep -q avx512f /proc/cpuinfo
        then echo avx512; else echo avx2; fi), kernels FERRUM_ISA=${FERRUM_ISA:-best}"
echo "model: $model; profile: $profile ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["entries"]))' "$profile") entries)"

# one run each way: prefill tok/s, decode tok/s, and the decode's text into $2
run() {
    local opt=$1 text=$2 pre dec
    pre=$("$ferrum" generate "$model" --prompt-len 512 -n 1 --max-seq-len 1024 $opt 2>&1 >/dev/null)
    dec=$("$ferrum" generate "$model" --prompt-len 16 -n 64 --max-seq-len 1024 $opt 2>"$work/err" >"$text") ||
        { cat "$work/err" >&2; exit 1; }
    dec=$(cat "$work/err")
    printf '%s\n%s\n' "$pre" "$dec" | python3 -c '
import re, sys
s = sys.stdin.read()
p = re.search(r"prompt (\d+) tokens in ([0-9.]+) s", s)
d = re.search(r"more in [0-9.]+ s \(([0-9.]+) tok/s\)", s)
if not (p and d): sys.exit("tuned_vs_untuned: no summary from ferrum:\n" + s[-2000:])
print(int(p.group(1)) / float(p.group(2)), d.group(1))'
}

rows=$work/rows
same=yes
for r in $(seq 1 "$rounds"); do
    echo "round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
    for side in untuned tuned; do
        if [ $side = tuned ]; then opt="--tuning $profile"; else opt=--no-tuning; fi
        read -r pre dec < <(run "$opt" "$work/$side.txt")
        printf '  %-8s prefill %8.1f tok/s   decode %7.2f tok/s\n' $side "$pre" "$dec"
        echo "$side $pre $dec" >> "$rows"
    done
    cmp -s "$work/untuned.txt" "$work/tuned.txt" || same=no
done
python3 - "$rows" "$same" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for side in ("untuned", "tuned"):
    pre = [float(r[1]) for r in rows if r[0] == side]
    dec = [float(r[2]) for r in rows if r[0] == side]
    med[side] = (statistics.median(pre), statistics.median(dec))
    print(f"{side:8s} prefill {med[side][0]:8.1f} ({min(pre):.1f}..{max(pre):.1f})   "
          f"decode {med[side][1]:7.2f} ({min(dec):.2f}..{max(dec):.2f})")
print(f"tuned / untuned: prefill {med['tuned'][0] / med['untuned'][0]:.3f}x, "
      f"decode {med['tuned'][1] / med['untuned'][1]:.3f}x")
print("greedy tokens: " + ("the same in every round" if sys.argv[2] == "yes" else "DIFFERENT"))
EOF
