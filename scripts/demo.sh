#!/usr/bin/env bash
# ferry's main demo: installs what is missing, builds, then
#   1. trains the cnn on Fashion-MNIST with 4 MPI workers under an emulated 1 Gbps network,
#      with S-SGD on allreduce, S-SGD on a parameter server and ASGD, and prints a table;
#   2. on the same link, where S-SGD on the parameter server spends most of its time waiting,
#      runs SSD-SGD and CD-SGD and prints their speed against S-SGD's;
#   3. runs a short MoE expert-offloading comparison of the policies (PreScope among them) on a
#      tiny model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
ferry=build/default/apps/ferry
out=runs/demo
rm -rf "$out"; mkdir -p "$out"

steps=${FERRY_DEMO_STEPS:-150}
echo "== distributed training: cnn on Fashion-MNIST, 4 workers, batch 64, $steps steps, link 1Gbps,50us"
run() {
  local name="$1"; shift
  "$ferry" train --np 4 --model cnn --batch 64 --lr 0.05 --max-steps "$steps" --link 1Gbps,50us \
    --seed 1 --no-progress --out "$out/$name" "$@" >/dev/null
  echo "   done: $name"
}
run ssgd-allreduce --algo ssgd --topology allreduce
run ssgd-ps --algo ssgd --topology ps --servers 1
run asgd-ps --algo asgd --servers 1
get() { grep -o "\"$2\": *[0-9.eE+-]*" "$out/$1/summary.json" | sed 's/.*: *//'; }
# table RUN... : accuracy, speed, speed against S-SGD on the parameter server, wait, bytes.
table() {
  printf '\n%-16s %10s %12s %10s %11s %14s\n' run test_acc samples/s vs_ssgd-ps comm_wait MB/worker
  local base; base=$(get ssgd-ps samples_per_s)
  for r in "$@"; do
    printf '%-16s %9.2f%% %12.0f %9.2fx %10.0f%% %14.1f\n' "$r" "$(awk -v a="$(get $r test_acc)" 'BEGIN{print 100*a}')" \
      "$(get $r samples_per_s)" "$(awk -v a="$(get $r samples_per_s)" -v b="$base" 'BEGIN{print a/b}')" \
      "$(awk -v a="$(get $r comm_wait_fraction)" 'BEGIN{print 100*a}')" \
      "$(awk -v a="$(get $r bytes_sent_per_worker)" 'BEGIN{print a/1e6}')"
  done
}
table ssgd-allreduce ssgd-ps asgd-ps

echo
echo "== delayed updates on the same link: S-SGD on the parameter server waits" \
  "$(awk -v a="$(get ssgd-ps comm_wait_fraction)" 'BEGIN{printf "%.0f", 100*a}') % of its time there"
echo "   SSD-SGD pulls every 4 iterations and steps locally meanwhile; CD-SGD pushes 2-bit gradients"
echo "   (full precision every 5th) and updates from the one-step-old weights (docs/algorithms.md)"
run ssdsgd-ps --algo ssdsgd --servers 1
run cdsgd-ps --algo cdsgd --servers 1
table ssgd-ps ssdsgd-ps cdsgd-ps
echo "(summaries and per-iteration metrics in $out/; 150 steps are a speed demo: accuracies after a few"
echo " hundred steps are not final, see bench/RESULTS.md for full runs)"

if "$ferry" moe --help >/dev/null 2>&1; then
  echo
  echo "== MoE inference with expert offloading: policies, PreScope among them, on a tiny model"
  "$ferry" moe demo
fi
