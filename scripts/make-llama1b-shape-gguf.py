#!/usr/bin/env python3
"""scripts/make-llama1b-shape-gguf.py: writes a GGUF in Llama 3.2 1B's shapes (hidden 2048, 16
layers, 32 query heads and 8 KV heads of 64, feed-forward 8192, RoPE base 500000, the head tied
to the embedding) with random BF16 weights (normal, sd 0.02; norms 1) and SmolLM2's tokenizer, for
the `ferrum serve` load bench (bench/serve_load.py), which needs a model with a tokenizer: the
random-weights preset has none, and no Llama checkpoint can be fetched here. Run by hand, never
in CI; the file is data, kept outside the repository.

The vocabulary is SmolLM2's 49152 tokens, not Llama 3's 128256: the embedding and the tied head
are 49152 x 2048 (201 MB in BF16) where Llama's are 128256 x 2048 (525 MB); every layer is the
1B's. So a decode step reads ~2.2 GB instead of ~2.5 GB.

Usage:
    python3 -m venv /tmp/ggufvenv && /tmp/ggufvenv/bin/pip install gguf numpy
    /tmp/ggufvenv/bin/python scripts/make-llama1b-shape-gguf.py \
        --tokenizer-from ~/.cache/ferrum/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out /tmp/llama1b-shape-bf16.gguf
"""

import argparse

import gguf
import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN = 2048, 16, 32, 8, 64, 8192


def bf16(rng, shape):
    """normal(0, 0.02) in BF16 (round to nearest even), as uint16"""
    x = (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)).view(np.uint32)
    return ((x + np.uint32(0x7FFF) + ((x >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer-from", required=True, help="a GGUF whose tokenizer to copy (SmolLM2's)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    src = gguf.GGUFReader(a.tokenizer_from)
    field = lambda k: src.fields[k].contents()
    vocab = len(src.fields["tokenizer.ggml.tokens"].data)

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("llama-3.2-1b-shape (random BF16 weights, SmolLM2 tokenizer)")
    w.add_block_count(LAYERS)
    w.add_context_length(8192)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(500000.0)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_tokenizer_model(field("tokenizer.ggml.model"))
    w.add_tokenizer_pre(field("tokenizer.ggml.pre"))
    w.add_token_list(field("tokenizer.ggml.tokens"))
    w.add_token_types(field("tokenizer.ggml.token_type"))
    w.add_token_merges(field("tokenizer.ggml.merges"))
    w.add_bos_token_id(field("tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(field("tokenizer.ggml.eos_token_id"))
    w.add_unk_token_id(field("tokenizer.ggml.unknown_token_id"))
    w.add_pad_token_id(field("tokenizer.ggml.padding_token_id"))
    w.add_add_bos_token(bool(field("tokenizer.ggml.add_bos_token")))
    w.add_chat_template(field("tokenizer.chat_template"))

    rng = np.random.default_rng(a.seed)
    BF = gguf.GGMLQuantizationType.BF16
    ones = np.ones(HIDDEN, dtype=np.float32)
    w.add_tensor("token_embd.weight", bf16(rng, (vocab, HIDDEN)), raw_dtype=BF)
    w.add_tensor("output_norm.weight", ones)
    kv = KV_HEADS * HEAD_DIM
    for l in range(LAYERS):
        p = f"blk.{l}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", bf16(rng, (HIDDEN, HIDDEN)), raw_dtype=BF)
        w.add_tensor(p + "attn_k.weight", bf16(rng, (kv, HIDDEN)), raw_dtype=BF)
        w.add_tensor(p + "attn_v.weight", bf16(rng, (kv, HIDDEN)), raw_dtype=BF)
        w.add_tensor(p + "attn_output.weight", bf16(rng, (HIDDEN, HIDDEN)), raw_dtype=BF)
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", bf16(rng, (FFN, HIDDEN)), raw_dtype=BF)
        w.add_tensor(p + "ffn_up.weight", bf16(rng, (FFN, HIDDEN)), raw_dtype=BF)
        w.add_tensor(p + "ffn_down.weight", bf16(rng, (HIDDEN, FFN)), raw_dtype=BF)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: Llama 3.2 1B shapes, vocab {vocab}, BF16")


if __name__ == "__main__":
    main()
