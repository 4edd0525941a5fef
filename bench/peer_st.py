#!/usr/bin/env python3
"""bench/peer_st.py: the peer of bench_embed: sentence-transformers (PyTorch CPU) embedding the
same texts bench_embed embeds, timed the same way. Prints one line:
    peer_st batch=B tokens=T threads=N reps=R median_s=... min_s=... max_s=... cpu_s=... sentences_per_s=...
(cpu_s: the median process CPU time of one call, all threads)
Usage (bench_embed runs it; by hand from a venv with torch and sentence-transformers):
    python bench/peer_st.py MODEL_DIR BATCH TOKENS THREADS REPS
The texts: text i is "The quick brown fox {i} jumps over the lazy dog. " 20 times, cut at TOKENS
tokens (max_seq_length), as bench_embed makes them."""
import statistics
import sys
import time


def main():
    model_dir, batch, tokens, threads, reps = sys.argv[1], *map(int, sys.argv[2:6])
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = tokens
    texts = [f"The quick brown fox {i} jumps over the lazy dog. " * 20 for i in range(batch)]
    n_ids = [len(model.tokenizer(t, truncation=True, max_length=tokens)["input_ids"]) for t in texts]
    assert min(n_ids) == tokens, f"texts shorter than {tokens} tokens: {n_ids}"
    with torch.inference_mode():
        model.encode(texts, batch_size=batch)  # warm up
        times, cpu = [], []
        for _ in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            model.encode(texts, batch_size=batch, convert_to_numpy=True)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    med = statistics.median(times)
    print(f"peer_st batch={batch} tokens={tokens} threads={threads} reps={reps} median_s={med:.6f} "
          f"min_s={min(times):.6f} max_s={max(times):.6f} cpu_s={statistics.median(cpu):.6f} "
          f"sentences_per_s={batch / med:.2f} "
          f"torch={torch.__version__}")


if __name__ == "__main__":
    main()
