#!/usr/bin/env bash
# Runs a small `ferry compare` (as a user would) and checks its report: compare.csv has the
# documented columns and one row per configuration (the codec paired only where the algorithm
# takes one, compute-only added), every run succeeded with speedups relative to ssgd, and a bare
# `twobit` reached S-SGD and CD-SGD with the same threshold. Usage: compare_run.sh FERRY
set -eu
ferry="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "compare_run: $*"; exit 1; }

"$ferry" compare --algos ssgd,cdsgd,localsgd --codecs none,twobit --threshold 0.01 --np 2 --servers 1 \
  --model mlp --epochs 1 --max-steps 6 --train-limit 512 --test-limit 200 --batch 32 --link 1Gbps,50us \
  --eval-every 2 --out "$out" >/dev/null

csv="$out/compare.csv"
[ -f "$csv" ] || fail "no compare.csv"
header=$(head -1 "$csv")
for col in algo codec samples_per_s speedup_vs_ssgd time_to_target_s final_test_acc bytes_sent_per_worker \
           comm_wait_fraction iteration_vs_compute_only exit_code; do
  [[ ",$header," == *",$col,"* ]] || fail "compare.csv lacks column $col"
done
# The link holds a comma, so it is a quoted field; the fields after it hold none here.
body=$(tail -n +2 "$csv")
[ -z "$(grep -v '^"1Gbps,50us",' <<<"$body")" ] || fail "the link field is not quoted: $body"
body=$(sed 's/^"1Gbps,50us",//' <<<"$body")
rows=$(cut -d, -f1,2 <<<"$body" | sort | tr '\n' ' ')
[ "$rows" = "cdsgd,twobit compute-only,none localsgd,none ssgd,none ssgd,twobit " ] || fail "rows are: $rows"
awk -F, '$NF != 0 { bad = 1 } END { exit bad }' <<<"$body" || fail "a run failed: $(cat "$csv")"
awk -F, '$1 == "ssgd" && $2 == "none" && $5 != 1 { bad = 1 } END { exit bad }' <<<"$body" \
  || fail "ssgd's speedup_vs_ssgd is not 1"
[ -s "$out/compare.md" ] || fail "no compare.md"

for run in "$out"/runs/ssgd-twobit* "$out"/runs/cdsgd-twobit*; do
  grep -q '"codec": *"twobit:threshold=0.01' "$run/summary.json" \
    || fail "$(basename "$run") did not run twobit at --threshold 0.01: $(grep '"codec"' "$run/summary.json")"
done
# --eval-every 2 (passed through to every run) adds evaluations after iterations 2 and 4; the
# one after 6, the last, is the epoch's (--eval-each-epoch), not recorded twice.
evals=$(grep -o '"iter":[0-9]*,"t":[0-9.e-]*,"test_acc"\|"epoch_end":0' "$out"/runs/ssgd_1*/metrics.jsonl |
        sed 's/,"t".*//' | tr '\n' ' ')
[ "$evals" = '"iter":1 "iter":3 "epoch_end":0 ' ] || fail "evaluations recorded: $evals"
if command -v gnuplot >/dev/null; then
  for p in accuracy_vs_time samples_per_s; do [ -s "$out/$p.png" ] || fail "no $p.png"; done
fi
# A codec spec with a comma in it is one codec: ssgd runs once, with top-k at ratio 0.1 and no
# error feedback (it used to be split at the comma into "topk:ratio=0.1" and "ef=0").
"$ferry" compare --algos ssgd --codecs topk:ratio=0.1,ef=0 --np 1 --model mlp --epochs 1 --max-steps 2 \
  --train-limit 256 --test-limit 100 --batch 32 --link 1Gbps,50us --out "$out/spec" >/dev/null
ssgd_runs=$(ls -d "$out"/spec/runs/ssgd* | wc -l)
[ "$ssgd_runs" -eq 1 ] || fail "--codecs topk:ratio=0.1,ef=0 gave $ssgd_runs ssgd runs: $(ls "$out/spec/runs")"
grep -q '"codec": *"topk:ratio=0.1,.*ef=0' "$out"/spec/runs/ssgd*/summary.json \
  || fail "the ssgd run's codec: $(grep '"codec"' "$out"/spec/runs/ssgd*/summary.json)"
echo "compare_run: $(($(wc -l <"$csv") - 1)) configurations, report and plots written; a spec with a comma is one codec"
