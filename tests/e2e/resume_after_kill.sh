#!/usr/bin/env bash
# Checkpoint, kill, resume. Runs `ferry train ARGS --epochs EPOCHS` uninterrupted; runs it again
# with --checkpoint-every EVERY (and epochs enough never to end by itself) and kills worker 1
# with SIGKILL once a checkpoint of iteration >= 2*EVERY exists; resumes with --epochs EPOCHS
# with --resume (after planting an incomplete newer checkpoint, which must be ignored) and checks:
#   - the resumed run's final test accuracy is within 0.3 points of the uninterrupted run's;
#   - MODE identical*: the final weights are identical (weights_fnv1a of summary.json);
#   - MODE *+truncated: a checkpoint whose state file was truncated is refused with an error
#     naming the file.
# Usage: resume_after_kill.sh FERRY MODE(identical|identical+truncated|accuracy) EVERY EPOCHS ARGS...
set -u
ferry="$1"; mode="$2"; every="$3"; epochs="$4"; shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"
field() { grep -o "\"$2\": *[^,}]*" "$1" | head -1 | sed 's/.*: *//; s/"//g'; }

"$ferry" train "$@" --epochs "$epochs" --no-progress --threads 1 --out "$tmp/whole" >/dev/null 2>"$tmp/whole.err" \
  || { echo "FAIL: uninterrupted run"; cat "$tmp/whole.err"; exit 1; }

# The run to kill: wait for its second checkpoint, then SIGKILL worker 1.
"$ferry" train "$@" --epochs 1000 --no-progress --threads 1 --out "$tmp/cut" --checkpoint-every "$every" >/dev/null 2>"$tmp/cut.err" &
launcher=$!
# Iterations of the newest complete checkpoint (0 if none).
newest_done() {
  local d n=0
  for d in "$tmp"/cut/checkpoints/ckpt-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]; do
    [ -f "$d/meta.json" ] && n=$(basename "$d" | sed 's/ckpt-0*//')
  done
  echo "${n:-0}"
}
for _ in $(seq 1 900); do
  [ "$(newest_done)" -ge $((2 * every)) ] && break
  kill -0 "$launcher" 2>/dev/null || { echo "FAIL: the run ended before the kill"; cat "$tmp/cut.err"; exit 1; }
  sleep 0.05
done
kill -9 "$(cat "$FERRY_RANK_DIR/rank-1.pid")"
wait "$launcher"; rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: killed run exited 0"; exit 1; }
ckpts="$tmp/cut/checkpoints"
newest="$ckpts/$(printf 'ckpt-%08d' "$(newest_done)")"
echo "killed worker 1 (rc $rc); newest checkpoint $(basename "$newest")"

# A crash mid-write of a newer checkpoint: never picked up.
mkdir -p "$ckpts/ckpt-99999999.tmp" "$ckpts/ckpt-99999998"
head -c 100 "$newest/worker-0.state" >"$ckpts/ckpt-99999999.tmp/worker-0.state"
cp "$newest"/*.state "$ckpts/ckpt-99999998/"   # complete files, but no meta.json

"$ferry" train "$@" --epochs "$epochs" --no-progress --threads 1 --out "$tmp/resumed" --checkpoint-every "$every" \
  --resume "$ckpts" \
  >/dev/null 2>"$tmp/resumed.err" || { echo "FAIL: resume"; cat "$tmp/resumed.err"; exit 1; }
from=$(field "$tmp/resumed/summary.json" resumed_from)
[ "$from" -eq "$(basename "$newest" | sed 's/ckpt-0*//')" ] || { echo "FAIL: resumed from $from, not $newest"; exit 1; }
total=$(field "$tmp/whole/summary.json" iterations)
[ "$from" -lt "$total" ] || { echo "FAIL: the checkpoint ($from) is not before the end ($total): kill came too late"; exit 1; }
a=$(field "$tmp/whole/summary.json" test_acc); b=$(field "$tmp/resumed/summary.json" test_acc)
echo "uninterrupted test_acc $a, resumed from iteration $from: $b"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.003) }' ||
  { echo "FAIL: accuracy differs by more than 0.3 points"; exit 1; }
if [ "${mode%+truncated}" = identical ]; then
  wa=$(field "$tmp/whole/summary.json" weights_fnv1a); wb=$(field "$tmp/resumed/summary.json" weights_fnv1a)
  [ -n "$wa" ] && [ "$wa" = "$wb" ] || { echo "FAIL: final weights differ ($wa vs $wb)"; exit 1; }
  echo "final weights identical ($wa)"
fi

[ "${mode%+truncated}" = "$mode" ] && exit 0
# A truncated state file in a complete checkpoint is an error naming the file, not a silent start.
cp -r "$newest" "$tmp/bad"
size=$(stat -c %s "$tmp/bad/worker-1.state")
head -c $((size / 2)) "$newest/worker-1.state" >"$tmp/bad/worker-1.state"
"$ferry" train "$@" --epochs "$epochs" --no-progress --threads 1 --resume "$tmp/bad" >/dev/null 2>"$tmp/bad.err"; rc=$?
if [ "$rc" -eq 0 ] || ! grep -q "worker-1.state" "$tmp/bad.err"; then
  echo "FAIL: truncated checkpoint accepted (rc $rc)"; cat "$tmp/bad.err"; exit 1
fi
echo "ok: truncated state file refused: $(grep -m1 'worker-1.state' "$tmp/bad.err")"
exit 0
