#!/usr/bin/env bash
# ferry's MoE engine side by side with llama.cpp on the same models, on this machine's CPU
# (bench/RESULTS.md, "MoE engine against llama.cpp"). One run: fetches the pinned llama.cpp
# release (npm: prebuilt CPU libraries, one per instruction set, and the source bundle), builds
# llama-bench and llama-batched-bench against them, makes the models with ferry (make-tiny, then
# `ferry moe quantize` for llama.cpp's GGUF files), measures the machine's read bandwidth (the
# roofline of decoding), then for every shape x format runs both engines, alternating, REPS times:
#   decode at batch 1 (TOKENS tokens, default 32, after a 64-token prompt), prefill of 64 and of
#   512 tokens, batched decode and prefill at 4 and 16 sequences of a 64-token prompt and TOKENS new
#   tokens (llama-batched-bench against `ferry moe bench --batch`).
# Both engines with their defaults (ferry: --policies auto, --device-mem auto, which keep every
# expert resident where the model fits; llama.cpp: its mapping), THREADS threads; KV cache f16 in
# llama.cpp (its default; llama-bench takes no f32), f32 in ferry. Writes OUT/peers.csv
# (one row per measurement), OUT/peers.json, OUT/peers.md (medians and ratios), OUT/peers.png and
# OUT/breakdown.csv (where ferry's time per token goes; peers.md's second table).
#   bench/peers/run.sh [ferry binary] [output dir]
#   SHAPES=a FORMATS=Q4_0 REPS=1 bench/peers/run.sh        (a shorter run)
#   TESTS=decode REPS=5 bench/peers/run.sh                   (only some tests: decode, prefill, batched)
#   SHAPES=dsv3 FORMATS=Q4_K_M TOKENS=128 bench/peers/run.sh (DeepSeek-V3's one-layer slice)
#   SHAPES=sweep,qwen3 FORMATS=Q8_0,Q4_K_M TOKENS=128 bench/peers/run.sh (shapes nobody tuned for)
#   SHAPES=gptoss FORMATS=MXFP4_MOE TOKENS=128 bench/peers/run.sh
# Shapes a, b, dsv3, qwen3, gptoss, mix-H-I and sweep: bench/peers/models.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="$(realpath "${1:-build/default/apps/ferry}")"
OUT="${2:-runs/peers}"
SHAPES="${SHAPES:-a,b}"
FORMATS="${FORMATS:-F32,Q8_0,Q4_0,Q4_K_M}"
REPS="${REPS:-3}"
THREADS="${THREADS:-2}"
TESTS="${TESTS:-decode,prefill,batched}"
TOKENS="${TOKENS:-32}"
PY=/usr/bin/python3
want() { [[ ",$TESTS," == *",$1,"* ]]; }
mkdir -p "$OUT"
OUT="$(realpath "$OUT")"

# --- the peer: prebuilt libraries + tools built from the matching source -----------------------
# shellcheck source=bench/peers/llama_cpp.sh
source bench/peers/llama_cpp.sh

