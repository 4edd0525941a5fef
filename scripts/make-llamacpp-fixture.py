#!/usr/bin/env python3
"""scripts/make-llamacpp-fixture.py: makes tests/fixtures/smollm2_llamacpp.txt, the golden
reference tests/test_smollm2.c checks ferrum against (run by hand, never in CI).

The reference comes from an implementation independent of ferrum: llama.cpp, through the PyPI
package llama-cpp-python, on the GGUF ferrum's tests use (SmolLM2-135M-Instruct Q4_1). The fixed
ChatML prompt below is tokenized by llama.cpp (the model's BOS wish honoured, special tokens
matched) and its ids recorded. Then two runs, each recorded the same way:

  q4_1  the GGUF as it is. llama.cpp multiplies Q4_1 weights by activations rounded to Q8_1
        (8 bits, one scale a block of 32; Q8_0 for the file's Q8_0 embedding/head) and keeps
        the KV cache in F16 (its defaults), so its logits carry that rounding: a noisy reference.
  f32   the same weights dequantized to F32 (gguf-py's own Q4_1 decoder, numpy) into a temporary
        GGUF, run with an F32 KV cache: llama.cpp then computes in float32 throughout, so what
        is left between it and ferrum is summation order. The tight reference.

For each run: 64 tokens generated greedily (argmax of llama.cpp's logits, one decode call a token,
not stopping at <|im_end|>: the test wants 64 positions of continuation); then the whole sequence
(prompt + that continuation) run again from an empty cache as one batch with logits_all, and for
every position i (the logits after tokens[0..i]) the top-32 token ids and log-probabilities
(log-softmax in float64 over the full vocabulary) recorded, with the top-2 margin.

Usage:
    python3 -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python gguf numpy
    /tmp/lcpp/bin/python scripts/make-llamacpp-fixture.py [--gguf PATH] [--out PATH]
"""

import argparse
import hashlib
import os
import sys
import tempfile

import gguf
import llama_cpp
import numpy as np
from llama_cpp import Llama

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("FERRUM_CACHE_HOME", os.path.expanduser("~/.cache/ferrum"))
DEFAULT_GGUF = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "smollm2_llamacpp.txt")

PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
          "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
          "<|im_start|>assistant\n")
N_GEN = 64
TOP_K = 32
N_CTX = 512

