#!/usr/bin/env bash
# Models larger than memory on a CPU (bench/RESULTS.md, "MoE models larger than RAM"): ferry's disk
# tier (the experts stream from the GGUF file with O_DIRECT into a RAM budget, under a policy)
# against llama.cpp on the same file (its mapping: the page cache faults experts in as they are
# touched), side by side in one run, cell by cell, the page cache dropped before every run.
#   bench/moe_disk/peers.sh [ferry binary] [output dir]
# Parts (PARTS, comma-separated; default over,trace,big):
#   over   an OVER_LAYERS-layer slice (default 4) of the Mixtral-8x7B shape (hidden 4096, 8 experts
#          of 14336, top-2, 32 heads, 8 KV heads, vocabulary 32000) in every format of FORMATS, run
#          under a memory limit of its file size / OVER (2, 4, 8): a cgroup v1 memory controller
#          whose limit covers the page cache too, so llama.cpp's mapping is held to the same RAM as
#          ferry. At 8x a 4-layer file's limit is below its dense part and two experts; 8 layers
#          (Q8_0) or 16 (Q4_0, Q4_K_M) bring it above.
#   trace  32 layers of 8 narrow experts (hidden 1024, width 3584) with the routing forced from the
#          real Mixtral-8x7B trace (TRACE): PreScope against LRU, on-demand and static-hot at batch
#          1, 4 and 16 under a limit of half its file size (TRACE_POLICIES: the policies run;
#          prescope-perfect, PreScope told the trace's routing to come, is the bound), TRACE_REPS
#          times alternating (default 1). TRACE_LINK (default "file") is ferry's --link there:
#          "file:700MB/s" paces the reads below the disk's slowest, so that a cloud volume's
#          swings between runs do not decide the tokens/s.
#   big    the Mixtral-8x7B shape itself (32 layers), one format at a time (BIG_FORMATS, default
#          Q8_0: ~50 GB, twice this machine's RAM), no limit but the machine's RAM; the file is
#          written, run and deleted (KEEP=1 keeps it).
#   dsv3   a slice of DeepSeek-V3 at its real dimensions (bench/peers/models.sh's DSV3_FLAGS: 256
#          routed experts of width 2048, top-8 in 4 of 8 groups, a shared expert, MLA) with one dense
#          leading layer and DSV3_MOE_LAYERS MoE layers (default 4: 27.5 GiB in Q4_K_M, more than
#          this machine's RAM), in DSV3_FORMATS (default Q4_K_M), under limits of its file size /
#          DSV3_OVER (default 1,2,4; 1: no limit but the machine's RAM); both engines with their
#          defaults (ferry: --policies auto --device-mem auto, which read the cgroup's limit;
#          llama.cpp: mapped, with and without repacking (llama_batched_cell), without flash
#          attention, which asserts on deepseek2 at this release), REPS times alternating
#          (default 3; the report takes medians). Not in the default PARTS; KEEP=1 keeps the file.
# ferry's expert budget under a limit L is L less the file's dense part less RESERVE_MIB (its
# runtime); llama.cpp is tried in each LOAD_MODES (mmap, dio: a mode that loads the whole model
# into memory is killed when it does not fit, and reported so). Decode: TOKENS tokens after a
# PROMPT-token prompt at batch 1; prefill: the PROMPT tokens. Every run starts cold (page cache
# dropped, no warm-up run: llama-bench --no-warmup, ferry moe bench without --warmup). Writes
# OUT/disk.csv (one row per run), OUT/disk.md and OUT/disk.png (report.py), and the O_DIRECT
# bandwidth of the disk.
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="$(realpath "${1:-build/default/apps/ferry}")"
OUT="${2:-runs/moe-disk-peers}"
PARTS="${PARTS:-over,trace,big}"
FORMATS="${FORMATS:-Q8_0,Q4_0,Q4_K_M}"
BIG_FORMATS="${BIG_FORMATS:-Q8_0}"
OVER="${OVER:-2,4,8}"
OVER_LAYERS="${OVER_LAYERS:-4}"
POLICIES="${POLICIES:-prescope,lru}"
DSV3_MOE_LAYERS="${DSV3_MOE_LAYERS:-4}"
DSV3_FORMATS="${DSV3_FORMATS:-Q4_K_M}"
DSV3_OVER="${DSV3_OVER:-1,2,4}"
REPS="${REPS:-3}"
LLAMA_FLAGS=""  # llama.cpp's flags for the dsv3 part (llama_batched_cell)
TOKENS="${TOKENS:-16}"
PROMPT="${PROMPT:-64}"
THREADS="${THREADS:-2}"
RESERVE_MIB="${RESERVE_MIB:-512}"
LOAD_MODES="${LOAD_MODES:-mmap,dio}"
TRACE_POLICIES="${TRACE_POLICIES:-prescope:predictor=cooccurrence,prescope,lru,ondemand,static-hot,prescope-perfect}"
TRACE="${TRACE:-../shared/data/moe-traces/mixtral-8x7b/gsm8k.jsonl}"
TRACE_REPS="${TRACE_REPS:-1}"
TRACE_LINK="${TRACE_LINK:-file}"
MODELS="${MODELS_DIR:-runs/moe-disk-models}"
PY=/usr/bin/python3
has() { [[ ",$PARTS," == *",$1,"* ]]; }
mkdir -p "$OUT" "$MODELS"
OUT="$(realpath "$OUT")"
MODELS="$(realpath "$MODELS")"
# shellcheck source=../peers/llama_cpp.sh
source bench/peers/llama_cpp.sh

