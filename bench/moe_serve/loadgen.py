#!/usr/bin/python3
"""Load generator for OpenAI-compatible servers (`ferry moe serve`, llama.cpp's llama-server):
streamed /v1/completions and /v1/chat/completions, timed per request.

Workloads (--workload):
  closed  For each concurrency level N, N client threads each send --requests-per-client requests
          one after the other (the next when the previous has finished).
  rate    Open loop: for each request rate R (--rates, requests/s), --requests requests arrive at
          Poisson times (exponential gaps of mean 1/R) whatever the server's progress; 'inf' sends
          them all at once.
  chat    --sessions S conversations at once, each of --turns T turns on /v1/chat/completions;
          every turn resends the whole conversation (the earlier user messages and the answers the
          server streamed back) plus a new user message, so a server that caches prompt prefixes
          answers later turns sooner: the rows per turn show it.
Lengths (--lengths): 'uniform' draws prompt bytes and max_tokens uniformly from --prompt-lens and
--output-lens (one byte is one token on ferry's byte-vocabulary models); 'sharegpt' draws prompt
and output tokens from lognormals shaped like ShareGPT conversations (medians --prompt-median,
--output-median, clipped to --prompt-max, --output-max) and cuts a prompt of tokens x
--bytes-per-token bytes. Prompts are cut from the corpus (default: the Python standard library's
*.py files). Every draw is seeded by --seed and the request's place alone, so every server and
every label is sent exactly the same requests. `ignore_eos: true` and `max_tokens` make every
request generate its asked length; tokens are counted from the stream's `usage` (stream_options
include_usage), else llama-server's `timings`, and a count other than max_tokens is reported.
--cache-prompt on|off sends llama-server's `cache_prompt` field (nothing is sent by default);
--ban-tokens sends a `logit_bias` of -100 for the given token ids.

TTFT is the time from sending to the first chunk carrying text (a chat server's opening
role-only chunk is not a token); TPOT is (finish chunk - first text chunk) / (tokens - 1).

Writes OUT/serve_LABEL.csv (one row per level, rate, or chat turn plus the whole chat) and
OUT/serve_LABEL.json (the same plus every request), and prints one line per row.

  loadgen.py --url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests-per-client 2 \\
      --prompt-lens 16,96 --output-lens 16,64 --corpus default --seed 1 --label prescope --out DIR
  loadgen.py --url URL --workload rate --rates 0.5,1,2 --requests 64 --lengths sharegpt --label L --out DIR
  loadgen.py --url URL --workload chat --sessions 4 --turns 4 --lengths sharegpt --cache-prompt off ...
  loadgen.py --url URL --measure-bytes-per-token       (prints the corpus's bytes per token, via /tokenize)

Standard library only: it must run next to the server without a virtual environment.
"""
import argparse
import http.client
import json
import math
import os
import random
import re
import sys
import sysconfig
import threading
import time
import urllib.parse

CORPUS_MAX_BYTES = 2 << 20
# The first eleven are the closed-loop columns bench/moe_serve/report.py reads; the rest describe
# the other workloads (empty where they do not apply).
CSV_FIELDS = ["label", "concurrency", "requests", "errors", "completion_tokens", "wall_s", "tokens_per_s",
              "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
              "workload", "rate", "turn", "requests_per_s", "prompt_tokens", "mismatched", "cache_prompt"]


def int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers: {text!r}")
    return values


