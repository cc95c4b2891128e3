#!/usr/bin/env bash
# `ferry moe serve` under concurrent load (bench/RESULTS.md, "MoE serving"): for every policy, a
# server on the pretrained tiny model with the Mixtral/A100 transfer:compute ratio and a 25 %
# device budget, driven by bench/moe_serve/loadgen.py at concurrency 1, 4, 16 and 64 (closed loop,
# prompts of 16-96 tokens, 16-64 new tokens, the same requests for every policy); then `ferry moe
# bench` at batch 1, 4, 16, 64 (lock-step, equal lengths) for the comparison. Writes serve.csv,
# serve.md and serve.png (report.py) and copies them to bench/moe_serve/results.
#   bench/moe_serve/run.sh [ferry binary] [output dir]     (REQUESTS=2 for a shorter run; default 4)
#   POLICIES=fiddler,prescope CONCURRENCY=16,64 PREFILL_CHUNK=256 LOCKSTEP=0 bench/moe_serve/run.sh BIN DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="${1:-build/default/apps/ferry}"
OUT="${2:-runs/moe-serve}"
MODEL="${MOE_MODEL:-runs/moe-tiny}"
REQUESTS="${REQUESTS:-4}"
POLICIES="${POLICIES:-ondemand,lru,static-hot,next-gate,fiddler,moe-infinity,prescope}"
CONCURRENCY="${CONCURRENCY:-1,4,16,64}"
PY=/usr/bin/python3
if [ ! -f "$MODEL/config.json" ]; then
  "$FERRY" moe pretrain --out "$MODEL" --max-minutes 15 --threads 1
fi
mkdir -p "$OUT"
rm -f "$OUT"/serve_*.csv "$OUT"/serve_*.json
for policy in ${POLICIES//,/ }; do
  log="$OUT/server_${policy}.log"
  "$FERRY" moe serve --model "$MODEL" --policy "$policy" --device-mem 25% --link mixtral-a100 --compute a100 \
    --max-batch 64 --max-queue 64 --max-tokens 128 --prefill-chunk "${PREFILL_CHUNK:-32}" --port 0 --threads 1 >"$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|^listening on http://[^:]*:\([0-9]*\)$|\1|p' "$log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { echo "server for $policy did not start" >&2; kill "$pid"; exit 1; }
  "$PY" bench/moe_serve/loadgen.py --url "http://127.0.0.1:$port" --concurrency "$CONCURRENCY" \
    --requests-per-client "$REQUESTS" --prompt-lens 16,96 --output-lens 16,64 --corpus default --seed 1 \
    --label "$policy" --out "$OUT"
  curl -s "http://127.0.0.1:$port/metrics" >"$OUT/metrics_${policy}.txt"
  kill -TERM "$pid"
  wait "$pid"
done
# LOCKSTEP=0: the server runs only (a sweep such as PREFILL_CHUNK=256), reported in OUT, not copied.
if [ "${LOCKSTEP:-1}" = 0 ]; then
  "$PY" bench/moe_serve/report.py "$OUT"
  exit 0
fi
# Lock-step batches of the same mean lengths (56 prompt tokens, 40 new) for the comparison.
"$FERRY" moe bench --model "$MODEL" --policies "$POLICIES" --batch "$CONCURRENCY" --device-mem 25% \
  --tokens 40 --prompt-tokens 56 --link mixtral-a100 --compute a100 --out "$OUT/lockstep"
"$PY" bench/moe_serve/report.py "$OUT" --lockstep "$OUT/lockstep/bench.csv" --lockstep-where budget=25% --lockstep-tokens 40
RES=bench/moe_serve/results
mkdir -p "$RES"
cp "$OUT/serve.csv" "$OUT/serve.md" "$OUT/lockstep/bench.csv" "$RES/"
mv "$RES/bench.csv" "$RES/lockstep.csv"
if [ -f "$OUT/serve.png" ]; then cp "$OUT/serve.png" "$RES/"; fi
