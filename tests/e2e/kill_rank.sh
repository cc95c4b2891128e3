#!/usr/bin/env bash
# A rank killed with SIGKILL during a `ferry train` run: every process of the job is gone within
# 30 s, the exit code is non-zero, and stderr names the killed rank.
# Usage: kill_rank.sh FERRY RANK ARGS...   (ARGS: the ferry train flags of the run)
set -u
ferry="$1"; victim="$2"; shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"

"$ferry" train "$@" --no-progress --threads 1 --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr" &
launcher=$!

# Wait until the run is training (rank 0 has written a few iterations), at most 120 s.
for _ in $(seq 1 600); do
  if [ -s "$tmp/out/metrics.jsonl" ] && [ "$(wc -l <"$tmp/out/metrics.jsonl")" -ge 3 ] && [ -s "$FERRY_RANK_DIR/rank-$victim.pid" ]; then
    break
  fi
  if ! kill -0 "$launcher" 2>/dev/null; then echo "FAIL: the run ended before the kill"; cat "$tmp/stderr"; exit 1; fi
  sleep 0.2
done
pids=$(cat "$FERRY_RANK_DIR"/rank-*.pid)
pid=$(cat "$FERRY_RANK_DIR/rank-$victim.pid")
[ -n "$pid" ] || { echo "FAIL: no pid for rank $victim"; exit 1; }

start=$(date +%s.%N)
kill -9 "$pid"
# The launcher must return, and every rank must be gone, within 30 s.
deadline=$(( $(date +%s) + 30 ))
while kill -0 "$launcher" 2>/dev/null && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.1; done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: ferry train still running 30 s after rank $victim was killed"
  kill -9 "$launcher" $pids 2>/dev/null
  exit 1
fi
wait "$launcher"; rc=$?
# Every rank process must be gone too (a zombie awaiting its reaper counts as gone).
alive_ranks() {
  local p s out=""
  for p in $pids; do
    s=$(ps -o stat= -p "$p" 2>/dev/null)
    [ -n "$s" ] && [ "${s#Z}" = "$s" ] && out="$out $p"
  done
  echo "$out"
}
while [ -n "$(alive_ranks)" ] && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.1; done
end=$(date +%s.%N)
alive=$(alive_ranks)
if [ -n "$alive" ]; then echo "FAIL: ranks still alive 30 s after the kill:$alive"; kill -9 $alive; exit 1; fi
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
if [ "$rc" -eq 0 ]; then echo "FAIL: exit code 0 after a rank was killed"; exit 1; fi
if ! grep -q "^ferry train: error: rank $victim (" "$tmp/stderr"; then
  echo "FAIL: stderr does not name rank $victim:"; cat "$tmp/stderr"; exit 1
fi
echo "ok: rank $victim killed, all ranks gone after ${elapsed} s, exit code $rc"
grep "ferry train: error" "$tmp/stderr"
exit 0
