#!/usr/bin/env python3
"""tests/serve/test_serve.py: drives `ferrum serve` on a loopback port with the real OpenAI
Python client (streaming and not) and curl (the error cases), one group of claims per run:

  test_serve.py GROUP --ferrum build/ferrum --model MODEL.gguf

Groups (api, faults and embed under the default batched decode): api (every endpoint
through the openai client, usage counts, prefix reuse, metrics), faults (malformed bodies,
unknown model, limits, API key, queue full, time limit, slow client: each a clean 4xx/5xx
naming its rule, and the server keeps serving; a stream queued past --client-timeout kept
alive), equal (the server's tokens equal `ferrum generate`'s for the same prompt and seed,
alone and beside other requests, over two device groups, with --no-batch: slots taking
turns), disconnect (a client gone mid-stream frees its slot at the next step, --no-batch),
batch (equal and disconnect again, batched: the default, and --batch over two groups), embed (POST
/v1/embeddings beside the chat model and alone: `ferrum embed`'s vectors to the byte, token
ids, usage, faults; `dimensions` on an EmbeddingGemma folder; --encoder and
--matryoshka-encoder name the folders).

Only 127.0.0.1 is ever contacted. Every wait is bounded. Exit 0 when every claim holds;
otherwise the failed claim and the server's log on stderr, exit 1. Run by tests/test_serve.c."""
import argparse, base64, json, math, os, re, signal, socket, struct, subprocess, sys, threading, time, urllib.request

HOST = "127.0.0.1"


class Failed(Exception):
    pass


def claim(ok, what):
    if not ok:
        raise Failed(what)


