#!/usr/bin/env bash
# Reliability costs and latencies (docs/reliability.md):
#   1. checkpoint cost: cnn, 4 workers, S-SGD on allreduce and on a parameter server, and
#      CD-SGD, with --checkpoint-every 25 against no checkpoints: seconds per checkpoint
#      (rank 0's checkpoint_s / count), bytes per checkpoint, and the training wall time ratio;
#   2. failure latency: seconds from a SIGKILL of a worker or the server until every rank of
#      the job is gone (tests/e2e/kill_rank.sh), per algorithm family.
# Writes OUT/checkpoint_cost.csv, OUT/kill_latency.csv and OUT/kill_latency.png (gnuplot).
# Usage: bench/reliability/run.sh [OUT=bench/reliability/results]   FERRY=path overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/reliability/results}"
ferry="${FERRY:-build/default/apps/ferry}"
mkdir -p "$out"
field() { grep -o "\"$2\": *[^,}]*" "$1" | head -1 | sed 's/.*: *//; s/"//g'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

common=(--np 4 --model cnn --batch 64 --max-steps 100 --train-limit 25600 --test-limit 1000 --threads 1 --no-progress)
echo "algo,topology,checkpoint_every,checkpoints,checkpoint_s,s_per_checkpoint,bytes_per_checkpoint,wall_s,wall_ratio_vs_none" \
  >"$out/checkpoint_cost.csv"
for run in "ssgd allreduce" "ssgd ps" "cdsgd ps"; do
  set -- $run
  flags=(--algo "$1" --topology "$2")
  [ "$2" = ps ] && flags+=(--servers 1)
  "$ferry" train "${flags[@]}" "${common[@]}" --out "$tmp/none" >/dev/null
  "$ferry" train "${flags[@]}" "${common[@]}" --out "$tmp/ck" --checkpoint-every 25 --keep-checkpoints 10 >/dev/null
  n=$(ls -d "$tmp"/ck/checkpoints/ckpt-* | wc -l)
  bytes=$(du -sb "$(ls -d "$tmp"/ck/checkpoints/ckpt-* | tail -1)" | cut -f1)
  cs=$(field "$tmp/ck/summary.json" checkpoint_s)
  w0=$(field "$tmp/none/summary.json" wall_s); w1=$(field "$tmp/ck/summary.json" wall_s)
  awk -v a="$1" -v t="$2" -v n="$n" -v cs="$cs" -v b="$bytes" -v w0="$w0" -v w1="$w1" \
    'BEGIN { printf "%s,%s,25,%d,%.3f,%.3f,%d,%.2f,%.3f\n", a, t, n, cs, cs / n, b, w1, (w1 + cs) / w0 }' \
    >>"$out/checkpoint_cost.csv"
  rm -rf "$tmp/none" "$tmp/ck"
done

echo "case,rank,seconds_until_all_gone,exit_code" >"$out/kill_latency.csv"
kill_run=(--np 4 --model mlp --batch 32 --epochs 100 --train-limit 2048 --test-limit 500)
for c in "ssgd_allreduce_worker 2 --algo ssgd --topology allreduce" "ssgd_ps_worker 1 --algo ssgd --topology ps --servers 1" \
         "ssgd_ps_server 4 --algo ssgd --topology ps --servers 1" "ssdsgd_worker 3 --algo ssdsgd --servers 1" \
         "ssdsgd_server 4 --algo ssdsgd --servers 1" "cdsgd_worker 2 --algo cdsgd --servers 1" \
         "cdsgd_server 4 --algo cdsgd --servers 1"; do
  set -- $c
  name="$1"; shift
  line=$(tests/e2e/kill_rank.sh "$ferry" "$@" "${kill_run[@]}" | grep '^ok:')
  s=$(echo "$line" | sed 's/.*gone after \([0-9.]*\) s.*/\1/'); rc=$(echo "$line" | sed 's/.*exit code //')
  echo "$name,$1,$s,$rc" >>"$out/kill_latency.csv"
done
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 800,400
set output "$out/kill_latency.png"
set datafile separator ","
set style fill solid 0.6
set boxwidth 0.6
set ylabel "seconds until every rank is gone"
set yrange [0:*]
set xtics rotate by -30
set title "SIGKILL of one rank, 4 workers (+1 server): time to a clean end of the job (limit 30 s)"
plot "$out/kill_latency.csv" every ::1 using 0:3:xtic(1) with boxes notitle
GP
fi
cat "$out/checkpoint_cost.csv" "$out/kill_latency.csv"
