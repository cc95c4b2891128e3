#!/usr/bin/env bash
# MoE offloading from disk (bench/RESULTS.md, "MoE offloading from disk"): a CPU-only deployment
# whose experts do not fit in the memory budget. The experts stream from the checkpoint with
# O_DIRECT (the file link) into a budget of 25 % of their float32 bytes (so they are 4x the
# budget); nothing is paced or emulated (--compute none: the experts run on this CPU). Writes a
# random-weight Mixtral-shaped model when missing (8 layers x 8 experts of 1024 x 3584, bf16:
# 1.4 GB on disk), measures the disk's sequential O_DIRECT read throughput with dd, and runs
# every policy at batch 1 and 8. The kernel's own counts show that the reads reached the disk:
# read_bytes of /proc/self/io (page-cache hits are not counted) per run.
#   bench/moe_disk/run.sh [ferry binary] [output dir]     (TOKENS=16 for a shorter run; default 32)
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="${1:-build/default/apps/ferry}"
OUT="${2:-runs/moe-disk}"
MODEL="${DISK_MODEL:-runs/moe-disk-model}"
TOKENS="${TOKENS:-32}"
if [ ! -f "$MODEL/config.json" ]; then
  "$FERRY" moe make-tiny --out "$MODEL" --family mixtral --layers 8 --experts 8 --top-k 2 --hidden 1024 \
    --intermediate 3584 --heads 8 --kv-heads 2 --head-dim 128 --vocab 256 --max-pos 512 --dtype bf16 --seed 1
fi
mkdir -p "$OUT"
# The device's sequential O_DIRECT throughput: the ceiling for the file link's reads.
dd if="$MODEL/model.safetensors" of=/dev/null bs=8M iflag=direct 2>&1 | tail -1 | tee "$OUT/dd.txt"
"$FERRY" moe bench --model "$MODEL" --policies ondemand,lru,static-hot,next-gate,moe-infinity,prescope \
  --batch 1,8 --device-mem 25% --tokens "$TOKENS" --prompt-tokens 16 --link file --compute none --out "$OUT"
RES=bench/moe_disk/results
mkdir -p "$RES"
cp "$OUT/bench.csv" "$OUT/bench.md" "$OUT/dd.txt" "$RES/"
if [ -f "$OUT/bench.png" ]; then cp "$OUT/bench.png" "$RES/"; fi
