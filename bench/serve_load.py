#!/usr/bin/env python3
"""bench/serve_load.py: the load bench of `ferrum serve`: 1, 2, 4, 8 and 16 concurrent
streaming clients (by default), each sending completion requests one after another for a
fixed time; per level, the aggregate tokens/s, the time to first token (p50, p99) and the
errors, with the machine and its load printed beside the numbers. Not a test: it times.

  python3 bench/serve_load.py --ferrum build/ferrum --model ~/.cache/ferrum/models/SmolLM2-135M-Instruct.Q4_1.gguf
  python3 bench/serve_load.py --url http://127.0.0.1:8080 --model-id NAME   # a server already running

It starts the server itself (on 127.0.0.1, a free port, --parallel the largest level) unless
--url is given; then only the loopback address is ever contacted. Standard library only."""
import argparse, http.client, json, os, re, signal, statistics, subprocess, sys, threading, time
from urllib.parse import urlparse

PROMPTS = ["Once upon a time", "The history of the Roman empire", "def quicksort(xs):",
           "A recipe for bread:", "The weather today is", "Dear diary,", "In physics, energy",
           "The best way to learn a language"]


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"


def one_request(host, port, model, prompt, max_tokens):
    """(ttft seconds, completion tokens, seconds, error or None) of one streamed completion."""
    t0 = time.perf_counter()
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}})
    try:
        c = http.client.HTTPConnection(host, port, timeout=300)
        c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return None, 0, time.perf_counter() - t0, f"HTTP {r.status}"
        ttft, tokens, buf = None, 0, b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                data = event[6:] if event.startswith(b"data: ") else b""
                if data == b"[DONE]" or not data:
                    continue
                o = json.loads(data)
                if "error" in o:
                    return ttft, tokens, time.perf_counter() - t0, o["error"]["message"]
                if o.get("usage"):
                    tokens = o["usage"]["completion_tokens"]
                elif ttft is None and o["choices"] and o["choices"][0]["text"]:
                    ttft = time.perf_counter() - t0
        c.close()
        return ttft, tokens, time.perf_counter() - t0, None
    except Exception as e:  # a refused or dropped connection counts as an error
        return None, 0, time.perf_counter() - t0, repr(e)


def level(host, port, model, clients, seconds, max_tokens):
    """Runs `clients` clients for `seconds`; the requests started in that time are counted whole."""
    results, lock = [], threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client(i):
        k = 0
        while time.perf_counter() < stop_at:
            r = one_request(host, port, model, PROMPTS[(i + k) % len(PROMPTS)] + f" ({i}.{k})", max_tokens)
            k += 1
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wall = time.perf_counter() - t0
    ttfts = sorted(r[0] for r in results if r[0] is not None)
    tokens = sum(r[1] for r in results)
    errors = [r[3] for r in results if r[3]]
    pct = lambda q: ttfts[min(len(ttfts) - 1, int(q * len(ttfts)))] if ttfts else float("nan")
    return {"clients": clients, "requests": len(results), "tokens": tokens, "wall_s": wall,
            "tok_s": tokens / wall, "ttft_p50": pct(0.5), "ttft_p99": pct(0.99), "errors": len(errors),
            "first_error": errors[0] if errors else ""}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ferrum", default="build/ferrum")
    ap.add_argument("--model", help="the model file the server is started with")
    ap.add_argument("--url", help="a server already running (loopback)")
    ap.add_argument("--model-id", help="the model's name on that server")
    ap.add_argument("--levels", default="1,2,4,8,16")
    ap.add_argument("--seconds", type=float, default=20, help="per level")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--server-args", default="", help="more options for ferrum serve")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    proc = None
    if a.url:
        u = urlparse(a.url)
        if u.hostname not in ("127.0.0.1", "localhost"):
            sys.exit("serve_load.py: only a loopback server may be benched (127.0.0.1)")
        host, port, model = "127.0.0.1", u.port, a.model_id
    else:
        if not a.model:
            sys.exit("serve_load.py: give --model (or --url and --model-id)")
        cmd = [a.ferrum, "serve", a.model, "--host", "127.0.0.1", "--port", "0", "--parallel",
               str(max(levels)), "--queue", str(4 * max(levels)), *a.server_args.split()]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        for line in proc.stderr:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(model \"([^\"]+)\"", line)
            if m:
                port, model = int(m.group(1)), m.group(2)
                break
        if port is None:
            sys.exit("serve_load.py: the server did not start")
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        host = "127.0.0.1"
    print(f"machine: {machine()}")
    print(f"server: {' '.join(cmd) if proc else a.url}; {a.seconds:g} s per level, max_tokens {a.max_tokens}, greedy")
    print(f"{'clients':>7} {'requests':>8} {'tokens':>7} {'tok/s':>8} {'x one':>6} {'TTFT p50':>9} {'TTFT p99':>9} {'errors':>6}")
    base = None
    try:
        one_request(host, port, model, "warm up", 4)
        for n in levels:
            r = level(host, port, model, n, a.seconds, a.max_tokens)
            base = base or r["tok_s"]
            print(f"{n:>7} {r['requests']:>8} {r['tokens']:>7} {r['tok_s']:>8.1f} {r['tok_s'] / base:>6.2f} "
                  f"{r['ttft_p50']:>8.3f}s {r['ttft_p99']:>8.3f}s {r['errors']:>6}"
                  + (f"  ({r['first_error']})" if r["errors"] else ""), flush=True)
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
