#!/usr/bin/env bash
# Prints "CONFIG SHA256" for 11 short training runs, the hash taken over the state files (every
# worker's and server's weights and optimizer state) of the checkpoint each run writes at its end.
# Two builds that must train alike (a refactoring and its base) print the same lines:
#
#   scripts/train_hashes.sh build/default/apps > new.txt
#   scripts/train_hashes.sh /path/to/other/ferry > old.txt && diff old.txt new.txt
#
# BIN_DIR is a directory holding `ferry`, or the `ferry` binary itself. Every run is bit-reproducible:
# --deterministic, except asgd (asynchronous), which runs with one worker and one thread instead.
# Each run: model mlp, 5 iterations of batch 32 on the first 512 Fashion-MNIST training images (the
# default data), 2 workers (+ 1 server on the parameter-server topology), no emulated link.
set -eu
bin="${1:?usage: train_hashes.sh BIN_DIR}"
ferry="$bin"
[ -d "$bin" ] && ferry="$bin/ferry"
[ -x "$ferry" ] || { echo "train_hashes.sh: no ferry binary at $ferry" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

common=(--model mlp --max-steps 5 --batch 32 --train-limit 512 --test-limit 64 --seed 1 --lr 0.05
        --threads 1 --no-progress --checkpoint-every 5)
# name | flags
configs=(
  "ssgd-allreduce|--algo ssgd --topology allreduce --np 2 --deterministic"
  "ssgd-ps|--algo ssgd --topology ps --np 2 --servers 1 --deterministic"
  "asgd-1worker|--algo asgd --np 1 --servers 1"
  "odsgd|--algo odsgd --np 2 --servers 1 --warmup-steps 2 --deterministic"
  "ssdsgd|--algo ssdsgd --np 2 --servers 1 --warmup-steps 2 --delay-steps 2 --deterministic"
  "cdsgd|--algo cdsgd --np 2 --servers 1 --warmup-steps 2 --correction-steps 2 --deterministic"
  "localsgd|--algo localsgd --np 2 --sync-every 2 --deterministic"
  "wfbp|--algo wfbp --np 2 --bucket-mb 0.1 --deterministic"
  "diloco|--algo diloco:inner_steps=2 --np 2 --deterministic"
  "streaming-diloco|--algo streaming-diloco:inner_steps=2,fragments=2 --np 2 --deterministic"
  "ssgd-twobit|--algo ssgd --np 2 --codec twobit:threshold=0.01 --deterministic"
)
for c in "${configs[@]}"; do
  name="${c%%|*}"
  read -r -a flags <<<"${c#*|}"
  out="$tmp/$name"
  if ! "$ferry" train "${common[@]}" "${flags[@]}" --out "$out" >"$tmp/$name.log" 2>&1; then
    echo "train_hashes.sh: $name failed:" >&2
    cat "$tmp/$name.log" >&2
    exit 1
  fi
  ckpt=$(ls -d "$out"/checkpoints/ckpt-* | tail -1)
  echo "$name $(cat "$ckpt"/*.state | sha256sum | cut -d' ' -f1)"
done
