#!/usr/bin/python3
"""Closed-loop load generator for `ferry moe serve` (OpenAI-compatible /v1/completions, streamed).

For each concurrency level N, N client threads each send --requests-per-client requests one after
the other (the next when the previous has finished), one fresh HTTP connection per request, and
time every streamed response. Writes OUT/serve_LABEL.csv (one row per level) and
OUT/serve_LABEL.json (the same plus every request), and prints one line per level.

  loadgen.py --url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests-per-client 2 \
      --prompt-lens 16,96 --output-lens 16,64 --corpus default --seed 1 --label prescope --out DIR

Standard library only: it must run next to the server without a virtual environment.
"""
import argparse
import http.client
import json
import os
import random
import re
import sys
import sysconfig
import threading
import time
import urllib.parse

CORPUS_MAX_BYTES = 2 << 20
CSV_FIELDS = ["label", "concurrency", "requests", "errors", "completion_tokens", "wall_s", "tokens_per_s",
              "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"]


def int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers: {text!r}")
    return values


def int_range(text):
    """'lo,hi' (inclusive) or a single 'n' meaning lo = hi = n."""
    values = int_list(text)
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or values[0] > values[1]:
        raise argparse.ArgumentTypeError(f"need LO,HI with 1 <= LO <= HI: {text!r}")
    return tuple(values)


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
    # Only ASCII is kept, so one character is one byte on the wire: the benchmark model is
    # byte-tokenized, so a prompt of L characters is exactly L prompt tokens.
    return re.sub(rb"[^\t\n\x20-\x7e]", b"", bytes(data)).decode("ascii")


def make_requests(args, corpus, concurrency):
    """Every request of one level. Each draw is seeded by (seed, level, client, request) alone, so
    every policy (every --label) is sent exactly the same prompts and lengths in the same slots."""
    plan = []
    for client in range(concurrency):
        mine = []
        for index in range(args.requests_per_client):
            rng = random.Random(f"{args.seed}/{concurrency}/{client}/{index}")  # str seeds are stable
            prompt_len = rng.randint(*args.prompt_lens)
            offset = rng.randrange(len(corpus) - prompt_len + 1)
            mine.append({"client": client, "index": index, "prompt_bytes": prompt_len,
                         "max_tokens": rng.randint(*args.output_lens),
                         "prompt": corpus[offset:offset + prompt_len]})
        plan.append(mine)
    return plan


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


