#!/usr/bin/env bash
# S-SGD's comm_wait_fraction for cnn and fcnet under emulated links from 10Gbps down to
# 100Mbps (50us latency), on allreduce (4 workers) and on a parameter server (4 workers + 1
# server). Picks the communication-bound regime later algorithms are judged in.
# Usage: bench/training/comm_wait_sweep.sh [OUT=bench/training/results]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/training/results}"
ferry="${FERRY:-build/default/apps/ferry}"  # FERRY=path runs a copy, safe from rebuilds
[ -x "$ferry" ] || bash scripts/build.sh
mkdir -p "$out"
csv="$out/comm_wait.csv"
echo "model,topology,link,iterations,samples_per_s,comm_wait_fraction,bytes_sent_per_worker" >"$csv"
for model in cnn fcnet; do
  for topo in allreduce ps; do
    for link in 10Gbps 3Gbps 1Gbps 300Mbps 100Mbps; do
      steps=80
      [ "$model" = fcnet ] && steps=30
      [ "$model" = fcnet ] && [ "$link" = 300Mbps ] && steps=12
      [ "$model" = fcnet ] && [ "$link" = 100Mbps ] && steps=6
      servers=0; [ "$topo" = ps ] && servers=1
      dir="$out/sweep_${model}_${topo}_${link}"
      "$ferry" train --algo ssgd --topology "$topo" --np 4 --servers "$servers" --model "$model" --batch 64 \
        --max-steps "$steps" --test-limit 500 --link "$link,50us" --no-progress --out "$dir" >/dev/null
      get() { grep -o "\"$1\": *[0-9.eE+-]*" "$dir/summary.json" | sed 's/.*: *//'; }
      row="$model,$topo,$link,$steps,$(get samples_per_s),$(get comm_wait_fraction),$(get bytes_sent_per_worker)"
      echo "$row" | tee -a "$csv"
    done
  done
done
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 800,450 noenhanced
set output "$out/comm_wait.png"
set title "S-SGD: share of a worker's time blocked on communication"
set datafile separator ","
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.6
set yrange [0:1]
set ylabel "comm_wait_fraction"
set key top left
set xtics rotate by -25
plot "< awk -F, 'NR>1 && \$2==\"allreduce\" {print \$1\"-\"\$3\",\"\$6}' $csv" using 2:xtic(1) title "allreduce, 4 workers", \
     "< awk -F, 'NR>1 && \$2==\"ps\" {print \$1\"-\"\$3\",\"\$6}' $csv" using 2 title "PS, 4 workers + 1 server"
GP
fi