CG=/sys/fs/cgroup/memory/ferry-disk-bench-$$
cleanup() { [ -d "$CG" ] && rmdir "$CG" 2>/dev/null || true; }
trap cleanup EXIT

# Runs CMD... (stdout to OUTFILE, stderr to ERRFILE) with the page cache dropped first, under a
# memory limit of LIMIT bytes ("" = the machine's RAM: a run that outgrows the machine, such as
# llama.cpp repacking a Q4_0 file larger than RAM, is killed alone rather than the machine's
# other processes); prints "status peak_bytes" (status ok, oom or failed; peak: the cgroup's max
# usage, page cache included).
limited() {
  local limit="${1:-$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) * 1024 ))}" out="$2" err="$3"; shift 3
  sync; echo 3 >/proc/sys/vm/drop_caches
  local rc=0 peak=0 status=ok
  mkdir "$CG"
  echo "$limit" >"$CG/memory.limit_in_bytes"
  (echo "$BASHPID" >"$CG/cgroup.procs"; "$@" >"$out" 2>"$err") || rc=$?
  peak=$(cat "$CG/memory.max_usage_in_bytes")
  grep -q '^oom_kill [1-9]' "$CG/memory.oom_control" 2>/dev/null && status=oom
  rmdir "$CG"
  [ "$rc" -ne 0 ] && [ "$status" = ok ] && status=failed
  [ "$rc" -eq 137 ] && status=oom
  echo "$status $peak"
}

csv="$OUT/disk.csv"
[ -f "$csv" ] || echo "part,model,format,over,limit_bytes,engine,mode,batch,test,tokens_per_s,status,peak_bytes,rss_peak_bytes,hit_rate,moved_bytes,decode_tokens,prompt_tokens,storage_read_bytes,file_bytes,expert_bytes,rep,predictor_us_per_token" >"$csv"
rep=1  # the repetition a row belongs to (the dsv3 part's REPS); the report takes each cell's median

