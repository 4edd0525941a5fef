#!/usr/bin/env python3
"""bench/serve_load.py: the load bench of `ferrum serve`, optionally beside llama.cpp's
llama-server under the same load: 1, 2, 4, 8 and 16 concurrent streaming clients (by
default), each sending greedy completion requests one after another for a fixed time; per
level and server, the aggregate tokens/s, its ratio to one client's, the time to first token
(p50, p99) and the errors, with the machine and its load printed beside the numbers. Not a
test: it times.

  python3 bench/serve_load.py --model ~/.cache/ferrum/models/SmolLM2-135M-Instruct.Q4_1.gguf \
      --server-args=--batch --llama-server /work/peers/lcpp/build-native/bin/llama-server
  python3 bench/serve_load.py --url http://127.0.0.1:8080 --model-id NAME   # a server already running

Each server is started afresh for each level (on 127.0.0.1, a free port) with min(level,
--max-slots) slots of --ctx rows and the same -t, the two alternating which goes first from
level to level (and round to round, --rounds), so a change in the machine's load falls on
both. With --url only that server is benched. Only the loopback address is ever contacted.
Standard library only."""
import argparse, http.client, json, os, re, signal, socket, statistics, subprocess, sys, threading, time
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
        ttft, tokens, chunks, buf = None, None, 0, b""
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
                    return ttft, tokens or chunks, time.perf_counter() - t0, o["error"]["message"]
                if o.get("usage"):
                    tokens = o["usage"]["completion_tokens"]
                if o.get("choices") and o["choices"][0].get("text"):
                    chunks += 1
                    if ttft is None:
                        ttft = time.perf_counter() - t0
        c.close()
        return ttft, tokens if tokens is not None else chunks, time.perf_counter() - t0, None
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


def first_model(host, port):
    """The first model a running server lists (GET /v1/models): the name its requests use."""
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", "/v1/models")
    r = c.getresponse()
    if r.status != 200:
        sys.exit(f"serve_load.py: GET /v1/models answered {r.status}; give --model-id")
    return json.loads(r.read())["data"][0]["id"]


def free_port():
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


class Ferrum:
    """`ferrum serve MODEL` on a free loopback port, its port and model name read from its line."""
    name = "ferrum"

    def __init__(self, a, slots):
        self.cmd = [a.ferrum, "serve", a.model, "--host", "127.0.0.1", "--port", "0", "--parallel", str(slots),
                    "--queue", str(4 * slots), "--ctx", str(a.ctx), *(["-t", str(a.threads)] if a.threads else []),
                    *a.server_args.split()]

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(model \"([^\"]+)\"", line)
            if m:
                self.port, self.model = int(m.group(1)), m.group(2)
                threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
                return
        sys.exit("serve_load.py: ferrum serve did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


class LlamaServer(Ferrum):
    """llama.cpp's llama-server on the same model file: --parallel slots of --ctx rows each
    (its -c is the whole cache, split among the slots), continuous batching (its default),
    the same threads; ready when GET /health answers 200."""
    name = "llama-server"

    def __init__(self, a, slots):
        self.port = free_port()
        self.model = "model"
        self.cmd = [a.llama_server, "-m", a.model, "--host", "127.0.0.1", "--port", str(self.port), "-np", str(slots),
                    "-c", str(a.ctx * slots), *(["-t", str(a.threads)] if a.threads else []), "--no-webui",
                    *a.llama_args.split()]

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        sys.exit("serve_load.py: llama-server did not start: " + " ".join(self.cmd))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ferrum", default="build/ferrum")
    ap.add_argument("--model", help="the model file the servers are started with")
    ap.add_argument("--url", help="a server already running (loopback)")
    ap.add_argument("--model-id", help="the model's name on that server (default: the first it lists)")
    ap.add_argument("--llama-server", help="llama.cpp's llama-server binary: bench it too, on the same model "
                    "and clients, the two alternating level by level")
    ap.add_argument("--levels", default="1,2,4,8,16")
    ap.add_argument("--seconds", type=float, default=20, help="per level")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=512, help="KV cache rows per slot, both servers")
    ap.add_argument("--max-slots", type=int, default=8, help="slots at most (more clients queue)")
    ap.add_argument("--threads", type=int, default=0, help="-t for both servers (0: each one's default)")
    ap.add_argument("--rounds", type=int, default=1, help="times through the levels")
    ap.add_argument("--server-args", default="", help="more options for ferrum serve")
    ap.add_argument("--llama-args", default="", help="more options for llama-server")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    print(f"machine: {machine()}")
    print(f"{a.seconds:g} s per level, max_tokens {a.max_tokens}, greedy streamed completions; "
          f"each server started afresh for each level with min(level, {a.max_slots}) slots of {a.ctx} rows")
    print(f"{'server':>12} {'clients':>7} {'requests':>8} {'tokens':>7} {'tok/s':>8} {'x one':>6} "
          f"{'TTFT p50':>9} {'TTFT p99':>9} {'errors':>6}", flush=True)
    if a.url:
        u = urlparse(a.url)
        if u.hostname not in ("127.0.0.1", "localhost"):
            sys.exit("serve_load.py: only a loopback server may be benched (127.0.0.1)")
        model_id = a.model_id or first_model("127.0.0.1", u.port)
        base = None
        for n in levels:
            r = level("127.0.0.1", u.port, model_id, n, a.seconds, a.max_tokens)
            base = base or r["tok_s"]
            show("running", r, base)
        return
    if not a.model:
        sys.exit("serve_load.py: give --model (or --url and --model-id)")
    kinds = [Ferrum] + ([LlamaServer] if a.llama_server else [])
    base, table = {}, {}
    for rnd in range(a.rounds):
        for i, n in enumerate(levels):
            order = kinds if (i + rnd) % 2 == 0 else kinds[::-1]  # alternate who goes first
            for kind in order:
                srv = kind(a, min(n, a.max_slots))
                srv.start()
                try:
                    one_request("127.0.0.1", srv.port, srv.model, "warm up", 4)
                    r = level("127.0.0.1", srv.port, srv.model, n, a.seconds, a.max_tokens)
                finally:
                    srv.stop()
                base.setdefault((srv.name, rnd), r["tok_s"])  # x one: within the round
                table.setdefault((srv.name, n), []).append(r["tok_s"])
                show(srv.name, r, base[(srv.name, rnd)])
    if a.llama_server:
        print("ferrum / llama-server, aggregate tok/s per level (median over rounds): " +
              ", ".join(f"{n}: {statistics.median(table[('ferrum', n)]) / statistics.median(table[('llama-server', n)]):.2f}"
                        for n in levels))
    print(f"servers: {' '.join(Ferrum(a, 1).cmd)}" + (f" | {' '.join(LlamaServer(a, 1).cmd)}" if a.llama_server else "")
          + " (--parallel/-np and -c per level)")
    print(f"machine after: {machine()}")


def show(name, r, base):
    print(f"{name:>12} {r['clients']:>7} {r['requests']:>8} {r['tokens']:>7} {r['tok_s']:>8.1f} "
          f"{r['tok_s'] / base if base else float('nan'):>6.2f} {r['ttft_p50']:>8.3f}s {r['ttft_p99']:>8.3f}s {r['errors']:>6}"
          + (f"  ({r['first_error']})" if r["errors"] else ""), flush=True)


if __name__ == "__main__":
    main()
