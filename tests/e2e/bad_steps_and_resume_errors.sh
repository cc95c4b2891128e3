#!/usr/bin/env bash
# Non-finite gradients and refused resumes, end to end under mpirun:
#   - NaN injected for 3 iterations (--inject-nan-at 4,3): three warnings naming the rank and
#     iteration, the run completes, summary.json counts 3 skipped steps;
#   - NaN for --max-bad-steps iterations in a row: the run aborts (non-zero exit) with an error
#     naming the count;
#   - resuming a checkpoint with another --np, --algo or --model: exit code 2, one line naming it.
# Usage: bad_steps_and_resume_errors.sh FERRY
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
source "$(dirname "$0")/../cli_expect.sh"
base=(--algo ssgd --np 2 --model mlp --batch 32 --train-limit 2048 --test-limit 500 --threads 1 --no-progress)

"$ferry" train "${base[@]}" --max-steps 20 --inject-nan-at 4,3 --out "$tmp/nan" >/dev/null 2>"$tmp/nan.err"; rc=$?
warnings=$(grep -c "non-finite gradient" "$tmp/nan.err")
[ "$rc" -eq 0 ] || fail "3 NaN steps: exit code $rc"
[ "$warnings" -eq 3 ] || fail "3 NaN steps: $warnings warnings"
grep -q "rank 0 iteration 4: non-finite gradient" "$tmp/nan.err" || fail "warning does not name rank and iteration"
grep -q '"skipped_steps": *3' "$tmp/nan/summary.json" || fail "summary.json does not count 3 skipped steps"
echo "ok: 3 NaN steps skipped: $(head -1 "$tmp/nan.err")"

"$ferry" train "${base[@]}" --max-steps 20 --inject-nan-at 4,100 --max-bad-steps 5 >/dev/null 2>"$tmp/abort.err"; rc=$?
[ "$rc" -ne 0 ] || fail "NaN forever: exit code 0"
grep -q "5 non-finite gradients (NaN or Inf) in a row" "$tmp/abort.err" || { fail "no abort message"; cat "$tmp/abort.err"; }
echo "ok: aborted after 5 bad steps (rc $rc): $(grep -m1 'in a row' "$tmp/abort.err")"

# A checkpoint of a 2-worker ssgd mlp run.
"$ferry" train "${base[@]}" --max-steps 6 --checkpoint-every 3 --out "$tmp/ck" >/dev/null 2>"$tmp/ck.err" ||
  { fail "checkpointed run"; cat "$tmp/ck.err"; }
[ -f "$tmp/ck/checkpoints/ckpt-00000006/meta.json" ] || fail "no final checkpoint ckpt-00000006"
[ -f "$tmp/ck/checkpoints/ckpt-00000003/worker-1.state" ] || fail "no checkpoint ckpt-00000003"

# expect_refused "<substring>" DIR flags...: exit code 2 and exactly one line on stderr.
expect_refused() { expect_cli_error "$1" "$ferry" train "${@:3}" --no-progress --resume "$2"; }
expect_refused "world size" "$tmp/ck/checkpoints" --algo ssgd --np 3 --model mlp --batch 32
expect_refused "--algo ssgd" "$tmp/ck/checkpoints" --algo localsgd --np 2 --model mlp --batch 32
expect_refused "--model mlp" "$tmp/ck/checkpoints" --algo ssgd --np 2 --model cnn --batch 32
expect_refused "no complete checkpoint" "$tmp" --algo ssgd --np 2 --model mlp --batch 32

# Bad reliability flags: exit code 2, one line naming the flag, before any rank starts.
expect_flag_error() { expect_cli_error "$1" "$ferry" train --max-steps 1 --no-progress "${@:2}"; }
expect_flag_error "--checkpoint-every needs --checkpoint-dir or --out" --checkpoint-every 5
expect_flag_error "--keep-checkpoints must be at least 1" --checkpoint-every 5 --keep-checkpoints 0 --out "$tmp/w"
expect_flag_error "--deterministic: --algo asgd" --algo asgd --servers 1 --deterministic
expect_flag_error "invalid --inject-nan-at 'x'" --inject-nan-at x
expect_flag_error "--max-bad-steps must be at least 1" --max-bad-steps 0
expect_flag_error "--resume $tmp/none: no such directory" --resume "$tmp/none"

[ "$failures" -eq 0 ] && exit 0
exit 1