class Server:
    """`ferrum serve MODEL --port 0 ARGS`, its port read from the line it prints."""

    def __init__(self, ferrum, model, *args):
        self.log = []
        self.p = subprocess.Popen([ferrum, "serve", model, "--host", HOST, "--port", "0", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        got = threading.Event()

        def drain():
            for line in self.p.stderr:
                self.log.append(line)
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    got.set()
            got.set()

        threading.Thread(target=drain, daemon=True).start()
        got.wait(120)
        if self.port is None:
            self.p.kill()
            raise Failed("the server did not start: " + "".join(self.log[-20:]))
        self.url = f"http://{HOST}:{self.port}"

    def stop(self):
        """SIGTERM, then it must exit 0 within 30 s."""
        self.p.send_signal(signal.SIGTERM)
        try:
            code = self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Failed("the server did not stop within 30 s of SIGTERM")
        claim(code == 0, f"the server exited {code} after SIGTERM")

    def client(self, key="none", **kw):
        import openai
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=120, **kw)


def http(server, method, path, body=None, headers=None, timeout=60):
    """(status, headers, body bytes) of one request through urllib."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def curl(server, *args, timeout=60):
    """(status, body) of curl ARGS against the server (its URL prefixed to the path)."""
    out = subprocess.run(["curl", "-s", "-S", "-o", "-", "-w", "\n%{http_code}", "--max-time", str(timeout),
                          *[a.replace("URL", server.url) for a in args]],
                         capture_output=True, timeout=timeout + 10)
    body, _, code = out.stdout.rpartition(b"\n")
    return int(code or 0), body


def error_of(body, status, words, param=None):
    """The body is OpenAI's error object, saying `words` (and naming param)."""
    try:
        e = json.loads(body)["error"]
    except Exception:
        raise Failed(f"HTTP {status}: not an OpenAI error object: {body[:300]!r}")
    claim(set(e) == {"message", "type", "param", "code"}, f"error fields {sorted(e)}")
    claim(words in e["message"], f"HTTP {status}: {e['message']!r} does not say {words!r}")
    if param is not None:
        claim(e["param"] == param, f"HTTP {status}: param {e['param']!r}, wanted {param!r}")
    return e


def metric(server, name):
    _, _, body = http(server, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise Failed(f"/metrics has no {name}")


def model_id(model):
    base = os.path.basename(model)
    return base[:-5] if base.endswith(".gguf") else base


# ---- api ----

def group_api(a):
    s = Server(a.ferrum, a.model, "--parallel", "2", "--ctx", "512")
    try:
        mid = model_id(a.model)
        c = s.client()
        claim([m.id for m in c.models.list().data] == [mid], "GET /v1/models lists the model")
        status, _, body = http(s, "GET", "/v1/models/" + mid)
        claim(status == 200 and json.loads(body)["id"] == mid, "GET /v1/models/ID")
        status, _, body = http(s, "GET", "/health")
        h = json.loads(body)
        claim(status == 200 and h["status"] == "ok" and h["slots"] == 2, f"/health {body!r}")

        msgs = [{"role": "system", "content": "You are a helpful assistant who answers in one short sentence."},
                {"role": "user", "content": "What is the capital of France?"}]
        r = c.chat.completions.create(model=mid, messages=msgs, max_tokens=24, temperature=0)
        text = r.choices[0].message.content
        claim(r.object == "chat.completion" and r.choices[0].message.role == "assistant", "chat shape")
        claim(len(text) > 0 and "Paris" in text, f"a greedy answer names Paris: {text!r}")
        claim(r.choices[0].finish_reason in ("stop", "length"), "finish_reason")
        claim(r.usage.prompt_tokens > 10 and 0 < r.usage.completion_tokens <= 24 and
              r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, f"usage {r.usage}")

        # the same conversation streamed: the same text, the role first, the usage last
        chunks = list(c.chat.completions.create(model=mid, messages=msgs, max_tokens=24, temperature=0,
                                                stream=True, stream_options={"include_usage": True}))
        claim(chunks[0].choices[0].delta.role == "assistant", "the first chunk carries the role")
        streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        claim(streamed == text, f"streamed {streamed!r} != whole {text!r}")
        claim(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == r.usage.completion_tokens,
              "the last chunk carries the usage")
        finals = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
        claim(finals == [r.choices[0].finish_reason], f"one finish_reason at the end: {finals}")
        claim(chunks[-1].usage.prompt_tokens == r.usage.prompt_tokens, "the same prompt tokens streamed")

        # completions, whole and streamed, with a stop string
        r = c.completions.create(model=mid, prompt="1, 2, 3, 4,", max_tokens=12, temperature=0)
        claim(r.object == "text_completion" and r.choices[0].text.startswith(" 5"), f"counting: {r.choices[0].text!r}")
        r2 = c.completions.create(model=mid, prompt="1, 2, 3, 4,", max_tokens=12, temperature=0, stop=["7"])
        claim(r2.choices[0].finish_reason == "stop" and "7" not in r2.choices[0].text and
              r.choices[0].text.startswith(r2.choices[0].text), f"stop string: {r2.choices[0].text!r}")
        parts = [ch.choices[0].text for ch in c.completions.create(model=mid, prompt="1, 2, 3, 4,", max_tokens=12,
                                                                    temperature=0, stream=True)]
        claim("".join(parts) == r.choices[0].text, "streamed completion equals the whole one")
        r = c.completions.create(model=mid, prompt="1, 2, 3, 4,", max_tokens=5)
        claim(r.usage.completion_tokens == 5 and r.choices[0].finish_reason == "length", "max_tokens stops at 5")

        # sampling: the same seed draws the same text, n gives n choices
        kw = dict(model=mid, messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=16,
                  temperature=0.9, top_p=0.95, seed=1234, presence_penalty=0.5, frequency_penalty=0.2,
                  extra_body={"top_k": 40, "min_p": 0.05})
        t1 = c.chat.completions.create(**kw).choices[0].message.content
        t2 = c.chat.completions.create(**kw).choices[0].message.content
        claim(t1 == t2, f"one seed, two draws: {t1!r} != {t2!r}")
        r = c.chat.completions.create(**dict(kw, n=2, seed=99))
        claim([ch.index for ch in r.choices] == [0, 1] and all(ch.message.content for ch in r.choices), "n=2")

        # a shared prefix is reused from a slot's cache
        long_system = "You are a careful assistant. " * 50  # past one 256-row chunk
        for q in ("Name a color.", "Name a fruit."):
            r = c.chat.completions.create(model=mid, max_tokens=4, temperature=0,
                                          messages=[{"role": "system", "content": long_system},
                                                    {"role": "user", "content": q}])
        claim(r.usage.prompt_tokens_details.cached_tokens >= 256,
              f"the system prompt's rows reused: cached {r.usage.prompt_tokens_details.cached_tokens}")

        claim(metric(s, 'ferrum_requests_total{route="/v1/chat/completions",status="200"}') >= 6, "requests counted")
        claim(metric(s, "ferrum_completion_tokens_total") > 50, "tokens counted")
        claim(metric(s, "ferrum_time_to_first_token_seconds_count") >= 8, "TTFT observed")
        claim(metric(s, "ferrum_decode_tokens_per_second") > 0, "decode speed")
        claim(metric(s, "ferrum_prompt_tokens_cached_total") >= 256, "cached tokens counted")
        deadline = time.time() + 20  # a slot is freed just after its client has the answer
        while metric(s, "ferrum_slots_busy") > 0 and time.time() < deadline:
            time.sleep(0.05)
        claim(metric(s, "ferrum_queue_depth") == 0 and metric(s, "ferrum_slots_busy") == 0, "idle at the end")
    finally:
        s.stop()


# ---- faults ----

def group_faults(a):
    key = "sk-test-key"
    s = Server(a.ferrum, a.model, "--parallel", "1", "--ctx", "512", "--max-body", "4096",
               "--max-prompt-tokens", "64", "--max-tokens", "400", "--api-key", key)
    mid = model_id(a.model)
    auth = ["-H", "Authorization: Bearer " + key, "-H", "Content-Type: application/json"]
    chat = "URL/v1/chat/completions"
    try:
        def refused(status_wanted, data, words, param=None, url=chat, extra=()):
            status, body = curl(s, *auth, *extra, "-d", data, url)
            claim(status == status_wanted, f"{data[:80]!r}: HTTP {status}, wanted {status_wanted}: {body[:200]!r}")
            return error_of(body, status, words, param)

        good = json.dumps({"model": mid, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
        refused(400, "{not json", "not valid JSON")
        refused(400, "[]", "must be a JSON object")
        refused(400, json.dumps({"model": mid, "messages": []}), "empty", "messages")
        refused(400, json.dumps({"model": mid, "messages": "hi"}), "must be an array", "messages")
        refused(400, json.dumps({"model": mid, "messages": [{"role": "user", "content": "a"}], "temperature": "x"}),
                "must be a number", "temperature")
        bad_utf8 = "/tmp/ferrum-serve-utf8-%d.json" % os.getpid()
        with open(bad_utf8, "wb") as f:
            f.write(b'{"model": "%s", "messages": [{"role": "user", "content": "\xc3\x28"}]}' % mid.encode())
        try:
            status, body = curl(s, *auth, "--data-binary", "@" + bad_utf8, chat)
            claim(status == 400, f"invalid UTF-8: HTTP {status}")
            error_of(body, status, "UTF-8")
        finally:
            os.unlink(bad_utf8)
        e = refused(404, json.dumps({"model": "gpt-4", "messages": [{"role": "user", "content": "a"}]}),
                    "not served here", "model")
        claim(e["code"] == "model_not_found", "unknown model's code")
        refused(400, json.dumps({"model": mid, "messages": [{"role": "user", "content": "word " * 200}]}),
                "--max-prompt-tokens", "messages")
        refused(400, json.dumps({"model": mid, "messages": [{"role": "user", "content": "a"}], "max_tokens": 401}),
                "--max-tokens", "max_tokens")
        refused(400, json.dumps({"model": mid, "prompt": [1, 2, 999999]}), "outside the vocabulary", "prompt",
                url="URL/v1/completions")
        # a body over the limit: 413 naming it, declared or not, small or far over
        refused(413, json.dumps({"model": mid, "prompt": "x" * 5000}), "--max-body", url="URL/v1/completions")
        big = "/tmp/ferrum-serve-big-%d.json" % os.getpid()
        with open(big, "w") as f:
            f.write('{"model": "%s", "prompt": "%s"}' % (mid, "y" * (8 << 20)))
        try:
            status, body = curl(s, *auth, "--data-binary", "@" + big, "URL/v1/completions")
            claim(status == 413, f"an 8 MiB body: HTTP {status}")
            status, body = curl(s, *auth, "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + big,
                                "URL/v1/completions")
            claim(status == 413, f"an 8 MiB chunked body: HTTP {status}")
        finally:
            os.unlink(big)
        # routes, methods, the key
        status, body = curl(s, *auth, "URL/v1/nothing")
        claim(status == 404, f"unknown route: {status}")
        error_of(body, status, "no route")
        status, body = curl(s, *auth, "URL/v1/chat/completions")
        claim(status == 405, f"GET on a POST route: {status}")
        status, body = curl(s, "-H", "Content-Type: application/json", "-d", good, chat)
        claim(status == 401, f"no key: {status}")
        error_of(body, status, "--api-key")
        status, body = curl(s, "-H", "Authorization: Bearer wrong", "-d", good, chat)
        claim(status == 401, f"a wrong key: {status}")
        status, _ = curl(s, "URL/health")
        claim(status == 200, "/health needs no key")
        status, body = curl(s, *auth, "-d", good, chat)
        claim(status == 200, f"a good request with the key: {status} {body[:200]!r}")

        status, body = curl(s, *auth, "-d", good, chat)
        claim(status == 200, "still serving after every fault")
    finally:
        s.stop()

    # the time limit: 504 naming it (whole), an error event then [DONE] (streamed); 3900
    # tokens cannot come in 1 s
    s = Server(a.ferrum, a.model, "--parallel", "1", "--ctx", "4096", "--max-tokens", "4000",
               "--request-time", "1")
    try:
        long_req = {"model": mid, "prompt": "Once upon a time", "max_tokens": 3900, "temperature": 0}
        t0 = time.time()
        status, body = curl(s, "-H", "Content-Type: application/json", "-d", json.dumps(long_req),
                            "URL/v1/completions")
        claim(status == 504, f"past the time limit: HTTP {status}")
        error_of(body, status, "--request-time")
        claim(time.time() - t0 < 15, "the time limit stopped it")
        status, body = curl(s, "-H", "Content-Type: application/json", "-d", json.dumps(dict(long_req, stream=True)),
                            "URL/v1/completions")
        events = [l[6:] for l in body.decode().splitlines() if l.startswith("data: ")]
        claim(events[-1] == "[DONE]" and "error" in json.loads(events[-2]), f"streamed time limit: {events[-2:]}")
        deadline = time.time() + 20  # the worker counts it after the client has its answer
        while metric(s, "ferrum_requests_timed_out_total") < 2 and time.time() < deadline:
            time.sleep(0.05)
        claim(metric(s, "ferrum_requests_timed_out_total") == 2, "time-limited requests counted")
    finally:
        s.stop()

    # one slot, no queue: a second request while one runs gets 503 with Retry-After; a slow
    # client never holds the slot
    s = Server(a.ferrum, a.model, "--parallel", "1", "--queue", "0", "--ctx", "512", "--client-timeout", "2")
    try:
        body = json.dumps({"model": mid, "prompt": "Once upon a time", "max_tokens": 480, "stream": True}).encode()
        holder = socket.create_connection((HOST, s.port), timeout=30)
        holder.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        claim(holder.recv(4096).startswith(b"HTTP/1.1 200"), "the holder streams")
        claim(metric(s, "ferrum_slots_busy") == 1, "the holder holds the one slot")
        status, headers, body = http(s, "POST", "/v1/completions", {"model": mid, "prompt": "Hi", "max_tokens": 2})
        claim(status == 503 and headers.get("Retry-After") == "1", f"queue full: {status} {headers}")
        error_of(body, status, "--queue")
        claim(metric(s, "ferrum_requests_rejected_busy_total") == 1, "the 503 counted")
        holder.close()
        deadline = time.time() + 20
        while metric(s, "ferrum_slots_busy") > 0 and time.time() < deadline:
            time.sleep(0.05)

        # a slow client: headers, half a body, then silence; it is dropped and never held the slot
        sock = socket.create_connection((HOST, s.port), timeout=10)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 500\r\n\r\n{\"model\":")
        plain = ["-H", "Content-Type: application/json"]
        status, body = curl(s, *plain, "-d", good, chat)
        claim(status == 200, f"served while a slow client trickles: {status} {body[:200]!r}")
        sock.settimeout(10)
        t0 = time.time()
        try:
            rest = sock.recv(4096)
        except socket.timeout:
            rest = None
        claim(rest is not None and time.time() - t0 < 9, "the slow client was dropped within its timeout")
        sock.close()
        status, body = curl(s, *plain, "-d", good, chat)
        claim(status == 200, "still serving after every fault")
    finally:
        s.stop()

    # a stream that waits in the queue longer than --client-timeout is kept alive (SSE
    # comments) and gets its whole answer, as does a whole answer that takes longer: the
    # timeout is for clients idle, not for the server
    # the holder counts on (no early end of sequence) on one worker: a few seconds however fast
    # the machine decodes
    s = Server(a.ferrum, a.model, "--parallel", "1", "--queue", "2", "--ctx", "512", "--client-timeout", "1",
               "-t", "1")
    try:
        c = s.client()
        held = []
        hold = threading.Thread(target=lambda: held.append(c.completions.create(
            model=mid, prompt="1, 2, 3, 4, 5, 6, 7,", max_tokens=400, temperature=0)))
        hold.start()
        deadline = time.time() + 20
        while metric(s, "ferrum_slots_busy") < 1 and time.time() < deadline:
            time.sleep(0.02)
        t0 = time.time()
        parts = [ch.choices[0].text for ch in c.completions.create(model=mid, prompt="1, 2, 3,", max_tokens=8,
                                                                    temperature=0, stream=True) if ch.choices]
        waited = time.time() - t0
        hold.join(120)
        # past the 1 s timeout with a margin
        claim(waited > 1.5, f"the stream waited {waited:.1f} s behind the holder, well past the 1 s timeout")
        claim("".join(parts).startswith(" 4"), f"the queued stream got its answer: {parts!r}")
        claim(held and held[0].usage.completion_tokens > 8, "the holder's whole answer, seconds long, came too")
    finally:
        s.stop()


# ---- equal ----

def generate(a, *args):
    out = subprocess.run([a.ferrum, "generate", a.model, "--json", *args], capture_output=True, text=True,
                         timeout=300)
    claim(out.returncode == 0, f"ferrum generate {args}: {out.stderr[-500:]}")
    return json.loads(out.stdout)


def f32(x):
    """x rounded to float32, as bytes: how log-probabilities are compared (both sides print
    float32 values, in different digits)"""
    return struct.pack("<f", x)


def group_equal(a, *server_args):
    # by default two device groups with --no-batch (slots 0 and 2 take turns on one device,
    # slot 1 runs beside them on another, each with half the workers generate uses): the
    # tokens do not change
    s = Server(a.ferrum, a.model, *(server_args or ("--no-batch", "--parallel", "3", "--groups", "2")),
               "--ctx", "512")
    mid = model_id(a.model)
    try:
        c = s.client()
        prompts = ["The quick brown fox", "In the beginning", "def fibonacci(n):"]
        want = [generate(a, "--prompt", p, "-n", "24") for p in prompts]
        # alone
        for p, w in zip(prompts, want):
            r = c.completions.create(model=mid, prompt=p, max_tokens=24, temperature=0)
            claim(r.choices[0].text == w["text"], f"alone, {p!r}: server {r.choices[0].text!r} != generate {w['text']!r}")
            claim(r.usage.prompt_tokens == w["prompt_tokens"] and r.usage.completion_tokens == w["generated_tokens"],
                  "token counts equal")
        # side by side: three at once, each still equal
        got = [None] * 3

        def one(i):
            got[i] = c.completions.create(model=mid, prompt=prompts[i], max_tokens=24, temperature=0).choices[0].text
        ts = [threading.Thread(target=one, args=(i,)) for i in range(3)]
        [t.start() for t in ts]
        [t.join(120) for t in ts]
        for i in range(3):
            claim(got[i] == want[i]["text"], f"beside others, {prompts[i]!r}: {got[i]!r} != {want[i]['text']!r}")
        # token ids in, as --prompt-ids
        ids = [504, 2365, 6354, 16438]
        w = generate(a, "--prompt-ids", ",".join(map(str, ids)), "-n", "16")
        r = c.completions.create(model=mid, prompt=ids, max_tokens=16, temperature=0)
        claim(r.choices[0].text == w["text"], f"prompt ids: {r.choices[0].text!r} != {w['text']!r}")
        # the chat template
        w = generate(a, "--chat", "--prompt", "Why is the sky blue?", "-n", "20")
        r = c.chat.completions.create(model=mid, messages=[{"role": "user", "content": "Why is the sky blue?"}],
                                      max_tokens=20, temperature=0)
        claim(r.choices[0].message.content == w["text"], f"chat: {r.choices[0].message.content!r} != {w['text']!r}")
        # log-probabilities: the log-softmax of the logits each token was drawn from, equal to
        # generate's (the same logits: float32 values equal), the top lists sorted, a greedy
        # token the most likely; whole and streamed alike
        w = generate(a, "--prompt", "The quick brown fox", "-n", "12", "--logprobs", "5")
        r = c.completions.create(model=mid, prompt="The quick brown fox", max_tokens=12, temperature=0, logprobs=5)
        lp = r.choices[0].logprobs
        claim(len(lp.token_logprobs) == len(w["logprobs"]) == 12, f"a logprob per token: {len(lp.token_logprobs)}")
        claim(lp.text_offset[0] == 0 and "".join(lp.tokens) == r.choices[0].text, "tokens spell the text")
        for i, (got, want_lp) in enumerate(zip(lp.token_logprobs, w["logprobs"])):
            claim(f32(got) == f32(want_lp["logprob"]), f"token {i}: logprob {got} != generate's {want_lp['logprob']}")
            tops = list(lp.top_logprobs[i].values())
            claim([f32(v) for v in tops] == [f32(t[1]) for t in want_lp["top"]][:len(tops)] and len(tops) >= 4,
                  f"token {i}: top {tops} != generate's {want_lp['top']}")
            claim(tops == sorted(tops, reverse=True) and f32(tops[0]) == f32(got), f"token {i}: greedy is the top")
            claim(sum(math.exp(v) for v in tops) <= 1 + 1e-6, f"token {i}: top probabilities sum past 1")
        w = generate(a, "--chat", "--prompt", "Why is the sky blue?", "-n", "10", "--logprobs", "3")
        kw = dict(model=mid, messages=[{"role": "user", "content": "Why is the sky blue?"}], max_tokens=10,
                  temperature=0, logprobs=True, top_logprobs=3)
        r = c.chat.completions.create(**kw)
        content = r.choices[0].logprobs.content
        claim([f32(t.logprob) for t in content] == [f32(x["logprob"]) for x in w["logprobs"]], "chat logprobs equal generate's")
        claim(all(len(t.top_logprobs) == 3 and t.top_logprobs[0].token == t.token for t in content), "chat top_logprobs")
        claim(all(bytes(t.bytes).decode("utf-8", "replace") == t.token for t in content if t.bytes), "token bytes")
        streamed = [t for ch in c.chat.completions.create(stream=True, **kw) if ch.choices and ch.choices[0].logprobs
                    for t in ch.choices[0].logprobs.content]
        claim([(t.token, t.logprob) for t in streamed] == [(t.token, t.logprob) for t in content],
              "streamed chat logprobs equal the whole answer's")
        r = c.chat.completions.create(model=mid, messages=kw["messages"], max_tokens=4, temperature=0)
        claim(r.choices[0].logprobs is None, "no logprobs unless asked")
        # seeded host sampling (min_p and a penalty draw on the host in both)
        w = generate(a, "--prompt", "Once upon a time", "-n", "20", "--temperature", "0.8", "--min-p", "0.05",
                     "--repeat-penalty", "1.1", "--seed", "4242")
        r = c.completions.create(model=mid, prompt="Once upon a time", max_tokens=20, temperature=0.8, seed=4242,
                                 extra_body={"min_p": 0.05, "repeat_penalty": 1.1})
        claim(r.choices[0].text == w["text"], f"seeded: {r.choices[0].text!r} != {w['text']!r}")
    finally:
        s.stop()


# ---- disconnect ----

def group_disconnect(a, *server_args):
    s = Server(a.ferrum, a.model, "--parallel", "1", "--ctx", "1024", *server_args)
    mid = model_id(a.model)
    try:
        body = json.dumps({"model": mid, "prompt": "Once upon a time", "max_tokens": 900, "temperature": 0,
                           "stream": True}).encode()
        sock = socket.create_connection((HOST, s.port), timeout=30)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        got = b""
        while got.count(b"data: ") < 3:
            chunk = sock.recv(4096)
            claim(chunk, "the stream ended before three events")
            got += chunk
        claim(got.startswith(b"HTTP/1.1 200") and b"text/event-stream" in got, "an event stream")
        sock.close()  # gone mid-stream
        deadline = time.time() + 20
        while metric(s, "ferrum_requests_cancelled_total") < 1 and time.time() < deadline:
            time.sleep(0.05)
        claim(metric(s, "ferrum_requests_cancelled_total") == 1, "the disconnect was seen")
        while metric(s, "ferrum_slots_busy") > 0 and time.time() < deadline:
            time.sleep(0.05)
        claim(metric(s, "ferrum_slots_busy") == 0, "its slot is free")
        claim(metric(s, "ferrum_completion_tokens_total") < 300, "it stopped long before its 900 tokens")
        r = s.client().completions.create(model=mid, prompt="Hello", max_tokens=4, temperature=0)
        claim(r.usage.completion_tokens == 4, "the one slot serves the next request")
    finally:
        s.stop()


# ---- embeddings ----

def ferrum_embed(a, texts, folder=None, *more):
    """`ferrum embed` of texts: (float32 rows as bytes, tokens run) from its .npy output."""
    args = [a.ferrum, "embed", folder or a.encoder, "--format", "npy", *more]
    for t in texts:
        args += ["--text", t]
    out = subprocess.run(args, capture_output=True, timeout=300)
    claim(out.returncode == 0, f"ferrum embed: {out.stderr[-500:]!r}")
    npy = out.stdout
    claim(npy[:6] == b"\x93NUMPY", "ferrum embed wrote a .npy")
    header_len = struct.unpack("<H", npy[8:10])[0]
    claim(b"'<f4'" in npy[10:10 + header_len], "float32 rows")
    tokens = int(re.search(r"(\d+) tokens", out.stderr.decode()).group(1))
    return npy[10 + header_len:], tokens


def floats_bytes(vec):
    return struct.pack(f"<{len(vec)}f", *vec)


def group_embed(a):
    """POST /v1/embeddings beside the chat model: the openai client's vectors (base64, its
    default, and float) are `ferrum embed`'s to the byte, token-id input equals text input,
    usage counts the tokens, and every fault is a 4xx naming its rule."""
    enc_id = os.path.basename(a.encoder.rstrip("/"))
    s = Server(a.ferrum, a.model, "--parallel", "1", "--ctx", "256", "--embedding-model", a.encoder,
               "--max-embedding-inputs", "4")
    try:
        c = s.client()
        mid = model_id(a.model)
        claim([m.id for m in c.models.list().data] == [mid, enc_id], "GET /v1/models lists both models")
        status, _, body = http(s, "GET", "/v1/models/" + enc_id)
        claim(status == 200 and json.loads(body)["id"] == enc_id, "GET /v1/models/ID of the encoder")
        texts = ["A man is eating food.", "The new movie is awesome.", "ünïcödé tëxt, with accents"]
        want, tokens = ferrum_embed(a, texts)
        for fmt in (None, "float", "base64"):  # None: the client asks base64 and decodes it itself
            kw = {"encoding_format": fmt} if fmt else {}
            r = c.embeddings.create(model=enc_id, input=texts, **kw)
            claim(r.object == "list" and r.model == enc_id and [d.index for d in r.data] == [0, 1, 2], f"{fmt}: shape")
            got = b"".join(base64.b64decode(d.embedding) if fmt == "base64" else floats_bytes(d.embedding)
                           for d in r.data)
            claim(got == want, f"{fmt}: the vectors are ferrum embed's to the byte")
            claim(r.usage.prompt_tokens == tokens and r.usage.total_tokens == tokens,
                  f"{fmt}: usage {r.usage} counts the {tokens} tokens")
        one = c.embeddings.create(model=enc_id, input=texts[0], encoding_format="float")
        claim(floats_bytes(one.data[0].embedding) == want[:384 * 4], "a single string input")
        # token ids in: [CLS] a cat [SEP] as WordPiece gives them (bert-base-uncased's ids)
        by_text = c.embeddings.create(model=enc_id, input="a cat", encoding_format="float").data[0].embedding
        by_ids = c.embeddings.create(model=enc_id, input=[101, 1037, 4937, 102], encoding_format="float")
        claim(by_ids.usage.prompt_tokens == 4, "token-id input counts its ids")
        claim(floats_bytes(by_ids.data[0].embedding) == floats_bytes(by_text), "token ids equal their text")
        two = c.embeddings.create(model=enc_id, input=[[101, 1037, 4937, 102], [101, 102]], encoding_format="float")
        claim(len(two.data) == 2 and floats_bytes(two.data[0].embedding) == floats_bytes(by_text), "lists of ids")
        # the chat model still answers beside it
        r = c.completions.create(model=mid, prompt="1, 2, 3, 4,", max_tokens=4, temperature=0)
        claim(r.choices[0].text.startswith(" 5"), "the chat model still answers")

        ct = ["-H", "Content-Type: application/json", "URL/v1/embeddings", "-d"]
        faults = [
            ({"model": enc_id, "input": ""}, 400, "empty string", "input"),
            ({"model": enc_id, "input": []}, 400, "empty list", "input"),
            ({"model": enc_id, "input": ["a", 3]}, 400, "not a mix", "input"),
            ({"model": enc_id, "input": ["a"] * 5}, 400, "--max-embedding-inputs", "input"),
            ({"model": enc_id, "input": "a", "encoding_format": "int8"}, 400, "base64", "encoding_format"),
            ({"model": enc_id, "input": "a", "dimensions": 64}, 400, "Matryoshka", "dimensions"),
            ({"model": enc_id, "input": "a", "dimensions": 385}, 400, "at most 384", "dimensions"),
            ({"model": enc_id, "input": [101, 99999, 102]}, 400, "outside the vocabulary", "input"),
            ({"model": enc_id, "input": [101] * 300}, 400, "max_tokens", "input"),
            ({"model": enc_id, "input": "word " * 400}, 400, "maximum of 256 tokens", "input"),
            ({"model": "nope", "input": "a"}, 404, "not an embedding model served here", "model"),
            ({"model": mid, "input": "a"}, 404, "not an embedding model served here", "model"),
            ({"input": "a"}, 400, "model is required", "model"),
        ]
        for body, status, words, param in faults:
            got, out = curl(s, *ct, json.dumps(body))
            claim(got == status, f"{body!r:.80}: HTTP {got}, wanted {status}")
            error_of(out, got, words, param)
        got, out = curl(s, *ct, '{"model": "x", "input": ')
        claim(got == 400, "malformed JSON: 400")
        error_of(out, got, "not valid JSON")
        got, out = curl(s, "URL/v1/embeddings")
        claim(got == 405, f"GET /v1/embeddings: {got}")
        claim(metric(s, "ferrum_embedding_inputs_total") >= 12, "embedding inputs counted")
        claim(metric(s, "ferrum_embedding_tokens_total") >= 2 * tokens, "embedding tokens counted")
    finally:
        s.stop()
    # Matryoshka: a model that allows it cuts its vectors to `dimensions`, normalised again,
    # as `ferrum embed --dim` does
    g = Server(a.ferrum, "--embedding-model=" + a.matryoshka_encoder, "--embedding-alias", "gemma")
    try:
        c = g.client()
        want16, _ = ferrum_embed(a, ["the weather", "a tea"], a.matryoshka_encoder, "--dim", "16")
        r = c.embeddings.create(model="gemma", input=["the weather", "a tea"], dimensions=16, encoding_format="float")
        claim([len(d.embedding) for d in r.data] == [16, 16], "dimensions=16 gives 16 values")
        claim(b"".join(floats_bytes(d.embedding) for d in r.data) == want16, "cut vectors equal ferrum embed --dim 16's")
        claim(abs(sum(x * x for x in r.data[0].embedding) - 1) < 1e-5, "a cut vector has unit norm again")
        full = c.embeddings.create(model="gemma", input="the weather", encoding_format="float").data[0].embedding
        claim(len(full) == 64, f"no dimensions: all {len(full)} values")
        got, out = curl(g, "-H", "Content-Type: application/json", "URL/v1/embeddings", "-d",
                        json.dumps({"model": "gemma", "input": "a", "dimensions": 65}))
        claim(got == 400, f"dimensions past the width: {got}")
        error_of(out, got, "at most 64", "dimensions")
    finally:
        g.stop()
    # alone: no chat model, and the chat routes say so
    s = Server(a.ferrum, "--embedding-model=" + a.encoder)
    try:
        c = s.client()
        claim([m.id for m in c.models.list().data] == [enc_id], "alone, GET /v1/models lists the encoder")
        r = c.embeddings.create(model=enc_id, input=texts, encoding_format="float")
        claim(b"".join(floats_bytes(d.embedding) for d in r.data) == want, "alone, the same vectors")
        got, out = curl(s, "-H", "Content-Type: application/json", "URL/v1/chat/completions", "-d",
                        json.dumps({"model": enc_id, "messages": [{"role": "user", "content": "hi"}]}))
        claim(got == 404, f"chat on an embeddings-only server: {got}")
        error_of(out, got, "serves no chat model", "model")
        status, _, body = http(s, "GET", "/health")
        claim(status == 200 and json.loads(body)["slots"] == 0, f"/health {body!r}")
    finally:
        s.stop()


def group_batch(a):
    """Batched decode (the default; --batch says it explicitly): three slots decoded by one call
    a step (GEMVs over the rows) give generate's tokens alone and side by side, in one group
    and in two; a disconnect ends its row at the next step."""
    group_equal(a, "--parallel", "3")
    group_equal(a, "--batch", "--parallel", "3", "--groups", "2")
    group_disconnect(a, "--batch")


GROUPS = {"api": group_api, "faults": group_faults, "equal": group_equal,
          "disconnect": lambda a: group_disconnect(a, "--no-batch"),
          "batch": group_batch, "embed": group_embed}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("group", choices=sorted(GROUPS))
    ap.add_argument("--ferrum", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--encoder", help="an encoder folder (all-MiniLM-L6-v2), for the embed group")
    ap.add_argument("--matryoshka-encoder", help="an EmbeddingGemma folder, for the embed group's dimensions")
    a = ap.parse_args()
    try:
        GROUPS[a.group](a)
    except Failed as e:
        print(f"test_serve.py {a.group}: FAILED: {e}", file=sys.stderr)
        return 1
    print(f"test_serve.py {a.group}: every claim holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
