#!/usr/bin/env python3
"""scripts/make-unigram-fixture.py: writes tests/fixtures/unigram_tiny.gguf,
tests/fixtures/unigram_tiny_tokenizer.json and tests/fixtures/unigram_tiny.json, the reference
test_unigram_gguf checks ferrum's SentencePiece Unigram loaders (GGUF tokenizer.ggml.model "t5",
and tokenizer.json's Unigram model) and the SentencePiece normaliser against.

It trains a small Unigram model with the `sentencepiece` package (PyPI) on the text below, with
byte fallback and SentencePiece's default normalisation rule, nmt_nfkc (a precompiled charsmap:
NFKC plus NMT's whitespace and control-character rules), writes its vocabulary as llama.cpp's
converter writes a T5 vocabulary into GGUF (with the `gguf` package from PyPI: tokens, scores,
token types, unknown/BOS/EOS ids, add_space_prefix, remove_extra_whitespaces and the
precompiled charsmap) and, for each test text, the ids sentencepiece gives
(`encode(text)`, no BOS/EOS). The tokenizer.json is the pipeline the `tokenizers` package
(PyPI) builds from a SentencePiece Unigram model (its SentencePieceUnigramTokenizer.from_spm:
Precompiled charsmap, spaces runs replaced by one, Metaspace "always"), with `tokenizers`' ids
for the same texts ("hf_ids"; they differ from sentencepiece's where the pipelines do, e.g. a
trailing space).
    python3 -m venv /tmp/venv-spm && /tmp/venv-spm/bin/pip install sentencepiece protobuf gguf tokenizers
    /tmp/venv-spm/bin/python scripts/make-unigram-fixture.py [OUT_DIR]
Training is deterministic for one sentencepiece version (the JSON records it); the committed
files are the reference, this script says how they were made.
"""
import json
import os
import sys
import tempfile

CORPUS = """The quick brown fox jumps over the lazy dog.
A man is eating food. A man is riding a horse. The new movie is awesome.
Where is the station, and when does the next train leave for the city?
Tokenizers split text into pieces; a unigram model scores every piece.
SentencePiece treats the input as a raw stream and escapes spaces as a meta symbol.
Café, naïve, résumé and façade keep their accents after NFKC normalisation.
Full-width ＡＢＣ letters and ① circled digits are folded by NFKC.
Numbers like 3.14159, 2026 and 1,000,000 appear in text too.
the the the cat sat on the mat while the dog slept by the door
In the beginning the encoder reads every sentence of the batch at once.
""" * 8

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "a man is eating food",
    "  leading and   inner   spaces  and trailing  ",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9",
    "Cafe\u0301 (e + combining acute: NFKC composes it)",
    "\uff21\uff22\uff23 full width and \u2460 circled",
    "tabs\tand\nnewlines\r\nbecome spaces",
    "\u65e5\u672c\u8a9e and emoji \U0001F600 fall back to bytes",
    "Zero\u200bwidth and soft\u00adhyphen",
    "x",
    "",
    "   ",
    "numbers 3.14159 and 1,000,000",
    "\u2026 ellipsis and \ufb01 ligature",
    "SentencePiece tokenizes text!",
]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    import gguf
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(CORPUS)
        prefix = os.path.join(tmp, "tiny")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, model_type="unigram", vocab_size=400,
            byte_fallback=True, normalization_rule_name="nmt_nfkc", character_coverage=1.0,
            num_threads=1, seed_sentencepiece_size=100000, shuffle_input_sentence=False,
            minloglevel=2)
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        proto = pb.ModelProto()
        with open(prefix + ".model", "rb") as f:
            proto.ParseFromString(f.read())

    # llama.cpp's token types: NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6
    kinds = {pb.ModelProto.SentencePiece.NORMAL: 1, pb.ModelProto.SentencePiece.UNKNOWN: 2,
             pb.ModelProto.SentencePiece.CONTROL: 3, pb.ModelProto.SentencePiece.USER_DEFINED: 4,
             pb.ModelProto.SentencePiece.UNUSED: 5, pb.ModelProto.SentencePiece.BYTE: 6}
    w = gguf.GGUFWriter(os.path.join(out_dir, "unigram_tiny.gguf"), "t5")
    w.add_tokenizer_model("t5")
    w.add_token_list([p.piece.encode("utf-8") for p in proto.pieces])
    w.add_token_scores([p.score for p in proto.pieces])
    w.add_token_types([kinds[p.type] for p in proto.pieces])
    w.add_add_space_prefix(proto.normalizer_spec.add_dummy_prefix)
    w.add_remove_extra_whitespaces(proto.normalizer_spec.remove_extra_whitespaces)
    w.add_precompiled_charsmap(proto.normalizer_spec.precompiled_charsmap)
    w.add_unk_token_id(sp.unk_id())
    w.add_bos_token_id(sp.bos_id())
    w.add_eos_token_id(sp.eos_id())
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    import tokenizers
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import Unigram
    hf = Tokenizer(Unigram([(p.piece, p.score) for p in proto.pieces], proto.trainer_spec.unk_id,
                           proto.trainer_spec.byte_fallback))
    hf.normalizer = normalizers.Sequence([
        normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
        normalizers.Replace(Regex(" {2,}"), " ")])
    hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    hf.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    hf.save(os.path.join(out_dir, "unigram_tiny_tokenizer.json"))

    ref = {"sentencepiece": spm.__version__, "tokenizers": tokenizers.__version__,
           "normalization_rule_name": "nmt_nfkc",
           "texts": [{"text": t, "ids": sp.encode(t), "pieces": sp.encode(t, out_type=str),
                      "normalized": sp.normalize(t),
                      "hf_ids": hf.encode(t, add_special_tokens=False).ids} for t in TEXTS]}
    with open(os.path.join(out_dir, "unigram_tiny.json"), "w", encoding="utf-8") as f:
        head = {k: v for k, v in ref.items() if k != "texts"}
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "texts": [\n')
        f.write(",\n".join(json.dumps(t, ensure_ascii=False) for t in ref["texts"]))
        f.write("\n]}\n")
    print(f"{len(proto.pieces)} pieces, charsmap {len(proto.normalizer_spec.precompiled_charsmap)} bytes")


if __name__ == "__main__":
    main()
