#!/usr/bin/env python3
"""apps/study/host_torch.py: the study's host comparison, PyTorch on the CPU.

`ferrum study` runs this script in its host_comparison job. It reads the layer's weights and
input as raw little-endian f32 files written by the study's reference job (order: wq wk wv wo
bq bk bv bo w_up b_up w_down b_down ln1_w ln1_b ln2_w ln2_b; matrices (out, in)), builds the
same layer as torch operations (BERT: post-LN, bidirectional, GELU erf; GPT-2: pre-LN,
causal, GELU tanh), checks its output against the study's reference output where one exists,
and times `reps` calls after a warm-up with torch.set_num_threads(threads) (stopping after
30 s once 3 are timed, as the study's own modes do).

Prints key=value lines on stdout: status=ok|unavailable, reason=..., and with ok: torch,
threads, median_ns, p10_ns, p90_ns, samples, max_err (or none). Never raises for a missing
torch: that is status=unavailable with the import error as the reason.

usage: host_torch.py --kind bert|gpt2 --seq S --hidden H --ffn I --heads N --weights FILE
                     --input FILE [--ref FILE] --reps R --threads T
"""
import argparse
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("kind", "weights", "input", "ref"):
        ap.add_argument("--" + name, default=None)
    for name in ("seq", "hidden", "ffn", "heads", "reps", "threads"):
        ap.add_argument("--" + name, type=int, required=True)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken install's OSError
        print("status=unavailable")
        print("reason=torch cannot be imported (%s: %s); run scripts/setup --torch to install it from PyPI"
              % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        return 0
    torch.set_num_threads(a.threads)
    s, h, i, nh = a.seq, a.hidden, a.ffn, a.heads
    shapes = [(h, h)] * 4 + [(h,)] * 4 + [(i, h), (i,), (h, i), (h,)] + [(h,)] * 4
    raw = open(a.weights, "rb").read()
    need = sum(4 * (p[0] * (p[1] if len(p) > 1 else 1)) for p in shapes)
    if len(raw) != need:
        print("status=unavailable")
        print("reason=%s has %d bytes, the layer needs %d" % (a.weights, len(raw), need))
        return 0
    flat = torch.frombuffer(bytearray(raw), dtype=torch.float32)
    w, off = [], 0
    for p in shapes:
        n = p[0] * (p[1] if len(p) > 1 else 1)
        w.append(flat[off:off + n].reshape(p))
        off += n
    wq, wk, wv, wo, bq, bk, bv, bo, wu, bu, wd, bd, g1, b1, g2, b2 = w
    x = torch.frombuffer(bytearray(open(a.input, "rb").read()), dtype=torch.float32).reshape(s, h)
    d = h // nh
    causal = a.kind == "gpt2"
    gelu = "none" if a.kind == "bert" else "tanh"

    def attn(u):
        q = F.linear(u, wq, bq).reshape(s, nh, d).transpose(0, 1)
        k = F.linear(u, wk, bk).reshape(s, nh, d).transpose(0, 1)
        v = F.linear(u, wv, bv).reshape(s, nh, d).transpose(0, 1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return F.linear(o.transpose(0, 1).reshape(s, h), wo, bo)

    def ffn(u):
        return F.linear(F.gelu(F.linear(u, wu, bu), approximate=gelu), wd, bd)

    def layer(x):
        if a.kind == "bert":
            x1 = F.layer_norm(x + attn(x), (h,), g1, b1, 1e-5)
            return F.layer_norm(x1 + ffn(x1), (h,), g2, b2, 1e-5)
        x1 = x + attn(F.layer_norm(x, (h,), g1, b1, 1e-5))
        return x1 + ffn(F.layer_norm(x1, (h,), g2, b2, 1e-5))

    with torch.inference_mode():
        y = layer(x)
        max_err = "none"
        if a.ref and os.path.exists(a.ref):
            ref = torch.frombuffer(bytearray(open(a.ref, "rb").read()), dtype=torch.float32).reshape(s, h)
            max_err = "%.3g" % float((y - ref).abs().max() / (1 + ref.abs().max()))
        ts = []  # at most reps calls, or 30 s with at least 3 (as the study's own modes)
        start = time.perf_counter_ns()
        while len(ts) < a.reps and (len(ts) < 3 or time.perf_counter_ns() - start < 30e9):
            t0 = time.perf_counter_ns()
            layer(x)
            ts.append(time.perf_counter_ns() - t0)
    ts.sort()
    n = len(ts)
    med = ts[n // 2] if n % 2 else (ts[n // 2 - 1] + ts[n // 2]) / 2
    print("status=ok")
    print("torch=%s" % torch.__version__)
    print("threads=%d" % torch.get_num_threads())
    print("median_ns=%d" % med)
    print("p10_ns=%d" % ts[int(0.1 * (n - 1) + 0.5)])
    print("p90_ns=%d" % ts[int(0.9 * (n - 1) + 0.5)])
    print("samples=%d" % n)
    print("max_err=%s" % max_err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
