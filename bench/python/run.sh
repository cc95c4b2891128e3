#!/usr/bin/env bash
# ferry from Python against PyTorch DDP (gloo) and against ferry's C++ path, side by side in one run
# (bench/python/bench_train.py is one rank; bench/RESULTS.md has the latest results).
#   1. no link: cnn and torchvision ResNet-18, 4 workers, batch 64: ferry ssgd from Python, DDP,
#      and (cnn) `ferry train` itself; REPS alternating repetitions, medians and ratios.
#   2. at LINK (default 200Mbps,50us: where ferry's ssgd on the cnn waits 50-60 %), cnn, one epoch:
#      ssgd (allreduce and ps), ssdsgd, cdsgd, wfbp, localsgd from Python, and DDP with ferry's hook (none = DDP's allreduce,
#      twobit, powersgd) over the same emulated link: samples/s, time to TARGET test accuracy, final
#      accuracy. The parameter-server runs use SERVERS=4 servers, one beside each worker as BytePS deploys
#      them (with one, its NIC carries every worker's traffic); twobit also with momentum 0 and
#      lr 0.2 (bench/RESULTS.md, "Codecs in training": with momentum 0.9 it diverges).
# Usage: bench/python/run.sh [OUT=bench/python/results] [REPS=3] [LINK=200Mbps,50us] [TARGET=0.80]
# RUNS=dir keeps the per-run JSON files (default runs/bench-python); SERVERS=N sets the
# parameter-server runs' servers (default 4).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/python/results}"; reps="${2:-3}"; link="${3:-200Mbps,50us}"; target="${4:-0.80}"
runs="${RUNS:-runs/bench-python}"
servers="${SERVERS:-4}"
ferry="${FERRY:-build/default/apps/ferry}"  # FERRY=path runs a copy, safe from rebuilds
[ -x "$ferry" ] || bash scripts/build.sh
py=/usr/bin/python3
rm -rf "$runs"; mkdir -p "$runs" "$out"
export GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1

one() {  # one() NAME SECTION FERRY-RUN-FLAGS... -- BENCH-FLAGS...
  local name="$1" section="$2"; shift 2
  local runflags=()
  while [ "$1" != "--" ]; do runflags+=("$1"); shift; done; shift
  rm -f "$runs/$name.json.store"
  "$ferry" run --np 4 "${runflags[@]}" -- $py bench/python/bench_train.py --label "$name" --out "$runs/$name.json" "$@" \
    >"$runs/$name.log" 2>&1 || { echo "bench/python: $name failed (see $runs/$name.log)" >&2; tail -5 "$runs/$name.log" >&2; exit 1; }
  echo "$section" >"$runs/$name.section"
  $py -c "import json,sys; d=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]}: {d['samples_per_s']:.0f} samples/s, acc {d['final_acc']:.4f}\")" \
    "$runs/$name.json" "$name"
}

cxx() {  # cxx NAME: ferry train's own S-SGD on the cnn, for the Python path to equal
  "$ferry" train --algo ssgd --topology allreduce --np 4 --model cnn --batch 64 --lr 0.05 --max-steps "$2" \
    --test-limit 10000 --threads 1 --no-progress --out "$runs/$1" >"$runs/$1.log" 2>&1
  $py -c "import json,sys; s=json.load(open(sys.argv[1]+'/summary.json'));
json.dump({'label': sys.argv[2], 'system': 'ferry-train', 'algo': 'ssgd', 'codec': s['codec'], 'model': 'cnn',
           'workers': 4, 'batch': 64, 'steps': s['iterations'], 'train_s': s['wall_s'], 'samples_per_s': s['samples_per_s'],
           'comm_wait_s': s['comm_wait_fraction'] * s['wall_s'], 'final_acc': s['test_acc'], 'target': 0,
           'time_to_target_s': None, 'curve': []}, open(sys.argv[1]+'.json', 'w'))" "$runs/$1" "$1"
  echo nolink >"$runs/$1.section"
  echo "$1: $($py -c "import json,sys; print(round(json.load(open(sys.argv[1]))['samples_per_s']))" "$runs/$1.json") samples/s"
}

for rep in $(seq 1 "$reps"); do
  one "cnn-ferry-py-ssgd-$rep" nolink -- --system ferry --algo ssgd --model cnn --steps 200
  one "cnn-ddp-$rep" nolink -- --system ddp --model cnn --steps 200
  cxx "cnn-ferry-train-ssgd-$rep" 200
  one "resnet18-ferry-py-ssgd-$rep" nolink -- --system ferry --algo ssgd --model resnet18 --steps 30
  one "resnet18-ddp-$rep" nolink -- --system ddp --model resnet18 --steps 30
done

epoch=(--model cnn --steps 234 --eval-every 26 --target "$target")
one link-ferry-ssgd link --link "$link" -- --system ferry --algo ssgd "${epoch[@]}"
one link-ferry-ssgd-ps link --link "$link" --servers "$servers" -- --system ferry --algo ssgd --topology ps "${epoch[@]}"
one link-ferry-ssdsgd link --link "$link" --servers "$servers" -- --system ferry --algo ssdsgd --topology ps "${epoch[@]}"
one link-ferry-cdsgd link --link "$link" --servers "$servers" -- --system ferry --algo cdsgd --topology ps "${epoch[@]}"
one link-ferry-wfbp link --link "$link" -- --system ferry --algo wfbp "${epoch[@]}"
one link-ferry-localsgd link --link "$link" -- --system ferry --algo localsgd "${epoch[@]}"
one link-ddp link -- --system ddp --hook none --link "$link" "${epoch[@]}"
one link-ddp-twobit link -- --system ddp --hook twobit:threshold=0.005 --link "$link" "${epoch[@]}"
one link-ddp-twobit-m0 link -- --system ddp --hook twobit:threshold=0.005 --link "$link" --momentum 0 --lr 0.2 "${epoch[@]}"
one link-ddp-powersgd link -- --system ddp --hook powersgd --link "$link" "${epoch[@]}"

$py bench/python/summarize.py "$runs" "$out" "$link" "$target"
