#!/usr/bin/env bash
# The disk tier in less memory than the model: a Q8_0 GGUF file of ~330 MB is run by
# `ferry moe logits --link file` inside a cgroup v1 memory controller whose limit (page cache
# included) is below the file's size, under every policy; the process is not killed, and its
# teacher-forced logits equal, bit for bit, those of the all-in-memory engine without a limit.
# Needs root and a writable cgroup v1 memory controller; skipped (exit 77) otherwise.
set -u
ferry="$1"
# shellcheck source=memory_cgroup.sh
source "$(dirname "$0")/memory_cgroup.sh"
memory_cgroup_or_skip
tmp=$(mktemp -d)
trap 'memory_cgroup_cleanup; rm -rf "$tmp"' EXIT
# 4 layers x 8 experts of 3 x 1024 x 3072 (Q8_0: 10 MB each, 320 MB of experts); dense ~12 MB.
"$ferry" moe make-tiny --out "$tmp/m.gguf" --gguf Q8_0 --layers 4 --experts 8 --top-k 2 --hidden 1024 \
  --intermediate 3072 --heads 8 --kv-heads 2 --head-dim 128 --seed 3 >/dev/null || { echo "FAIL: make-tiny"; exit 1; }
size=$(stat -c %s "$tmp/m.gguf")
echo '[[1, 7, 42, 99, 3, 250, 17, 64, 8, 120]]' >"$tmp/tokens.json"
"$ferry" moe logits --model "$tmp/m.gguf" --tokens "$tmp/tokens.json" --prompt 4 --link none --device-mem 100% \
  --out "$tmp/ref.npy" >/dev/null 2>"$tmp/ref.err" || { echo "FAIL: all-in-memory logits"; cat "$tmp/ref.err"; exit 1; }
# The limit: 3/4 of the file; ferry's budget: 4 experts (2 layers' active experts).
limit=$((size * 3 / 4))
failures=0
for policy in ondemand lru static-hot next-gate fiddler moe-infinity prescope; do
  sync
  echo 3 >/proc/sys/vm/drop_caches
  in_memory_cgroup "$limit" "$ferry" moe logits --model "$tmp/m.gguf" --tokens "$tmp/tokens.json" --prompt 4 \
    --link file --policy "$policy" --device-mem 42MB --out "$tmp/$policy.npy" >/dev/null 2>"$tmp/$policy.err"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $policy exited $rc under a limit of $limit bytes (file $size)"; tail -3 "$tmp/$policy.err"
    failures=$((failures + 1))
  elif ! cmp -s "$tmp/ref.npy" "$tmp/$policy.npy"; then
    echo "FAIL: $policy: logits differ from the all-in-memory engine's"
    failures=$((failures + 1))
  else
    echo "ok: $policy under $limit bytes (file $size, peak $peak): logits bit for bit the all-in-memory engine's"
  fi
done
[ "$failures" -eq 0 ]
