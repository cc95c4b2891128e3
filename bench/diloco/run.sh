#!/usr/bin/env bash
# DiLoCo and Streaming DiLoCo against S-SGD, local SGD, SSD-SGD and CD-SGD on the gpt model
# (bench/RESULTS.md, "DiLoCo on gpt"): 4 workers, the same data, seed and steps, an emulated
# link where S-SGD waits most of its time (LINK, default 100Mbps). Every run is one `ferry train`
# with test perplexity recorded every EVAL iterations; report.py writes the table (final
# perplexity, bytes per worker, wall time, time to S-SGD's final perplexity, ratios to S-SGD) and
# plots perplexity against time and against bytes.
#   bench/diloco/run.sh [output dir]
# FERRY=path runs a copy of the binary (safe from rebuilds); RUNS= a subset of the run names.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-runs/diloco}"
FERRY="${FERRY:-build/default/apps/ferry}"
LINK="${LINK:-100Mbps}"
STEPS="${STEPS:-80}"
EVAL="${EVAL:-20}"
H="${H:-20}"
[ -x "$FERRY" ] || bash scripts/build.sh
mkdir -p "$OUT"
common=(--model gpt --np 4 --batch 8 --lr 0.05 --momentum 0.9 --max-steps "$STEPS" --eval-every "$EVAL"
        --test-limit 32 --threads 1 --link "$LINK" --no-progress)
# name | flags
runs=(
  "ssgd|--algo ssgd"
  "localsgd|--algo localsgd --sync-every $H"
  "ssdsgd|--algo ssdsgd --servers 1 --codec twobit:threshold=0.005"
  "cdsgd|--algo cdsgd --servers 1"
  "diloco-h$((H / 2))|--algo diloco:inner_steps=$((H / 2))"
  "diloco-h$H|--algo diloco:inner_steps=$H"
  "diloco-h$H-4bit|--algo diloco:inner_steps=$H --codec qsgd:levels=7"
  "streaming-h$H|--algo streaming-diloco:inner_steps=$H,fragments=4,overlap=1,alpha=0.5"
  "streaming-h$H-4bit|--algo streaming-diloco:inner_steps=$H,fragments=4,overlap=1,alpha=0.5 --codec qsgd:levels=7"
  # the paper's outer optimizer (lr 0.7, Nesterov 0.9) is tuned for runs of many outer steps;
  # a milder momentum for the few outer steps a run here has
  "diloco-h$H-m05|--algo diloco:inner_steps=$H,outer_lr=1,outer_momentum=0.5"
  "diloco-h$H-m05-4bit|--algo diloco:inner_steps=$H,outer_lr=1,outer_momentum=0.5 --codec qsgd:levels=7"
)
for r in "${runs[@]}"; do
  name="${r%%|*}"
  flags="${r#*|}"
  if [ -n "${RUNS:-}" ] && [[ ",$RUNS," != *",$name,"* ]]; then continue; fi
  echo "== $name: $flags" >&2
  # shellcheck disable=SC2086
  "$FERRY" train "${common[@]}" $flags --out "$OUT/$name" >"$OUT/$name.log" 2>&1 || echo "$name failed" >&2
done
/usr/bin/python3 bench/diloco/report.py "$OUT"
