#!/usr/bin/env bash
# An option declared once in the option table (src/train/train_option_fields.cc) reaches every
# place it names: the test-only --test-option is listed by `ferry train --help` with its default,
# and a run given it records it in summary.json and in its checkpoint's configuration (meta.json).
# Usage: option_table.sh FERRY
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$ferry" train --help | grep -q -- "--test-option INT=0" || fail "ferry train --help does not list --test-option INT=0"
"$ferry" train --np 1 --model mlp --max-steps 2 --batch 16 --train-limit 64 --test-limit 16 --no-progress \
  --checkpoint-every 2 --test-option 7 --out "$tmp/run" >/dev/null 2>"$tmp/err" || fail "the run: $(cat "$tmp/err")"
grep -q '"test_option": *7' "$tmp/run/summary.json" || fail "summary.json lacks test_option 7"
grep -q '"test_option": *7' "$tmp/run/checkpoints/ckpt-00000002/meta.json" || fail "meta.json lacks test_option 7"
echo "ok: --test-option reaches --help, summary.json and the checkpoint's configuration"
