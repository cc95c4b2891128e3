"""`ferry moe serve` over real HTTP, with clients that are not the server's code: Python's
http.client/urllib and curl.

The server runs on a free loopback port over a random-weight tiny model that `ferry moe make-tiny`
writes (byte tokens). Checked: greedy outputs of requests served concurrently in one batch equal the
same requests served one at a time, token for token, under an offloading policy with a small budget
(a token may differ only at a near tie: ferry's logits are within 1e-4 of an exact forward, so two
runs differ by at most 2e-4 and a greedy choice can flip only where the top two log-probabilities are
that close; the one-at-a-time run's logprobs tell); streamed and whole responses agree; 64
concurrent clients all complete; every bad request gets its status code and an OpenAI-style error
while the server keeps answering /health; the API key; a full queue answers 429; a client that
disconnects mid-stream frees its slot; SIGTERM drains and exits 0.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

FERRY = os.environ.get("FERRY_BIN", "")
pytestmark = pytest.mark.skipif(not os.access(FERRY, os.X_OK), reason="FERRY_BIN is not set to the ferry binary")
NEAR_TIE = 2e-4
MAX_POS = 256


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("serve") / "tiny")
    subprocess.run([FERRY, "moe", "make-tiny", "--out", d, "--layers", "2", "--experts", "8", "--top-k", "2",
                    "--hidden", "64", "--intermediate", "96", "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
                    "--max-pos", str(MAX_POS), "--seed", "3"], check=True, capture_output=True)
    return d


class Server:
    def __init__(self, model, *args):
        defaults = [] if "--compute" in args else ["--compute", "none"]
        cmd = [FERRY, "moe", "serve", "--model", model, "--port", "0", "--link", "2GBps,5us", *defaults,
               "--calibration", "", "--threads", "1", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        self.port = None
        self.banner = []
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.banner.append(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("server did not start: " + "".join(self.banner) + self.proc.stderr.read())

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, parsed JSON or text) over a fresh connection."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        raw = r.read().decode("utf-8")
        c.close()
        try:
            return r.status, json.loads(raw)
        except json.JSONDecodeError:
            return r.status, raw

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def stream(self, path, body, timeout=120):
        """The parsed data events of a streamed request; the last is the string [DONE]."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request("POST", path, body=json.dumps(dict(body, stream=True)), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, r.read()
        assert r.getheader("Content-Type").startswith("text/event-stream")
        events = []
        for line in r.read().decode("utf-8").split("\n"):
            if line.startswith("data: "):
                payload = line[len("data: "):]
                events.append(payload if payload == "[DONE]" else json.loads(payload))
        c.close()
        return events

    def healthy(self):
        return self.request("GET", "/health")[0] == 200

    def metric(self, name):
        _, text = self.request("GET", "/metrics")
        m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


@pytest.fixture
def server_factory(model):
    made = []

    def make(*args):
        s = Server(model, *args)
        made.append(s)
        return s

    yield make
    for s in made:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


PROMPTS = ["def parse_args(argv):\n", "import os\nimport sys\n", "class Node:\n    def __init__(self", "x = [i * i for i",
           "# A comment about things\n", "for k, v in d.items():", "while True:\n    line = f.read", "return {'a': 1,"]


def chat_tokens(resp):
    """The generated tokens as (bytes, logprob, top two (bytes, logprob)) from a chat response."""
    content = resp["choices"][0]["logprobs"]["content"]
    return [(bytes(t["bytes"]), t["logprob"], [(bytes(a["bytes"]), a["logprob"]) for a in t["top_logprobs"]])
            for t in content]


