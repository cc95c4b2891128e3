#!/usr/bin/env bash
# Measured runs for `ferry advise`: a calibration set (compute-only and S-SGD on allreduce and
# the parameter server, the runs the machine constants are fitted to) and a validation set kept
# apart (every algorithm, several codecs, cnn/mlp/fcnet, 2-8 ranks, 100 Mbps-10 Gbps), then the
# fit and the predicted-vs-measured report.
#
#   FERRY=build/default/apps/ferry bash bench/advise/run.sh [RUNS_DIR] [RESULTS_DIR]
#
# RUNS_DIR (default runs/advise) gets one directory per run (summary.json, log.txt and
# advise_run.json: the run's set and the algorithm options summary.json does not record); runs
# whose summary.json exists are kept (delete them to re-measure). RESULTS_DIR (default
# bench/advise/results) gets calibration.json, validation.{csv,md,json}, predicted_vs_measured.png
# and the projections.
set -euo pipefail
FERRY=${FERRY:-build/default/apps/ferry}
RUNS=${1:-runs/advise}
RESULTS=${2:-bench/advise/results}
STEPS=${STEPS:-60}
mkdir -p "$RUNS" "$RESULTS"
CLUSTER_SH="$(dirname "$0")/../../scripts/cluster.sh"

# SKIP_CLUSTER=1 leaves out the runs across the namespace cluster.
# Timing on a shared 2-core machine: before each run wait (up to QUIET_WAIT_S, default 900 s)
# until no compiler and no other training job has run for 10 s; advise_run.json records
# whether the run started on a quiet machine.
busy() { pgrep -f 'cc1plus|ferry train|ferry compare|python3 .*train' >/dev/null; }
wait_quiet() {
  local waited=0 calm=0
  while ((waited < ${QUIET_WAIT_S:-900})); do
    if busy; then calm=0; else calm=$((calm + 1)); fi
    ((calm >= 10)) && return 0
    sleep 1
    waited=$((waited + 1))
  done
  return 1
}

# run SET NAME STEPS FLAGS...: one `ferry train` unless it is already there.
# With CLUSTER_RATE set (tc's form, 300mbit), the run goes across the namespace cluster of
# scripts/cluster.sh (one rank per host, links shaped by the kernel) and advise_run.json
# records the rate for the cost model.
run() {
  local set=$1 name=$2 steps=$3
  shift 3
  local dir="$RUNS/$set/$name"
  [[ -f "$dir/summary.json" ]] && return 0
  mkdir -p "$dir"
  # The options summary.json does not record, for the cost model.
  local warm=20 delay=4 corr=5 sync=4 post=0 bucket=4
  local args=("$@") i
  for ((i = 0; i < ${#args[@]}; ++i)); do
    case "${args[i]}" in
      --warmup-steps) warm=${args[i + 1]} ;;
      --delay-steps) delay=${args[i + 1]} ;;
      --correction-steps) corr=${args[i + 1]} ;;
      --sync-every) sync=${args[i + 1]} ;;
      --post-local) post=${args[i + 1]} ;;
      --bucket-mb) bucket=${args[i + 1]} ;;
    esac
  done
  local quiet=true
  wait_quiet || quiet=false
  local kernel="" launch=()
  if [[ -n "${CLUSTER_RATE:-}" ]]; then
    kernel=", \"kernel_rate\": \"$CLUSTER_RATE\""
    launch=("$CLUSTER_SH" mpirun -np "$CLUSTER_HOSTS" --)
  fi
  printf '{"set": "%s", "warmup_steps": %s, "delay_steps": %s, "correction_steps": %s, "sync_every": %s, "post_local": %s, "bucket_mb": %s, "quiet": %s%s, "command": "%s"}\n' \
    "$set" "$warm" "$delay" "$corr" "$sync" "$post" "$bucket" "$quiet" "$kernel" "ferry train $*" >"$dir/advise_run.json"
  echo "== $set/$name: ${CLUSTER_RATE:+[cluster, $CLUSTER_RATE] }ferry train $*" >&2
  "${launch[@]}" "$FERRY" train "$@" --max-steps "$steps" --epochs 100 --batch 64 --train-limit 8192 --test-limit 256 \
    --threads 1 --seed 1 --no-progress --out "$dir" >"$dir/log.txt" 2>&1 || echo "   failed, see $dir/log.txt" >&2
}

