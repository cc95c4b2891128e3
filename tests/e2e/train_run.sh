#!/usr/bin/env bash
# Runs `ferry train ARGS... --out DIR` (under mpirun, as a user would) and checks that
# summary.json's test_acc is at least MIN_ACC. Usage: train_run.sh FERRY MIN_ACC ARGS...
set -eu
ferry="$1"; min_acc="$2"; shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$ferry" train "$@" --no-progress --out "$out"
acc=$(grep -o '"test_acc": *[0-9.eE+-]*' "$out/summary.json" | sed 's/.*: *//')
for key in algo topology np servers model epochs samples_per_s test_acc wall_s bytes_sent_per_worker comm_wait_fraction; do
  grep -q "\"$key\"" "$out/summary.json" || { echo "summary.json lacks $key"; exit 1; }
done
[ -s "$out/metrics.jsonl" ] || { echo "metrics.jsonl is empty"; exit 1; }
awk -v a="$acc" -v m="$min_acc" 'BEGIN { if (a + 0 >= m + 0) { print "test_acc " a " >= " m; exit 0 } print "test_acc " a " < " m; exit 1 }'
