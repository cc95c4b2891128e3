#!/usr/bin/env bash
# MoE offloading benchmark of bench/RESULTS.md ("MoE offloading"): pretrains the tiny model when
# missing, then runs every policy (prescope included, and prescope with the LLaPor predictor fitted
# by bench/moe_predict/run.sh when runs/moe-predict/tiny-hidden exists) at batch 1, 4, 16 and
# budgets 25% and 50% with the Mixtral/A100 transfer:compute ratio, reporting per policy the
# predictor and scheduler time per generated token; plus the engine's own cost against the
# reference forward. Copies bench.csv, bench.md, overhead.json and bench.png to bench/moe/results.
#   bench/moe/run.sh [ferry binary] [output dir]      (TOKENS=32 for a shorter run; default 64)
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="${1:-build/default/apps/ferry}"
OUT="${2:-runs/moe-bench}"
MODEL="${MOE_MODEL:-runs/moe-tiny}"
if [ ! -f "$MODEL/config.json" ]; then
  "$FERRY" moe pretrain --out "$MODEL" --max-minutes 15 --threads 1
fi
TOKENS="${TOKENS:-64}"
POLICIES=ondemand,lru,static-hot,next-gate,fiddler,moe-infinity,prescope,prescope:speculate=0
LLAPOR=runs/moe-predict/tiny-hidden  # written by bench/moe_predict/run.sh
if [ -f "$LLAPOR/llapor.json" ]; then
  POLICIES="$POLICIES,prescope:llapor:$LLAPOR"
fi
"$FERRY" moe bench --model "$MODEL" --policies "$POLICIES" \
  --batch 1,4,16 --device-mem 25%,50% --tokens "$TOKENS" --prompt-tokens 32 \
  --link mixtral-a100 --compute a100 --out "$OUT" --overhead
RES=bench/moe/results  # the table and plot of bench/RESULTS.md
mkdir -p "$RES"
cp "$OUT/bench.csv" "$OUT/bench.md" "$OUT/overhead.json" "$RES/"
if [ -f "$OUT/bench.png" ]; then cp "$OUT/bench.png" "$RES/"; fi
"$FERRY" moe generate --model "$MODEL" --prompt "def parse_args(" --policy next-gate --device-mem 25% \
  --link mixtral-a100 --compute a100 --tokens 200 --temperature 0.7 --top-k 20