# cluster HOSTS RATE SET NAME STEPS FLAGS...: `run` across a fresh cluster of HOSTS namespaces
# whose links tc shapes to RATE; skipped with a line where the machine refuses namespaces.
cluster() {
  local hosts=$1 rate=$2
  shift 2
  [[ -f "$RUNS/$1/$2/summary.json" ]] && return 0
  "$CLUSTER_SH" down >/dev/null 2>&1 || true
  if ! "$CLUSTER_SH" up "$hosts" --rate "$rate" >/dev/null 2>"$RUNS/cluster_up.err"; then
    echo "== $1/$2 skipped: $(tail -1 "$RUNS/cluster_up.err")" >&2
    return 0
  fi
  CLUSTER_RATE=$rate CLUSTER_HOSTS=$hosts run "$@"
  "$CLUSTER_SH" down >/dev/null
}

PS="--topology ps --servers 1"
AR="--topology allreduce"

# Calibration: compute only (each model), S-SGD allreduce and PS on cnn at two links, fcnet's
# large messages on allreduce.
run calibration co-cnn-np1 "$STEPS" --algo compute-only --np 1 --model cnn
run calibration co-cnn-np4 "$STEPS" --algo compute-only --np 4 --model cnn
run calibration co-mlp-np4 "$STEPS" --algo compute-only --np 4 --model mlp
run calibration co-fcnet-np2 20 --algo compute-only --np 2 --model fcnet
run calibration ssgd-ar-cnn-np4-1g "$STEPS" --algo ssgd $AR --np 4 --model cnn --link 1Gbps,50us
run calibration ssgd-ar-cnn-np4-10g "$STEPS" --algo ssgd $AR --np 4 --model cnn --link 10Gbps,50us
run calibration ssgd-ps-cnn-np4-300m "$STEPS" --algo ssgd $PS --np 4 --model cnn --link 300Mbps,50us
run calibration ssgd-ps-cnn-np4-3g "$STEPS" --algo ssgd $PS --np 4 --model cnn --link 3Gbps,50us
run calibration ssgd-ar-fcnet-np2-10g 20 --algo ssgd $AR --np 2 --model fcnet --link 10Gbps,50us

