#!/usr/bin/env bash
# A rank that is alive but stuck (SIGSTOP): the other workers' stall watchdogs end the job
# within --stall-timeout plus a margin, with a non-zero exit code and an error saying which rank
# saw no progress. Usage: stall_rank.sh FERRY RANK TIMEOUT_S ARGS...
set -u
ferry="$1"; victim="$2"; timeout_s="$3"; shift 3
tmp=$(mktemp -d)
export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"
cleanup() { for f in "$FERRY_RANK_DIR"/rank-*.pid; do kill -9 "$(cat "$f")" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT

"$ferry" train "$@" --no-progress --threads 1 --stall-timeout "$timeout_s" --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr" &
launcher=$!
for _ in $(seq 1 600); do
  [ -s "$tmp/out/metrics.jsonl" ] && [ "$(wc -l <"$tmp/out/metrics.jsonl")" -ge 3 ] &&
    [ -s "$FERRY_RANK_DIR/rank-$victim.pid" ] && break
  kill -0 "$launcher" 2>/dev/null || { echo "FAIL: the run ended before the stop"; cat "$tmp/stderr"; exit 1; }
  sleep 0.2
done
kill -STOP "$(cat "$FERRY_RANK_DIR/rank-$victim.pid")"
start=$(date +%s)
limit=$((timeout_s + 30))
while kill -0 "$launcher" 2>/dev/null && [ $(( $(date +%s) - start )) -le "$limit" ]; do sleep 0.2; done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: still running $limit s after rank $victim was stopped"; kill -9 "$launcher"; exit 1
fi
wait "$launcher"; rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || { echo "FAIL: exit code 0"; exit 1; }
grep -q "^ferry train: error: rank [0-9]* (worker [0-9]*, pid [0-9]*) failed: no progress for $timeout_s s" "$tmp/stderr" ||
  { echo "FAIL: no stall error:"; cat "$tmp/stderr"; exit 1; }
echo "ok: rank $victim stopped, job ended after ${elapsed} s (stall timeout $timeout_s s), exit code $rc"
grep "^ferry train: error:" "$tmp/stderr"
exit 0
