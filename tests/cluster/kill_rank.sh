#!/usr/bin/env bash
# A rank killed with SIGKILL on one host of the namespace cluster ends the job as on one host
# (tests/e2e/kill_rank.sh): mpirun returns non-zero within 30 s, naming the rank and its host,
# and no process of the job is left on any host.
# Usage: kill_rank.sh FERRY RANKS RANK TRAIN_ARGS...   (RANKS = np + servers, one rank per host)
set -u
ferry="$1"; ranks="$2"; victim="$3"; shift 3
source "$(dirname "$0")/lib.sh"
cluster_test "k$victim"
cluster_up "$ranks" --rate 1gbit --subnet "10.77.$((110 + victim)).0/24"
export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"

"$cluster" mpirun -np "$ranks" -- "$ferry" train "$@" --no-progress --threads 1 --out "$tmp/out" \
  >"$tmp/stdout" 2>"$tmp/stderr" &
launcher=$!
# Wait until the run is training (rank 0 has written a few iterations), at most 120 s.
for _ in $(seq 1 600); do
  if [ -s "$tmp/out/metrics.jsonl" ] && [ "$(wc -l <"$tmp/out/metrics.jsonl")" -ge 3 ] && [ -s "$FERRY_RANK_DIR/rank-$victim.pid" ]; then
    break
  fi
  kill -0 "$launcher" 2>/dev/null || { echo "FAIL: the run ended before the kill"; cat "$tmp/stderr"; exit 1; }
  sleep 0.2
done
pid=$(cat "$FERRY_RANK_DIR/rank-$victim.pid")
host=$(basename "$(ip netns identify "$pid")")
echo "rank $victim is pid $pid on $host"
[ "$host" = "$FERRY_CLUSTER_PREFIX-h$((victim + 1))" ] || { echo "FAIL: rank $victim is not on host $((victim + 1))"; exit 1; }

start=$(date +%s.%N)
kill -9 "$pid"
deadline=$(( $(date +%s) + 30 ))
while kill -0 "$launcher" 2>/dev/null && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.1; done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: mpirun still running 30 s after rank $victim was killed"; exit 1   # down ends it
fi
wait "$launcher"; rc=$?
# Every process on every host must be gone too (mpirun, its daemons and the ranks).
left() { local i; for i in $(seq 1 "$ranks"); do ip netns pids "$FERRY_CLUSTER_PREFIX-h$i"; done | tr '\n' ' '; }
while [ -n "$(left)" ] && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.1; done
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ -z "$(left)" ] || { echo "FAIL: processes left on the hosts 30 s after the kill: $(left)"; exit 1; }
[ "$rc" -ne 0 ] || { echo "FAIL: exit code 0 after a rank was killed"; exit 1; }
grep -q "rank $victim with PID .* on node $host exited on signal 9" "$tmp/stderr" ||
  { echo "FAIL: mpirun does not name rank $victim on $host:"; cat "$tmp/stderr"; exit 1; }
echo "ok: rank $victim killed on $host, every process gone after ${elapsed} s, exit code $rc"
grep -m1 "exited on signal 9" "$tmp/stderr"
exit 0
