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
disconnects mid-stream frees its slot; SIGTERM drains and exits 0. llama.cpp's server fields:
/tokenize and /detokenize round-trip; min_p, repeat_penalty, logit_bias take effect; the prefix
cache (cache_prompt) answers as an uncached run does and says what it reused (usage, timings,
/metrics); every new field is refused by name when malformed. DeepSeek-V3 and GLM-4.5 GGUF files
streamed from disk, and a Kimi-K2 directory: the family's chat template by default, greedy answers
equal to `ferry moe generate`'s and the same batched with another request.
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
        defaults = ([] if "--compute" in args else ["--compute", "none"]) + ([] if "--link" in args else ["--link", "2GBps,5us"])
        cmd = [FERRY, "moe", "serve", "--model", model, "--port", "0", *defaults, "--calibration", "", "--threads", "1",
               *args]
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


def post_together(server, path, bodies):
    """The (status, response) of each body, all sent at once from their own threads."""
    answers = [None] * len(bodies)

    def send(i):
        answers[i] = server.post(path, bodies[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


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
    assert status == 200 and r["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8,
                                            "prompt_tokens_details": {"cached_tokens": 0}}
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
    together = post_together(batched_srv, "/v1/chat/completions", reqs)
    # The requests really shared steps: more sequences than one per step on average.
    _, text = batched_srv.request("GET", "/metrics")
    steps = float(re.search(r"^ferry_batch_size_count (\S+)$", text, re.M).group(1))
    seqs = float(re.search(r"^ferry_batch_size_sum (\S+)$", text, re.M).group(1))
    assert seqs / steps > 1.5
    for i, (status, resp) in enumerate(together):
        assert status == 200, resp
        a, b = chat_tokens(alone[i]), chat_tokens(resp)
        assert len(a) == len(b) == reqs[i]["max_tokens"]
        for key in ["prompt_tokens", "completion_tokens", "total_tokens"]:  # cached_tokens may differ
            assert resp["usage"][key] == alone[i]["usage"][key]
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
    # Without the prefix cache: a reused prefix's logits may differ within the engine's bound, and
    # a sampled (not greedy) token may then differ at a near tie.
    s = server_factory("--policy", "next-gate", "--device-mem", "30%", "--prefix-cache", "0")
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


def greedy_tokens_equal(a, b, what):
    """Two chat responses with logprobs generated the same tokens, but at a near tie (see the top)."""
    x_all, y_all = chat_tokens(a), chat_tokens(b)
    assert len(x_all) == len(y_all), what
    for d, (x, y) in enumerate(zip(x_all, y_all)):
        if x[0] != y[0]:
            top = x[2]
            assert len(top) == 2 and top[0][1] - top[1][1] <= NEAR_TIE, f"{what}: differs at token {d}: {x} vs {y}"
            return False
    return True


def test_tokenize_and_detokenize_round_trip(server_factory):
    s = server_factory()
    for text in ["def f(x):\n    return x * 2\n", "ünïcödé ✓", "a"]:
        status, t = s.post("/tokenize", {"content": text})
        assert status == 200 and all(isinstance(i, int) for i in t["tokens"]) and t["tokens"], t
        status, d = s.post("/detokenize", {"tokens": t["tokens"]})
        assert status == 200 and d["content"] == text
    status, t = s.post("/tokenize", {"content": "abc", "with_pieces": True})
    assert status == 200 and "".join(p["piece"] for p in t["tokens"]) == "abc"
    plain = s.post("/tokenize", {"content": "abc"})[1]["tokens"]
    assert [p["id"] for p in t["tokens"]] == plain
    # add_special prepends the BOS token exactly when the tokenizer has one.
    special = s.post("/tokenize", {"content": "abc", "add_special": True})[1]["tokens"]
    assert special[len(special) - len(plain):] == plain and len(special) - len(plain) in (0, 1)
    for path, body, param in [("/tokenize", {}, "content"), ("/tokenize", {"content": 5}, "content"),
                              ("/tokenize", {"content": "a", "bogus": 1}, "bogus"),
                              ("/tokenize", {"content": "a", "with_pieces": "yes"}, "with_pieces"),
                              ("/detokenize", {}, "tokens"), ("/detokenize", {"tokens": "abc"}, "tokens"),
                              ("/detokenize", {"tokens": ["a"]}, "tokens"), ("/detokenize", {"tokens": [-1]}, "tokens"),
                              ("/detokenize", {"tokens": [10 ** 6]}, "tokens")]:
        status, r = s.post(path, body)
        assert status == 400 and r["error"]["param"] == param, (path, body, r)
    assert s.stop() == 0


def test_new_sampling_fields_are_refused_by_name_when_malformed(server_factory):
    s = server_factory()
    base = {"prompt": "abc", "max_tokens": 2}
    for field, value in [("min_p", "x"), ("min_p", 2), ("min_p", -0.1), ("repeat_penalty", 0), ("repeat_penalty", "a"),
                         ("repeat_last_n", -2), ("repeat_last_n", 1.5), ("presence_penalty", 3),
                         ("frequency_penalty", "x"), ("cache_prompt", "yes"), ("cache_prompt", 1), ("logit_bias", []),
                         ("logit_bias", {"abc": 1}), ("logit_bias", {"1": 1000}), ("logit_bias", {"1": "a"}),
                         ("logit_bias", {"-3": 1}), ("logit_bias", {"99999": 1}), ("n_probs", 99), ("n_probs", "a")]:
        status, r = s.post("/v1/completions", dict(base, **{field: value}))
        assert status == 400 and r["error"]["param"] == field, (field, value, r)
    status, r = s.post("/v1/completions", dict(base, logprobs=1, n_probs=2))
    assert status == 400 and r["error"]["param"] == "n_probs"
    # Neutral values are taken.
    for field, value in [("logit_bias", {}), ("min_p", 0), ("repeat_penalty", 1), ("presence_penalty", 0),
                         ("cache_prompt", False), ("n_probs", 0)]:
        status, r = s.post("/v1/completions", dict(base, **{field: value}))
        assert status == 200, (field, value, r)
    assert s.stop() == 0


def test_sampling_fields_take_effect(server_factory):
    s = server_factory()
    a_id = s.post("/tokenize", {"content": "A"})[1]["tokens"]
    assert len(a_id) == 1
    # logit_bias +100 on one token: greedy decoding picks it every time.
    status, r = s.post("/v1/completions", {"prompt": "def ", "max_tokens": 6, "temperature": 0, "ignore_eos": True,
                                           "logit_bias": {str(a_id[0]): 100}})
    assert status == 200 and r["choices"][0]["text"] == "A" * 6, r
    # min_p 1 keeps only the most likely token: any temperature and seed give the greedy output.
    greedy = s.post("/v1/completions", {"prompt": "x = [i", "max_tokens": 12, "temperature": 0, "ignore_eos": True})[1]
    for seed in (1, 2):
        r = s.post("/v1/completions", {"prompt": "x = [i", "max_tokens": 12, "temperature": 1.5, "seed": seed,
                                       "min_p": 1.0, "ignore_eos": True})[1]
        assert r["choices"][0]["text"] == greedy["choices"][0]["text"]
    # An overwhelming repeat penalty over the whole sequence: no generated token repeats one before it.
    r = s.post("/v1/completions", {"prompt": "ab", "max_tokens": 24, "temperature": 0, "ignore_eos": True,
                                   "repeat_penalty": 1e6, "repeat_last_n": -1})[1]
    # (Byte tokens: each ASCII character of the text is one token; other bytes of a random-weight
    # model are often invalid UTF-8, shown as U+FFFD, so only the ASCII ones are compared.)
    chars = [c for c in "ab" + r["choices"][0]["text"] if c.isascii()]
    assert len(chars) > 2 and len(chars) == len(set(chars)), chars
    assert s.stop() == 0


def test_prefix_cache_answers_as_uncached_and_says_what_it_reused(server_factory):
    s = server_factory("--policy", "lru", "--device-mem", "50%", "--prefill-chunk", "5")
    turn1 = [{"role": "user", "content": "def parse_args(argv):\n"}]
    req = {"max_tokens": 10, "temperature": 0, "ignore_eos": True, "logprobs": True, "top_logprobs": 2}
    status, r1 = s.post("/v1/chat/completions", dict(req, messages=turn1))
    assert status == 200 and r1["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert r1["timings"]["cache_n"] == 0 and r1["timings"]["prompt_n"] == r1["usage"]["prompt_tokens"]
    turn2 = turn1 + [{"role": "assistant", "content": r1["choices"][0]["message"]["content"]},
                     {"role": "user", "content": "and then?"}]
    status, cached = s.post("/v1/chat/completions", dict(req, messages=turn2))
    assert status == 200
    reused = cached["usage"]["prompt_tokens_details"]["cached_tokens"]
    # At least the whole first prompt was reused, and never the last prompt token.
    assert r1["usage"]["prompt_tokens"] <= reused < cached["usage"]["prompt_tokens"], cached["usage"]
    assert cached["timings"]["cache_n"] == reused
    assert cached["timings"]["prompt_n"] + reused == cached["usage"]["prompt_tokens"]
    assert s.metric("ferry_prompt_tokens_cached_total") == reused
    status, uncached = s.post("/v1/chat/completions", dict(req, messages=turn2, cache_prompt=False))
    assert status == 200 and uncached["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    if greedy_tokens_equal(uncached, cached, "cached vs uncached"):
        assert cached["choices"][0]["message"]["content"] == uncached["choices"][0]["message"]["content"]
    # A server without the cache answers the same.
    plain = server_factory("--policy", "lru", "--device-mem", "50%", "--prefix-cache", "0")
    status, r = plain.post("/v1/chat/completions", dict(req, messages=turn2))
    assert status == 200 and r["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    greedy_tokens_equal(r, cached, "no cache vs cached")
    assert s.stop() == 0 and plain.stop() == 0


def test_timings_in_whole_and_streamed_responses(server_factory):
    s = server_factory()
    body = {"prompt": "import os\n", "max_tokens": 7, "temperature": 0, "ignore_eos": True}
    status, r = s.post("/v1/completions", body)
    assert status == 200
    t = r["timings"]
    assert t["predicted_n"] == r["usage"]["completion_tokens"] == 7
    assert t["prompt_n"] + t["cache_n"] == r["usage"]["prompt_tokens"]
    assert t["prompt_ms"] > 0 and t["predicted_ms"] > 0 and t["predicted_per_second"] > 0
    events = s.stream("/v1/completions", dict(body, cache_prompt=False))
    last = [e for e in events if e != "[DONE]" and e["choices"] and e["choices"][0]["finish_reason"]][-1]
    assert last["timings"]["predicted_n"] == 7 and last["timings"]["cache_n"] == 0
    assert s.stop() == 0


def test_deep_nesting_and_chunked_bodies_are_refused_before_they_cost(server_factory):
    s = server_factory()  # --max-body 1 MiB
    for depth in (65, 50_000, 100_000):  # 200 KB at the deepest: under --max-body
        body = '{"prompt": ' + "[" * depth + "]" * depth + "}"
        status, r = s.post("/v1/completions", body)
        assert status == 400 and "deeper than 64 levels" in r["error"]["message"], (depth, str(r)[:200])
        assert len(json.dumps(r)) < 400  # no echo of the body
        assert s.healthy()
    status, r = s.post("/v1/completions", '{"prompt": [' + "[" * 60 + "]" * 60 + "]}")  # under the bound
    assert status == 400 and r["error"]["param"] == "prompt" and len(r["error"]["message"]) < 200, r
    # A chunked body, bounded by nothing cpp-httplib checks: refused before it is read.
    # (The server answers after the headers and closes: the client sends its first chunk, then reads.)
    import socket
    with socket.create_connection(("127.0.0.1", s.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n10000\r\n" + b"x" * 65536 + b"\r\n")
        reply = b""
        while b"}}" not in reply:
            part = sock.recv(4096)
            if not part:
                break
            reply += part
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411"), reply[:200]
    assert "Content-Length" in json.loads(payload)["error"]["message"]
    assert s.healthy()
    assert s.post("/v1/completions", {"prompt": "ok", "max_tokens": 2})[0] == 200
    assert s.stop() == 0


# The families whose layers are not Mixtral's, with make-tiny's shapes of them (heads 64 wide: MLA's
# rows whole Q8_0 blocks): DeepSeek-V3 (latent
# attention with the q bottleneck, two groups of experts, a shared expert, a dense first layer) and
# GLM-4.5 as Q8_0 GGUF files whose experts stream from disk (--link file), and Kimi-K2 (DeepSeek-V3's
# layers under model_type kimi_k2) as a directory. Each with the chat template it is served with by
# default and one user message as that template renders it (serve_test.cc checks the templates).
FAMILY_SHAPE = ["--layers", "3", "--experts", "8", "--top-k", "2", "--hidden", "64", "--intermediate", "64", "--heads",
                "4", "--kv-heads", "2", "--head-dim", "64", "--dense-layers", "0", "--max-pos", str(MAX_POS), "--seed", "5"]
RENDERED = {"deepseek3": "<\uff5cUser\uff5c>{}<\uff5cAssistant\uff5c>", "chatglm4": "[gMASK]<sop><|user|>\n{}<|assistant|>\n",
            "kimi-k2": "<|im_user|>user<|im_middle|>{}<|im_end|><|im_assistant|>assistant<|im_middle|>"}


@pytest.fixture(scope="module")
def family_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("families")

    def make(name, family, *extra):
        out = str(d / name)
        subprocess.run([FERRY, "moe", "make-tiny", "--out", out, "--family", family, *FAMILY_SHAPE, *extra], check=True,
                       capture_output=True)
        return out

    kimi = make("kimi", "deepseek_v3", "--q-lora-rank", "32")
    with open(kimi + "/config.json") as f:
        config = json.load(f)
    config["model_type"] = "kimi_k2"
    with open(kimi + "/config.json", "w") as f:
        json.dump(config, f)
    return {"deepseek_v3": (make("ds.gguf", "deepseek_v3", "--gguf", "Q8_0", "--q-lora-rank", "32"), "deepseek3", "file"),
            "glm4_moe": (make("glm.gguf", "glm4_moe", "--gguf", "Q8_0"), "chatglm4", "file"),
            "kimi_k2": (kimi, "kimi-k2", "2GBps,5us")}


@pytest.mark.parametrize("name", ["deepseek_v3", "glm4_moe", "kimi_k2"])
def test_family_answers_equal_generate_and_do_not_depend_on_batching(family_models, name):
    # Greedy answers of two requests served one at a time under an offloading budget, then together
    # in one batch: the same tokens, and those `ferry moe generate` gives for the rendered prompt
    # (one byte per token: byte vocabulary), but at a near tie (see the top).
    model, template, link = family_models[name]
    prompts = ["def f(x):", "import os"]
    reqs = [{"messages": [{"role": "user", "content": p}], "max_tokens": 8, "temperature": 0, "ignore_eos": True,
             "logprobs": True, "top_logprobs": 2} for p in prompts]
    s = Server(model, "--policy", "lru", "--device-mem", "50%", "--link", link, "--max-batch", "2")
    try:
        assert f"chat template {template}," in "".join(s.banner), s.banner
        alone = [s.post("/v1/chat/completions", r) for r in reqs]
        together = post_together(s, "/v1/chat/completions", reqs)
        assert s.stop() == 0
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
    for i, prompt in enumerate(prompts):
        assert alone[i][0] == 200 and together[i][0] == 200, (alone[i], together[i])
        greedy_tokens_equal(alone[i][1], together[i][1], f"{name} request {i} alone vs batched")
        rendered = RENDERED[template].format(prompt)
        g = subprocess.run([FERRY, "moe", "generate", "--model", model, "--prompt", rendered, "--tokens", "8",
                            "--temperature", "0", "--policy", "lru", "--device-mem", "100%"], capture_output=True)
        assert g.returncode == 0, g.stderr
        generated = g.stdout[len(rendered.encode()):-1]  # the prompt, the new bytes, a newline
        served = chat_tokens(alone[i][1])
        assert len(generated) == len(served) == 8, (generated, served)
        for d, (x, b) in enumerate(zip(served, generated)):
            if x[0] != bytes([b]):
                top = x[2]
                assert len(top) == 2 and top[0][1] - top[1][1] <= NEAR_TIE and bytes([b]) in (top[0][0], top[1][0]), (
                    f"{name} request {i} differs from ferry moe generate at token {d} without a near tie: {x} vs {b}")
                break
