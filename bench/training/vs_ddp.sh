#!/usr/bin/env bash
# ferry S-SGD (allreduce over MPI, no link emulation) against PyTorch DDP (gloo) on the same cnn,
# batch 64 per worker, 4 workers on this machine, one libtorch thread per worker. The two are
# run alternately REPS times each in one invocation; medians and the ratio go to OUT.
# Usage: bench/training/vs_ddp.sh [OUT=bench/training/results] [REPS=3] [ITERS=200]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/training/results}"; reps="${2:-3}"; iters="${3:-200}"
ferry="${FERRY:-build/default/apps/ferry}"  # FERRY=path runs a copy, safe from rebuilds
[ -x "$ferry" ] || bash scripts/build.sh
mkdir -p "$out"
csv="$out/vs_ddp.csv"
echo "system,rep,samples_per_s" >"$csv"
for rep in $(seq 1 "$reps"); do
  "$ferry" train --algo ssgd --topology allreduce --np 4 --model cnn --batch 64 --lr 0.05 \
    --max-steps "$iters" --test-limit 1000 --no-progress --out "$out/ferry_$rep" >/dev/null
  f=$(grep -o '"samples_per_s": *[0-9.eE+-]*' "$out/ferry_$rep/summary.json" | sed 's/.*: *//')
  echo "ferry_ssgd_allreduce,$rep,$f" >>"$csv"
  /usr/bin/python3 bench/ddp/ddp_cnn.py --np 4 --iters "$iters" --batch 64 --out "$out/ddp_$rep.json" >/dev/null
  d=$(grep -o '"samples_per_s": *[0-9.eE+-]*' "$out/ddp_$rep.json" | sed 's/.*: *//')
  echo "pytorch_ddp_gloo,$rep,$d" >>"$csv"
  echo "rep $rep: ferry $f samples/s, DDP $d samples/s"
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
fm=$(grep '^ferry' "$csv" | cut -d, -f3 | median)
dm=$(grep '^pytorch' "$csv" | cut -d, -f3 | median)
ratio=$(awk -v f="$fm" -v d="$dm" 'BEGIN {printf "%.2f", f/d}')
printf '{"ferry_samples_per_s": %s, "ddp_samples_per_s": %s, "ratio": %s, "reps": %s, "iters": %s}\n' \
  "$fm" "$dm" "$ratio" "$reps" "$iters" >"$out/vs_ddp.json"
echo "median: ferry $fm samples/s, DDP $dm samples/s, ratio ${ratio}x"
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 640,400 noenhanced
set output "$out/vs_ddp.png"
set title "S-SGD cnn, 4 workers, batch 64 (median of $reps): ferry / DDP = ${ratio}x"
set style fill solid 0.6
set boxwidth 0.5
set ylabel "samples/s"
set yrange [0:*]
plot "-" using 0:2:xtic(1) with boxes notitle
ferry $fm
pytorch-ddp $dm
e
GP
fi
