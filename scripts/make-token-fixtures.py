#!/usr/bin/env python3
"""scripts/make-token-fixtures.py: makes the tokenizer reference fixtures (run by hand, never in CI).

Writes tests/fixtures/smollm2_tokens.json: token ids for a fixed set of strings, computed by an
implementation independent of ferrum -- Hugging Face `tokenizers` (Rust, Oniguruma regex) -- from
the vocabulary and merges in the SmolLM2 GGUF. A GGUF carries no tokenizer.json, so the pipeline is
rebuilt the way SmolLM2's own tokenizer.json declares it (GGUF tokenizer.ggml.pre = "smollm"):

    pre_tokenizer = Sequence[Digits(individual_digits=True),
                             ByteLevel(add_prefix_space=False, use_regex=True)]
    model = BPE(vocab, merges), decoder = ByteLevel, added tokens = token_type 3 (control) as special

llama.cpp reads "smollm" the same way (\\p{N} isolated, then the GPT-2 regex). As a cross-check the
script also asks transformers' own GGUF loader (AutoTokenizer.from_pretrained(gguf_file=...)), which
knows no "smollm" digit split, and requires it to agree on every string without a digit.

With --llama-cpp-sdist it also copies llama.cpp's vocab-only GGUFs and their test vectors for GPT-2
and Llama 3 (ggml-vocab-{gpt-2,llama-bpe}.gguf{,.inp,.out}) out of a llama-cpp-python sdist
(`pip download --no-deps --no-binary :all: llama-cpp-python`) into tests/fixtures/, after checking
each .out against `tokenizers` built from the same GGUF (Llama 3: Split(regex) + ByteLevel without
regex, ignore_merges, as in Meta's tokenizer.json).

Usage:
    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install tokenizers transformers gguf
    /tmp/tokvenv/bin/python scripts/make-token-fixtures.py [--gguf PATH] [--llama-cpp-sdist TGZ]
"""

import argparse
import json
import os
import shutil
import sys
import tarfile
import tempfile

from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CACHE = os.environ.get("FERRUM_CACHE_HOME", os.path.expanduser("~/.cache/ferrum"))
DEFAULT_GGUF = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# The strings; ids are computed twice: specials matched (allow_special) and specials as text.
CASES = [
    "",
    "Hello world",
    " Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine, don't you think? We've seen it. I'D SAY IT'S",
    "Café naïve résumé façade Ångström über straße",
    "Ελληνικά Русский язык العربية עברית हिन्दी",
    "你好，世界！这是一个测试。日本語のテキストとカタカナ 한국어 텍스트입니다",
    "Emoji: 😀👍🏽🇺🇸 and ❤️ and 👨‍👩‍👧‍👦 end",
    "🦀🦀🦀",
    "1 12 123 1234 12345 3.14159 1,000,000 0x7fff 2024-11-29",
    "٣٤٥ ² ½ Ⅻ",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\t\n",
    " \n \t\t  x   \n\n  y\r\n",
    "a  b   c    d\t\te",
    "trailing spaces   ",
    "   leading spaces",
    "nbsp\u00a0here\u3000ideo\u2009thin\u0085nel\u200bzwsp",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "int main(void) { printf(\"%d\\n\", x[i] << 2); return 0; } // ok",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n",
    "<|im_start|><|im_end|>",
    "text<|endoftext|>more",
    "< |im_start| > <|im_start <|im_end|",
    "<filename>main.c<file_sep><gh_stars>100",
    "don't 'S 'll 'LL",
    "ÄÖÜ äöü ß ẞ Ç ç Ñ ñ",
    "\u00e9 vs e\u0301 (combining)",
    "----====****////....,,,,!!!!????",
    "https://example.com/path?q=1&r=two#frag",
    "A" * 40 + " " + "ab" * 20,
    # bytes with no token are dropped before merging: the bread's last byte merges across
    "ctl\x04\x06\x13 bytes\x1d the vocabulary lacks: \U00040000 \U000b0001! [\U0001f35e\U0004b152\U0001f460",
]


def read_gguf(path):
    r = GGUFReader(path)

    def get(key, default=None):
        f = r.fields.get(key)
        return f.contents() if f is not None else default

    return {
        "pre": get("tokenizer.ggml.pre"),
        "tokens": get("tokenizer.ggml.tokens"),
        "types": get("tokenizer.ggml.token_type"),
        "merges": get("tokenizer.ggml.merges"),
        "bos": get("tokenizer.ggml.bos_token_id"),
        "eos": get("tokenizer.ggml.eos_token_id"),
    }


def build(meta, split_regex=None, ignore_merges=False):
    """A `tokenizers` pipeline from GGUF metadata: split_regex None means Digits + GPT-2 ByteLevel."""
    vocab = {t: i for i, t in enumerate(meta["tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in meta["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=ignore_merges))
    if split_regex == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif split_regex is not None:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split_regex), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(meta["tokens"][i], special=True, normalized=False)
                for i, ty in enumerate(meta["types"]) if ty == 3]
    tok.add_special_tokens(specials)
    return tok


