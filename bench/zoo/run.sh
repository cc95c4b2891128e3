#!/usr/bin/env bash
# The seeds' algorithms (SSD-SGD, CD-SGD) against S-SGD on the zoo's realistic models, each at
# the link where S-SGD on the parameter server waits about half its time (4 workers + 1 server;
# compute-only is the floor every compare adds):
#   resnet20 on Fashion-MNIST (padded to 32x32): 1 epoch, batch 32, 300 Mbps; target 85 % accuracy
#   gpt on the Python standard library (bytes): 100 iterations, batch 8, 1 Gbps; target perplexity
# Usage: bench/zoo/run.sh [OUT=bench/zoo/results] [resnet20|gpt|all]
# FERRY=path runs a copy of the binary (safe from rebuilds).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/zoo/results}"
which="${2:-all}"
ferry="${FERRY:-build/default/apps/ferry}"
[ -x "$ferry" ] || bash scripts/build.sh
mkdir -p "$out"
if [ "$which" = all ] || [ "$which" = resnet20 ]; then
  "$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none --np 4 --servers 1 --model resnet20 --epochs 1 \
    --batch 32 --link 300Mbps --target-acc 0.85 --eval-every 117 --test-limit 2000 --threads 1 \
    --out "$out/resnet20_300Mbps"
fi
if [ "$which" = all ] || [ "$which" = gpt ]; then
  "$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none --np 4 --servers 1 --model gpt --epochs 1 \
    --max-steps 100 --batch 8 --link 1Gbps --target-ppl 14 --eval-every 25 --test-limit 32 --threads 1 \
    --out "$out/gpt_1Gbps"
fi
