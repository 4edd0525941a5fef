#!/usr/bin/env python3
"""bench/serve_soak.py: a soak run of `ferrum serve`: for --minutes, --clients threads send a
mix of requests (chat and completion, streamed and whole, sampled and greedy, n=2, stop
strings, logprobs, malformed bodies, unknown models, over-long prompts; with
--embedding-model, embeddings good and bad too) and drop a share of the streams mid-way;
then the server is stopped with SIGTERM. Reports the requests by outcome,
any answer that is not the client's own fault (5xx other than a 503 queue-full, a broken
stream), the server's RSS at the start, the middle and the end, and its exit code: built with
ASan (make asan's build-asan/ferrum), a leak or a memory error makes that nonzero.

  python3 bench/serve_soak.py --ferrum build-asan/ferrum \\
      --model ~/.cache/ferrum/models/SmolLM2-135M-Instruct.Q4_1.gguf --minutes 10 [--no-batch] \\
      [--embedding-model ~/.cache/ferrum/models/all-MiniLM-L6-v2]

Loopback only (the server is started on 127.0.0.1). Exit 0 when nothing unexpected happened."""
import argparse, http.client, json, os, random, re, signal, socket, subprocess, sys, threading, time

HOST = "127.0.0.1"


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


EMBED_BAD = [{"input": ""}, {"input": []}, {"input": ["a", 3]}, {"input": "a", "dimensions": 7},
             {"input": [[101, 999999]]}, {"input": "word " * 600}, {"input": "a", "encoding_format": "int8"}]


def embed_request(port, embed_model, rng):
    """An embeddings request, good or bad: (kind, outcome) as request's."""
    bad = rng.random() < 0.4
    body = dict(rng.choice(EMBED_BAD)) if bad else {
        "input": [rng.choice(["A man is eating food.", "A cat sleeps.", "ünïcödé"]) for _ in range(rng.randint(1, 12))],
        "encoding_format": rng.choice(["float", "base64"])}
    body["model"] = embed_model
    kind = "embed-bad" if bad else "embed"
    try:
        c = http.client.HTTPConnection(HOST, port, timeout=120)
        c.request("POST", "/v1/embeddings", json.dumps(body).encode(), {"Content-Type": "application/json"})
        r = c.getresponse()
        payload = r.read()
        c.close()
        if bad:
            return kind, "client-error" if 400 <= r.status < 500 else f"UNEXPECTED: HTTP {r.status} {payload[:200]!r}"
        if r.status != 200:
            return kind, f"UNEXPECTED: HTTP {r.status} {payload[:200]!r}"
        o = json.loads(payload)
        if len(o["data"]) != len(body["input"]):
            return kind, "UNEXPECTED: a vector missing"
        return kind, "ok"
    except Exception as e:
        return kind, f"UNEXPECTED: {e!r}"


