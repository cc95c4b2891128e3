#!/usr/bin/env bash
# --device-mem auto (the default of generate, bench and serve) under a cgroup v1 memory limit: a model
# that fits is run with every expert resident; in a limit below the model the budget is what fits
# and the run completes (not killed for memory); an explicit budget that cannot fit is refused
# before loading with exit code 2 and one line that says what fits. Needs root and a writable
# cgroup v1 memory controller; skipped (exit 77) otherwise.
set -u
ferry="$1"
# shellcheck source=memory_cgroup.sh
source "$(dirname "$0")/memory_cgroup.sh"
memory_cgroup_or_skip
tmp=$(mktemp -d)
trap 'memory_cgroup_cleanup; rm -rf "$tmp"' EXIT
# 4 layers x 8 experts of 3 x 1024 x 3072 in Q8_0 (9.6 MiB each, 306 MiB of experts); dense ~11 MiB.
"$ferry" moe make-tiny --out "$tmp/m.gguf" --gguf Q8_0 --layers 4 --experts 8 --top-k 2 --hidden 1024 \
  --intermediate 3072 --heads 8 --kv-heads 2 --head-dim 128 --seed 3 >/dev/null || { echo "FAIL: make-tiny"; exit 1; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run LIMIT_BYTES NAME ARGS...: generate inside a fresh cgroup with that limit; sets rc, err, peak.
run() {
  local limit=$1 name=$2
  shift 2
  in_memory_cgroup "$limit" "$ferry" moe generate --model "$tmp/m.gguf" --prompt "def " --tokens 4 "$@" \
    >/dev/null 2>"$tmp/$name.err"
  err=$(cat "$tmp/$name.err")
}

# Room for everything: every expert resident, and lru (nothing to prefetch).
run $((2048 * 1024 * 1024)) roomy
if [ "$rc" -ne 0 ]; then fail "2 GiB limit: exit $rc: $err"
elif ! grep -q "policy lru, device budget .*auto: every expert resident" <<<"$err"; then fail "2 GiB limit: not resident: $err"
else echo "ok: under 2 GiB every expert is resident (peak $peak)"; fi

# Below the model's needs: a bounded budget, the run completes (a kill would be exit 137).
limit=$((400 * 1024 * 1024))
run $limit bounded
if [ "$rc" -ne 0 ]; then fail "400 MiB limit: exit $rc (137: killed for memory): $err"
elif ! grep -q "auto: [0-9.]* MiB of 306 MiB of experts, what fits" <<<"$err"; then fail "400 MiB limit: budget not bounded: $err"
elif ! grep -q "policy prescope" <<<"$err"; then fail "400 MiB limit: the policy did not follow the budget: $err"
else echo "ok: under 400 MiB a bounded budget (peak $peak): $(grep -o 'device budget [^(]*' <<<"$err" | head -1)"; fi

# An explicit budget that cannot fit: refused before loading, exit 2, one line naming what fits.
run $limit refused --device-mem 100%
lines=$(grep -c . <<<"$err")
if [ "$rc" -ne 2 ]; then fail "--device-mem 100% under 400 MiB: exit $rc, expected 2: $err"
elif [ "$lines" -ne 1 ] || ! grep -q -- "--device-mem 100% (306 MiB) does not fit in memory: .*at most .* is left for experts" <<<"$err"; then
  fail "--device-mem 100% under 400 MiB: expected one line saying what fits, got: $err"
else echo "ok: --device-mem 100% under 400 MiB refused: $err"; fi
[ "$failures" -eq 0 ]