HEADER = """\
# tests/fixtures/smollm2_llamacpp.txt: llama.cpp's reference for SmolLM2-135M-Instruct Q4_1,
# made by scripts/make-llamacpp-fixture.py (llama-cpp-python {version}); checked by
# tests/test_smollm2.c. Do not edit by hand.
#
# Format: lines starting with '#' are comments; every other line is "key values...":
#   model <file name> <sha256>       the GGUF the reference ran on
#   prompt <C-escaped text>          the ChatML prompt (\\n for newline)
#   prompt_ids <n> <id>...           llama.cpp's tokenization of it (BOS only if the model asks)
#   top_k <k>                        ids per position in the runs below
# then one block per run:
#   run <name> <words...>            q4_1: the GGUF as it is (Q4_1 x Q8_1 dot products, F16 KV
#                                    cache); f32: its weights dequantized to F32, F32 KV cache
#   gen_ids <n> <id>...              llama.cpp's greedy continuation (argmax, no EOS stop)
#   pos <i> <margin> <id>:<logprob>... (k pairs, best first)
#       one line per position i = 0 .. n_prompt+n_gen-1 of prompt_ids ++ gen_ids: the
#       distribution of the token after tokens[0..i] (teacher-forced, one batch, fresh cache),
#       as log-softmax of llama.cpp's logits in float64 over all {vocab} ids, rounded to 1e-8;
#       margin = logit(top-1) - logit(top-2).
"""


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def log_softmax(row):
    x = row.astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def dequantize_to_f32(src, dst):
    """A copy of src with every tensor decoded to F32 and the metadata as it is."""
    r = gguf.GGUFReader(src)
    field = r.fields["general.architecture"]
    w = gguf.GGUFWriter(dst, bytes(field.parts[field.data[0]]).decode())
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "general.file_type",
                                              "general.alignment"):
            continue
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            et = f.types[1]
            if et == gguf.GGUFValueType.STRING:
                val = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            else:
                val = [f.parts[i][0].item() for i in f.data]
            w.add_key_value(key, val, vt, sub_type=et)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_key_value(key, bytes(f.parts[f.data[0]]).decode("utf-8"), vt)
        else:
            w.add_key_value(key, f.parts[f.data[0]][0].item(), vt)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    for t in r.tensors:
        w.add_tensor(t.name, gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def run(path, threads, kv_type):
    """The prompt's ids, the greedy continuation and the teacher-forced top-k lines for one
    model file."""
    kw = {} if kv_type is None else dict(type_k=kv_type, type_v=kv_type)
    llm = Llama(model_path=path, n_ctx=N_CTX, n_batch=N_CTX, logits_all=True, n_threads=threads,
                n_threads_batch=threads, seed=0, verbose=False, **kw)
    prompt_ids = llm.tokenize(PROMPT.encode("utf-8"), add_bos=True, special=True)
    llm.reset()
    llm.eval(prompt_ids)
    gen = []
    for _ in range(N_GEN):
        t = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        gen.append(t)
        llm.eval([t])
    ids = prompt_ids + gen
    llm.reset()
    llm.eval(ids)
    scores = np.array(llm.scores[: len(ids)], dtype=np.float32)
    lines, flips = [], []
    for i in range(len(ids)):
        row = scores[i]
        lp = log_softmax(row)
        order = np.argsort(-row, kind="stable")[:TOP_K]
        margin = float(row[order[0]]) - float(row[order[1]])
        if len(prompt_ids) - 1 <= i < len(ids) - 1 and int(order[0]) != ids[i + 1]:
            flips.append((i, round(margin, 4)))
        lines.append(f"pos {i} {margin:.6f} " + " ".join(f"{int(t)}:{lp[t]:.8f}" for t in order))
    text = llm.detokenize(gen).decode("utf-8", "replace")
    return prompt_ids, (gen, lines, flips, text, llm.n_vocab())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=DEFAULT_GGUF)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    runs = []
    prompt_ids, q = run(a.gguf, a.threads, None)
    runs.append(("q4_1", "the GGUF as it is: Q4_1 x Q8_1 dot products, F16 KV cache", q))
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "f32.gguf")
        dequantize_to_f32(a.gguf, f32)
        ids_f32, r = run(f32, a.threads, llama_cpp.GGML_TYPE_F32)
    assert ids_f32 == prompt_ids
    runs.append(("f32", "the weights dequantized to F32 by gguf-py, F32 KV cache", r))

    esc = PROMPT.replace("\\", "\\\\").replace("\n", "\\n")
    with open(a.out, "w") as f:
        f.write(HEADER.format(version=llama_cpp.__version__, vocab=q[4]))
        f.write(f"model {os.path.basename(a.gguf)} {sha256(a.gguf)}\n")
        f.write(f"prompt {esc}\n")
        f.write(f"prompt_ids {len(prompt_ids)} " + " ".join(map(str, prompt_ids)) + "\n")
        f.write(f"top_k {TOP_K}\n")
        for name, desc, (gen, lines, flips, text, _) in runs:
            f.write(f"run {name} {desc}\n")
            f.write(f"gen_ids {len(gen)} " + " ".join(map(str, gen)) + "\n")
            f.write("\n".join(lines) + "\n")
            print(f"{name}: {text!r}", file=sys.stderr)
            if flips:
                print(f"  note: the batch run's argmax differs from the greedy (one token a call) "
                      f"token at positions (i, margin) {flips}", file=sys.stderr)
    print(f"{a.out}: {len(prompt_ids)} prompt ids, {len(runs)} runs of {N_GEN} tokens",
          file=sys.stderr)


if __name__ == "__main__":
    main()
