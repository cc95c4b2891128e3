#!/usr/bin/env bash
# The server against its own engine (issue 49, "no server tax"): `ferry moe serve` with its defaults
# under N closed-loop clients of 64 prompt bytes and 64 new tokens each (loadgen.py, streamed, the
# byte-vocabulary peer model: one byte is one token), against `ferry moe bench --batch N
# --prompt-tokens 64 --tokens 64` on the same file, every expert resident, unpaced. Both as output
# tokens over the whole run, prefill included: the server's completion tokens / wall time; the
# bench's N x 64 / (TTFT + 63 x TPOT). The two alternate, REPS times; also prints the server's
# summed engine step time against its wall time (what is lost outside the engine).
#   bench/moe_serve/server_vs_engine.sh [ferry binary] [GGUF]     (N=16 REPS=3 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="$(realpath "${1:-build/default/apps/ferry}")"
MODEL="${2:-build/peers/models/a/Q4_K_M.gguf}"
N="${N:-16}" REPS="${REPS:-3}" THREADS="${THREADS:-2}"
PY=/usr/bin/python3
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
echo "rep,engine,tokens_per_s,steps_s,wall_s"
for rep in $(seq "$REPS"); do
  "$FERRY" moe bench --model "$MODEL" --policies lru --device-mem 100% --link none --compute none --warmup \
    --threads "$THREADS" --batch "$N" --prompt-tokens 64 --tokens 64 --corpus '' --out "$OUT/bench" >/dev/null 2>&1
  "$PY" -c 'import csv,sys; r=next(csv.DictReader(open(sys.argv[1]))); n=int(r["batch"]); t=float(r["ttft_ms"])/1e3; p=float(r["tpot_ms"])/1e3
print("%s,bench,%.1f,,%.2f" % (sys.argv[2], n*64/(t+63*p), t+63*p))' "$OUT/bench/bench.csv" "$rep"
  "$FERRY" moe serve --model "$MODEL" --port 0 --threads "$THREADS" >"$OUT/serve.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|^listening on http://[^:]*:\([0-9]*\)$|\1|p' "$OUT/serve.log")
    [ -n "$port" ] && break
    sleep 0.2
  done
  "$PY" bench/moe_serve/loadgen.py --url "http://127.0.0.1:$port" --concurrency "$N" --requests-per-client 2 \
    --prompt-lens 64,64 --output-lens 64,64 --seed 1 --label serve --out "$OUT" >/dev/null
  steps=$(curl -s "http://127.0.0.1:$port/metrics" | sed -n 's/^ferry_step_seconds_sum //p')
  "$PY" -c 'import csv,sys; r=next(csv.DictReader(open(sys.argv[1])))
print("%s,serve,%.1f,%.2f,%.2f" % (sys.argv[2], float(r["tokens_per_s"]), float(sys.argv[3]), float(r["wall_s"])))' \
    "$OUT/serve_serve.csv" "$rep" "$steps"
  kill -TERM "$pid"
  wait "$pid" || true
done