# Expert bytes of a GGUF file (its ffn_*_exps tensors), from its header (bench/peers/report.py's reader).
expert_bytes() {
  "$PY" - "$1" <<'EOF'
import math, sys
sys.path.insert(0, "bench/peers")
from report import GGML_TYPES, gguf_tensors
tensors, _ = gguf_tensors(sys.argv[1])
print(sum(math.prod(dims) // GGML_TYPES[t][0] * GGML_TYPES[t][1] for name, dims, t in tensors if "_exps." in name))
EOF
}

# llama.cpp: part model format over limit mode file
llama_cell() {
  local part=$1 model=$2 f=$3 over=$4 limit=$5 mode=$6 gguf=$7 fb=$8 eb=$9
  local j="$OUT/llama_${part}_${model}_${f}_${over}_${mode}_$rep.json"
  read -r status peak < <(limited "$limit" "$j" "$j.err" llama "$PEERS/bin/llama-bench" -m "$gguf" -p "$PROMPT" \
    -n "$TOKENS" -t "$THREADS" -r 1 --no-warmup --load-mode "$mode" -o json)
  "$PY" - "$j" "$part,$model,$f,$over,$limit,llama.cpp,$mode,1" "$status" "$peak" "$fb" "$eb" "$PROMPT" "$rep" >>"$csv" <<'EOF'
import json, sys
j, head, status, peak, fb, eb, prompt, rep = sys.argv[1:]
try:
    tests = json.load(open(j))
except Exception:
    tests = []
rows = {("decode" if t["n_gen"] > 0 else "prefill"): t["avg_ts"] for t in tests}
for test in ("decode", "prefill"):
    ts = rows.get(test)
    print(",".join([head, test, "%.4f" % ts if ts else "", status if ts else (status if status != "ok" else "failed"),
                    peak, "", "", "", "", prompt, "", fb, eb, rep, ""]))
EOF
}

# llama.cpp through llama-batched-bench (one sequence), which, unlike llama-bench, can keep its
# weights as mapped (-nr: no repacking; by default it copies the Q4_K tensors, experts included,
# repacked into anonymous memory, 20 GiB of the dsv3 slice; it takes no --no-warmup, and its untimed
# warm-up run touches every expert once): part model format over limit mode
# (mmap: its defaults; mmap-nr: -nr) file file_bytes expert_bytes
llama_batched_cell() {
  local part=$1 model=$2 f=$3 over=$4 limit=$5 mode=$6 gguf=$7 fb=$8 eb=$9
  local j="$OUT/llama_${part}_${model}_${f}_${over}_${mode}_$rep.jsonl" nr=""
  [ "$mode" = mmap-nr ] && nr="-nr"
  # shellcheck disable=SC2086
  read -r status peak < <(limited "$limit" "$j" "$j.err" llama "$PEERS/bin/llama-batched-bench" -m "$gguf" \
    -c $(( PROMPT + TOKENS + 16 )) -b 2048 -ub 512 -npp "$PROMPT" -ntg "$TOKENS" -npl 1 -t "$THREADS" \
    --load-mode mmap $nr $LLAMA_FLAGS --output-format jsonl)
  "$PY" - "$j" "$part,$model,$f,$over,$limit,llama.cpp,$mode,1" "$status" "$peak" "$fb" "$eb" "$PROMPT" "$rep" >>"$csv" <<'EOF'
import json, sys
j, head, status, peak, fb, eb, prompt, rep = sys.argv[1:]
r = {}
for line in open(j):
    if line.startswith("{"):
        r = json.loads(line)
for test, key in (("decode", "speed_tg"), ("prefill", "speed_pp")):
    ts = r.get(key)
    print(",".join([head, test, "%.4f" % ts if ts else "", status if ts else (status if status != "ok" else "failed"),
                    peak, "", "", "", "", prompt, "", fb, eb, rep, ""]))
EOF
}

# ferry: part model format over limit policy budget file batch [extra flags...] (LINK: its --link)
LINK=file
ferry_cell() {
  local part=$1 model=$2 f=$3 over=$4 limit=$5 policy=$6 budget=$7 gguf=$8 fb=$9 eb=${10} batch=${11}
  shift 11
  local d="$OUT/ferry_${part}_${model}_${f}_${over}_${policy//[:=,\/]/_}_b${batch}_$rep"
  rm -rf "$d"
  read -r status peak < <(limited "$limit" /dev/null "$d.err" "$FERRY" moe bench --model "$gguf" --policies "$policy" \
    --device-mem "$budget" --link "$LINK" --compute none --threads "$THREADS" --batch "$batch" --tokens "$TOKENS" \
    --prompt-tokens "$PROMPT" --corpus '' --out "$d" "$@")
  "$PY" - "$d/bench.csv" "$part,$model,$f,$over,$limit,ferry,$policy,$batch" "$status" "$peak" "$fb" "$eb" "$PROMPT" "$TOKENS" "$rep" >>"$csv" <<'EOF'
import csv, os, sys
path, head, status, peak, fb, eb, prompt, tokens, rep = sys.argv[1:]
r = next(csv.DictReader(open(path))) if os.path.exists(path) else None
if r is None:
    for test in ("decode", "prefill"):
        print(",".join([head, test, "", status if status != "ok" else "failed", peak, "", "", "", "", prompt, "", fb, eb, rep, ""]))
    sys.exit(0)
batch = int(head.split(",")[-1])
prefill = batch * int(prompt) / (float(r["ttft_ms"]) / 1e3)
extra = [r["rss_peak_bytes"], r["hit_rate"], r["bytes_moved"], str(batch * (int(tokens) - 1)), prompt,
         r["storage_read_bytes"], fb, eb, rep, r.get("predictor_us_per_token", "")]
print(",".join([head, "decode", r["tokens_per_s"], status, peak] + extra))
print(",".join([head, "prefill", "%.4f" % prefill, status, peak] + extra))
EOF
}

# A model written by make-tiny --gguf: name format shape-flags...
make_model() {
  local name=$1 f=$2; shift 2
  local path="$MODELS/${name}_$f.gguf"
  [ -f "$path" ] || "$FERRY" moe make-tiny --out "$path" --gguf "$f" "$@" --seed 1 >/dev/null
  echo "$path"
}

# ferry's budget under limit L (file bytes F, expert bytes X of N experts): L - dense part -
# reserve, and at least one layer's two active experts (ferry's minimum: below it the run fails;
# 5/4 of the mean expert: a Q4_K_M slot holds the widest, Q6_K ffn_down, 1.15x a Q4_K expert).
budget_for() {
  local b=$(( $1 - ($2 - $3) - RESERVE_MIB * 1048576 )) least=$(( $3 / $4 * 5 / 2 + 1048576 ))
  echo $(( b > least ? b : least ))
}

# The disk's O_DIRECT read bandwidth, on the first model file (the roofline's numerator).
measure_disk() {
  [ -f "$OUT/dd.txt" ] && return
  dd if="$1" of=/dev/null bs=8M count=256 iflag=direct 2>&1 | tail -1 | tee "$OUT/dd.txt"
}

MIXTRAL="--family mixtral --experts 8 --top-k 2 --hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 --head-dim 128 --vocab 32000"
if has over; then
  for f in ${FORMATS//,/ }; do
    # shellcheck disable=SC2086
    mid=mid; [ "$OVER_LAYERS" = 4 ] || mid=mid$OVER_LAYERS
    gguf=$(make_model "$mid" "$f" $MIXTRAL --layers "$OVER_LAYERS")
    measure_disk "$gguf"
    fb=$(stat -c %s "$gguf"); eb=$(expert_bytes "$gguf")
    for over in ${OVER//,/ }; do
      limit=$(( fb / over ))
      budget=$(budget_for "$limit" "$fb" "$eb" $(( OVER_LAYERS * 8 )))
      echo "over: $f, file $((fb >> 20)) MiB / $over = limit $((limit >> 20)) MiB, ferry budget $((budget >> 20)) MiB" >&2
      for mode in ${LOAD_MODES//,/ }; do llama_cell over "$mid" "$f" "$over" "$limit" "$mode" "$gguf" "$fb" "$eb"; done
      for p in ${POLICIES//,/ }; do ferry_cell over "$mid" "$f" "$over" "$limit" "$p" "$budget" "$gguf" "$fb" "$eb" 1; done
    done
  done
fi

if has trace && [ -f "$TRACE" ]; then
  gguf=$(make_model trace Q8_0 --family mixtral --experts 8 --top-k 2 --hidden 1024 --intermediate 3584 --heads 8 \
    --kv-heads 2 --head-dim 128 --vocab 32000 --layers 32)
  measure_disk "$gguf"
  fb=$(stat -c %s "$gguf"); eb=$(expert_bytes "$gguf")
  limit=$(( fb / 2 )); budget=$(budget_for "$limit" "$fb" "$eb" 256)
  echo "trace: file $((fb >> 20)) MiB / 2 = limit $((limit >> 20)) MiB, ferry budget $((budget >> 20)) MiB" >&2
  LINK=$TRACE_LINK
  for ((rep = 1; rep <= TRACE_REPS; ++rep)); do
    for batch in 1 4 16; do
      for p in ${TRACE_POLICIES//,/ }; do
        ferry_cell trace trace Q8_0 2 "$limit" "$p" "$budget" "$gguf" "$fb" "$eb" "$batch" --routing "$TRACE"
      done
    done
  done
  LINK=file rep=1
elif has trace; then
  echo "trace: $TRACE absent, skipped" >&2
fi

if has big; then
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) * 1024 ))
  for f in ${BIG_FORMATS//,/ }; do
    # shellcheck disable=SC2086
    gguf=$(make_model big "$f" $MIXTRAL --layers 32)
    measure_disk "$gguf"
    fb=$(stat -c %s "$gguf"); eb=$(expert_bytes "$gguf")
    budget=$(budget_for "$mem" "$fb" "$eb" 256)
    budget=$(( budget - budget / 8 ))  # the machine's own processes and the page cache of the rest
    echo "big: $f, file $((fb >> 20)) MiB, RAM $((mem >> 20)) MiB, ferry budget $((budget >> 20)) MiB" >&2
    for mode in ${LOAD_MODES//,/ }; do llama_cell big big "$f" "$(( fb / mem ))" "" "$mode" "$gguf" "$fb" "$eb"; done
    for p in ${POLICIES//,/ }; do ferry_cell big big "$f" "$(( fb / mem ))" "" "$p" "$budget" "$gguf" "$fb" "$eb" 1; done
    [ "${KEEP:-0}" = 1 ] || rm -f "$gguf"
  done
fi

if has dsv3; then
  # shellcheck source=../peers/models.sh
  source bench/peers/models.sh
  LLAMA_FLAGS="$(shape_llama_flags dsv3)"
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) * 1024 ))
  for f in ${DSV3_FORMATS//,/ }; do
    # shellcheck disable=SC2086
    gguf=$(make_model "dsv3_${DSV3_MOE_LAYERS}moe" "$f" $DSV3_FLAGS --layers $(( DSV3_MOE_LAYERS + 1 )) --dense-layers 0)
    measure_disk "$gguf"
    fb=$(stat -c %s "$gguf"); eb=$(expert_bytes "$gguf")
    echo "dsv3: $f, file $((fb >> 20)) MiB, RAM $((mem >> 20)) MiB" >&2
    for rep in $(seq "$REPS"); do
      for over in ${DSV3_OVER//,/ }; do
        limit=""; [ "$over" = 1 ] || limit=$(( fb / over ))
        echo "dsv3 rep $rep: limit ${limit:-RAM}" >&2
        for mode in mmap mmap-nr; do llama_batched_cell dsv3 dsv3 "$f" "$over" "$limit" "$mode" "$gguf" "$fb" "$eb"; done
        ferry_cell dsv3 dsv3 "$f" "$over" "$limit" auto auto "$gguf" "$fb" "$eb" 1
      done
    done
    [ "${KEEP:-0}" = 1 ] || rm -f "$gguf"
  done
fi
"$PY" bench/moe_disk/report.py "$OUT"
