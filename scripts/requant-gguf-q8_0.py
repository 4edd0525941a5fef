#!/usr/bin/env python3
"""scripts/requant-gguf-q8_0.py: rewrites a BF16 (or F32) GGUF with every 2-D weight whose rows
are whole 32-blocks quantised to Q8_0 by gguf-py's reference quantiser, the rest (norms, 1-D
tensors) as F32, and the metadata (tokenizer included) as it was: what `llama-quantize IN OUT
Q8_0` writes, for machines without a llama.cpp build. Used for the Llama 3.2 1B-shape Q8_0 row
of docs/performance.md (from bench/peer_llamacpp.py's BF16 file). Run by hand, never in CI;
the files are data, kept outside the repository. Holds the whole output in memory (~5 GB for
the 1B shape) and takes a few minutes.

Usage:
    python3 -m venv /tmp/ggufvenv && /tmp/ggufvenv/bin/pip install gguf numpy
    /tmp/ggufvenv/bin/python scripts/requant-gguf-q8_0.py IN-bf16.gguf OUT-q8_0.gguf
"""

import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T


def value(f):
    """a reader field's value, as GGUFWriter.add_key_value takes it"""
    vt = f.types[0]
    if vt == gguf.GGUFValueType.ARRAY:
        if f.types[1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8", "replace") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]
    if vt == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8", "replace")
    return f.parts[f.data[0]].tolist()[0]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    r = gguf.GGUFReader(sys.argv[1])
    arch = value(r.fields["general.architecture"])
    w = gguf.GGUFWriter(sys.argv[2], arch)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        sub = f.types[1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, value(f), f.types[0], sub_type=sub)
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]  # numpy order: rows last
        if t.tensor_type == T.BF16:
            a = (t.data.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
        elif t.tensor_type == T.F32:
            a = np.asarray(t.data).reshape(shape)
        else:
            sys.exit(f"{t.name}: {t.tensor_type.name}; give a BF16 or F32 GGUF")
        if len(shape) == 2 and shape[-1] % 32 == 0:
            w.add_tensor(t.name, gguf.quants.quantize(a, T.Q8_0), raw_dtype=T.Q8_0)
        else:
            w.add_tensor(t.name, a.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
