#!/usr/bin/env bash
# ferry's main demo: installs what is missing, builds, then
#   1. trains the cnn on Fashion-MNIST with 4 MPI workers under an emulated 1 Gbps network,
#      with S-SGD on allreduce, S-SGD on a parameter server and ASGD, and prints a table;
#   2. runs a short MoE expert-offloading comparison of the policies on a tiny model.
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
printf '\n%-16s %10s %12s %11s %14s\n' run test_acc samples/s comm_wait MB/worker
for r in ssgd-allreduce ssgd-ps asgd-ps; do
  printf '%-16s %9.2f%% %12.0f %10.0f%% %14.1f\n' "$r" "$(awk -v a="$(get $r test_acc)" 'BEGIN{print 100*a}')" \
    "$(get $r samples_per_s)" "$(awk -v a="$(get $r comm_wait_fraction)" 'BEGIN{print 100*a}')" \
    "$(awk -v a="$(get $r bytes_sent_per_worker)" 'BEGIN{print a/1e6}')"
done
echo "(summaries and per-iteration metrics in $out/)"

if "$ferry" moe --help >/dev/null 2>&1; then
  echo
  echo "== MoE inference with expert offloading: policies on a tiny model"
  "$ferry" moe demo
fi
