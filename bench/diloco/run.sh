#!/usr/bin/env bash
# DiLoCo at the paper's recipe against S-SGD with the same optimizer, on the gpt model (issue 54;
# bench/RESULTS.md, "DiLoCo at the paper's recipe"). Two phases:
#
#   quality  every configuration x SEEDS (default 3 seeds), STEPS iterations (default 1,000), no
#            emulated link (quality does not depend on it), test perplexity on TEST windows
#            (default 256) every EVAL iterations and after finish();
#   time     every configuration once, TIME_STEPS iterations (default 150) at LINK (default
#            100Mbps), no warm start: the steady-state iteration time of each, from which report.py
#            projects the wall time of a whole run (the warm start's iterations at S-SGD's time).
#
# Every run: 4 workers, batch 8 per worker, AdamW (the DiLoCo paper's lr 4e-4, weight decay 0.1,
# betas 0.9/0.95), linear warm-up over WARMUP iterations (default 100) then cosine decay to a tenth
# over the run. DiLoCo: H inner steps (default 50), the paper's outer Nesterov (lr 0.7, momentum
# 0.9), started from S-SGD's weights after WARM iterations (default 250: warm_start_steps, which
# are S-SGD's iterations bit for bit); "4bit" sends the outer gradients with qsgd:levels=7.
#
#   bench/diloco/run.sh [output dir]          # then bench/diloco/report.py OUT (run.sh calls it)
#
# Cost on a 2-core machine, idle (estimated from a timed 20-iteration S-SGD run, 1.55 s an
# iteration without a link): quality ~5 h (12 runs of ~25 min), time ~0.5 h (S-SGD ~7.5 s an
# iteration at 100 Mbps); a run whose summary.json exists is skipped, so it can be resumed.
#
# FERRY=path runs a copy of the binary (safe from rebuilds); RUNS= a comma list of configuration
# names; PHASES= "quality time" (default both); LR= overrides the optimizer's lr for every run;
# EXTRA= more flags for every run (e.g. "--stall-timeout 0" for quality runs that may be paused
# with SIGSTOP while something else is timed); KEYS= more keys of the DiLoCo specs (e.g.
# "inner_lr_scale=0.5,outer_lr=0.8"; summary.json records each run's canonical spec).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-runs/diloco}"
FERRY="${FERRY:-build/default/apps/ferry}"
LINK="${LINK:-100Mbps}"
STEPS="${STEPS:-1000}"
TIME_STEPS="${TIME_STEPS:-150}"
SEEDS="${SEEDS:-1 2 3}"
TEST="${TEST:-256}"
EVAL="${EVAL:-250}"
H="${H:-50}"
WARM="${WARM:-250}"
WARMUP="${WARMUP:-100}"
PHASES="${PHASES:-quality time}"
[ -x "$FERRY" ] || { echo "no ferry binary at $FERRY (build it first)" >&2; exit 2; }
mkdir -p "$OUT"
common=(--model gpt --np 4 --batch 8 --threads 1 --no-progress --optimizer adamw
        --lr-schedule "cosine:warmup_steps=$WARMUP")
[ -n "${LR:-}" ] && common+=(--lr "$LR")
# shellcheck disable=SC2206
[ -n "${EXTRA:-}" ] && common+=($EXTRA)
stream="fragments=4,overlap=1,alpha=0.5"
keys="${KEYS:+,$KEYS}"
# name | --algo spec (WS stands for the warm start) | other flags
configs=(
  "ssgd|ssgd|"
  "diloco-h$H|diloco:inner_steps=$H,warm_start_steps=WS$keys|"
  "diloco-h$H-4bit|diloco:inner_steps=$H,warm_start_steps=WS$keys|--codec qsgd:levels=7"
  "streaming-h$H-4bit|streaming-diloco:inner_steps=$H,$stream,warm_start_steps=WS$keys|--codec qsgd:levels=7"
)
run() {  # dir, then the flags of the run
  local dir="$1"
  shift
  if [ -f "$dir/summary.json" ]; then echo "   $dir: done already" >&2; return; fi
  mkdir -p "$dir"
  "$FERRY" train "${common[@]}" "$@" --out "$dir" >"$dir/log.txt" 2>&1 || echo "$dir failed (see its log.txt)" >&2
}
for c in "${configs[@]}"; do
  IFS='|' read -r name algo flags <<<"$c"
  if [ -n "${RUNS:-}" ] && [[ ",$RUNS," != *",$name,"* ]]; then continue; fi
  if [[ " $PHASES " == *" quality "* ]]; then
    for seed in $SEEDS; do
      echo "== quality $name seed $seed" >&2
      # shellcheck disable=SC2086
      run "$OUT/quality/$name/seed$seed" --algo "${algo//WS/$WARM}" $flags --seed "$seed" --max-steps "$STEPS" \
        --eval-every "$EVAL" --test-limit "$TEST"
    done
  fi
  if [[ " $PHASES " == *" time "* ]]; then
    echo "== time $name at $LINK" >&2
    # shellcheck disable=SC2086
    run "$OUT/time/$name" --algo "${algo//WS/0}" $flags --seed 1 --max-steps "$TIME_STEPS" --test-limit 32 \
      --link "$LINK"
  fi
done
cat >"$OUT/bench.json" <<JSON
{"steps": $STEPS, "time_steps": $TIME_STEPS, "warm_start_steps": $WARM, "inner_steps": $H, "link": "$LINK",
 "test_windows": $TEST, "seeds": "$SEEDS"}
JSON
/usr/bin/python3 bench/diloco/report.py "$OUT"