# Validation: every algorithm on cnn, 4 workers + 1 server.
W="--warmup-steps 10"
run validation ssgd-ps-cnn-np4-1g "$STEPS" --algo ssgd $PS --np 4 --model cnn --link 1Gbps,50us
run validation ssgd-ar-cnn-np4-300m "$STEPS" --algo ssgd $AR --np 4 --model cnn --link 300Mbps,50us
run validation ssgd-ar-cnn-np4-100m 30 --algo ssgd $AR --np 4 --model cnn --link 100Mbps,50us
run validation asgd-cnn-np4-1g "$STEPS" --algo asgd $PS --np 4 --model cnn --link 1Gbps,50us
run validation asgd-cnn-np4-300m "$STEPS" --algo asgd $PS --np 4 --model cnn --link 300Mbps,50us
run validation odsgd-cnn-np4-1g "$STEPS" --algo odsgd $PS --np 4 --model cnn --link 1Gbps,50us $W
run validation odsgd-cnn-np4-10g "$STEPS" --algo odsgd $PS --np 4 --model cnn --link 10Gbps,50us $W
run validation ssdsgd-cnn-np4-1g "$STEPS" --algo ssdsgd $PS --np 4 --model cnn --link 1Gbps,50us $W
run validation ssdsgd-cnn-np4-300m "$STEPS" --algo ssdsgd $PS --np 4 --model cnn --link 300Mbps,50us $W
run validation ssdsgd-cnn-np4-10g "$STEPS" --algo ssdsgd $PS --np 4 --model cnn --link 10Gbps,50us
run validation cdsgd-cnn-np4-1g "$STEPS" --algo cdsgd $PS --np 4 --model cnn --link 1Gbps,50us $W
run validation cdsgd-cnn-np4-300m "$STEPS" --algo cdsgd $PS --np 4 --model cnn --link 300Mbps,50us $W
run validation localsgd-cnn-np4-1g "$STEPS" --algo localsgd --np 4 --model cnn --link 1Gbps,50us
run validation localsgd-cnn-np4-100m 40 --algo localsgd --np 4 --model cnn --link 100Mbps,50us
run validation wfbp-ar-cnn-np4-1g "$STEPS" --algo wfbp $AR --np 4 --model cnn --link 1Gbps,50us --bucket-mb 0.25
run validation wfbp-ps-cnn-np4-1g "$STEPS" --algo wfbp $PS --np 4 --model cnn --link 1Gbps,50us --bucket-mb 0.25
run validation co-cnn-np3 "$STEPS" --algo compute-only --np 3 --model cnn
# Codecs.
run validation ssgd-ps-twobit-cnn-np4-300m "$STEPS" --algo ssgd $PS --np 4 --model cnn --link 300Mbps,50us --codec twobit:threshold=0.005
run validation ssgd-ps-fp16-cnn-np4-1g "$STEPS" --algo ssgd $PS --np 4 --model cnn --link 1Gbps,50us --codec fp16
run validation ssgd-ps-onebit-cnn-np4-100m 40 --algo ssgd $PS --np 4 --model cnn --link 100Mbps,50us --codec onebit
run validation ssgd-ar-topk-cnn-np4-1g "$STEPS" --algo ssgd $AR --np 4 --model cnn --link 1Gbps,50us --codec topk:ratio=0.01
run validation ssgd-ar-powersgd-cnn-np4-1g "$STEPS" --algo ssgd $AR --np 4 --model cnn --link 1Gbps,50us --codec powersgd
run validation ssgd-ar-qsgd-cnn-np4-300m "$STEPS" --algo ssgd $AR --np 4 --model cnn --link 300Mbps,50us --codec qsgd
run validation odsgd-twobit-cnn-np4-1g "$STEPS" --algo odsgd $PS --np 4 --model cnn --link 1Gbps,50us $W --codec twobit:threshold=0.005
# Ranks: 2-8.
run validation ssgd-ar-cnn-np2-1g "$STEPS" --algo ssgd $AR --np 2 --model cnn --link 1Gbps,50us
run validation ssgd-ar-cnn-np8-1g 40 --algo ssgd $AR --np 8 --model cnn --link 1Gbps,50us
run validation ssgd-ps-cnn-np2-300m "$STEPS" --algo ssgd $PS --np 2 --model cnn --link 300Mbps,50us
run validation ssdsgd-cnn-np6-s2-1g 40 --algo ssdsgd --topology ps --servers 2 --np 6 --model cnn --link 1Gbps,50us $W
run validation localsgd-cnn-np8-300m 40 --algo localsgd --np 8 --model cnn --link 300Mbps,50us
# Other models.
run validation ssgd-ar-mlp-np4-100m "$STEPS" --algo ssgd $AR --np 4 --model mlp --link 100Mbps,50us
run validation ssgd-ps-mlp-np4-1g "$STEPS" --algo ssgd $PS --np 4 --model mlp --link 1Gbps,50us
run validation odsgd-mlp-np4-300m "$STEPS" --algo odsgd $PS --np 4 --model mlp --link 300Mbps,50us $W
run validation ssgd-ps-fcnet-np2-3g 20 --algo ssgd $PS --np 2 --model fcnet --link 3Gbps,50us
run validation ssgd-ar-fcnet-np2-1g 16 --algo ssgd $AR --np 2 --model fcnet --link 1Gbps,50us
run validation ssdsgd-fcnet-np4-10g 24 --algo ssdsgd $PS --np 4 --model fcnet --link 10Gbps,50us --warmup-steps 4
run validation localsgd-fcnet-np4-3g 24 --algo localsgd --np 4 --model fcnet --link 3Gbps,50us
# Worker and server counts and bandwidths no other run has: 3, 5 and 6 workers, 2 servers,
# 500 Mbps, 700 Mbps and 2 Gbps; SSD-SGD at 3 workers also over 312 iterations (an epoch of
# the full training set, as `ferry train` runs it by default: the warm-up weighs less than in 60).
run validation ssdsgd-cnn-np3-700m "$STEPS" --algo ssdsgd $PS --np 3 --model cnn --link 700Mbps,50us
run validation ssdsgd-cnn-np3-700m-312 312 --algo ssdsgd $PS --np 3 --model cnn --link 700Mbps,50us
run validation ssgd-ps-cnn-np3-700m "$STEPS" --algo ssgd $PS --np 3 --model cnn --link 700Mbps,50us
run validation odsgd-cnn-np3-2g "$STEPS" --algo odsgd $PS --np 3 --model cnn --link 2Gbps,50us $W
run validation cdsgd-cnn-np5-s2-700m 40 --algo cdsgd --topology ps --servers 2 --np 5 --model cnn --link 700Mbps,50us $W
run validation ssdsgd-mlp-np5-s2-500m 40 --algo ssdsgd --topology ps --servers 2 --np 5 --model mlp --link 500Mbps,50us $W
run validation asgd-cnn-np5-s2-500m 40 --algo asgd --topology ps --servers 2 --np 5 --model cnn --link 500Mbps,50us
run validation ssgd-ar-cnn-np6-500m 40 --algo ssgd $AR --np 6 --model cnn --link 500Mbps,50us
run validation localsgd-cnn-np3-2g "$STEPS" --algo localsgd --np 3 --model cnn --link 2Gbps,50us
run validation wfbp-ps-cnn-np3-700m "$STEPS" --algo wfbp $PS --np 3 --model cnn --link 700Mbps,50us --bucket-mb 0.25
run validation ssgd-ps-fp16-cnn-np3-2g "$STEPS" --algo ssgd $PS --np 3 --model cnn --link 2Gbps,50us --codec fp16
# DiLoCo and Streaming DiLoCo (their options are keys of the --algo spec, recorded in summary.json).
run validation diloco-cnn-np4-100m "$STEPS" --algo diloco:inner_steps=10 --np 4 --model cnn --link 100Mbps,50us
run validation diloco-qsgd4-cnn-np4-100m "$STEPS" --algo diloco:inner_steps=10 --np 4 --model cnn --link 100Mbps,50us --codec qsgd:levels=7
run validation streaming-diloco-cnn-np4-100m "$STEPS" --algo streaming-diloco:inner_steps=10,fragments=4,overlap=2 --np 4 --model cnn --link 100Mbps,50us

