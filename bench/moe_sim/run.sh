#!/usr/bin/env bash
# Trace-driven simulation of every policy on the recorded Mixtral-8x7B routing (gsm8k, 244 tokens)
# with Mixtral-8x7B shapes on the V100 (PCIe 3.0) and A100 (PCIe 4.0) profiles, batch 1, 4, 16, 64,
# at a 24 GiB GPU budget (the model then keeps about 55 of its 256 experts on the device).
# Usage: bench/moe_sim/run.sh [BUILD_DIR] [extra ferry moe simulate flags]
# Writes bench/moe_sim/results/{simulate.csv,simulate.md,simulate.png}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-$repo/build/default}
shift || true
trace=$repo/../shared/data/moe-traces/mixtral-8x7b/gsm8k.jsonl
if [ ! -f "$trace" ]; then
  echo "skip: $trace absent" >&2
  exit 0
fi
cd "$repo"
"$build/apps/ferry" moe simulate --trace "$trace" --model-shape mixtral-8x7b \
  --profile v100-pcie3,a100-pcie4 --device-mem 24GiB --batch 1,4,16,64 \
  --policies ondemand,lru,static-hot,fiddler,moe-infinity,prescope,prescope:speculate=0,prescope-perfect,oracle \
  --out "$here/results" "$@"
