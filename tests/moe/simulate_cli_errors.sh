#!/usr/bin/env bash
# Bad input to `ferry moe simulate` gives exactly one clear line on stderr and exit code 2.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A two-token Mixtral-shaped trace (32 layers), so that the checks do not need the shared data.
for tok in 0 1; do
  for l in $(seq 0 31); do
    echo "{\"problem_id\": 0, \"layer\": $l, \"token_idx\": $tok, \"experts\": [$((l % 8)), $(((l + 3) % 8))], \"gating_probs\": [0.6, 0.4]}"
  done
done >"$tmp/trace.jsonl"
source "$(dirname "$0")/../cli_expect.sh"
expect_error() { expect_cli_error "$1" "$ferry" moe simulate --out "$tmp/out" "${@:2}"; }  # "<substring>" args...
t="$tmp/trace.jsonl"
expect_error "unknown hardware profile 'h100'" --trace "$t" --profile h100
expect_error "unknown model shape 'gpt'" --trace "$t" --model-shape gpt
expect_error "unknown policy 'magic'" --trace "$t" --policies lru,magic
expect_error "invalid --batch 0" --trace "$t" --batch 1,0
expect_error "less than one mixtral-8x7b expert" --trace "$t" --device-mem 3GiB
expect_error "does not fit model shape 'granite-3.0-1b-a400m'" --trace "$t" --model-shape granite-3.0-1b-a400m
expect_error "trace '$t' (32 layers, 8 experts, top-2) does not fit model shape 'deepseek-v3' (58 MoE layers, 256 experts, top-8)" \
  --trace "$t" --model-shape deepseek-v3
expect_error "$tmp/none.jsonl" --trace "$tmp/none.jsonl"
expect_error "policy 'next-gate' predicts from the model's routers" --trace "$t" --policies lru,next-gate:lookahead=2
expect_error "invalid --device-mem '0'" --trace "$t" --device-mem 0
expect_error "invalid --device-mem '0GiB'" --trace "$t" --device-mem 0GiB
# Two specs of one policy are two rows, each named by its spec.
if "$ferry" moe simulate --trace "$t" --batch 1 --policies lru,lru:scope=layer,prescope:window=2 --out "$tmp/specs" \
  >/dev/null 2>&1; then
  for want in '^lru,' '^lru:scope=layer,' '^prescope:window=2,'; do
    grep -q -- "$want" "$tmp/specs/simulate.csv" || { echo "FAIL: simulate.csv has no row '$want'"; failures=$((failures + 1)); }
  done
else
  echo "FAIL: the run with lru,lru:scope=layer,prescope:window=2"; failures=$((failures + 1))
fi
# The hardware profiles are built in: a run from outside the source tree finds them.
(cd "$tmp" && env -u FERRY_SOURCE_DIR "$ferry" moe simulate --trace "$t" --batch 1 --policies lru --out "$tmp/away" \
  >/dev/null 2>"$tmp/away.err") && [ -s "$tmp/away/simulate.csv" ] \
  || { echo "FAIL: simulate outside the source tree:"; cat "$tmp/away.err"; failures=$((failures + 1)); }
# And a good run writes its three outputs.
"$ferry" moe simulate --trace "$t" --batch 1,2 --policies lru,prescope,oracle --out "$tmp/good" >/dev/null 2>&1 \
  && [ -s "$tmp/good/simulate.csv" ] && [ -s "$tmp/good/simulate.md" ] || { echo "FAIL: good run"; failures=$((failures + 1)); }
exit $failures
