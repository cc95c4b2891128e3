#!/usr/bin/env bash
# A strategy added by a plugin (tests/train/plugin/scaled_sgd_plugin.cc, its option `scale` read
# in that file only) reaches ferry train, the parameter servers and checkpoints:
#   1. --algo test-scaled:scale=0.5 --lr 0.1 on the parameter server has the weights of
#      --algo ssgd --lr 0.05 bit for bit (weights_fnv1a), and scale=1 does not: the option reached
#      the strategy (the server ranks read the spec too, a rank without the plugin would refuse it);
#   2. summary.json and the checkpoint's meta.json carry the canonical spec;
#   3. a resume from the checkpoint with scale=0.25 is refused naming both specs; with the same
#      spec it ends with the uninterrupted run's weights;
#   4. without --plugin the name is unknown, and a missing file or a library that is no plugin
#      is an error naming it (exit 2 each).
# Usage: plugin_strategy.sh FERRY PLUGIN
set -u
ferry="$1"; plugin="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"
fail() { echo "FAIL: $*"; exit 1; }
field() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | head -1 | sed 's/.*: *"//; s/"$//'; }
common=(--topology ps --np 2 --servers 1 --model mlp --max-steps 6 --deterministic --threads 1 --no-progress --wd 0)
train() { local out="$1"; shift; "$ferry" train "${common[@]}" --out "$tmp/$out" "$@" >/dev/null 2>"$tmp/$out.err" \
  || fail "$out: $(cat "$tmp/$out.err")"; }

train ssgd --algo ssgd --lr 0.05
train half --plugin "$plugin" --algo test-scaled:scale=0.5 --lr 0.1 --checkpoint-every 3
train one --plugin "$plugin" --algo test-scaled --lr 0.1
want=$(field "$tmp/ssgd/summary.json" weights_fnv1a)
[ -n "$want" ] || fail "no weights_fnv1a in summary.json"
[ "$(field "$tmp/half/summary.json" weights_fnv1a)" = "$want" ] \
  || fail "test-scaled:scale=0.5 at lr 0.1 is not S-SGD at lr 0.05"
[ "$(field "$tmp/one/summary.json" weights_fnv1a)" != "$want" ] || fail "scale=1 at lr 0.1 equals S-SGD at lr 0.05"
[ "$(field "$tmp/half/summary.json" algo)" = "test-scaled:scale=0.5" ] || fail "summary.json: $(field "$tmp/half/summary.json" algo)"
[ "$(field "$tmp/one/summary.json" algo)" = "test-scaled:scale=1" ] || fail "summary.json: $(field "$tmp/one/summary.json" algo)"
ckpt="$tmp/half/checkpoints/ckpt-00000003"
grep -q '"algo": "test-scaled:scale=0.5"' "$ckpt/meta.json" || fail "meta.json lacks the spec: $(cat "$ckpt/meta.json")"

"$ferry" train "${common[@]}" --plugin "$plugin" --algo test-scaled:scale=0.25 --lr 0.1 --resume "$ckpt" \
  --out "$tmp/other" >/dev/null 2>"$tmp/other.err"
rc=$?
[ $rc -eq 2 ] && grep -q "checkpoint is of --algo test-scaled:scale=0.5, this run has test-scaled:scale=0.25" "$tmp/other.err" \
  || fail "resume with another scale: rc=$rc $(cat "$tmp/other.err")"
train resumed --plugin "$plugin" --algo test-scaled:scale=0.5 --lr 0.1 --resume "$ckpt"
[ "$(field "$tmp/resumed/summary.json" weights_fnv1a)" = "$want" ] || fail "the resumed run's weights differ"

expect_error() {  # WANT ARGS...: exit 2 and WANT in stderr
  local want="$1"; shift
  "$ferry" train "${common[@]}" "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/err" || fail "$* -> rc=$rc, wanted '$want': $(cat "$tmp/err")"
}
expect_error "unknown --algo 'test-scaled'" --algo test-scaled:scale=0.5
expect_error "plugin $tmp/none.so: no such file" --plugin "$tmp/none.so" --algo ssgd
not_plugin=$(ldd "$ferry" | awk '$3 ~ /^\// {print $3; exit}')
expect_error "defines no ferry_plugin_register()" --plugin "$not_plugin" --algo ssgd
expect_error "scale must be greater than 0, got -1" --plugin "$plugin" --algo test-scaled:scale=-1
echo "PASS"
