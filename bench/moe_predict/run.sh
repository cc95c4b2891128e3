#!/usr/bin/env bash
# Expert-activation predictors of bench/RESULTS.md ("MoE expert prediction"):
#  1. the pretrained tiny model (pretrained here when runs/moe-tiny is missing): a trace with hidden
#     states of 32 held-out sequences x 128 tokens, LLaPor hidden mode fitted on the first 26
#     sequences, scored on the last 6 against next-gate, co-occurrence and previous token;
#  2. the real Mixtral-8x7B trace (../shared/data/moe-traces, no hidden states): LLaPor history
#     mode fitted on problem 0 and tested on problem 1, and the other way round.
# Writes results/<experiment>/{eval.csv,llapor.json,log.txt}, results/summary.csv and summary.png.
#   bench/moe_predict/run.sh [ferry binary]
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="${1:-build/default/apps/ferry}"
MODEL="${MOE_MODEL:-runs/moe-tiny}"
RUNS=runs/moe-predict
RES=bench/moe_predict/results
MIXTRAL=../shared/data/moe-traces/mixtral-8x7b/gsm8k.jsonl
mkdir -p "$RUNS" "$RES"
if [ ! -f "$MODEL/config.json" ]; then
  "$FERRY" moe pretrain --out "$MODEL" --max-minutes 15 --threads 1
fi

fit() {  # name, fit-predictor flags...
  local name="$1"; shift
  mkdir -p "$RES/$name"
  "$FERRY" moe fit-predictor --out "$RUNS/$name" "$@" 2>&1 | tr '\r' '\n' | grep -v -e '^\s*$' -e '^fit-predictor ' | tail -n 20 | tee "$RES/$name/log.txt"
  cp "$RUNS/$name/eval.csv" "$RUNS/$name/llapor.json" "$RES/$name/"
}

"$FERRY" moe trace --model "$MODEL" --out "$RUNS/tiny.jsonl" --sequences 32 --tokens 128
fit tiny-hidden --trace "$RUNS/tiny.jsonl" --model "$MODEL" --heldout 0.2 --pca-dims 48 --lookahead 3

if [ -f "$MIXTRAL" ]; then
  fit mixtral-history-0to1 --trace "$MIXTRAL" --train-seqs 0 --test-seqs 1 --lookahead 3
  fit mixtral-history-1to0 --trace "$MIXTRAL" --train-seqs 1 --test-seqs 0 --lookahead 3
fi

# Next-layer (l+1) held-out precision per predictor and experiment.
python3 - "$RES" <<'PY'
import csv, os, sys
res = sys.argv[1]
rows = []
for exp in sorted(os.listdir(res)):
    p = os.path.join(res, exp, "eval.csv")
    if not os.path.isfile(p):
        continue
    acc = {}
    for r in csv.DictReader(open(p)):
        if r["split"] != "test" or r["lookahead"] != "1":
            continue
        acc.setdefault(r["predictor"], []).append(float(r["precision"]))
    for pred, v in acc.items():
        rows.append((exp, pred, sum(v) / len(v)))
with open(os.path.join(res, "summary.csv"), "w") as f:
    f.write("experiment,predictor,next_layer_precision_mean_over_layers\n")
    for r in rows:
        f.write("%s,%s,%.4f\n" % r)
PY
if command -v gnuplot >/dev/null; then
  python3 - "$RES" > "$RES/summary.dat" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/summary.csv")))
exps = sorted({r["experiment"] for r in rows})
preds = ["llapor", "next-gate", "cooccurrence", "previous-token"]
print("# experiment " + " ".join(preds))
for e in exps:
    vals = {r["predictor"]: r["next_layer_precision_mean_over_layers"] for r in rows if r["experiment"] == e}
    print(e + " " + " ".join(vals.get(p, "NaN") for p in preds))
PY
  gnuplot <<GP
set terminal pngcairo size 1000,500
set output "$RES/summary.png"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:1]
set ylabel "held-out next-layer top-k precision"
set xtics font ",10"
set key top left
set grid ytics
plot "$RES/summary.dat" using 2:xtic(1) title "LLaPor", "" using 3 title "next-gate", "" using 4 title "co-occurrence", "" using 5 title "previous token"
GP
fi
cat "$RES/summary.csv"
