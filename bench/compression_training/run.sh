#!/usr/bin/env bash
# Training with every gradient codec (error feedback on) against uncompressed S-SGD, 4 workers
# and one parameter server behind a communication-bound emulated link. One run at a time (the
# ranks share the machine's cores); each run writes summary.json, collected into results.csv.
#
#   bench/compression_training/run.sh MODEL LINK [extra ferry train flags...]
#   e.g. bench/compression_training/run.sh cnn 100Mbps,50us --epochs 1
# Env: FERRY (binary, default build/default/apps/ferry), CODECS (space-separated subset of the
# names below), OUT (results directory, default bench/compression_training/results), RUNS
# (newline-separated "name|spec|flags" lines replacing the list below).
set -euo pipefail
cd "$(dirname "$0")/../.."
model=$1; link=$2; shift 2
ferry=${FERRY:-build/default/apps/ferry}
out=${OUT:-bench/compression_training/results}
mkdir -p "$out"

# name|codec spec|extra flags. Every codec with error feedback: built in for twobit, onebit, dgc,
# powersgd; default for topk/randomk; ef=1 for fp16, qsgd, terngrad. DGC keeps its own momentum,
# so the optimizer's momentum is off for it. twobit's threshold is scaled to gradient size
# (MXNet's default 0.5 is far above these per-element gradients).
all_runs=(
  "none|none|"
  "twobit|twobit:threshold=0.01|"
  "onebit|onebit|"
  "fp16|fp16:ef=1|"
  "qsgd|qsgd:ef=1|"
  "topk|topk:ratio=0.01|"
  "dgc|dgc:ratio=0.01,momentum=0.9|--momentum 0"
  "powersgd|powersgd:rank=4|"
  "randomk|randomk:ratio=0.01|"
  "terngrad|terngrad:ef=1|"
)
if [ -n "${RUNS:-}" ]; then mapfile -t all_runs <<<"$RUNS"; fi
csv="$out/results.csv"
[ -f "$csv" ] || echo "model,name,codec,link,epochs,iterations,test_acc,samples_per_s,bytes_sent_per_worker,comm_wait_fraction,wall_s,extra" >"$csv"
for r in "${all_runs[@]}"; do
  IFS='|' read -r name spec extra <<<"$r"
  if [ -n "${CODECS:-}" ] && [[ " $CODECS " != *" $name "* ]]; then continue; fi
  dir="$out/${model}_${name}"
  cmd=("$ferry" train --np 4 --servers 1 --topology ps --model "$model" --link "$link" --codec "$spec"
       --test-limit 10000 --no-progress --out "$dir" $extra "$@")
  mkdir -p "$dir"
  echo "${cmd[*]}" | tee "$dir/command.txt"
  "${cmd[@]}" 2>&1 | tee "$dir/log.txt" | tail -2
  python3 - "$dir/summary.json" "$model" "$name" "$extra" >>"$csv" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], '"' + s["codec"] + '"', '"' + s["link"] + '"', s["epochs"],
      s["iterations"], s["test_acc"], s["samples_per_s"], s["bytes_sent_per_worker"], s["comm_wait_fraction"],
      s["wall_s"], '"' + sys.argv[4] + '"']))
PY
done
