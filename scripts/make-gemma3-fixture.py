#!/usr/bin/env python3
"""scripts/make-gemma3-fixture.py: makes tests/fixtures/gemma3_llamacpp.txt, llama.cpp's answers
for Gemma 3 270M (the Q4_K_M GGUF scripts/fetch-model assembles), which tests/test_gemma3.c
checks ferrum against (run by hand, never in CI).

llama.cpp runs through the PyPI package llama-cpp-python, an implementation independent of
ferrum. The fixture holds:

  tok lines   llama.cpp's token ids for a set of texts (tokenize with add_bos=True and
              special=True, as a chat prompt is tokenized): ASCII, runs of spaces and
              newlines, tabs, accents, CJK, emoji, characters outside the vocabulary (byte
              fallback), invalid UTF-8 bytes, Gemma's turn markers;
  run f32     the model with its weights dequantized to F32 by gguf-py into a temporary GGUF,
              F32 KV cache: llama.cpp in float32, but for one thing it computes in f16 on
              purpose: ggml's CPU GELU (and GeGLU) reads a table indexed by x rounded to f16
              and holding f16 results (#define GGML_GELU_FP16 in ggml-cpu/vec.h), which moves
              Gemma's log-probabilities by up to ~5e-3. For the tight reference build
              llama.cpp's ggml-cpu with that line removed (ops.cpp is the one file that uses
              it) and say so with --reference-note; the note goes into the fixture's header.
              For the Gemma chat prompt below, 64 tokens greedy, one decode call a token, not
              stopping at <end_of_turn>; then prompt + continuation run again as one batch
              from an empty cache with logits_all, and for every position the top-32 ids and
              log-probabilities (log-softmax in float64 over the whole vocabulary).

The format is scripts/make-llamacpp-fixture.py's (this script reuses its run and conversion
code), plus the tok lines.

Usage:
    python3 -m venv /work/venv-lcpp && /work/venv-lcpp/bin/pip install llama-cpp-python gguf numpy
    /work/venv-lcpp/bin/python scripts/make-gemma3-fixture.py [--gguf PATH] [--out PATH]
or, over a llama-cpp-python source tree whose libraries are built (its vendored gguf-py too):
    PYTHONPATH=SRC:SRC/vendor/llama.cpp/gguf-py LLAMA_CPP_LIB_PATH=BUILD/bin \
        python3 scripts/make-gemma3-fixture.py    (with numpy, pyyaml, tqdm, requests,
                                                   diskcache, jinja2 installed)
"""

import argparse
import importlib.util
import os
import sys
import tempfile

import llama_cpp
from llama_cpp import Llama

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("FERRUM_CACHE_HOME", os.path.expanduser("~/.cache/ferrum"))
DEFAULT_GGUF = os.path.join(CACHE, "models", "gemma-3-270m-q4_k_m.gguf")
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "gemma3_llamacpp.txt")

spec = importlib.util.spec_from_file_location(
    "smollm2_fixture", os.path.join(ROOT, "scripts", "make-llamacpp-fixture.py"))
base = importlib.util.module_from_spec(spec)
spec.loader.exec_module(base)

PROMPT = ("<start_of_turn>user\nWhat is the capital of France? Answer in one sentence."
          "<end_of_turn>\n<start_of_turn>model\n")
base.PROMPT = PROMPT

TEXTS = [
    b"Hello world",
    b"Hello  world,   three   spaces and a\ttab",
    b" leading space and trailing space ",
    b"line one\nline two\n\nafter a blank line\n\n\n",
    b"caf\xc3\xa9 na\xc3\xafve \xc3\x85ngstr\xc3\xb6m r\xc3\xa9sum\xc3\xa9",
    "日本語のテキストと中文文本".encode(),
    "emoji 😀🎉 and a snowman ☃ and a clef 𝄞".encode(),
    "rare: \U0001F9EA\U0001FAE8 ꙮ ᚠᚢᚦ".encode(),
    b"bytes \xff\xfe and a cut \xe2\x82 end",
    b"def f(x):\n    return x ** 2  # square\n",
    b"<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    b"numbers 1234567890 3.14159 -42 1e-6",
    b"",
]


def esc(b):
    out = []
    for c in b:
        if c == 0x5C:
            out.append("\\\\")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x09:
            out.append("\\t")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append(f"\\x{c:02x}")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=DEFAULT_GGUF)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reference-note", default="llama.cpp as built (GGML_GELU_FP16 on)",
                    help="how the llama.cpp libraries were built, for the header")
    a = ap.parse_args()

    llm = Llama(model_path=a.gguf, n_ctx=64, vocab_only=True, verbose=False)
    toks = [(t, llm.tokenize(t, add_bos=True, special=True)) for t in TEXTS]
    del llm

    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "f32.gguf")
        base.dequantize_to_f32(a.gguf, f32)
        prompt_ids, r = base.run(f32, a.threads, llama_cpp.GGML_TYPE_F32)

    gen, lines, flips, text, vocab = r
    header = base.HEADER.format(version=llama_cpp.__version__, vocab=vocab)
    header = header.replace("smollm2_llamacpp.txt", "gemma3_llamacpp.txt")
    header = header.replace("SmolLM2-135M-Instruct Q4_1", "Gemma 3 270M Q4_K_M")
    header = header.replace("scripts/make-llamacpp-fixture.py", "scripts/make-gemma3-fixture.py")
    header = header.replace("tests/test_smollm2.c", "tests/test_gemma3.c")
    header = header.replace("the ChatML prompt", "the Gemma chat prompt")
    header += ("#   tok <C-escaped text> <n> <id>...  llama.cpp's ids for a text (BOS added, "
               "special tokens parsed)\n")
    header += f"# reference: {a.reference_note}\n"
    with open(a.out, "w") as f:
        f.write(header)
        f.write(f"model {os.path.basename(a.gguf)} {base.sha256(a.gguf)}\n")
        f.write(f"prompt {esc(PROMPT.encode())}\n")
        f.write(f"prompt_ids {len(prompt_ids)} " + " ".join(map(str, prompt_ids)) + "\n")
        for t, ids in toks:
            f.write(f"tok {esc(t)}\t{len(ids)} " + " ".join(map(str, ids)) + "\n")
        f.write(f"top_k {base.TOP_K}\n")
        f.write("run f32 the weights dequantized to F32 by gguf-py, F32 KV cache\n")
        f.write(f"gen_ids {len(gen)} " + " ".join(map(str, gen)) + "\n")
        f.write("\n".join(lines) + "\n")
    print(f"f32: {text!r}", file=sys.stderr)
    if flips:
        print(f"  note: batch argmax differs from greedy at (i, margin) {flips}", file=sys.stderr)
    print(f"{a.out}: {len(prompt_ids)} prompt ids, {len(toks)} texts, {len(gen)} tokens",
          file=sys.stderr)


if __name__ == "__main__":
    main()