def rate_list(text):
    """Comma-separated positive request rates (requests/s); 'inf' for all at once."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of rates: {text!r}")
    if not values or min(values) <= 0 or any(math.isnan(v) for v in values):
        raise argparse.ArgumentTypeError(f"need positive rates (or inf): {text!r}")
    return values


def int_range(text):
    """'lo,hi' (inclusive) or a single 'n' meaning lo = hi = n."""
    values = int_list(text)
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or values[0] > values[1]:
        raise argparse.ArgumentTypeError(f"need LO,HI with 1 <= LO <= HI: {text!r}")
    return tuple(values)


def token_set(text):
    """'128-255' or '5,7,128-255': token ids, as a sorted list."""
    ids = set()
    try:
        for part in (p.strip() for p in text.split(",")):
            lo, _, hi = part.partition("-")
            lo, hi = int(lo), int(hi or lo)
            if lo < 0 or hi < lo:
                raise ValueError
            ids.update(range(lo, hi + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"need token ids or ranges, e.g. 128-255 or 5,7,128-255: {text!r}")
    return sorted(ids)


def positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not v > 0 or math.isinf(v):
        raise argparse.ArgumentTypeError(f"need a positive finite number: {text!r}")
    return v


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default method); None when empty."""
    if not values:
        return None
    v = sorted(values)
    rank = (len(v) - 1) * p / 100.0
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def load_corpus(spec):
    """The prompt text: a file, or a directory's *.py files (top level, sorted) concatenated."""
    if spec == "default":
        spec = sysconfig.get_paths()["stdlib"]
    paths = [spec] if os.path.isfile(spec) else \
        sorted(os.path.join(spec, n) for n in os.listdir(spec) if n.endswith(".py"))
    data = bytearray()
    for path in paths:
        with open(path, "rb") as f:
            data += f.read(CORPUS_MAX_BYTES - len(data))
        if len(data) >= CORPUS_MAX_BYTES:
            break
    # Only ASCII is kept, so one character is one byte on the wire: on a byte-tokenized model a
    # prompt of L characters is exactly L prompt tokens.
    return re.sub(rb"[^\t\n\x20-\x7e]", b"", bytes(data)).decode("ascii")


# --- the requests ---------------------------------------------------------------------------------

def draw_lengths(args, rng):
    """(prompt bytes, max_tokens) of one request."""
    if args.lengths == "uniform":
        return rng.randint(*args.prompt_lens), rng.randint(*args.output_lens)
    # ShareGPT-like: lognormal token counts (median m = exp(mu)), clipped to [1, max].
    prompt_tokens = min(args.prompt_max, max(1, round(rng.lognormvariate(math.log(args.prompt_median),
                                                                         args.prompt_sigma))))
    output_tokens = min(args.output_max, max(1, round(rng.lognormvariate(math.log(args.output_median),
                                                                         args.output_sigma))))
    return max(1, round(prompt_tokens * args.bytes_per_token)), output_tokens


def draw_request(args, corpus, rng, **where):
    prompt_len, max_tokens = draw_lengths(args, rng)
    offset = rng.randrange(len(corpus) - prompt_len + 1)
    return dict(where, prompt_bytes=prompt_len, max_tokens=max_tokens, prompt=corpus[offset:offset + prompt_len])


def make_requests(args, corpus, concurrency):
    """Every request of one closed-loop level, per client. Each draw is seeded by (seed, level,
    client, request) alone, so every policy (every --label) is sent exactly the same prompts and
    lengths in the same slots."""
    plan = []
    for client in range(concurrency):
        mine = []
        for index in range(args.requests_per_client):
            rng = random.Random(f"{args.seed}/{concurrency}/{client}/{index}")  # str seeds are stable
            mine.append(draw_request(args, corpus, rng, client=client, index=index))
        plan.append(mine)
    return plan


def make_rate_requests(args, corpus, rate):
    """The open-loop requests at one rate: the same --requests requests at every rate (seeded by
    their index), arriving at Poisson times seeded by the rate."""
    arrivals = random.Random(f"{args.seed}/arrivals/{rate}")
    t, plan = 0.0, []
    for index in range(args.requests):
        req = draw_request(args, corpus, random.Random(f"{args.seed}/rate/{index}"), client=index, index=0)
        req["arrival_s"] = t
        plan.append(req)
        if not math.isinf(rate):
            t += arrivals.expovariate(rate)
    return plan


def make_chat_sessions(args, corpus):
    """Per session, its turns' user messages and answer lengths (seeded by session and turn)."""
    return [[draw_request(args, corpus, random.Random(f"{args.seed}/chat/{s}/{t}"), client=s, index=t)
             for t in range(args.turns)] for s in range(args.sessions)]


# --- one request ----------------------------------------------------------------------------------