def test_health_models_and_metrics(server_factory):
    s = server_factory("--policy", "lru", "--device-mem", "50%")
    assert s.request("GET", "/health") == (200, {"status": "ok"})
    status, models = s.request("GET", "/v1/models")
    assert status == 200 and models["object"] == "list" and models["data"][0]["id"] == "tiny"
    status, r = s.post("/v1/completions", {"prompt": "abc", "max_tokens": 5, "temperature": 0})
    assert status == 200 and r["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    _, text = s.request("GET", "/metrics")
    for name in ["ferry_requests_total{code=\"200\"}", "ferry_generation_tokens_total 5", "ferry_queue_length 0",
                 "ferry_batch_size_bucket", "ferry_expert_hit_rate", "ferry_expert_bytes_moved_total",
                 "ferry_io_wait_seconds_total", "ferry_device_memory_peak_bytes", "ferry_device_memory_budget_bytes",
                 "ferry_time_to_first_token_seconds_bucket", "ferry_time_per_output_token_seconds_count 1"]:
        assert name in text, name
    assert s.metric("ferry_device_memory_peak_bytes") <= s.metric("ferry_device_memory_budget_bytes")
    assert s.stop() == 0


def test_concurrent_greedy_equals_one_at_a_time(server_factory):
    # One at a time with every expert resident; then all at once, batched, under prescope with 25 %.
    reqs = [{"messages": [{"role": "user", "content": p}], "max_tokens": 6 + 3 * i, "temperature": 0,
             "ignore_eos": True, "logprobs": True, "top_logprobs": 2} for i, p in enumerate(PROMPTS)]
    alone_srv = server_factory("--policy", "lru", "--device-mem", "100%", "--max-batch", "1")
    alone = []
    for r in reqs:
        status, resp = alone_srv.post("/v1/chat/completions", r)
        assert status == 200, resp
        alone.append(resp)
    assert alone_srv.stop() == 0
    batched_srv = server_factory("--policy", "prescope", "--device-mem", "25%", "--max-batch", "8",
                                 "--prefill-chunk", "7")
    together = [None] * len(reqs)

    def send(i):
        together[i] = batched_srv.post("/v1/chat/completions", reqs[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The requests really shared steps: more sequences than one per step on average.
    _, text = batched_srv.request("GET", "/metrics")
    steps = float(re.search(r"^ferry_batch_size_count (\S+)$", text, re.M).group(1))
    seqs = float(re.search(r"^ferry_batch_size_sum (\S+)$", text, re.M).group(1))
    assert seqs / steps > 1.5
    for i, (status, resp) in enumerate(together):
        assert status == 200, resp
        a, b = chat_tokens(alone[i]), chat_tokens(resp)
        assert len(a) == len(b) == reqs[i]["max_tokens"]
        assert resp["usage"] == alone[i]["usage"]
        for d, (x, y) in enumerate(zip(a, b)):
            if x[0] != y[0]:
                top = x[2]
                assert len(top) == 2 and top[0][1] - top[1][1] <= NEAR_TIE and y[0] in (top[0][0], top[1][0]), (
                    f"request {i} differs at token {d} without a near tie: {x} vs {y}")
                break
            assert abs(x[1] - y[1]) <= 2 * NEAR_TIE, (i, d, x[1], y[1])  # a log-softmax: twice the logits' bound
        else:
            assert resp["choices"][0]["message"]["content"] == alone[i]["choices"][0]["message"]["content"]
    assert batched_srv.stop() == 0


def test_stream_and_whole_responses_agree(server_factory):
    s = server_factory("--policy", "next-gate", "--device-mem", "30%")
    body = {"prompt": "def f(x):\n    return", "max_tokens": 24, "temperature": 0.8, "top_p": 0.95, "top_k": 40,
            "seed": 7}
    status, whole = s.post("/v1/completions", body)
    assert status == 200
    events = s.stream("/v1/completions", dict(body, stream_options={"include_usage": True}))
    assert events[-1] == "[DONE]"
    usage = events[-2]
    assert usage["choices"] == [] and usage["usage"] == whole["usage"]
    chunks = events[:-2]
    assert all(c["object"] == "text_completion" and c["id"] == chunks[0]["id"] for c in chunks)
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"] == "length"
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]
    # The same seed gives the same sample; another seed (almost surely) another.
    assert s.post("/v1/completions", body)[1]["choices"][0]["text"] == whole["choices"][0]["text"]
    # Chat: a role chunk first, then content deltas that join to the whole message.
    chat = {"messages": [{"role": "system", "content": "terse"}, {"role": "user", "content": "hi"}], "max_tokens": 12,
            "temperature": 0}
    status, whole_chat = s.post("/v1/chat/completions", chat)
    assert status == 200 and whole_chat["object"] == "chat.completion"
    events = s.stream("/v1/chat/completions", chat)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[-2]["choices"][0]["finish_reason"] == "length"
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1]) == \
        whole_chat["choices"][0]["message"]["content"]
    # curl, streaming, as a user would run it.
    out = subprocess.run(["curl", "-sS", "-N", f"http://127.0.0.1:{s.port}/v1/completions", "-H",
                          "Content-Type: application/json", "-d", json.dumps(dict(body, stream=True))],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    data = [line[6:] for line in out.split("\n") if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert "".join(json.loads(d)["choices"][0]["text"] for d in data[:-1]) == whole["choices"][0]["text"]
    # A stop string ends the text just before it, with finish_reason "stop".
    # (A random-weight byte model writes invalid UTF-8 too, which JSON shows as U+FFFD: the stop is
    # taken from two ASCII characters of the text.)
    text = whole["choices"][0]["text"]
    ascii_at = [i for i in range(1, len(text) - 1) if text[i].isascii() and text[i + 1].isascii()]
    if ascii_at:
        stop = text[ascii_at[0]:ascii_at[0] + 2]
        status, cut = s.post("/v1/completions", dict(body, stop=[stop]))
        assert status == 200 and cut["choices"][0]["finish_reason"] == "stop"
        assert cut["choices"][0]["text"] == text[:text.index(stop)]
    assert s.stop() == 0


def test_64_concurrent_clients_all_complete(server_factory):
    s = server_factory("--policy", "prescope", "--device-mem", "25%", "--max-batch", "16", "--max-queue", "64")
    results = [None] * 64

    def client(i):
        body = {"prompt": PROMPTS[i % len(PROMPTS)] * (1 + i % 3), "max_tokens": 4 + i % 9, "temperature": 0,
                "ignore_eos": True}
        results[i] = s.post("/v1/completions", body)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, r) in enumerate(results):
        assert status == 200, r
        assert r["usage"]["completion_tokens"] == 4 + i % 9
    assert s.metric("ferry_generation_tokens_total") == sum(4 + i % 9 for i in range(64))
    assert s.stop() == 0


def test_bad_requests_get_their_status_and_the_server_keeps_serving(server_factory):
    s = server_factory("--policy", "lru", "--max-tokens", "64", "--max-body", "4096")
    long_prompt = "x" * (MAX_POS + 1)
    cases = [
        ("POST", "/v1/completions", '{"prompt": "abc", ', 400, None),
        ("POST", "/v1/completions", {"prompt": 12}, 400, "prompt"),
        ("POST", "/v1/completions", {"prompt": "a", "max_tokens": "ten"}, 400, "max_tokens"),
        ("POST", "/v1/completions", {"prompt": "a", "temperature": None, "top_p": "high"}, 400, "top_p"),
        ("POST", "/v1/completions", {"prompt": "a", "frobnicate": 1}, 400, "frobnicate"),
        ("POST", "/v1/completions", {"prompt": long_prompt}, 400, "prompt"),
        ("POST", "/v1/completions", {"prompt": "a", "max_tokens": 65}, 400, "max_tokens"),
        ("POST", "/v1/completions", {"prompt": "a" * 200, "max_tokens": 60}, 400, "prompt"),  # 200 + 60 > 256
        ("POST", "/v1/completions", {"prompt": "a", "model": "gpt-4"}, 404, "model"),
        ("POST", "/v1/completions", {"prompt": "a" * 5000}, 413, None),
        ("POST", "/v1/chat/completions", {"messages": [{"role": "tool", "content": "x"}]}, 400, "messages"),
        ("GET", "/v1/nothing", None, 404, None),
    ]
    for method, path, body, want, param in cases:
        status, r = s.request(method, path, body)
        assert status == want, (body if not isinstance(body, str) else body[:40], status, r)
        assert isinstance(r, dict) and r["error"]["message"], r
        if param:
            assert r["error"]["param"] == param, r
        assert s.healthy()
    status, r = s.post("/v1/completions", {"prompt": "a" * 200, "max_tokens": 60})
    assert r["error"]["code"] == "context_length_exceeded"
    # curl sees the same: a status code and a JSON error.
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                          f"http://127.0.0.1:{s.port}/v1/completions", "-H", "Content-Type: application/json",
                          "-d", "{not json"], capture_output=True, text=True, timeout=30)
    assert out.stdout == "400"
    # A request line that is not HTTP at all.
    import socket
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
        sock.sendall(b"\x16\x03\x01 garbage\r\n\r\n")
        sock.recv(1000)
    assert s.healthy()
    assert s.post("/v1/completions", {"prompt": "ok", "max_tokens": 2})[0] == 200
    assert s.stop() == 0