def request(port, model, rng, embed_model=None):
    """(kind of request, outcome): outcome is 'ok', 'client-error', 'busy', 'dropped' or
    'UNEXPECTED: ...'."""
    if embed_model and rng.random() < 0.25:
        return embed_request(port, embed_model, rng)
    kind = rng.choice(["chat", "completion", "chat-stream", "completion-stream", "drop", "bad-json",
                       "bad-model", "too-long", "n2"])
    path = "/v1/completions" if "completion" in kind or kind in ("drop", "too-long") else "/v1/chat/completions"
    body = {"model": model, "max_tokens": rng.randint(1, 48), "temperature": rng.choice([0, 0.7]),
            "seed": rng.randint(0, 1000)}
    if path == "/v1/chat/completions":
        body["messages"] = [{"role": "system", "content": "You are brief."},
                            {"role": "user", "content": rng.choice(["Hi", "Name a color.", "Count to five."])}]
    else:
        body["prompt"] = rng.choice(["Once upon a time", "1, 2, 3,", "The sky is"])
    if kind in ("chat-stream", "completion-stream", "drop"):
        body["stream"] = True
    if kind == "n2":
        body["n"] = 2
    if rng.random() < 0.2:
        body["stop"] = ["."]
    if rng.random() < 0.2:  # log-probabilities, in each endpoint's form
        body.update({"logprobs": True, "top_logprobs": 3} if "messages" in body else {"logprobs": 2})
    if kind == "bad-model":
        body["model"] = "nope"
    if kind == "too-long":
        body["prompt"] = "word " * 5000
    data = b"{not json" if kind == "bad-json" else json.dumps(body).encode()
    try:
        if kind == "drop":  # read a little of the stream, then vanish
            s = socket.create_connection((HOST, port), timeout=60)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
            s.recv(rng.randint(1, 600))
            s.close()
            return kind, "dropped"
        c = http.client.HTTPConnection(HOST, port, timeout=120)
        c.request("POST", path, data, {"Content-Type": "application/json"})
        r = c.getresponse()
        payload = r.read()
        c.close()
        if r.status == 503:
            return kind, "busy"
        if 400 <= r.status < 500:
            expected = kind in ("bad-json", "bad-model", "too-long")
            return kind, "client-error" if expected else f"UNEXPECTED: HTTP {r.status} {payload[:200]!r}"
        if r.status != 200:
            return kind, f"UNEXPECTED: HTTP {r.status} {payload[:200]!r}"
        if kind in ("bad-json", "bad-model", "too-long"):
            return kind, "UNEXPECTED: a bad request was answered 200"
        if body.get("stream"):
            events = [l[6:] for l in payload.decode().split("\n\n") if l.startswith("data: ")]
            if not events or events[-1] != "[DONE]" or any('"error"' in e for e in events):
                return kind, f"UNEXPECTED: a broken stream {events[-2:]}"
        else:
            json.loads(payload)
        return kind, "ok"
    except Exception as e:
        return kind, f"UNEXPECTED: {e!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ferrum", default="build-asan/ferrum")
    ap.add_argument("--model", required=True)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--no-batch", action="store_true",
                    help="serve with --no-batch (slots taking turns; batched decode is the default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--embedding-model", help="an encoder folder: serve and send embeddings too")
    a = ap.parse_args()
    cmd = [a.ferrum, "serve", a.model, "--host", HOST, "--port", "0", "--parallel", "3", "--queue", "4",
           "--ctx", "512", "--max-prompt-tokens", "400", *(["--no-batch"] if a.no_batch else []),
           *(["--embedding-model", a.embedding_model] if a.embedding_model else [])]
    embed_model = os.path.basename(a.embedding_model.rstrip("/")) if a.embedding_model else None
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port, model, log = None, None, []
    for line in proc.stderr:
        log.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(model \"([^\"]+)\"", line)
        if m:
            port, model = int(m.group(1)), m.group(2)
            break
    if port is None:
        sys.exit("serve_soak.py: the server did not start:\n" + "".join(log))
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    counts, unexpected, lock = {}, [], threading.Lock()
    stop_at = time.time() + 60 * a.minutes
    rss = [("start", rss_kib(proc.pid))]

    def client(i):
        rng = random.Random(a.seed * 1000 + i)
        while time.time() < stop_at:
            kind, outcome = request(port, model, rng, embed_model)
            with lock:
                key = outcome if not outcome.startswith("UNEXPECTED") else "UNEXPECTED"
                counts[key] = counts.get(key, 0) + 1
                if key == "UNEXPECTED":
                    unexpected.append(f"{kind}: {outcome}")

    ts = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
    [t.start() for t in ts]
    time.sleep(30 * a.minutes)
    rss.append(("middle", rss_kib(proc.pid)))
    [t.join() for t in ts]
    rss.append(("end", rss_kib(proc.pid)))
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = "killed after 120 s"
    time.sleep(0.5)
    print(f"server: {' '.join(cmd)}")
    print(f"requests by outcome: {json.dumps(counts, sort_keys=True)}")
    print("RSS (KiB): " + ", ".join(f"{k} {v}" for k, v in rss))
    print(f"exit code after SIGTERM: {code}")
    for u in unexpected[:10]:
        print("  " + u)
    sanitizer = [l for l in log if "Sanitizer" in l or "leak" in l.lower()]
    for l in sanitizer[:20]:
        print("  server: " + l.rstrip())
    return 0 if code == 0 and not unexpected and not sanitizer else 1


if __name__ == "__main__":
    sys.exit(main())
