#!/usr/bin/env bash
# Bad input to `ferry moe fit-predictor` gives exactly one clear line on stderr and exit code 2.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../cli_expect.sh"
expect_error() { expect_cli_error "$1" "$ferry" moe fit-predictor "${@:2}"; }  # "<substring>" args...

# A small valid trace: 3 problems x 4 tokens x 4 layers, top-1 of 4.
for p in 0 1 2; do for t in 0 1 2 3; do for l in 0 1 2 3; do
  echo "{\"problem_id\": $p, \"layer\": $l, \"token_idx\": $t, \"experts\": [$(( (p + t + l) % 4 ))], \"gating_probs\": [1.0]}"
done; done; done > "$tmp/ok.jsonl"
printf '{"problem_id": 0, "layer": 0, "token_idx": 0, "experts": [1' > "$tmp/broken.jsonl"

expect_error "cannot open trace" --trace "$tmp/missing.jsonl" --out "$tmp/o"
expect_error "not valid JSON" --trace "$tmp/broken.jsonl" --out "$tmp/o"
expect_error "--lookahead must be in [1, 3]" --trace "$tmp/ok.jsonl" --out "$tmp/o" --lookahead 5
expect_error "invalid mode 'psychic'" --trace "$tmp/ok.jsonl" --out "$tmp/o" --mode psychic
expect_error "--width must be at least 1, got 0" --trace "$tmp/ok.jsonl" --out "$tmp/o" --width 0
expect_error "--lr must be finite and greater than 0" --trace "$tmp/ok.jsonl" --out "$tmp/o" --lr nan
expect_error "hidden mode needs hidden states" --trace "$tmp/ok.jsonl" --out "$tmp/o" --mode hidden
expect_error "test sequence 9 is not in trace" --trace "$tmp/ok.jsonl" --out "$tmp/o" --train-seqs 0 --test-seqs 9
expect_error "invalid groups 'diagonal'" --trace "$tmp/ok.jsonl" --out "$tmp/o" --groups diagonal
expect_error "invalid --share-layers 'maybe'" --trace "$tmp/ok.jsonl" --out "$tmp/o" --share-layers maybe
expect_error "--epochs" --trace "$tmp/ok.jsonl" --out "$tmp/o" --epochs many
expect_error "--model (next-gate baseline) needs a trace with hidden states" --trace "$tmp/ok.jsonl" --out "$tmp/o" --epochs 1 --model "$tmp"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all fit-predictor error cases give one line and exit code 2"
