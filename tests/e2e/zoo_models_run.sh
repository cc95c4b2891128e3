#!/usr/bin/env bash
# Every training algorithm runs on the zoo's realistic models: `ferry train --model MODEL` for
# each (algorithm, topology) with a few iterations ends with exit 0, a finite training loss, and
# the model's quality metric in summary.json (test_acc for images, test_perplexity for tokens).
# Usage: zoo_models_run.sh FERRY MODEL ARGS...   (ARGS: extra flags for every run)
set -u
ferry="$1"; model="$2"; shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
quality=test_acc
[ "$model" = gpt ] && quality=test_perplexity
run() {  # name, flags...
  local name="$1"; shift
  if ! "$ferry" train --model "$model" --np 2 --max-steps 3 --threads 1 --no-progress --seed 1 "$@" \
      --out "$tmp/$name" >"$tmp/$name.log" 2>&1; then
    echo "FAIL: $model $name exited non-zero"; tail -5 "$tmp/$name.log"; fail=1; return
  fi
  local loss
  loss=$(grep -o '"final_train_loss": *[^,}]*' "$tmp/$name/summary.json" | sed 's/.*: *//')
  if ! awk -v l="$loss" 'BEGIN { exit !(l + 0 == l && l > 0 && l < 100) }'; then
    echo "FAIL: $model $name final_train_loss '$loss' is not a finite positive loss"; fail=1; return
  fi
  grep -q "\"$quality\"" "$tmp/$name/summary.json" || { echo "FAIL: $model $name: no $quality in summary.json"; fail=1; return; }
  echo "ok: $model $name (loss $loss)"
}
run ssgd-allreduce --algo ssgd --topology allreduce "$@"
run ssgd-ps-twobit --algo ssgd --topology ps --servers 1 --codec twobit:threshold=0.01 "$@"
run ssgd-allreduce-topk --algo ssgd --topology allreduce --codec topk:ratio=0.01 "$@"
run asgd --algo asgd --servers 1 "$@"
run odsgd --algo odsgd --servers 1 --warmup-steps 1 "$@"
run ssdsgd --algo ssdsgd --servers 1 --warmup-steps 1 --delay-steps 2 "$@"
run cdsgd --algo cdsgd --servers 1 --warmup-steps 1 --correction-steps 2 "$@"
run localsgd --algo localsgd --sync-every 2 "$@"
run diloco --algo diloco:inner_steps=2 --optimizer adamw "$@"
run streaming-diloco --algo streaming-diloco:inner_steps=2,fragments=2,overlap=1 "$@"
run wfbp --algo wfbp "$@"
run compute-only --algo compute-only "$@"
exit $fail