def run_one(server, model, req, t0):
    """Sends one streamed completion; returns its record (times in s relative to the level's t0)."""
    rec = {k: req[k] for k in ("client", "index", "prompt_bytes", "max_tokens")}
    rec.update(ok=False, status=None, error=None, completion_tokens=None, prompt_tokens=None,
               finish_reason=None, ttft_ms=None, tpot_ms=None, e2e_ms=None)
    body = json.dumps({"model": model, "prompt": req["prompt"], "max_tokens": req["max_tokens"],
                       "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
                       "ignore_eos": True})  # ignore_eos: every request generates exactly max_tokens
    t_send = time.perf_counter()
    t_first = t_last = None
    chunks, usage, done = 0, None, False
    conn = server.connect()
    try:
        conn.request("POST", server.prefix + "/v1/completions", body,
                     {"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        rec["status"] = resp.status
        if resp.status != 200:
            text = resp.read().decode("utf-8", "replace")
            try:
                rec["error"] = json.loads(text)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                rec["error"] = text.strip()[:200] or resp.reason
        else:
            # The spec sends one `data:` line per event, so events are read line by line.
            for line in iter(resp.readline, b""):
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue  # blank separators, comments / keep-alives
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    done = True
                    break
                now = time.perf_counter()
                chunk = json.loads(payload)
                if chunk.get("error"):
                    rec["error"] = str(chunk["error"].get("message", chunk["error"]))
                    break
                if chunk.get("choices"):
                    # The first chunk carrying a choice is the first token, even if its text is
                    # empty (a byte that is not yet a whole UTF-8 character).
                    t_first = t_first or now
                    t_last = now
                    chunks += 1
                    rec["finish_reason"] = chunk["choices"][0].get("finish_reason") or rec["finish_reason"]
                if chunk.get("usage"):
                    usage = chunk["usage"]
            if not done and rec["error"] is None:
                rec["error"] = "stream ended without data: [DONE]"
            elif done and t_first is None:
                rec["error"] = "stream carried no choice"
    except Exception as e:  # noqa: BLE001 - any failure is this request's error, never a lost client thread
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
    t_end = time.perf_counter()
    rec["t_send_s"], rec["t_end_s"] = t_send - t0, t_end - t0
    if rec["error"] is not None:
        return rec
    tokens = usage["completion_tokens"] if usage and "completion_tokens" in usage else chunks
    rec.update(ok=True, completion_tokens=tokens, prompt_tokens=(usage or {}).get("prompt_tokens"),
               ttft_ms=1e3 * (t_first - t_send), e2e_ms=1e3 * (t_end - t_send))
    if tokens > 1:
        # From the first to the last token chunk: the inter-token time the engine delivered, not
        # counting the usage chunk and connection teardown after it.
        rec["tpot_ms"] = 1e3 * (t_last - t_first) / (tokens - 1)
    return rec


def run_level(server, model, plan):
    records = []
    lock = threading.Lock()
    start = threading.Barrier(len(plan))
    t0 = time.perf_counter()

    def client(mine):
        start.wait()  # all clients start together: the level begins at full concurrency
        for req in mine:  # closed loop: the next request once the previous one has finished
            rec = run_one(server, model, req, t0)
            with lock:
                records.append(rec)

    threads = [threading.Thread(target=client, args=(mine,), daemon=True) for mine in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records.sort(key=lambda r: (r["client"], r["index"]))
    return records


def summarize(label, concurrency, records):
    ok = [r for r in records if r["ok"]]
    # Failed requests still occupied the level, so they count in its wall time (not its tokens).
    wall = max(r["t_end_s"] for r in records) - min(r["t_send_s"] for r in records)
    tokens = sum(r["completion_tokens"] for r in ok)
    ttft = [r["ttft_ms"] for r in ok]
    tpot = [r["tpot_ms"] for r in ok if r["tpot_ms"] is not None]
    return {"label": label, "concurrency": concurrency, "requests": len(ok), "errors": len(records) - len(ok),
            "completion_tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall if wall > 0 else None,
            "ttft_p50_ms": percentile(ttft, 50), "ttft_p99_ms": percentile(ttft, 99),
            "tpot_p50_ms": percentile(tpot, 50), "tpot_p99_ms": percentile(tpot, 99)}


def fmt(v, spec=".3f"):
    return "" if v is None else format(v, spec) if isinstance(v, float) else str(v)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="server base URL, http://HOST:PORT")
    p.add_argument("--concurrency", type=int_list, default=[1, 4, 16, 64], help="levels, e.g. 1,4,16,64")
    p.add_argument("--requests-per-client", type=int, default=2)
    p.add_argument("--prompt-lens", type=int_range, default=(16, 96), help="LO,HI prompt bytes (= tokens)")
    p.add_argument("--output-lens", type=int_range, default=(16, 64), help="LO,HI max_tokens")
    p.add_argument("--corpus", default="default", help="text file, directory of *.py, or 'default' (stdlib)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", required=True, help="policy label: names the output files")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--model", help="model name to send (default: the first of GET /v1/models)")
    p.add_argument("--wait-s", type=float, default=60, help="how long to wait for /health (default 60)")
    p.add_argument("--timeout-s", type=float, default=600, help="socket timeout per request")
    args = p.parse_args()
    if args.requests_per_client < 1:
        p.error("--requests-per-client must be >= 1")
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
    if len(corpus) < args.prompt_lens[1]:
        p.error(f"--corpus has {len(corpus)} usable bytes, fewer than the longest prompt {args.prompt_lens[1]}")

    failure = wait_ready(server, args.wait_s)
    if failure:
        print(f"loadgen: error: {args.url} not ready after {args.wait_s:g} s ({failure})", file=sys.stderr)
        return 1
    model = args.model
    if not model:
        try:
            model = server.get_json("/v1/models", timeout=10)[1]["data"][0]["id"]
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError) as e:
            print(f"loadgen: error: no model name from {args.url}/v1/models ({e!r}); pass --model",
                  file=sys.stderr)
            return 1

    rows, requests = [], []
    for concurrency in args.concurrency:
        records = run_level(server, model, make_requests(args, corpus, concurrency))
        row = summarize(args.label, concurrency, records)
        rows.append(row)
        requests += [dict(r, concurrency=concurrency) for r in records]
        short = sum(1 for r in records if r["ok"] and r["completion_tokens"] != r["max_tokens"])
        print(f"{args.label} c={concurrency}: ok {row['requests']} err {row['errors']} "
              f"tokens {row['completion_tokens']} in {row['wall_s']:.2f} s = {fmt(row['tokens_per_s'], '.1f')} tok/s"
              f"  TTFT p50/p99 {fmt(row['ttft_p50_ms'], '.1f')}/{fmt(row['ttft_p99_ms'], '.1f')} ms"
              f"  TPOT p50/p99 {fmt(row['tpot_p50_ms'], '.2f')}/{fmt(row['tpot_p99_ms'], '.2f')} ms", flush=True)
        for r in records:
            if not r["ok"]:
                print(f"  error c={concurrency} client {r['client']} #{r['index']}: HTTP {r['status']}: "
                      f"{r['error']}", file=sys.stderr)
        if short:  # with ignore_eos every request should run to max_tokens
            print(f"  warning: {short} requests returned a token count other than max_tokens", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"serve_{args.label}")
    with open(base + ".csv", "w") as f:
        f.write(",".join(CSV_FIELDS) + "\n")
        for row in rows:
            f.write(",".join(fmt(row[k], ".6g") for k in CSV_FIELDS) + "\n")
    with open(base + ".json", "w") as f:
        json.dump({"label": args.label, "url": args.url, "model": model,
                   "args": {k: v for k, v in vars(args).items()}, "levels": rows, "requests": requests}, f, indent=1)
    print(f"wrote {base}.csv and {base}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
