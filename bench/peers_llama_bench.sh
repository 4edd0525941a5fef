#!/usr/bin/env bash
# bench/peers_llama_bench.sh: ferrum against llama.cpp's and ik_llama.cpp's llama-bench on one
# GGUF file, in one run: prefill of 512 tokens and decode of 64, 2 threads, rounds alternating
# (llama.cpp, ik_llama.cpp with -fa 1 -rtr 1, ferrum with its AVX-512 kernels where the CPU has
# them and its AVX2 kernels) so that a change in the machine's state hits all alike. Prints the
# machine, each round's figures (tok/s) with the load average, then the medians and ferrum's
# ratios to each peer.
#
# The peers are not part of ferrum: build their llama-bench yourself (docs/performance.md says
# how) and name them; a peer not given is left out. LLAMA_BENCH_AVX2 and IK_LLAMA_BENCH_AVX2 name
# the peers' AVX2-only builds (-DGGML_NATIVE=OFF -DGGML_AVX2=ON ... -DGGML_AVX512=OFF), which
# pair with ferrum's avx2 row on an AVX-512 machine; LLAMA_BENCH_AVXVNNI and
# IK_LLAMA_BENCH_AVXVNNI their builds with -DGGML_AVXVNNI=ON as well, which pair with ferrum's
# avxvnni row (FERRUM_ISA=avxvnni, run where the CPU has avx_vnni); on a CPU with AMX an
# avx512noamx row runs the AVX-512 kernels without the tiles (FERRUM_ISA=avx512noamx), as the
# AVX-512 machines without them do; ratios are printed for every pair present.
# Both sides are timed warm: llama-bench runs each test once untimed first, and ferrum generate
# sends one token through the model before the prompt (its default warm-up), so neither prompt
# pays for the first touch of the mapped weights.
# On a shared host, where wall-clock rates swing, bench/peers_cpu_time.py compares CPU time.
#
# DEPTH=N: the decode only, 64 tokens after N in the cache (a long prompt, a chat history):
# llama.cpp's `-d N`, ik_llama.cpp's `-gp N,64`, ferrum's prompt of N tokens. The peers keep
# K and V in f16 by default, as ferrum does (its --cache-type default). FERRUM_ARGS adds
# generate options to every ferrum run, e.g. "--cache-type f32" for the exact cache.
# LLAMA_BENCH_ARGS adds llama-bench options to llama.cpp's native run, e.g. "--repack 0" where
# its AMX path fails (llama-cpp-python 0.3.36's tree on a Xeon with AMX: a segfault in
# tinygemm_kernel_amx for q8_0).
#
#   LLAMA_BENCH=/path/llama-bench IK_LLAMA_BENCH=/path/llama-bench \
#   [LLAMA_BENCH_AVX2=/path/llama-bench IK_LLAMA_BENCH_AVX2=/path/llama-bench] [DEPTH=N] \
#   [FERRUM_ARGS="--cache-type f32"] \
#     bench/peers_llama_bench.sh MODEL.gguf [ROUNDS (default 3)] [FERRUM (default build/ferrum)]
set -euo pipefail

model=${1:?usage: bench/peers_llama_bench.sh MODEL.gguf [ROUNDS] [FERRUM]}
rounds=${2:-3}
ferrum=${3:-build/ferrum}
[ -f "$model" ] || { echo "peers_llama_bench: $model is not a file" >&2; exit 2; }
[ -x "$ferrum" ] || { echo "peers_llama_bench: $ferrum is not built (make build/ferrum)" >&2; exit 2; }

rows=$(mktemp)
tunings=$(mktemp)
trap 'rm -f "$rows" "$tunings"' EXIT

depth=${DEPTH:-0}
read -r -a extra <<< "${FERRUM_ARGS:-}"
read -r -a lcpp_extra <<< "${LLAMA_BENCH_ARGS:-}"
case $depth in ''|*[!0-9]*) echo "peers_llama_bench: DEPTH must be a whole number" >&2; exit 2 ;; esac

# peer NAME BINARY ARGS...: appends "NAME pp TOKS" and "NAME tg TOKS" (llama-bench's avg_ts);
# with DEPTH, only "NAME tg TOKS" at that depth (ik_llama.cpp's -gp, llama.cpp's -d)
peer() {
  local name=$1 bin=$2 tests=(-p 512 -n 64); shift 2
  if [ "$depth" -gt 0 ]; then
    case $name in
      ik*) tests=(-p 0 -n 0 -gp "$depth,64") ;;
      *) tests=(-p 0 -n 64 -d "$depth") ;;
    esac
  fi
  "$bin" -m "$model" "${tests[@]}" -t 2 -r 3 -o csv "$@" 2>/dev/null | python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    kind = "tg" if int(r["n_gen"]) > 0 else "pp"
    print(sys.argv[1], kind, r["avg_ts"])' "$name" >> "$rows"
}