def encode(tok, text, allow_special):
    tok.encode_special_tokens = not allow_special
    return tok.encode(text, add_special_tokens=False).ids


def smollm2(gguf_path):
    meta = read_gguf(gguf_path)
    if meta["pre"] != "smollm":
        sys.exit(f"{gguf_path}: tokenizer.ggml.pre is {meta['pre']!r}, expected 'smollm'")
    tok = build(meta)
    cases = []
    for text in CASES:
        ids = encode(tok, text, True)
        plain = encode(tok, text, False)
        # SmolLM2's vocabulary lacks 21 byte tokens (0x04, 0x06, 0x13, 0x14, 0x16, 0x1d, 0xc0,
        # 0xc1, 0xf1, 0xf2, 0xf5..0xff): those bytes are dropped, so such text cannot round-trip
        if tok.decode(plain, skip_special_tokens=False) != text and "lacks" not in text:
            sys.exit(f"reference does not round-trip {text!r}")
        cases.append({"text": text, "ids": ids, "ids_no_special": plain})

    # Cross-check against transformers' GGUF path on strings without a digit (it lacks the split).
    try:
        from transformers import AutoTokenizer
        d, f = os.path.split(gguf_path)
        hf = AutoTokenizer.from_pretrained(d, gguf_file=f)
        checked = 0
        for c in cases:
            if any(ch.isnumeric() for ch in c["text"]):
                continue
            got = hf.encode(c["text"], add_special_tokens=False)
            if got != c["ids"]:
                sys.exit(f"transformers disagrees on {c['text']!r}: {got} vs {c['ids']}")
            checked += 1
        print(f"transformers GGUF loader agrees on {checked} digit-free strings")
    except (ImportError, ModuleNotFoundError) as e:  # its GGUF reader needs torch
        print(f"transformers' GGUF loader unavailable ({e}): cross-check skipped")

    out = {
        "about": "SmolLM2-135M-Instruct token ids from HF tokenizers (see scripts/make-token-fixtures.py); "
                 "ids: special tokens matched, ids_no_special: special tokens read as text; no BOS added",
        "gguf": os.path.basename(gguf_path),
        "pre": meta["pre"],
        "n_vocab": len(meta["tokens"]),
        "bos_id": int(meta["bos"]),
        "eos_id": int(meta["eos"]),
        "cases": cases,
    }
    os.makedirs(FIXTURES, exist_ok=True)
    path = os.path.join(FIXTURES, "smollm2_tokens.json")
    with open(path, "w", encoding="utf-8") as fp:
        fp.write("{\n")
        head = [k for k in out if k != "cases"]
        for k in head:
            fp.write(f"  {json.dumps(k)}: {json.dumps(out[k], ensure_ascii=False)},\n")
        fp.write('  "cases": [\n')
        fp.write(",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in cases))
        fp.write("\n  ]\n}\n")
    print(f"wrote {path}: {len(cases)} cases")


def read_vectors(inp, out):
    sep = "\n__ggml_vocab_test__\n"
    raw = open(inp, encoding="utf-8").read()
    texts = raw[:-len(sep)].split(sep) if raw.endswith(sep) else raw.split(sep)
    lines = open(out, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(texts) != len(lines):
        sys.exit(f"{inp}: {len(texts)} inputs but {len(lines)} outputs")
    return [(t, [int(x) for x in l.split()]) for t, l in zip(texts, lines)]


def llama_cpp(sdist):
    names = {"gpt-2": ("gpt2", False), "llama-bpe": (LLAMA3_SPLIT, True)}
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(sdist) as tar:
        for name, (split, ignore) in names.items():
            files = [f"ggml-vocab-{name}.gguf{ext}" for ext in ("", ".inp", ".out")]
            for m in tar.getmembers():
                if os.path.basename(m.name) in files and "/vendor/llama.cpp/models/" in m.name:
                    tar.extract(m, tmp, filter="data")
                    shutil.copy(os.path.join(tmp, m.name), os.path.join(FIXTURES, os.path.basename(m.name)))
            g = os.path.join(FIXTURES, files[0])
            tok = build(read_gguf(g), split, ignore)
            bad = [(t, ids) for t, ids in read_vectors(g + ".inp", g + ".out")
                   if encode(tok, t, False) != ids]
            if bad:
                sys.exit(f"{files[0]}: tokenizers disagrees with llama.cpp on {bad[:3]}")
            print(f"{files[0]}: llama.cpp test vectors agree with tokenizers")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=DEFAULT_GGUF, help="the SmolLM2-135M-Instruct GGUF")
    ap.add_argument("--llama-cpp-sdist", help="a llama-cpp-python sdist (.tar.gz) to take vocab GGUFs from")
    a = ap.parse_args()
    smollm2(a.gguf)
    if a.llama_cpp_sdist:
        llama_cpp(a.llama_cpp_sdist)


if __name__ == "__main__":
    main()
