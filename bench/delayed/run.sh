#!/usr/bin/env bash
# Delayed and local updates side by side (issue: SSD-SGD / CD-SGD / OD-SGD / local SGD / WFBP):
# `ferry compare` of every algorithm, 4 workers + 1 server, in S-SGD's communication-bound
# regime on the parameter server (the link where its comm_wait_fraction is 50–60 %, see
# bench/RESULTS.md "where S-SGD becomes communication-bound"), then a bandwidth sweep.
#
# Usage: bench/delayed/run.sh [OUT=bench/delayed/results] [MODE=reduced|full]
#   reduced (default): cnn on 6400 training images x 4 epochs (100 iterations per worker),
#                      2000 test images; sweep with ssgd, ssdsgd, cdsgd only.
#   full:              all of Fashion-MNIST: cnn 4 epochs (all algorithms) and fcnet 2 epochs,
#                      then bandwidth sweeps (cnn 1 epoch, fcnet 50 iterations).
#   targets:           the full protocol's links with the options the targets were measured
#                      at beyond the defaults: wfbp with 0.25 MB buckets, local SGD averaging
#                      every 8 (cnn) / 16 (fcnet) steps, and CD-SGD against S-SGD+twobit (also
#                      tuned: --momentum 0 --lr 0.2) evaluated every 47 iterations (1/5 epoch).
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
  # Links where S-SGD on the PS waits 50-60 % of its time (bench/RESULTS.md "where S-SGD
  # becomes communication-bound"): cnn 2Gbps, fcnet 25Gbps. Both S-SGD+twobit and CD-SGD use
  # the threshold 0.005 (MXNet's 0.5 is far above these models' per-element gradients).
  tb=twobit:threshold=0.005
  "$ferry" compare --algos "$algos" --codecs none,$tb --np 4 --servers 1 --model cnn --epochs 4 \
    --link 2Gbps,50us --target-acc 0.87 --out "$out/cnn_2Gbps" --resume
  "$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none --np 4 --servers 1 --model cnn --epochs 1 \
    --link 2Gbps,50us --bandwidths 300Mbps,1Gbps,10Gbps --target-acc 0.85 --out "$out/cnn_sweep" --resume
  "$ferry" compare --algos ssgd,odsgd,ssdsgd,cdsgd,localsgd --codecs none,$tb --np 4 --servers 1 --model fcnet \
    --epochs 2 --link 25Gbps,50us --target-acc 0.85 --out "$out/fcnet_25Gbps" --resume
  # Short runs: 50 iterations, of which the first 10 are the delayed algorithms' S-SGD warm-up.
  "$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none --np 4 --servers 1 --model fcnet --epochs 1 \
    --max-steps 50 --warmup-steps 10 --link 25Gbps,50us --bandwidths 1Gbps,3Gbps,10Gbps --target-acc 0.85 \
    --out "$out/fcnet_sweep" --resume
  exit 0
fi
if [ "$mode" = targets ]; then
  cnn=(--np 4 --servers 1 --model cnn --epochs 4 --link 2Gbps,50us --target-acc 0.87 --resume)
  "$ferry" compare --algos ssgd,wfbp --codecs none --bucket-mb 0.25 --out "$out/cnn_2Gbps_wfbp_0.25MB" "${cnn[@]}"
  "$ferry" compare --algos ssgd,localsgd --codecs none --sync-every 8 --out "$out/cnn_2Gbps_localsgd_H8" "${cnn[@]}"
  "$ferry" compare --algos ssgd,localsgd --codecs none --np 4 --servers 1 --model fcnet --epochs 2 \
    --link 25Gbps,50us --target-acc 0.85 --sync-every 16 --out "$out/fcnet_25Gbps_localsgd_H16" --resume
  # A bare twobit is twobit:threshold=0.005 (ferry compare's --threshold) for both.
  "$ferry" compare --algos ssgd,cdsgd --codecs none,twobit --eval-every 47 --out "$out/cnn_2Gbps_cdsgd" "${cnn[@]}"
  "$ferry" compare --algos ssgd --codecs twobit --momentum 0 --lr 0.2 --eval-every 47 \
    --out "$out/cnn_2Gbps_ssgd_twobit_m0_lr0.2" "${cnn[@]}"
  exit 0
fi
common=(--np 4 --servers 1 --model cnn --epochs 4 --train-limit 6400 --test-limit 2000 --target-acc 0.72 --resume)
"$ferry" compare --algos ssgd,odsgd,ssdsgd,cdsgd,localsgd,wfbp --codecs none,twobit --link 300Mbps,50us \
  --out "$out/cnn_300Mbps" "${common[@]}"
"$ferry" compare --algos ssgd,ssdsgd,cdsgd --codecs none --link 300Mbps,50us --bandwidths 100Mbps,1Gbps \
  --out "$out/cnn_sweep" "${common[@]}"