# ours ISA: appends ferrum's prefill and decode tok/s from its summary lines, each test as
# llama-bench runs it on an empty cache: pp512 a prompt of 512 tokens (-n 1), tg64 64 tokens
# decoded from position 1 (a 1-token prompt, then 65 drawn: the 64 after the first are timed).
# (Decoding after the 512-token prompt instead would add the attention over 512+ rows that
# llama-bench's tg64 never does.)
ours() {
  local pre="" dec
  if [ "$depth" -gt 0 ]; then
    dec=$(FERRUM_ISA=$1 "$ferrum" generate "$model" --prompt-len "$depth" -n 65 "${extra[@]}" 2>&1 >/dev/null)
  else
    pre=$(FERRUM_ISA=$1 "$ferrum" generate "$model" --prompt-len 512 -n 1 --max-seq-len 1024 "${extra[@]}" 2>&1 >/dev/null)
    dec=$(FERRUM_ISA=$1 "$ferrum" generate "$model" --prompt-len 1 -n 65 --max-seq-len 1024 "${extra[@]}" 2>&1 >/dev/null)
  fi
  # the tuning each of ferrum's rows ran with, once (a profile of this device, or none)
  grep -q "^ferrum-$1 " "$tunings" 2>/dev/null ||
    printf 'ferrum-%s %s\n' "$1" "$(printf '%s\n' "$pre$dec" | grep -m1 '^ferrum: tuning: ' |
                                    sed 's/^ferrum: //')" >> "$tunings"
  python3 -c '
import re, sys
name, pre, dec = sys.argv[1:4]
p = re.search(r"prompt (\d+) tokens in ([0-9.]+) s", pre) if pre else None
d = re.search(r"more in [0-9.]+ s \(([0-9.]+) tok/s\)", dec)
if not d or (pre and not p): sys.exit("peers_llama_bench: no summary from ferrum:\n" + (pre + dec)[-2000:])
if p: print(name, "pp", int(p.group(1)) / float(p.group(2)))
print(name, "tg", d.group(1))' "ferrum-$1" "$pre" "$dec" >> "$rows"
}

isa=avx2 vnni256=0 has512=0
grep -qw avx512f /proc/cpuinfo && isa=avx512 has512=1
grep -qw avx512_bf16 /proc/cpuinfo && isa="avx512 with bf16"
# AVX-VNNI (Intel's cores since Alder Lake, with or without AVX-512): a third row, the avx2
# kernels with its int8 dot products (FERRUM_ISA=avxvnni), beside the AVX2 set alone
grep -qw avx_vnni /proc/cpuinfo && vnni256=1 && isa="$isa, avx_vnni"
# AMX (a Xeon since Sapphire Rapids): a row of the avx512 kernels without the tiles
# (FERRUM_ISA=avx512noamx), the path of the AVX-512 machines without them (Zen 4, Ice Lake)
noamx=0
[ "$has512" = 1 ] && grep -qw amx_tile /proc/cpuinfo && noamx=1 && isa="$isa, amx"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $isa;" \
     "load $(cut -d' ' -f1-3 /proc/loadavg) at the start; ferrum's options: ${extra[*]:-none}"
for r in $(seq "$rounds"); do
  echo "round $r, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  [ -n "${LLAMA_BENCH:-}" ] && peer llama.cpp "$LLAMA_BENCH" "${lcpp_extra[@]}"
  [ -n "${IK_LLAMA_BENCH:-}" ] && peer ik_llama.cpp "$IK_LLAMA_BENCH" -fa 1 -rtr 1
  [ -n "${LLAMA_BENCH_AVX2:-}" ] && peer llama.cpp-avx2 "$LLAMA_BENCH_AVX2"
  [ -n "${IK_LLAMA_BENCH_AVX2:-}" ] && peer ik_llama.cpp-avx2 "$IK_LLAMA_BENCH_AVX2" -fa 1 -rtr 1
  [ -n "${LLAMA_BENCH_AVXVNNI:-}" ] && peer llama.cpp-avxvnni "$LLAMA_BENCH_AVXVNNI"
  [ -n "${IK_LLAMA_BENCH_AVXVNNI:-}" ] && peer ik_llama.cpp-avxvnni "$IK_LLAMA_BENCH_AVXVNNI" -fa 1 -rtr 1
  [ "$has512" = 1 ] && ours avx512   # an AVX2-only CPU has no AVX-512 row
  [ "$noamx" = 1 ] && ours avx512noamx
  ours avx2
  [ "$vnni256" = 1 ] && ours avxvnni
done
python3 - "$rows" "$depth" <<'PY'
import statistics, sys
fig = {}
for line in open(sys.argv[1]):
    name, kind, v = line.split()
    fig.setdefault((name, kind), []).append(float(v))
names = []
for (n, _) in fig:
    if n not in names: names.append(n)
depth = int(sys.argv[2])
print("%-14s %24s %24s" % ("", "prefill 512 tok/s", "decode 64 tok/s" if not depth else
                           "decode 64 at %d tok/s" % depth))
med = {}
for n in names:
    cells = []
    for k in ("pp", "tg"):
        v = fig.get((n, k), [])
        med[n, k] = statistics.median(v) if v else None
        cells.append("%8.1f (%s)" % (med[n, k], " ".join("%.0f" % x for x in v)) if v else "-")
    print("%-14s %24s %24s" % (n, cells[0], cells[1]))
for ours in ("ferrum-avx512", "ferrum-avx512noamx", "ferrum-avx2", "ferrum-avxvnni"):
    if (ours, "tg") not in med: continue
    for peer in ("llama.cpp", "ik_llama.cpp", "llama.cpp-avx2", "ik_llama.cpp-avx2",
                 "llama.cpp-avxvnni", "ik_llama.cpp-avxvnni"):
        if depth and med.get((ours, "tg")) and med.get((peer, "tg")):
            print("%s / %s: decode at %d %.2fx" % (ours, peer, depth, med[ours, "tg"] / med[peer, "tg"]))
        elif (peer, "pp") in med and med[peer, "pp"]:
            print("%s / %s: prefill %.2fx, decode %.2fx" % (ours, peer, med[ours, "pp"] / med[peer, "pp"],
                                                         med[ours, "tg"] / med[peer, "tg"]))
PY
cat "$tunings"
