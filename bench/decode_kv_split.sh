#!/usr/bin/env bash
# bench/decode_kv_split.sh: a long decode with MHA's kv_split as resolve picks it (the
# defaults, --no-tuning) against kv_split = 0 held for every MHA step (items by kv head, as
# before the tunable), in one run, rounds alternating so that the host's drifting memory level
# hits both alike. A decode step's attention grows with the position, so the run decodes from
# a prompt of PROMPT tokens to PROMPT + N. Prints the machine, each round's decode tok/s with
# the load average, the medians with their spread, the defaults over kv_split = 0, and whether
# the greedy texts matched (segments sum in another order: within MHA's tolerance, not the
# same bits, so a near tie may draw another token).
#
#   bench/decode_kv_split.sh MODEL.gguf [ROUNDS (default 3)] [PROMPT (128)] [N (768)] [FERRUM]
set -euo pipefail
model=${1:?usage: bench/decode_kv_split.sh MODEL.gguf [ROUNDS] [PROMPT] [N] [FERRUM]}
rounds=${2:-3}
prompt=${3:-128}
n=${4:-768}
ferrum=${5:-build/ferrum}
[ -f "$model" ] || { echo "decode_kv_split: $model is not a file" >&2; exit 2; }
[ -x "$ferrum" ] || { echo "decode_kv_split: $ferrum is not built (make build/ferrum)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/split0.json" <<'EOF'
{"entries": [{"op": "MHA", "when": {"Sq": 1}, "tunables": {"kv_split": 0},
              "note": "bench/decode_kv_split.sh: items by kv head"}]}
EOF
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
     "$(if grep -q avx512_bf16 /proc/cpuinfo; then echo avx512 with bf16; elif grep -q avx512f /proc/cpuinfo
        then echo avx512; else echo avx2; fi), kernels FERRUM_ISA=${FERRUM_ISA:-best}"
echo "model: $model; decode from position $prompt to $((prompt + n))"

run() { # $1: the option, $2: where the text goes; prints the decode tok/s
    "$ferrum" generate "$model" --prompt-len "$prompt" -n "$n" $1 2>"$work/err" >"$2" ||
        { cat "$work/err" >&2; exit 1; }
    grep -oE 'more in [0-9.]+ s \([0-9.]+ tok/s\)' "$work/err" | grep -oE '[0-9.]+ tok/s' | cut -d' ' -f1
}

same=yes
for r in $(seq 1 "$rounds"); do
    echo "round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
    for side in split0 default; do
        if [ $side = split0 ]; then opt="--tuning $work/split0.json"; else opt=--no-tuning; fi
        t=$(run "$opt" "$work/$side.txt")
        printf '  %-8s decode %7.2f tok/s\n' $side "$t"
        echo "$side $t" >> "$work/rows"
    done
    cmp -s "$work/split0.txt" "$work/default.txt" || same=no
done
python3 - "$work/rows" "$same" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
a = [float(t) for s, t in rows if s == "split0"]
b = [float(t) for s, t in rows if s == "default"]
ratios = [y / x for x, y in zip(a, b)]
print(f"kv_split 0  median {statistics.median(a):.2f} tok/s ({min(a):.2f}..{max(a):.2f})")
print(f"default     median {statistics.median(b):.2f} tok/s ({min(b):.2f}..{max(b):.2f})")
print(f"default over kv_split 0, round by round: median {statistics.median(ratios):.3f}x "
      f"({min(ratios):.3f}..{max(ratios):.3f}); greedy texts the same: {sys.argv[2]}")
PY