def test_api_key_guards_the_api(server_factory):
    s = server_factory("--api-key", "sekret")
    body = json.dumps({"prompt": "a", "max_tokens": 2}).encode()
    url = f"http://127.0.0.1:{s.port}/v1/completions"
    for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "sekret"}]:
        req = urllib.request.Request(url, data=body, headers=dict(headers, **{"Content-Type": "application/json"}))
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == 401
        assert json.loads(e.value.read())["error"]["type"] == "authentication_error"
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json",
                                                          "Authorization": "Bearer sekret"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert json.loads(r.read())["usage"]["completion_tokens"] == 2
    assert s.request("GET", "/v1/models")[0] == 401
    assert s.healthy()  # /health and /metrics stay open, as load balancers need
    assert s.stop() == 0


def slow(*args):
    # Every device expert call padded to 20 ms: a step of 2 layers takes >= 80 ms.
    return ["--compute", "20ms,20ms", "--device-mem", "100%", *args]


def test_full_queue_answers_429(server_factory):
    s = server_factory(*slow("--max-batch", "1", "--max-queue", "0"))
    first = threading.Thread(target=lambda: s.post("/v1/completions", {"prompt": "a", "max_tokens": 40,
                                                                      "ignore_eos": True}))
    first.start()
    deadline = time.time() + 30
    while s.metric("ferry_running_sequences") != 1 and time.time() < deadline:
        time.sleep(0.02)
    status, r = s.post("/v1/completions", {"prompt": "b", "max_tokens": 2})
    assert status == 429 and r["error"]["type"] == "rate_limit_error", r
    first.join()
    assert s.post("/v1/completions", {"prompt": "b", "max_tokens": 2})[0] == 200
    assert s.stop() == 0


