#!/usr/bin/env bash
# Runs ferry's libFuzzer harnesses (tests/fuzz) for a given time each.
#
#   scripts/fuzz.sh [--runs N] [--seeds] [SECONDS] [HARNESS...]
#
#   SECONDS    time per harness (default 60); ignored with --runs N (stop after N executions)
#   HARNESS    idx safetensors safetensors_index config tokenizer_json trace_mixtral trace_granite trace_layer0
#              codec_none codec_fp16 codec_twobit codec_onebit codec_qsgd codec_terngrad
#              codec_topk codec_randomk codec_dgc codec_powersgd (default: all)
#   --seeds    regenerate the binary seeds of tests/fuzz/corpus first
#
# Builds build/fuzz (preset "fuzz": clang, -fsanitize=fuzzer,address,undefined) on first use.
# Each harness starts from tests/fuzz/corpus/<name> and tests/fuzz/regressions/<name>; inputs it
# finds interesting go to build/fuzz/corpus/<name> (kept between runs, never committed); a
# crashing input is saved as build/fuzz/crashes/<name>-crash-<sha1>, and the script exits 1.
# Fix the bug, then copy that input to tests/fuzz/regressions/<name>/ so every build replays it.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(idx safetensors safetensors_index config tokenizer_json trace_mixtral trace_granite trace_layer0
     codec_none codec_fp16 codec_twobit codec_onebit codec_qsgd codec_terngrad codec_topk
     codec_randomk codec_dgc codec_powersgd)
seconds=60
runs=""
seeds=0
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --seeds) seeds=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    [0-9]*) seconds="$1"; shift ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")
for h in "${harnesses[@]}"; do
  if [[ ! " ${all[*]} " == *" $h "* ]]; then
    echo "fuzz.sh: unknown harness '$h' (known: ${all[*]})" >&2
    exit 2
  fi
done

bash scripts/setup.sh
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
[ -f build/fuzz/CMakeCache.txt ] || cmake --preset fuzz >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
[ "$seeds" = 1 ] && targets+=(fuzz_make_seeds)
cmake --build build/fuzz -j "${FERRY_JOBS:-2}" --target "${targets[@]}" >/dev/null
bin=build/fuzz/tests/fuzz
[ "$seeds" = 1 ] && "$bin/fuzz_make_seeds" tests/fuzz/corpus

mkdir -p build/fuzz/crashes build/fuzz/logs
limit=(-max_total_time="$seconds")
[ -n "$runs" ] && limit=(-runs="$runs")
failed=0
printf '%-18s %10s %12s %10s %s\n' harness seconds executions exec/s result
for h in "${harnesses[@]}"; do
  work=build/fuzz/corpus/$h
  mkdir -p "$work"
  inputs=("$work" "tests/fuzz/corpus/$h")
  [ -d "tests/fuzz/regressions/$h" ] && inputs+=("tests/fuzz/regressions/$h")
  dict=()
  case "$h" in config|tokenizer_json|safetensors*|trace_*) dict=(-dict=tests/fuzz/json.dict) ;; esac
  log=build/fuzz/logs/$h.log
  start=$(date +%s)
  result=ok
  # -timeout: an input that runs 10 s is a hang; -rss_limit_mb: one that needs 2 GiB is a bug.
  if ! "$bin/fuzz_$h" "${limit[@]}" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -print_funcs=0 \
       -artifact_prefix="build/fuzz/crashes/$h-" "${inputs[@]}" >"$log" 2>&1; then
    result="CRASH (see $log and build/fuzz/crashes/)"
    failed=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  printf '%-18s %10s %12s %10s %s\n' "$h" "$(( $(date +%s) - start ))" "${execs:-?}" "${rate:-?}" "$result"
done
exit $failed
