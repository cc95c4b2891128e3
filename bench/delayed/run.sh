#!/usr/bin/env bash
# Delayed and local updates side by side (issue: SSD-SGD / CD-SGD / OD-SGD / local SGD / WFBP):
# `ferry compare` of every algorithm, 4 workers + 1 server, in S-SGD's communication-bound
# regime on the parameter server (the link where its comm_wait_fraction is 50–60 %, see
# bench/RESULTS.md "where S-SGD becomes communication-bound"), then a bandwidth sweep.
#
# Usage: bench/delayed/run.sh [OUT=bench/delayed/results] [MODE=reduced|full]
#   reduced (default): cnn on 6400 training images x 4 epochs (100 iterations per worker),
#                      2000 test images; sweep with ssgd, ssdsgd, cdsgd only.
#   full:              the issue's protocol: cnn and fcnet, full Fashion-MNIST, 4 epochs.
# FERRY=path runs a copy of the binary (safe from rebuilds).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/delayed/results}"
mode="${2:-reduced}"
ferry="${FERRY:-build/default/apps/ferry}"
[ -x "$ferry" ] || bash scripts/build.sh
mkdir -p "$out"
algos=ssgd,asgd,odsgd,ssdsgd,cdsgd,localsgd,wfbp
if [ "$mode" = full ]; then
  for m in "cnn 300Mbps 0.87" "fcnet 250Mbps 0.87"; do
    set -- $m
    "$ferry" compare --algos "$algos" --codecs none,twobit --np 4 --servers 1 --model "$1" --epochs 4 \
      --link "$2,50us" --target-acc "$3" --out "$out/$1_$2" --resume
    "$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none,twobit --np 4 --servers 1 --model "$1" --epochs 4 \
      --link "1Gbps,50us" --bandwidths 100Mbps,1Gbps,10Gbps --target-acc "$3" --out "$out/$1_sweep" --resume
  done
  exit 0
fi
common=(--np 4 --servers 1 --model cnn --epochs 4 --train-limit 6400 --test-limit 2000 --target-acc 0.72 --resume)
"$ferry" compare --algos ssgd,odsgd,ssdsgd,cdsgd,localsgd,wfbp --codecs none,twobit --link 300Mbps,50us \
  --out "$out/cnn_300Mbps" "${common[@]}"
"$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none --link 300Mbps,50us --bandwidths 100Mbps,1Gbps \
  --out "$out/cnn_sweep" "${common[@]}"