def test_kv_bound_refuses_a_request_larger_than_it(server_factory, model):
    # The tiny model's KV cache: 2 x layers x KV heads x head_dim x 4 bytes per position. A bound of
    # 64 positions admits a short request and answers 400 (naming the bound) for one that may reach 200.
    with open(os.path.join(model, "config.json")) as f:
        c = json.load(f)
    heads = c["num_attention_heads"]
    head_dim = c.get("head_dim") or c["hidden_size"] // heads
    per_position = 2 * c["num_hidden_layers"] * c.get("num_key_value_heads", heads) * head_dim * 4
    s = server_factory("--policy", "lru", "--kv-mem", str(64 * per_position))
    status, r = s.post("/v1/completions", {"prompt": "a", "max_tokens": 200})
    assert status == 400 and "KV cache" in r["error"]["message"], r
    assert s.post("/v1/completions", {"prompt": "a", "max_tokens": 8})[0] == 200
    assert s.stop() == 0


def test_disconnect_mid_stream_frees_the_slot(server_factory):
    s = server_factory(*slow("--max-batch", "1", "--max-queue", "4"))
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": "a", "max_tokens": 200, "stream": True,
                                                          "ignore_eos": True, "temperature": 0}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    got = 0
    while got < 3:  # three chunks, then hang up
        line = r.fp.readline()
        got += line.startswith(b"data: ")
    c.sock.shutdown(2)
    c.close()
    # The slot frees: a second request (max batch 1) runs and finishes long before 200 tokens.
    status, resp = s.post("/v1/completions", {"prompt": "b", "max_tokens": 3, "ignore_eos": True})
    assert status == 200 and resp["usage"]["completion_tokens"] == 3
    generated = s.metric("ferry_decode_tokens_total") + s.metric("ferry_prefill_tokens_total")
    assert generated < 60, generated  # the 200-token stream stopped after a few steps
    assert s.metric("ferry_running_sequences") == 0
    assert s.stop() == 0


def test_sigterm_drains_and_exits_zero(server_factory):
    s = server_factory(*slow("--max-batch", "2", "--drain", "1"))
    events = []
    t = threading.Thread(target=lambda: events.extend(
        s.stream("/v1/completions", {"prompt": "a", "max_tokens": 200, "ignore_eos": True})))
    t.start()
    deadline = time.time() + 30
    while s.metric("ferry_running_sequences") != 1 and time.time() < deadline:
        time.sleep(0.02)
    t0 = time.time()
    s.proc.send_signal(signal.SIGTERM)
    rc = s.proc.wait(timeout=60)
    t.join(timeout=30)
    assert rc == 0
    # Drained within the bound (1 s of drain, a step, the connection's 1 s keep-alive) and the
    # running stream was ended properly: a last chunk saying why, then [DONE].
    assert time.time() - t0 < 20
    assert events[-1] == "[DONE]"
    assert events[-2]["choices"][0]["finish_reason"] == "cancelled"
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", s.port, timeout=5).request("GET", "/health")
