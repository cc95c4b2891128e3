#!/usr/bin/env bash
# `ferry moe generate --model FILE.gguf`: a file written by `ferry moe quantize` generates
# the same text as its checkpoint directory (F32) and runs quantized (Q8_0, experts as stored); a
# bad GGUF file is one error line naming it and exit code 2; bench and trace take --weights for a
# file whose experts need converting.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../cli_expect.sh"
shape=(--layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 4 --intermediate 64)
"$ferry" moe make-tiny --out "$tmp/m" "${shape[@]}" >/dev/null || { echo "FAIL: make-tiny"; exit 1; }
for t in F32 Q8_0 Q4_K_M; do
  "$ferry" moe quantize --model "$tmp/m" --out "$tmp/$t.gguf" --type "$t" >/dev/null || { echo "FAIL: quantize $t"; exit 1; }
done
gen=(moe generate --prompt hi --tokens 6 --policy lru --device-mem 100%)
"$ferry" "${gen[@]}" --model "$tmp/m" >"$tmp/dir.txt" 2>&1 || { echo "FAIL: generate dir"; cat "$tmp/dir.txt"; exit 1; }
if "$ferry" "${gen[@]}" --model "$tmp/F32.gguf" >"$tmp/f32.txt" 2>&1; then
  # Same floats, same tokens: the generated text (the last line) is the directory's.
  [ "$(tail -1 "$tmp/f32.txt")" == "$(tail -1 "$tmp/dir.txt")" ] && echo "ok: F32.gguf generates the directory's text" \
    || { echo "FAIL: F32.gguf text differs"; cat "$tmp/f32.txt" "$tmp/dir.txt"; failures=$((failures + 1)); }
else
  echo "FAIL: generate F32.gguf"; cat "$tmp/f32.txt"; failures=$((failures + 1))
fi
"$ferry" "${gen[@]}" --model "$tmp/Q8_0.gguf" >"$tmp/q8.txt" 2>&1 && echo "ok: Q8_0.gguf generates" \
  || { echo "FAIL: generate Q8_0.gguf"; cat "$tmp/q8.txt"; failures=$((failures + 1)); }
head -c 1000 "$tmp/F32.gguf" >"$tmp/cut.gguf"
expect_cli_error "$tmp/cut.gguf" "$ferry" "${gen[@]}" --model "$tmp/cut.gguf"
echo "not a gguf" >"$tmp/text.gguf"
expect_cli_error "$tmp/text.gguf" "$ferry" "${gen[@]}" --model "$tmp/text.gguf"
# Q4_K_M of 64-wide rows stores the experts in Q5_0 (the K-quants' fallback): refused by name as
# stored, converted with --weights.
expect_cli_error "'blk.0.ffn_gate_exps.weight' is stored in Q5_0" "$ferry" "${gen[@]}" --model "$tmp/Q4_K_M.gguf"
"$ferry" "${gen[@]}" --model "$tmp/Q4_K_M.gguf" --weights Q8_0 >"$tmp/km.txt" 2>&1 && echo "ok: Q4_K_M.gguf --weights Q8_0" \
  || { echo "FAIL: Q4_K_M.gguf --weights Q8_0"; cat "$tmp/km.txt"; failures=$((failures + 1)); }
# bench and serve open a second engine for their calibration counts: it takes --weights too.
"$ferry" moe bench --model "$tmp/Q4_K_M.gguf" --weights Q8_0 --policies lru,static-hot --device-mem 50% --link none \
  --compute none --batch 1 --tokens 2 --prompt-tokens 4 --corpus '' --out "$tmp/bench" >"$tmp/bench.txt" 2>&1 \
  && echo "ok: bench Q4_K_M.gguf --weights Q8_0" \
  || { echo "FAIL: bench Q4_K_M.gguf --weights Q8_0"; cat "$tmp/bench.txt"; failures=$((failures + 1)); }
# The policy every engine command defaults to, auto, is one bench runs too (with its budget, auto).
"$ferry" moe bench --model "$tmp/Q4_K_M.gguf" --weights Q8_0 --policies auto,lru --batch 1 --tokens 2 --prompt-tokens 4 --corpus '' \
  --out "$tmp/bench-auto" >"$tmp/bench-auto.txt" 2>&1 && grep -q '^auto,1,auto,' "$tmp/bench-auto/bench.csv" \
  && echo "ok: bench --policies auto" \
  || { echo "FAIL: bench --policies auto"; cat "$tmp/bench-auto.txt"; failures=$((failures + 1)); }
"$ferry" moe trace --model "$tmp/Q4_K_M.gguf" --weights Q8_0 --corpus "$0" --sequences 1 --tokens 8 --no-hidden \
  --out "$tmp/t.jsonl" >"$tmp/trace.txt" 2>&1 && echo "ok: trace Q4_K_M.gguf --weights Q8_0" \
  || { echo "FAIL: trace Q4_K_M.gguf --weights Q8_0"; cat "$tmp/trace.txt"; failures=$((failures + 1)); }
expect_cli_error "--weights" "$ferry" moe trace --model "$tmp/Q8_0.gguf" --weights Q3_K --out "$tmp/t.jsonl"
exit $failures
