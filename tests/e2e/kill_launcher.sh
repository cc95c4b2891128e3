#!/usr/bin/env bash
# SIGTERM or SIGINT sent by PID to the launcher (`ferry train` or `ferry compare`), as a
# scheduler or a subprocess wrapper does, ends the whole job within 30 s: no mpirun and no rank
# is left behind, and the launcher's exit code is 128 + the signal.
# Usage: kill_launcher.sh FERRY SIGNAL train|compare ARGS...
# The test runs in a PID namespace of its own (when it can make one), so an orphaned mpirun or
# rank cannot hide behind the machine's PID 1: it would be re-parented to this script's namespace
# and found by name.
set -u
ferry="$1"; sig="$2"; cmd="$3"; shift 3
if [ -z "${FERRY_KILL_TEST_NS:-}" ] && [ "$(id -u)" -eq 0 ] && unshare -pf --mount-proc true 2>/dev/null; then
  FERRY_KILL_TEST_NS=1 exec unshare -pf --mount-proc "$0" "$ferry" "$sig" "$cmd" "$@"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"
marker="$tmp/out"  # every process of the job carries this path in its command line

if [ "$cmd" = train ]; then
  "$ferry" train "$@" --no-progress --threads 1 --out "$marker" >"$tmp/stdout" 2>"$tmp/stderr" &
else
  "$ferry" compare "$@" --out "$marker" >"$tmp/stdout" 2>"$tmp/stderr" &
fi
launcher=$!

# Wait until every rank is up, at most 120 s.
for _ in $(seq 1 600); do
  [ "$(ls "$FERRY_RANK_DIR" 2>/dev/null | grep -c '\.pid$')" -ge 2 ] && break
  if ! kill -0 "$launcher" 2>/dev/null; then echo "FAIL: the run ended before the signal"; cat "$tmp/stderr"; exit 1; fi
  sleep 0.2
done
sleep 1
job() { pgrep -f -- "$marker" | grep -vx "$$" || true; }
before=$(job | wc -l)
[ "$before" -ge 3 ] || { echo "FAIL: expected the launcher, mpirun and ranks, found $before processes"; exit 1; }

kill "-$sig" "$launcher"
deadline=$(( $(date +%s) + 30 ))
while kill -0 "$launcher" 2>/dev/null && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.1; done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: the launcher still runs 30 s after SIG$sig"; pkill -9 -f -- "$marker"; exit 1
fi
wait "$launcher"; rc=$?
# Nothing of the job may remain (zombies awaiting their reaper count as gone).
alive() {
  local p s out=""
  for p in $(job); do
    s=$(ps -o stat= -p "$p" 2>/dev/null)
    [ -n "$s" ] && [ "${s#Z}" = "$s" ] && out="$out $p($(ps -o comm= -p "$p"))"
  done
  echo "$out"
}
while [ -n "$(alive)" ] && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.1; done
left=$(alive)
if [ -n "$left" ]; then echo "FAIL: processes of the job left after SIG$sig:$left"; pkill -9 -f -- "$marker"; exit 1; fi
want=$(( 128 + $(kill -l "$sig") ))
if [ "$rc" -ne "$want" ]; then echo "FAIL: exit code $rc, expected $want (128 + SIG$sig)"; cat "$tmp/stderr"; exit 1; fi
grep -q "stopped by signal" "$tmp/stderr" || { echo "FAIL: no line saying the job was stopped:"; cat "$tmp/stderr"; exit 1; }
echo "ok: SIG$sig to ferry $cmd ended all $before processes of the job, exit code $rc"
exit 0
