#!/usr/bin/env bash
# A deterministic S-SGD run on a parameter server, 4 workers and 1 server on 5 hosts of the
# namespace cluster (mpirun -H across them, TCP through the shaped switch), ends with the same
# weights (weights_fnv1a) as the same run on one host (ferry's own mpirun on loopback); and the
# workers' pushes really crossed the switch: the server's port carried at least their bytes.
# Usage: same_weights.sh FERRY
set -u
ferry="$1"
source "$(dirname "$0")/lib.sh"
cluster_test ws
cluster_up 5 --rate 1gbit --subnet 10.77.101.0/24
run=(--algo ssgd --topology ps --np 4 --servers 1 --deterministic --model mlp --batch 16 --lr 0.05
     --max-steps 20 --train-limit 1024 --test-limit 200 --threads 1 --seed 1 --no-progress)

"$ferry" train "${run[@]}" --out "$tmp/one" >/dev/null 2>"$tmp/one.err" ||
  { echo "FAIL: the run on one host"; cat "$tmp/one.err"; exit 1; }
before=$(port_tx_bytes 5)
timeout 180 "$cluster" mpirun -np 5 -- "$ferry" train "${run[@]}" --out "$tmp/five" >/dev/null 2>"$tmp/five.err" ||
  { echo "FAIL: the run on 5 hosts"; cat "$tmp/five.err"; exit 1; }
into_server=$(( $(port_tx_bytes 5) - before ))

a=$(field "$tmp/one/summary.json" weights_fnv1a); b=$(field "$tmp/five/summary.json" weights_fnv1a)
echo "weights_fnv1a: one host $a, 5 hosts $b"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: the final weights differ"; exit 1; }
pushed=$(field "$tmp/five/summary.json" bytes_sent_per_worker)
echo "into the server's host: $into_server bytes; pushed by the 4 workers: 4 x $pushed"
awk -v t="$into_server" -v p="$pushed" 'BEGIN { exit !(p > 0 && t >= 4 * p) }' ||
  { echo "FAIL: the server's switch port carried less than the workers pushed"; exit 1; }
echo "ok: same weights on 5 hosts as on one"