class Server:
    def __init__(self, url, timeout):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"--url must be http://HOST[:PORT][/PREFIX], got {url!r}")
        self.host, self.port, self.prefix, self.timeout = u.hostname, u.port or 80, u.path.rstrip("/"), timeout

    def connect(self, timeout=None):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)

    def get_json(self, path, timeout):
        conn = self.connect(timeout)
        try:
            conn.request("GET", self.prefix + path)
            resp = conn.getresponse()
            body = resp.read()
            return resp.status, (json.loads(body) if resp.status == 200 and path != "/health" else None)
        finally:
            conn.close()

    def post_json(self, path, payload, timeout):
        conn = self.connect(timeout)
        try:
            conn.request("POST", self.prefix + path, json.dumps(payload), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = resp.read()
            return resp.status, (json.loads(body) if resp.status == 200 else body.decode("utf-8", "replace"))
        finally:
            conn.close()


def wait_ready(server, wait_s):
    """Polls /health until it answers 200; returns None, or the last failure's description."""
    deadline, last = time.monotonic() + wait_s, "no attempt"
    while True:
        try:
            status, _ = server.get_json("/health", timeout=5)
            if status == 200:
                return None
            last = f"/health answered HTTP {status}"
        except (OSError, http.client.HTTPException) as e:
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            return last
        time.sleep(0.5)


def request_body(model, req, opts, messages=None):
    """opts: (cache_prompt True/False/None, banned token ids)."""
    cache_prompt, banned = opts
    body = {"model": model, "max_tokens": req["max_tokens"], "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True},
            "ignore_eos": True}  # ignore_eos: every request generates exactly max_tokens
    if messages is None:
        body["prompt"] = req["prompt"]
    else:
        body["messages"] = messages
    if cache_prompt is not None:
        body["cache_prompt"] = cache_prompt
    if banned:
        body["logit_bias"] = {str(t): -100 for t in banned}
    return body


def chunk_text(choice, chat):
    if chat:
        delta = choice.get("delta") or {}
        return delta.get("content") or ""
    return choice.get("text") or ""


def run_one(server, body, rec, t0):
    """Sends one streamed completion; fills and returns rec (times in s relative to the cell's t0).
    rec["text"] is the streamed answer (a chat session sends it back in its next turn)."""
    chat = "messages" in body
    rec.update(ok=False, status=None, error=None, completion_tokens=None, prompt_tokens=None, cached_tokens=None,
               count_source=None, finish_reason=None, ttft_ms=None, tpot_ms=None, e2e_ms=None)
    t_send = time.perf_counter()
    t_first = t_finish = t_last_choice = None
    text_chunks, usage, timings, done, text = 0, None, None, False, []
    conn = server.connect()
    try:
        conn.request("POST", server.prefix + ("/v1/chat/completions" if chat else "/v1/completions"),
                     json.dumps(body), {"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        rec["status"] = resp.status
        if resp.status != 200:
            raw = resp.read().decode("utf-8", "replace")
            try:
                rec["error"] = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                rec["error"] = raw.strip()[:200] or resp.reason
        else:
            # The spec sends one `data:` line per event, so events are read line by line.
            for line in iter(resp.readline, b""):
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue  # blank separators, event names, comments / keep-alives
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    done = True
                    break
                now = time.perf_counter()
                chunk = json.loads(payload)
                if chunk.get("error"):
                    err = chunk["error"]
                    rec["error"] = str(err.get("message", err) if isinstance(err, dict) else err)
                    break
                if chunk.get("timings"):
                    timings = chunk["timings"]
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or []:
                    t_last_choice = now
                    piece = chunk_text(choice, chat)
                    if piece:
                        # The first chunk carrying text is the first token (a chat server may
                        # open with a role-only chunk before it has computed anything).
                        t_first = t_first or now
                        text_chunks += 1
                        text.append(piece)
                    if choice.get("finish_reason"):
                        rec["finish_reason"] = choice["finish_reason"]
                        t_finish = now
            if not done and rec["error"] is None:
                rec["error"] = "stream ended without data: [DONE]"
            elif done and t_last_choice is None:
                rec["error"] = "stream carried no choice"
    except Exception as e:  # noqa: BLE001 - any failure is this request's error, never a lost client thread
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
    t_end = time.perf_counter()
    rec["t_send_s"], rec["t_end_s"] = t_send - t0, t_end - t0
    rec["text"] = "".join(text)
    if rec["error"] is not None:
        return rec
    if usage and usage.get("completion_tokens") is not None:
        tokens, rec["count_source"] = usage["completion_tokens"], "usage"
    elif timings and timings.get("predicted_n") is not None:
        tokens, rec["count_source"] = timings["predicted_n"], "timings"
    else:  # an estimate: a chunk may hold several tokens or none
        tokens, rec["count_source"] = text_chunks, "chunks"
    details = (usage or {}).get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    if cached is None and timings:
        cached = timings.get("cache_n")
    # No text at all (every token an empty piece): the first token is taken at the finish chunk.
    t_first = t_first or t_finish or t_last_choice
    t_last = t_finish or t_last_choice
    rec.update(ok=True, completion_tokens=tokens, prompt_tokens=(usage or {}).get("prompt_tokens"),
               cached_tokens=cached, ttft_ms=1e3 * (t_first - t_send), e2e_ms=1e3 * (t_end - t_send))
    if tokens > 1 and t_last > t_first:
        # From the first text to the finish chunk: the inter-token time the engine delivered, not
        # counting the usage chunk and connection teardown after it.
        rec["tpot_ms"] = 1e3 * (t_last - t_first) / (tokens - 1)
    return rec


def new_record(req):
    return {k: req[k] for k in ("client", "index", "prompt_bytes", "max_tokens")}


# --- the workloads --------------------------------------------------------------------------------

def run_level(server, model, plan, opts):
    """Closed loop: one thread per client, each sending its requests one after the other."""
    records = []
    lock = threading.Lock()
    start = threading.Barrier(len(plan))
    t0 = time.perf_counter()

    def client(mine):
        start.wait()  # all clients start together: the level begins at full concurrency
        for req in mine:  # closed loop: the next request once the previous one has finished
            rec = run_one(server, request_body(model, req, opts), new_record(req), t0)
            with lock:
                records.append(rec)

    threads = [threading.Thread(target=client, args=(mine,), daemon=True) for mine in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records.sort(key=lambda r: (r["client"], r["index"]))
    return records


def run_rate(server, model, plan, opts):
    """Open loop: each request on its own thread, started at its arrival time."""
    records = []
    lock = threading.Lock()

    def send(req, t0):
        rec = new_record(req)
        rec["arrival_s"] = req["arrival_s"]
        run_one(server, request_body(model, req, opts), rec, t0)
        with lock:
            records.append(rec)

    threads = []
    t0 = time.perf_counter()
    for req in plan:
        delay = t0 + req["arrival_s"] - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=send, args=(req, t0), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    records.sort(key=lambda r: r["client"])
    return records


def run_chat(server, model, sessions, opts):
    """Multi-turn sessions at once; each turn resends the conversation so far."""
    records = []
    lock = threading.Lock()
    start = threading.Barrier(len(sessions))
    t0 = time.perf_counter()

    def session(turns):
        messages = []
        start.wait()
        for req in turns:
            messages.append({"role": "user", "content": req["prompt"]})
            rec = new_record(req)
            rec["turn"] = req["index"] + 1
            run_one(server, request_body(model, req, opts, messages=list(messages)), rec, t0)
            with lock:
                records.append(rec)
            if not rec["ok"]:
                break  # the conversation cannot go on without this answer
            messages.append({"role": "assistant", "content": rec["text"]})

    threads = [threading.Thread(target=session, args=(turns,), daemon=True) for turns in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records.sort(key=lambda r: (r["client"], r["index"]))
    return records


def summarize(label, concurrency, records, **extra):
    ok = [r for r in records if r["ok"]]
    row = {k: None for k in CSV_FIELDS}
    row.update(label=label, concurrency=concurrency, requests=len(ok), errors=len(records) - len(ok))
    row.update(extra)
    if not records:
        return row
    # Failed requests still occupied the cell, so they count in its wall time (not its tokens).
    wall = max(r["t_end_s"] for r in records) - min(r["t_send_s"] for r in records)
    tokens = sum(r["completion_tokens"] for r in ok)
    ttft = [r["ttft_ms"] for r in ok]
    tpot = [r["tpot_ms"] for r in ok if r["tpot_ms"] is not None]
    prompt = [r["prompt_tokens"] for r in ok if r["prompt_tokens"] is not None]
    row.update(completion_tokens=tokens, wall_s=wall, tokens_per_s=tokens / wall if wall > 0 else None,
               requests_per_s=len(ok) / wall if wall > 0 else None,
               prompt_tokens=sum(prompt) if len(prompt) == len(ok) else None,
               mismatched=sum(1 for r in ok if r["completion_tokens"] != r["max_tokens"]),
               ttft_p50_ms=percentile(ttft, 50), ttft_p99_ms=percentile(ttft, 99),
               tpot_p50_ms=percentile(tpot, 50), tpot_p99_ms=percentile(tpot, 99))
    return row


def json_safe(v):
    """Infinite rates as the string 'inf': strict JSON has no Infinity."""
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def fmt(v, spec=".3f"):
    return "" if v is None else format(v, spec) if isinstance(v, float) else str(v)


def report_row(row, records, name):
    print(f"{row['label']} {name}: ok {row['requests']} err {row['errors']} "
          f"tokens {row['completion_tokens']} in {fmt(row['wall_s'], '.2f')} s = {fmt(row['tokens_per_s'], '.1f')} tok/s"
          f"  TTFT p50/p99 {fmt(row['ttft_p50_ms'], '.1f')}/{fmt(row['ttft_p99_ms'], '.1f')} ms"
          f"  TPOT p50/p99 {fmt(row['tpot_p50_ms'], '.2f')}/{fmt(row['tpot_p99_ms'], '.2f')} ms", flush=True)
    for r in records:
        if not r["ok"]:
            print(f"  error {name} client {r['client']} #{r['index']}: HTTP {r['status']}: {r['error']}",
                  file=sys.stderr)
    if row["mismatched"]:  # with ignore_eos every request should run to max_tokens
        sources = sorted({r["count_source"] for r in records if r["ok"]})
        print(f"  warning: {row['mismatched']} requests returned a token count other than max_tokens "
              f"(counted from {', '.join(sources)})", file=sys.stderr)


def measure_bytes_per_token(server, corpus, seed):
    """Bytes per token of the corpus under the server's tokenizer: 16 samples of 4 KiB through
    POST /tokenize (llama-server's endpoint; the server must have one)."""
    rng = random.Random(f"{seed}/measure")
    n_bytes = n_tokens = 0
    for _ in range(16):
        offset = rng.randrange(max(1, len(corpus) - 4096))
        text = corpus[offset:offset + 4096]
        status, reply = server.post_json("/tokenize", {"content": text, "add_special": False}, timeout=60)
        if status != 200:
            raise RuntimeError(f"/tokenize answered HTTP {status}: {str(reply)[:200]}")
        n_bytes += len(text.encode())
        n_tokens += len(reply["tokens"])
    return n_bytes / n_tokens


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--url", required=True, help="server base URL, http://HOST:PORT")
    p.add_argument("--workload", choices=["closed", "rate", "chat"], default="closed")
    p.add_argument("--concurrency", type=int_list, default=[1, 4, 16, 64], help="closed: levels, e.g. 1,4,16,64")
    p.add_argument("--requests-per-client", type=int, default=2, help="closed: requests per client")
    p.add_argument("--rates", type=rate_list, default=[1.0, 2.0, 4.0], help="rate: requests/s, e.g. 0.5,1,2,inf")
    p.add_argument("--requests", type=int, default=64, help="rate: requests per rate")
    p.add_argument("--sessions", type=int, default=4, help="chat: conversations at once")
    p.add_argument("--turns", type=int, default=4, help="chat: turns per conversation")
    p.add_argument("--cache-prompt", choices=["on", "off"], help="send cache_prompt: true|false (default: not sent)")
    p.add_argument("--ban-tokens", type=token_set, default=[],
                   help="token ids never to generate (logit_bias -100), e.g. 128-255: a random-weight byte-vocabulary "
                        "model's output is then ASCII, which llama-server needs (it fails a request whose text is "
                        "not UTF-8)")
    p.add_argument("--lengths", choices=["uniform", "sharegpt"], default="uniform", help="length distribution")
    p.add_argument("--prompt-lens", type=int_range, default=(16, 96), help="uniform: LO,HI prompt bytes (= tokens)")
    p.add_argument("--output-lens", type=int_range, default=(16, 64), help="uniform: LO,HI max_tokens")
    p.add_argument("--prompt-median", type=positive_float, default=200, help="sharegpt: median prompt tokens")
    p.add_argument("--prompt-sigma", type=positive_float, default=1.0, help="sharegpt: sigma of log(prompt tokens)")
    p.add_argument("--prompt-max", type=int, default=1024, help="sharegpt: longest prompt, tokens")
    p.add_argument("--output-median", type=positive_float, default=150, help="sharegpt: median max_tokens")
    p.add_argument("--output-sigma", type=positive_float, default=0.8, help="sharegpt: sigma of log(max_tokens)")
    p.add_argument("--output-max", type=int, default=512, help="sharegpt: largest max_tokens")
    p.add_argument("--bytes-per-token", type=positive_float, default=4.0,
                   help="sharegpt: prompt bytes cut per wanted token (1 on byte vocabularies; "
                        "--measure-bytes-per-token asks the server)")
    p.add_argument("--measure-bytes-per-token", action="store_true",
                   help="print the corpus's bytes per token under the server's /tokenize and exit")
    p.add_argument("--corpus", default="default", help="text file, directory of *.py, or 'default' (stdlib)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", help="label naming the output files (required unless measuring)")
    p.add_argument("--out", help="output directory (required unless measuring)")
    p.add_argument("--model", help="model name to send (default: the first of GET /v1/models)")
    p.add_argument("--wait-s", type=float, default=60, help="how long to wait for /health (default 60)")
    p.add_argument("--timeout-s", type=float, default=600, help="socket timeout per request")
    args = p.parse_args()
    for name in ("requests_per_client", "requests", "sessions", "turns", "prompt_max", "output_max"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.measure_bytes_per_token:
        if not args.label or not args.out:
            p.error("--label and --out are required")
        if not re.fullmatch(r"[A-Za-z0-9._+:-]+", args.label):
            p.error(f"--label must match [A-Za-z0-9._+:-]+ (it names files and a CSV field): {args.label!r}")
    try:
        server = Server(args.url, args.timeout_s)
    except ValueError as e:
        p.error(str(e))
    try:
        corpus = load_corpus(args.corpus)
    except OSError as e:
        p.error(f"--corpus: {e}")
    longest = args.prompt_lens[1] if args.lengths == "uniform" else math.ceil(args.prompt_max * args.bytes_per_token)
    if len(corpus) < longest:
        p.error(f"--corpus has {len(corpus)} usable bytes, fewer than the longest prompt {longest}")

    failure = wait_ready(server, args.wait_s)
    if failure:
        print(f"loadgen: error: {args.url} not ready after {args.wait_s:g} s ({failure})", file=sys.stderr)
        return 1
    if args.measure_bytes_per_token:
        try:
            print(f"{measure_bytes_per_token(server, corpus, args.seed):.4f}")
        except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError, TypeError) as e:
            print(f"loadgen: error: no token count from {args.url}/tokenize ({e})", file=sys.stderr)
            return 1
        return 0
    model = args.model
    if not model:
        try:
            model = server.get_json("/v1/models", timeout=10)[1]["data"][0]["id"]
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError) as e:
            print(f"loadgen: error: no model name from {args.url}/v1/models ({e!r}); pass --model",
                  file=sys.stderr)
            return 1

    opts = (None if args.cache_prompt is None else args.cache_prompt == "on", args.ban_tokens)
    rows, requests = [], []
    common = {"workload": args.workload, "cache_prompt": args.cache_prompt}
    if args.workload == "closed":
        for concurrency in args.concurrency:
            records = run_level(server, model, make_requests(args, corpus, concurrency), opts)
            row = summarize(args.label, concurrency, records, **common)
            rows.append(row)
            requests += [dict(r, concurrency=concurrency) for r in records]
            report_row(row, records, f"c={concurrency}")
    elif args.workload == "rate":
        for rate in args.rates:
            records = run_rate(server, model, make_rate_requests(args, corpus, rate), opts)
            row = summarize(args.label, None, records, rate=rate, **common)
            rows.append(row)
            requests += [dict(r, rate=rate) for r in records]
            report_row(row, records, f"rate={rate:g}/s")
    else:
        records = run_chat(server, model, make_chat_sessions(args, corpus), opts)
        requests += records
        for turn in range(1, args.turns + 1):
            mine = [r for r in records if r["turn"] == turn]
            row = summarize(args.label, args.sessions, mine, turn=turn, **common)
            rows.append(row)
            report_row(row, mine, f"s={args.sessions} turn {turn}")
        row = summarize(args.label, args.sessions, records, **common)
        rows.append(row)
        report_row(row, records, f"s={args.sessions} all turns")
    for r in requests:  # the answers are only needed to continue conversations
        r.pop("text", None)

    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"serve_{args.label}")
    with open(base + ".csv", "w") as f:
        f.write(",".join(CSV_FIELDS) + "\n")
        for row in rows:
            f.write(",".join(fmt(row[k], ".6g") for k in CSV_FIELDS) + "\n")
    with open(base + ".json", "w") as f:
        json.dump(json_safe({"label": args.label, "url": args.url, "model": model, "args": vars(args),
                             "levels": rows, "requests": requests}), f, indent=1, allow_nan=False)
    print(f"wrote {base}.csv and {base}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
