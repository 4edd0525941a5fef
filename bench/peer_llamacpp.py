#!/usr/bin/env python3
"""bench/peer_llamacpp.py: ferrum against llama.cpp, its peer, on the same GGUF files in one run
(optional: not part of `make bench` or CI; needs llama-cpp-python, gguf and numpy from PyPI).

Models:
  llama  random weights in Llama 3.2 1B's shapes (vocab 128256, hidden 2048, 16 layers, 32 heads,
         8 KV heads, FFN 8192, rope theta 500000, llama3 rope scaling: factor 32, low 1, high 4,
         original context 8192; tied embeddings), written as a BF16 GGUF the way llama.cpp's
         converter writes one: matrices BF16, norms F32, the llama3 scaling as the F32 tensor
         rope_freqs.weight (llama.cpp reads no llama3 scaling metadata), and a real Llama 3
         tokenizer copied from tests/fixtures/ggml-vocab-llama-bpe.gguf (both programs load the
         tokenizer even though the prompts here are ids). Matrices are drawn N(0, 1/fan_in), the
         embedding N(0, 1), norms near 1. ferrum applies rope_freqs.weight since 5c8f614.
  smollm2  the real SmolLM2-135M-Instruct Q4_1 GGUF (scripts/fetch-model).

For each: llama.cpp (llama-cpp-python, n_threads = n_threads_batch = 2, n_ctx 1024, n_batch 512,
its defaults otherwise: F16 KV cache, no flash attention) prefill tok/s at 128 and 512 prompt
tokens (one llama_decode of the whole prompt, fresh cache) and decode tok/s over 64 tokens after
that prompt (greedy, one token a call); and ferrum's `build/ferrum generate FILE --prompt-len N
--num-tokens 64 --max-seq-len 1024`, its stderr summary parsed (prefill tok/s; decode tok/s over
the 63 tokens after the one prefill draws). The runs alternate, llama.cpp then ferrum, so that a
change in the machine's state hits both alike; each figure is the median of --reps. Prints the
machine, a table per model with the ratios ferrum/llama.cpp (> 1: ferrum faster), the load
average and the CPU share other processes took during the run.

Usage:
    python3 -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python gguf numpy
    make build/ferrum
    /tmp/lcpp/bin/python bench/peer_llamacpp.py [--models llama,smollm2] [--reps 3]
        [--gguf-dir /tmp] [--ferrum build/ferrum] [--keep] [--wait-quiet 600]
"""

import argparse
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("FERRUM_CACHE_HOME", os.path.expanduser("~/.cache/ferrum"))
SMOLLM2 = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
LLAMA3_VOCAB = os.path.join(ROOT, "tests", "fixtures", "ggml-vocab-llama-bpe.gguf")
PROMPT_LENS = (128, 512)
N_DECODE = 64
N_CTX = 1024
THREADS = 2

# Llama 3.2 1B
L = dict(vocab=128256, hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, theta=500000.0,
         eps=1e-5, ctx=131072, factor=32.0, low=1.0, high=4.0, orig=8192)


def machine():
    model = "?"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    isa = [x for x in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                       "avx512_bf16", "amx_bf16") if x in flags]
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{model}, {os.cpu_count()} CPUs, {mem:.0f} GiB, {platform.machine()} "
            f"({' '.join(isa)}), Linux {platform.release()}")


# ---- the random Llama 3.2 1B-shaped BF16 GGUF ----

