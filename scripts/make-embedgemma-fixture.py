#!/usr/bin/env python3
"""scripts/make-embedgemma-fixture.py: writes tests/fixtures/embedgemma_tiny_st.json, the reference
test_embedgemma checks ferrum's EmbeddingGemma path against: sentence-transformers (and so Hugging
Face transformers' Gemma3TextModel with use_bidirectional_attention, its halved sliding window,
the Dense modules and the tokenizers library) on the tiny random folder ferrum writes.

The folder is no download: test_embedgemma writes it (preset embeddinggemma-tiny, seed 1, as
sentence-transformers saves EmbeddingGemma, with tests/fixtures/embedgemma_tiny/'s tokenizer
files) when FERRUM_EMBEDGEMMA_FOLDER names a path:
    FERRUM_EMBEDGEMMA_FOLDER=/tmp/eg_tiny build/tests/test_embedgemma
    /work/venv-st/bin/python scripts/make-embedgemma-fixture.py /tmp/eg_tiny [OUT]
Needs sentence-transformers and torch (PyPI) in a virtual environment outside the repository
(see make-embed-fixture.py). For each text: the ids the Hugging Face tokenizer gives with the
"query" prompt put first, and the embedding (mean pooling, 2_Dense, 3_Dense, Normalize) in
float32, to 9 significant digits.
"""
import json
import os
import sys

TEXTS = [
    "the cat sat on the mat",
    "a",
    "where is the station and when are we there",
    # past the local layers' window (radius 5) and to the folder's max_seq_length of 64
    " ".join(["the"] * 26),
    "caf\u00e9 na\u00efve \u65e5\u672c \U0001F600 x=1;",  # bytes fall back to <0xXX> tokens
    "in " * 40,  # cut at max_seq_length, <eos> kept
]


def main():
    folder = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "..", "tests", "fixtures", "embedgemma_tiny_st.json")
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(folder, device="cpu",
                                model_kwargs={"torch_dtype": torch.float32,
                                              "attn_implementation": "eager"})
    prompt = model.prompts["query"]
    emb = model.encode(TEXTS, prompt_name="query", convert_to_numpy=True)
    ids = [model.tokenizer(prompt + t, truncation=True, max_length=model.max_seq_length)["input_ids"]
           for t in TEXTS]
    doc = {
        "made_with": {"sentence_transformers": sentence_transformers.__version__,
                      "transformers": transformers.__version__, "torch": torch.__version__},
        "prompt_name": "query",
        "sliding_window_after_load": model[0].auto_model.config.sliding_window,
        "texts": TEXTS,
        "ids": ids,
        "embeddings": [[float("%.9g" % v) for v in row] for row in emb.tolist()],
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
