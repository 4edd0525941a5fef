#!/usr/bin/env python3
"""bench/peers_cpu_time.py: prefill tokens per CPU-second of ferrum, llama.cpp and ik_llama.cpp
on one GGUF file, for a host shared with other jobs, where wall-clock rates swing with the load
(bench/peers_llama_bench.sh is the wall-clock comparison for a quiet host).

Each program runs its prefill of PROMPT tokens R times in one process and once in another; the
difference of the two processes' CPU time (user + system, getrusage of the child) over R - 1
prefills is the CPU a prefill takes, without loading, warm-up or repacking at load. One thread
(-t 1, FERRUM_WORKERS=1) by default: a descheduled worker's peer then cannot spin at a barrier,
which would bill CPU time that did no work. Rounds alternate the programs so that a change in the
host hits them alike; each figure is the median over rounds, with the rounds beside it.

  ferrum:      FERRUM_ISA=ISA ferrum generate MODEL --prompt-len P -n 1 --check-determinism N
               (N runs of two full prefills each: the prompt and its reverse)
  llama-bench: llama-bench -m MODEL -p P -n 0 -t T -r N [-fa 1 -rtr 1 for ik_llama.cpp]
               (N timed prefills after one warm-up)

Usage:
  [LLAMA_BENCH=... IK_LLAMA_BENCH=...] bench/peers_cpu_time.py MODEL.gguf [--isa avx512,avx2]
      [--rounds 3] [--prompt 512] [--threads 1] [--ferrum build/ferrum]
The peers are not part of ferrum: build their llama-bench yourself (docs/performance.md) and
name each with its variable; a peer not named is left out. The --isa list sets FERRUM_ISA for
ferrum's runs; name AVX2-only peer builds with LLAMA_BENCH_AVX2 / IK_LLAMA_BENCH_AVX2 to pair
them with ferrum's avx2 row.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys


def child_cpu(cmd, env):
    """CPU seconds (user + system) the command and its children took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit("peers_cpu_time: %s failed (exit %d):\n%s" %
                 (" ".join(cmd), r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def programs(a):
    """(name, command for n prefills, prefills the command runs for n, env) for each program."""
    out = []
    t = str(a.threads)
    for isa in a.isa.split(","):
        env = dict(os.environ, FERRUM_ISA=isa, FERRUM_WORKERS=t)
        cmd = lambda n: [a.ferrum, "generate", a.model, "--prompt-len", str(a.prompt), "-n", "1",
                         "-t", t, "--check-determinism", str(n)]
        out.append(("ferrum-" + isa, cmd, lambda n: 2 * n, env))
    for var, name, extra in (("LLAMA_BENCH", "llama.cpp", []),
                             ("IK_LLAMA_BENCH", "ik_llama.cpp", ["-fa", "1", "-rtr", "1"]),
                             ("LLAMA_BENCH_AVX2", "llama.cpp-avx2", []),
                             ("IK_LLAMA_BENCH_AVX2", "ik_llama.cpp-avx2", ["-fa", "1", "-rtr", "1"])):
        b = os.environ.get(var)
        if not b:
            continue
        cmd = lambda n, b=b, extra=extra: [b, "-m", a.model, "-p", str(a.prompt), "-n", "0", "-t", t,
                                           "-r", str(n)] + extra
        out.append((name, cmd, lambda n: n, dict(os.environ)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--isa", default="avx512,avx2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=4, help="prefill runs of the long process (ferrum: x2)")
    p.add_argument("--ferrum", default="build/ferrum")
    a = p.parse_args()
    if not os.path.isfile(a.model):
        sys.exit("peers_cpu_time: %s is not a file" % a.model)
    if not os.access(a.ferrum, os.X_OK):
        sys.exit("peers_cpu_time: %s is not built (make build/ferrum)" % a.ferrum)
    if a.runs < 2:
        sys.exit("peers_cpu_time: --runs %d; give 2 or more (the difference of two processes)" % a.runs)
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print("machine: %s, %d CPUs; load %s; prompt %d tokens, %d thread(s), CPU time of %d minus 1 runs"
          % (model, os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3]), a.prompt,
             a.threads, a.runs))
    progs = programs(a)
    rates = {name: [] for name, *_ in progs}
    for r in range(a.rounds):
        print("round %d, load %s" % (r + 1, " ".join(open("/proc/loadavg").read().split()[:3])),
              file=sys.stderr)
        for name, cmd, count, env in progs:
            long_cpu = child_cpu(cmd(a.runs), env)
            short_cpu = child_cpu(cmd(1), env)
            prefills = count(a.runs) - count(1)
            rates[name].append(prefills * a.prompt / max(long_cpu - short_cpu, 1e-9))
    print("%-20s %s" % ("", "prefill %d tokens per CPU-second, median (rounds)" % a.prompt))
    med = {}
    for name, v in rates.items():
        med[name] = statistics.median(v)
        print("%-20s %8.1f (%s)" % (name, med[name], " ".join("%.0f" % x for x in v)))
    for ours in [n for n in med if n.startswith("ferrum-")]:
        for peer in [n for n in med if not n.startswith("ferrum-")]:
            print("%s / %s: %.2fx" % (ours, peer, med[ours] / med[peer]))


if __name__ == "__main__":
    main()