# Links shaped by the kernel (scripts/cluster.sh, tbf; no emulated latency): S-SGD on the PS
# (4 workers + 1 server on 5 hosts) and on ferry's ring allreduce (4 hosts; the ring unpaced,
# --link 100000Gbps, as the emulator paces it; --link none would take MPI_Allreduce), SSD-SGD
# and 2-bit pushes. One rank per host; every rank sleeps while it waits for MPI, as on one host.
if [[ "${SKIP_CLUSTER:-0}" != 1 ]]; then
export FERRY_CLUSTER_PREFIX=fadvise FERRY_MPI_WAIT=sleep OMP_NUM_THREADS=1
trap '"$CLUSTER_SH" down >/dev/null 2>&1 || true' EXIT
RING="--topology allreduce --link 100000Gbps"
cluster 5 300mbit validation kernel-ssgd-ps-cnn-np4-300m "$STEPS" --algo ssgd $PS --np 4 --model cnn --link none
cluster 5 1gbit validation kernel-ssgd-ps-cnn-np4-1g "$STEPS" --algo ssgd $PS --np 4 --model cnn --link none
cluster 4 300mbit validation kernel-ssgd-ar-cnn-np4-300m "$STEPS" --algo ssgd $RING --np 4 --model cnn
cluster 4 1gbit validation kernel-ssgd-ar-cnn-np4-1g "$STEPS" --algo ssgd $RING --np 4 --model cnn
cluster 5 1gbit validation kernel-ssdsgd-cnn-np4-1g "$STEPS" --algo ssdsgd $PS --np 4 --model cnn --link none $W
cluster 5 300mbit validation kernel-ssgd-ps-twobit-cnn-np4-300m "$STEPS" --algo ssgd $PS --np 4 --model cnn --link none --codec twobit:threshold=0.005
cluster 5 300mbit validation kernel-ssgd-ps-resnet20-np4-300m 30 --algo ssgd $PS --np 4 --model resnet20 --link none
fi

[[ "${SKIP_REPORT:-0}" == 1 ]] && exit 0
# The zoo models' profiles are measured once (the fastest of 10 iterations) into
# $RESULTS/profiles and reused by the fit and the check.
"$FERRY" advise --profiles "$RESULTS/profiles" --calibrate "$RUNS/calibration" \
  --write-calibration "$RESULTS/calibration.json"
"$FERRY" advise --profiles "$RESULTS/profiles" --validate "$RUNS/calibration" "$RUNS/validation" \
  --calibration "$RESULTS/calibration.json" --out "$RESULTS" | tee "$RESULTS/validation.txt"
# The same runs as a user reads them: each run's configuration through the projection table
# (ferry advise --model ... --steps N, its row), beside the --validate prediction above.
FERRY="$FERRY" /usr/bin/env python3 "$(dirname "$0")/projection_check.py" "$RESULTS" "$RUNS/calibration" "$RUNS/validation" \
  -- --calibration "$RESULTS/calibration.json" | tee "$RESULTS/projection_check.txt"