# --- models ------------------------------------------------------------------------------------
# shellcheck source=bench/peers/models.sh
source bench/peers/models.sh
SHAPES="$(expand_shapes "$SHAPES" | paste -sd,)"
for shape in ${SHAPES//,/ }; do
  for f in ${FORMATS//,/ }; do
    peer_model "$FERRY" "$shape" "$f"
  done
done

# --- roofline: this machine's read bandwidth at 1 and THREADS threads ---------------------------
KBENCH="$(dirname "$FERRY")/../bench/moe_kernels/bench_moe_kernels"
if [ -x "$KBENCH" ]; then
  "$KBENCH" --formats F32 --batches 1 --threads "1,$THREADS" --reps 3 --out "$OUT/roofline" >/dev/null 2>&1
fi

# --- both engines, alternating -----------------------------------------------------------------
csv="$OUT/peers.csv"
echo "shape,format,engine,test,batch,rep,tokens_per_s" >"$csv"
rm -f "$OUT/breakdown.csv"
# ferry reads the same GGUF file: experts and dense projections computed on their blocks as stored
# (a Q4_K_M file's ffn_down in Q6_K or Q4_K layer by layer).
# Also appends where ferry's time went, per token of each phase (prefill, and decode when more than
# 2 tokens are generated), to OUT/breakdown.csv (bench.h, TokenBreakdown); `rep` is the caller's.
ferry_run() {  # shape format batch prompt_tokens new_tokens -> "decode_tok_s prefill_tok_s"
  local d="$OUT/ferry_tmp"
  rm -rf "$d"
  "$FERRY" moe bench --model "$PEERS/models/$1/$2.gguf" --policies auto --warmup --threads "$THREADS" --batch "$3" \
    --prompt-tokens "$4" --tokens "$5" --corpus '' --out "$d" >/dev/null
  "$PY" - "$d/bench.csv" "$@" "$rep" "$OUT/breakdown.csv" <<'EOF'
import csv, os, sys
r = next(csv.DictReader(open(sys.argv[1])))
shape, fmt, b, p, n, rep, out = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8]
parts = [k[len("decode_"):-len("_us")] for k in r if k.startswith("decode_") and k.endswith("_us")]
new = not os.path.exists(out)
with open(out, "a") as f:
    if new:
        f.write(",".join(["shape", "format", "test", "batch", "rep"] + [x + "_us" for x in parts]) + "\n")
    for phase, test in (("prefill", "prefill%d" % p), ("decode", "decode")):
        if phase == "decode" and n <= 2:
            continue
        f.write(",".join([shape, fmt, test, str(b), rep] + [r["%s_%s_us" % (phase, x)] for x in parts]) + "\n")
print(r["tokens_per_s"], b * p / (float(r["ttft_ms"]) / 1e3))
EOF
}
for rep in $(seq "$REPS"); do
  for shape in ${SHAPES//,/ }; do
    for f in ${FORMATS//,/ }; do
      gguf="$PEERS/models/$shape/$f.gguf"
      echo "rep $rep: shape $shape $f" >&2
      lflags="$(shape_llama_flags "$shape")"
      # llama.cpp: prefill 64 and 512, decode TOKENS tokens (after its warm-up run).
      if want decode || want prefill; then
        # shellcheck disable=SC2086
        llama "$PEERS/bin/llama-bench" -m "$gguf" -p "$(want prefill && echo 64,512 || echo 0)" $lflags \
          -n "$(want decode && echo "$TOKENS" || echo 0)" -t "$THREADS" -r 1 -o json 2>/dev/null >"$OUT/llama_${shape}_${f}_$rep.json"
        "$PY" - "$OUT/llama_${shape}_${f}_$rep.json" "$shape" "$f" "$rep" >>"$csv" <<'EOF'
import json, sys
for t in json.load(open(sys.argv[1])):
    test = "decode" if t["n_gen"] > 0 else "prefill%d" % t["n_prompt"]
    print(",".join([sys.argv[2], sys.argv[3], "llama.cpp", test, "1", sys.argv[4], "%.3f" % t["avg_ts"]]))
EOF
      fi
      # A failed run is reported on stderr and leaves its cells empty; the others go on.
      dec="" pre64="" pre512=""
      if want decode || want prefill; then
        read -r dec pre64 < <(ferry_run "$shape" "$f" 1 64 "$TOKENS") || true
        want decode && [ -n "$dec" ] && echo "$shape,$f,ferry,decode,1,$rep,$dec" >>"$csv"
        want prefill && [ -n "$pre64" ] && echo "$shape,$f,ferry,prefill64,1,$rep,$pre64" >>"$csv"
      fi
      if want prefill; then
        read -r _ pre512 < <(ferry_run "$shape" "$f" 1 512 2) || true
        [ -n "$pre512" ] && echo "$shape,$f,ferry,prefill512,1,$rep,$pre512" >>"$csv"
      fi
      want batched || continue
      # Batched: B sequences of a 64-token prompt (prefilled together), TOKENS new tokens each.
      # shellcheck disable=SC2086
      llama "$PEERS/bin/llama-batched-bench" -m "$gguf" -c 4096 -b 2048 -ub 512 -npp 64 -ntg "$TOKENS" -npl 4,16 \
        -t "$THREADS" $lflags --output-format jsonl 2>/dev/null >"$OUT/llama_batched_${shape}_${f}_$rep.jsonl" || true
      "$PY" - "$OUT/llama_batched_${shape}_${f}_$rep.jsonl" "$shape" "$f" "$rep" >>"$csv" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        r = json.loads(line)
        for test, key in (("decode", "speed_tg"), ("prefill64", "speed_pp")):
            print(",".join([sys.argv[2], sys.argv[3], "llama.cpp", test, str(r["pl"]), sys.argv[4], "%.3f" % r[key]]))
EOF
      for b in 4 16; do
        dec="" pre=""
        read -r dec pre < <(ferry_run "$shape" "$f" "$b" 64 "$TOKENS") || true
        [ -n "$dec" ] && echo "$shape,$f,ferry,decode,$b,$rep,$dec" >>"$csv"
        [ -n "$pre" ] && echo "$shape,$f,ferry,prefill64,$b,$rep,$pre" >>"$csv"
      done
    done
  done
done
rm -rf "$OUT/ferry_tmp"
"$PY" bench/peers/report.py "$OUT" --models "$PEERS/models"