def to_bf16(x):
    """float32 -> bfloat16 bits (uint16), round to nearest even."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def llama3_rope_factors(head_dim):
    """What llama.cpp's convert_hf_to_gguf.py writes as rope_freqs.weight for rope_type llama3."""
    freqs = 1.0 / (L["theta"] ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    low_wavelen = L["orig"] / L["low"]
    high_wavelen = L["orig"] / L["high"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(L["factor"])
        else:
            smooth = (L["orig"] / wavelen - L["low"]) / (L["high"] - L["low"])
            out.append(1 / ((1 - smooth) / L["factor"] + smooth))
    return np.array(out, dtype=np.float32)


def copy_tokenizer(w, path):
    """The tokenizer.ggml.* entries of a vocab-only GGUF, as they are."""
    import gguf
    r = gguf.GGUFReader(path)
    for key, field in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vt = field.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            et = field.types[1]
            if et == gguf.GGUFValueType.STRING:
                val = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                val = [field.parts[i][0].item() for i in field.data]
            w.add_key_value(key, val, vt, sub_type=et)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_key_value(key, bytes(field.parts[field.data[0]]).decode("utf-8"), vt)
        else:
            w.add_key_value(key, field.parts[field.data[0]][0].item(), vt)
    n = len(r.fields["tokenizer.ggml.tokens"].data)
    if n != L["vocab"]:
        raise SystemExit(f"{path}: {n} tokens, expected {L['vocab']}")


def write_llama_gguf(path, seed=1):
    import gguf
    hd = L["hidden"] // L["heads"]
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("random Llama 3.2 1B shape (bench/peer_llamacpp.py)")
    w.add_context_length(L["ctx"])
    w.add_embedding_length(L["hidden"])
    w.add_block_count(L["layers"])
    w.add_feed_forward_length(L["ffn"])
    w.add_head_count(L["heads"])
    w.add_head_count_kv(L["kv_heads"])
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(L["theta"])
    w.add_layer_norm_rms_eps(L["eps"])
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_vocab_size(L["vocab"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    copy_tokenizer(w, LLAMA3_VOCAB)

    rng = np.random.default_rng(seed)
    bf16 = gguf.GGMLQuantizationType.BF16

    def mat(name, rows, cols):
        x = rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(1 / math.sqrt(cols))
        w.add_tensor(name, to_bf16(x), raw_dtype=bf16)

    def norm(name):
        x = (1.0 + 0.1 * rng.standard_normal(L["hidden"], dtype=np.float32)).astype(np.float32)
        w.add_tensor(name, x)

    d, q, kv, f = L["hidden"], L["heads"] * hd, L["kv_heads"] * hd, L["ffn"]
    emb = rng.standard_normal((L["vocab"], d), dtype=np.float32)
    w.add_tensor("token_embd.weight", to_bf16(emb), raw_dtype=bf16)  # tied: no output.weight
    del emb
    w.add_tensor("rope_freqs.weight", llama3_rope_factors(hd))
    norm("output_norm.weight")
    for i in range(L["layers"]):
        b = f"blk.{i}."
        norm(b + "attn_norm.weight")
        mat(b + "attn_q.weight", q, d)
        mat(b + "attn_k.weight", kv, d)
        mat(b + "attn_v.weight", kv, d)
        mat(b + "attn_output.weight", d, q)
        norm(b + "ffn_norm.weight")
        mat(b + "ffn_gate.weight", f, d)
        mat(b + "ffn_up.weight", f, d)
        mat(b + "ffn_down.weight", d, f)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---- measuring ----

def prompt_ids(n, vocab, salt):
    x = (np.arange(n, dtype=np.int64) * 7919 + 17 + salt * 104729) % min(vocab, 100000)
    return [int(t) for t in x]


def last_argmax(llm, V):
    """Greedy: the argmax of the last evaluated row (without logits_all, llama-cpp-python keeps no
    copy, so read llama_get_logits directly)."""
    return int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(V,))))


class LlamaCpp:
    """llama.cpp on one file, loaded once; measure() is one prefill and one decode."""

    def __init__(self, path):
        from llama_cpp import Llama
        self.llm = Llama(model_path=path, n_ctx=N_CTX, n_batch=512, n_threads=THREADS,
                         n_threads_batch=THREADS, logits_all=False, verbose=False)
        self.V = self.llm.n_vocab()
        self.llm.reset()
        self.llm.eval(prompt_ids(16, self.V, 99))  # warm the mapping and the threads

    def measure(self, n, rep):
        llm = self.llm
        llm.reset()  # a fresh sequence: eval() drops the cache rows past n_tokens
        toks = prompt_ids(n, self.V, rep)
        t0 = time.perf_counter()
        llm.eval(toks)
        prefill = n / (time.perf_counter() - t0)
        t = last_argmax(llm, self.V)
        t0 = time.perf_counter()
        for _ in range(N_DECODE):
            llm.eval([t])
            t = last_argmax(llm, self.V)
        return prefill, N_DECODE / (time.perf_counter() - t0)


SUMMARY = re.compile(r"prompt (\d+) tokens, time to first token ([\d.]+) s, prefill ([\d.]+) tok/s"
                     r" \| decode (\d+) tokens, ([\d.]+) tok/s")


def ferrum_measure(ferrum, path, n, rep):
    """One `ferrum generate` run: (prefill tok/s, decode tok/s) from its summary, and the command."""
    cmd = [ferrum, "generate", path, "--prompt-len", str(n), "--num-tokens", str(N_DECODE),
           "--max-seq-len", str(N_CTX), "--seed", str(rep)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = SUMMARY.search(p.stderr)
    if p.returncode != 0 or not m:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return (float(m.group(3)), float(m.group(5))), " ".join(cmd)


def compare(path, reps):
    """Both programs on one file, runs interleaved (llama.cpp, ferrum, llama.cpp, ...) so that a
    change in the machine's state hits both alike. Medians per prompt length."""
    peer = LlamaCpp(path)
    ours, theirs, cmd = {}, {}, ""
    for n in PROMPT_LENS:
        a, b = [], []
        for r in range(reps):
            b.append(peer.measure(n, r))
            res, cmd = ferrum_measure(FERRUM, path, n, r)
            a.append(res)
        ours[n] = tuple(statistics.median(x[k] for x in a) for k in (0, 1))
        theirs[n] = tuple(statistics.median(x[k] for x in b) for k in (0, 1))
    del peer
    return ours, theirs, cmd


def busy_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)  # busy (all but idle, iowait), total


def wait_quiet(limit_s):
    """Waits (up to limit_s) for the 1-minute load average to fall under 0.5."""
    t0 = time.time()
    while os.getloadavg()[0] > 0.5 and time.time() - t0 < limit_s:
        time.sleep(5)


def report(name, path, ours, peer):
    print(f"\n{name}: {path}")
    print(f"| {'measure':<20} | {'ferrum tok/s':>12} | {'llama.cpp tok/s':>15} | {'ferrum/llama.cpp':>16} |")
    print(f"|{'-' * 22}|{'-' * 14}|{'-' * 17}|{'-' * 18}|")
    for n in PROMPT_LENS:
        for k, label in ((0, f"prefill {n}"), (1, f"decode 64 after {n}")):
            a, b = ours[n][k], peer[n][k]
            print(f"| {label:<20} | {a:12.1f} | {b:15.1f} | {a / b:16.2f} |")


def main():
    global FERRUM
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="llama,smollm2")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gguf-dir", default="/tmp")
    ap.add_argument("--ferrum", default=os.path.join(ROOT, "build", "ferrum"))
    ap.add_argument("--keep", action="store_true", help="keep (and reuse) the random GGUF")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="first wait up to S seconds for the load average to fall under 0.5")
    a = ap.parse_args()
    FERRUM = a.ferrum
    import llama_cpp
    from llama_cpp import llama_cpp as C
    print(f"machine: {machine()}")
    print(f"llama.cpp system info: {C.llama_print_system_info().decode().strip()}")
    print(f"llama-cpp-python {llama_cpp.__version__}, n_threads {THREADS}; ferrum {a.ferrum}")
    paths = []
    for name in a.models.split(","):
        if name == "llama":
            path = os.path.join(a.gguf_dir, "ferrum-peer-llama-3.2-1b-shape-bf16.gguf")
            if not (a.keep and os.path.exists(path)):
                t0 = time.time()
                write_llama_gguf(path)
                print(f"wrote {path} ({os.path.getsize(path) / 1e9:.2f} GB) in "
                      f"{time.time() - t0:.0f} s", file=sys.stderr)
            paths.append((name, "Llama 3.2 1B shape, BF16 random weights", path))
        elif name == "smollm2":
            if not os.path.exists(SMOLLM2):
                print(f"\nSmolLM2: {SMOLLM2} is missing (scripts/fetch-model)")
                continue
            paths.append((name, "SmolLM2-135M-Instruct Q4_1 (real weights)", SMOLLM2))
        else:
            raise SystemExit(f"unknown model {name}; give llama and/or smollm2")
    if a.wait_quiet:
        wait_quiet(a.wait_quiet)
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.2f}")
    busy0, total0 = busy_jiffies()
    cpu0 = sum(os.times()[:4])
    for name, title, path in paths:
        ours, peer, cmd = compare(path, a.reps)
        report(title, path, ours, peer)
        print(f"ferrum command (last): {cmd}")
        if name == "llama" and not a.keep:
            os.remove(path)
    busy1, total1 = busy_jiffies()
    hz = os.sysconf("SC_CLK_TCK")
    others = (busy1 - busy0) / hz - (sum(os.times()[:4]) - cpu0)
    print(f"\nload average (1 min) at end: {os.getloadavg()[0]:.2f}; other processes used "
          f"{100 * max(0.0, others) / ((total1 - total0) / hz):.0f}% of the machine's CPU time "
          f"during the run")


FERRUM = None

if __name__ == "__main__":
    main()
